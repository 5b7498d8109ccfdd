#include "tools/common/run_pictures.h"

#include <algorithm>
#include <filesystem>

#include "engine/error.h"
#include "io/npy.h"
#include "mcdl/evaluation/tsne.h"
#include "tools/common/csv_table.h"
#include "tools/common/embedding_svg.h"
#include "tools/common/report_text.h"
#include "tools/common/svg_chart.h"

namespace fs = std::filesystem;

namespace mcdl::tools {

bool Evaluation::has_labels() const {
  return std::any_of(truth.begin(), truth.end(), [](int64_t y) { return y >= 0; });
}

std::optional<Evaluation> read_evaluation(const std::string& predictions_csv) {
  if (!fs::exists(predictions_csv)) return std::nullopt;
  const CsvTable table = read_csv(predictions_csv);
  const int64_t prediction = table.require_column("prediction"), label = table.require_column("label"),
                old = table.require_column("old");
  Evaluation evaluation;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    evaluation.predicted.push_back(table.integer(static_cast<int64_t>(r), prediction, 0));
    evaluation.truth.push_back(table.integer(static_cast<int64_t>(r), label, -1));
    evaluation.old.push_back(table.rows[r][static_cast<size_t>(old)] == "old");
  }
  return evaluation;
}

ClassClusters class_clusters(const Evaluation& evaluation) {
  std::vector<int64_t> truth, predicted;
  int64_t num_old = 0;
  for (size_t i = 0; i < evaluation.truth.size(); ++i) {
    if (evaluation.truth[i] < 0) continue;
    truth.push_back(evaluation.truth[i]);
    predicted.push_back(evaluation.predicted[i]);
    if (evaluation.old[i]) num_old = std::max(num_old, evaluation.truth[i] + 1);
  }
  return match_classes(truth, predicted, num_old);
}

std::optional<std::string> embedding_picture(const std::string& run_dir, const Evaluation& evaluation,
                                             const std::optional<ClassClusters>& table,
                                             const std::vector<std::string>& class_names) {
  const fs::path features_path = fs::path(run_dir) / "features.npy";
  if (!fs::exists(features_path)) return std::nullopt;
  const Tensor features = read_npy(features_path.string()).to(DType::f64);
  const int64_t n_all = features.size(0), d = features.size(1);
  check(static_cast<size_t>(n_all) == evaluation.predicted.size(), features_path.string(), " has ", n_all,
        " rows but ", (fs::path(run_dir) / "predictions.csv").string(), " ", evaluation.predicted.size(),
        ": not from the same evaluation");

  const int64_t n = std::min<int64_t>(n_all, 1000);
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < n; ++i) rows.push_back(i * n_all / n);
  std::vector<double> x;
  const double* data = features.data<double>();
  for (int64_t r : rows) x.insert(x.end(), data + r * d, data + (r + 1) * d);
  TsneOptions options;
  options.perplexity = std::min(30.0, static_cast<double>(n - 1) / 3.0);
  options.iterations = 750;
  const std::vector<double> y = tsne_2d(x, n, d, options);

  // Colours: a cluster's column of the class table (the matched clusters in class order, named by
  // their class), or with no labels known, the cluster's id.
  std::vector<std::string> colour_names;
  if (table)
    for (int64_t k = 0; k < table->columns(); ++k) colour_names.push_back(column_name(*table, k, class_names));
  auto colour_of = [&](int64_t cluster) -> int64_t {
    const int64_t column = table ? table->column_of(cluster) : -1;
    if (column >= 0) return column;
    // A cluster that holds no image of known label: a colour past the named ones.
    const int64_t first_free = table ? table->columns() : 0;
    while (static_cast<int64_t>(colour_names.size()) <= first_free + cluster)
      colour_names.push_back("cluster " + std::to_string(static_cast<int64_t>(colour_names.size()) - first_free));
    return first_free + cluster;
  };
  std::vector<EmbeddingPoint> points;
  for (int64_t i = 0; i < n; ++i) {
    const size_t row = static_cast<size_t>(rows[static_cast<size_t>(i)]);
    EmbeddingPoint p;
    p.x = y[static_cast<size_t>(2 * i)];
    p.y = y[static_cast<size_t>(2 * i + 1)];
    const int64_t cluster = evaluation.predicted[row], label = evaluation.truth[row];
    p.colour = colour_of(cluster);
    p.known_class = evaluation.old[row];
    p.mismatched = table && label >= 0 && table->column_of(cluster) != label;
    const std::string cluster_name = colour_names[static_cast<size_t>(p.colour)];
    if (label >= 0 && label < static_cast<int64_t>(class_names.size()))
      p.tooltip = class_names[static_cast<size_t>(label)] + (p.known_class ? " (known class)" : " (new class)") +
                  " in the cluster of " + cluster_name;
    else
      p.tooltip = std::string("an image of unknown class, in ") + (table && table->column_of(cluster) >= 0 ? "the cluster of " : "") +
                  cluster_name;
    points.push_back(std::move(p));
  }
  return embedding_svg(points, colour_names, table.has_value());
}

std::string class_table_html(const ClassClusters& table, const std::vector<std::string>& class_names) {
  std::string html = "<table class=\"classes\">\n<tr><th>class</th><th>group</th><th>images</th>"
                     "<th>in its own cluster</th><th>most of the rest in the cluster of</th></tr>\n";
  for (int64_t c = 0; c < table.classes; ++c) {
    const std::vector<int64_t>& row = table.counts[static_cast<size_t>(c)];
    const int64_t total = table.class_total(c);
    int64_t other = -1;
    for (int64_t k = 0; k < table.columns(); ++k)
      if (k != c && row[static_cast<size_t>(k)] > 0 && (other < 0 || row[static_cast<size_t>(k)] > row[static_cast<size_t>(other)]))
        other = k;
    const std::string name = c < static_cast<int64_t>(class_names.size()) ? class_names[static_cast<size_t>(c)]
                                                                           : "class " + std::to_string(c);
    html += "<tr><td>" + markup_escape(name) + "</td><td>" + (c < table.num_old ? "known" : "new") + "</td><td>" +
            std::to_string(total) + "</td><td>" +
            (total ? percent_text(static_cast<double>(row[static_cast<size_t>(c)]) / static_cast<double>(total)) : "–") +
            "</td><td>" +
            (other < 0 ? std::string("–")
                       : markup_escape(column_name(table, other, class_names)) + " (" +
                             percent_text(static_cast<double>(row[static_cast<size_t>(other)]) /
                                          static_cast<double>(total)) +
                             ")") +
            "</td></tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace mcdl::tools
