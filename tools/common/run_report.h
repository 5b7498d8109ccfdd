// The pictures of a run for its directory (mcdl_report, and mcdl_train at the end of a run), for
// people: curves.svg, every per-epoch number of metrics.csv as line charts (accuracies in %,
// every loss term, the bucket sizes, the buckets' pseudo-label accuracy; epochs 1-based as on
// the console), confusion.svg (the last evaluation's classes against its clusters, by name),
// embedding.svg (a t-SNE map of the evaluated images, its colours named), and report.html, one
// offline page titled with the method and the dataset: the final accuracies as percentages (or
// why there is nothing to score), the last epoch's numbers, the pictures inline, a table per
// class and every setting of config.json.
#pragma once
#include <string>

namespace mcdl::tools {

// Writes those files into RUN_DIR (atomically); returns the html's path.
std::string write_run_report(const std::string& run_dir);

}  // namespace mcdl::tools
