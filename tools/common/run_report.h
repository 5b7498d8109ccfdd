// Pictures of a run for its directory (mcdl_report, and mcdl_train at the end of a run):
// curves.svg, every per-epoch number of metrics.csv as line charts (All / Old / New and the
// validation columns, every loss term, the bucket sizes, the buckets' pseudo-label accuracy),
// and report.html, one offline page with the charts inline, the final numbers and every setting
// of config.json.
#pragma once
#include <string>

namespace mcdl::tools {

// Writes RUN_DIR/curves.svg and RUN_DIR/report.html (atomically); returns the html's path.
std::string write_run_report(const std::string& run_dir);

}  // namespace mcdl::tools
