#include "tools/common/run_report.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stb/stb_image_write.h>

#include "data/decode.h"
#include "engine/error.h"
#include "io/durable_file.h"
#include "io/npy.h"
#include "mcdl/evaluation/cluster_accuracy.h"
#include "mcdl/evaluation/tsne.h"
#include "tools/common/csv_table.h"
#include "tools/common/svg_chart.h"

namespace fs = std::filesystem;

namespace mcdl::tools {
namespace {

double value_of(const std::string& text) {
  if (text.empty() || text == "nan") return std::nan("");
  try {
    return std::stod(text);
  } catch (const std::exception&) {
    return std::nan("");
  }
}

// The panel of the columns that the table has (none: no panel).
void add_panel(std::vector<Panel>& panels, const CsvTable& metrics, const std::string& title,
               const std::vector<std::string>& columns, double scale = 1.0) {
  Panel panel{title, {}};
  for (const std::string& name : columns) {
    const int64_t c = metrics.column(name);
    if (c < 0) continue;
    Series series{name, {}};
    for (const auto& row : metrics.rows) series.y.push_back(scale * value_of(row[static_cast<size_t>(c)]));
    panel.series.push_back(std::move(series));
  }
  if (!panel.series.empty()) panels.push_back(std::move(panel));
}

void write_file(const fs::path& path, const std::string& text) { write_file_atomically(path.string(), text); }

// As data/decode.h's write_png, but encoded in memory and written through write_file: stb's own
// file writer ignores a failed fwrite, so a full disk would leave a truncated picture unnoticed.
void write_png_file(const fs::path& path, const Image& image) {
  std::string bytes;
  const auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  const int ok = stbi_write_png_to_func(append, &bytes, static_cast<int>(image.width), static_cast<int>(image.height),
                                        static_cast<int>(image.channels), image.pixels.data(),
                                        static_cast<int>(image.width * image.channels));
  check(ok != 0, "cannot encode ", path.string(), " as PNG");
  write_file(path, bytes);
}

// confusion.png from predictions.csv: a row per class (old classes first, as the labels are
// remapped), a column per predicted cluster, the clusters ordered by the v2 Hungarian match
// (class c's cluster in column c, the unmatched ones after), each cell the fraction of the
// class's images in that cluster (white 0 → dark blue 1), a red line between old and new. False
// when there is nothing to draw (no predictions, or no known labels).
bool write_confusion_png(const fs::path& run) {
  const fs::path path = run / "predictions.csv";
  if (!fs::exists(path)) return false;
  const CsvTable table = read_csv(path.string());
  const int64_t prediction = table.require_column("prediction"), label = table.require_column("label"),
                old = table.require_column("old");
  std::vector<int64_t> truth, predicted;
  int64_t num_old = 0;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const int64_t y = std::stoll(table.rows[r][static_cast<size_t>(label)]);
    if (y < 0) continue;
    truth.push_back(y);
    predicted.push_back(table.integer(static_cast<int64_t>(r), prediction, 0));
    if (table.rows[r][static_cast<size_t>(old)] == "old") num_old = std::max(num_old, y + 1);
  }
  if (truth.empty()) return false;
  const int64_t classes = *std::max_element(truth.begin(), truth.end()) + 1;
  const Contingency table_counts = contingency(truth, predicted);
  const std::vector<int64_t> cluster_of_class = v2_class_to_cluster(truth, predicted);
  // Column order: the matched clusters in class order, then the clusters no class took.
  std::vector<int64_t> column_of_cluster(static_cast<size_t>(table_counts.size), -1);
  int64_t columns = 0;
  for (int64_t c = 0; c < classes; ++c) column_of_cluster[static_cast<size_t>(cluster_of_class[c])] = columns++;
  for (int64_t k = 0; k < table_counts.size; ++k)
    if (column_of_cluster[static_cast<size_t>(k)] < 0) column_of_cluster[static_cast<size_t>(k)] = columns++;
  const int64_t cell = std::max<int64_t>(1, 600 / std::max(classes, columns));
  Image image(classes * cell, columns * cell, 3);
  for (int64_t c = 0; c < classes; ++c) {
    int64_t row_total = 0;
    for (int64_t k = 0; k < table_counts.size; ++k) row_total += table_counts.counts[static_cast<size_t>(k * table_counts.size + c)];
    for (int64_t k = 0; k < table_counts.size; ++k) {
      const double f = row_total ? static_cast<double>(table_counts.counts[static_cast<size_t>(k * table_counts.size + c)]) /
                                       static_cast<double>(row_total)
                                 : 0.0;
      const uint8_t rgb[3] = {static_cast<uint8_t>(255 - 230 * f), static_cast<uint8_t>(255 - 190 * f),
                              static_cast<uint8_t>(255 - 80 * f)};
      const int64_t column = column_of_cluster[static_cast<size_t>(k)];
      for (int64_t dy = 0; dy < cell; ++dy)
        for (int64_t dx = 0; dx < cell; ++dx)
          for (int ch = 0; ch < 3; ++ch) image.at(c * cell + dy, column * cell + dx, ch) = rgb[ch];
    }
  }
  if (num_old > 0 && num_old < classes) {  // the old / new boundary, across and down
    for (int64_t x = 0; x < image.width; ++x) image.at(num_old * cell, x, 0) = 220, image.at(num_old * cell, x, 1) = 0, image.at(num_old * cell, x, 2) = 0;
    for (int64_t y = 0; y < image.height; ++y) image.at(y, num_old * cell, 0) = 220, image.at(y, num_old * cell, 1) = 0, image.at(y, num_old * cell, 2) = 0;
  }
  write_png_file(run / "confusion.png", image);
  return true;
}

// embedding.png from features.npy (the evaluated images' features, row for row with
// predictions.csv): t-SNE of at most 1,000 of them (evenly spaced), each point coloured by its
// cluster, a square for a known-class image and a disc for a new-class one, with a black ring
// where the cluster (v2-matched) is not its class. False when either file is missing.
bool write_embedding_png(const fs::path& run) {
  const fs::path features_path = run / "features.npy", predictions_path = run / "predictions.csv";
  if (!fs::exists(features_path) || !fs::exists(predictions_path)) return false;
  const Tensor features = read_npy(features_path.string()).to(DType::f64);
  const CsvTable table = read_csv(predictions_path.string());
  const int64_t n_all = features.size(0), d = features.size(1);
  check(static_cast<int64_t>(table.rows.size()) == n_all, features_path.string(), " has ", n_all, " rows but ",
        predictions_path.string(), " ", table.rows.size(), ": not from the same evaluation");
  const int64_t prediction = table.require_column("prediction"), label = table.require_column("label"),
                old = table.require_column("old");
  std::vector<int64_t> truth, predicted;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    truth.push_back(std::stoll(table.rows[r][static_cast<size_t>(label)]));
    predicted.push_back(table.integer(static_cast<int64_t>(r), prediction, 0));
  }
  std::vector<int64_t> known_truth, known_predicted;
  for (size_t r = 0; r < truth.size(); ++r)
    if (truth[r] >= 0) known_truth.push_back(truth[r]), known_predicted.push_back(predicted[r]);
  const std::vector<int64_t> class_of_cluster =
      known_truth.empty() ? std::vector<int64_t>{} : v2_assignment(known_truth, known_predicted);

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

  double x_low = INFINITY, x_high = -INFINITY, y_low = INFINITY, y_high = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    x_low = std::min(x_low, y[2 * i]), x_high = std::max(x_high, y[2 * i]);
    y_low = std::min(y_low, y[2 * i + 1]), y_high = std::max(y_high, y[2 * i + 1]);
  }
  const int64_t size = 600, margin = 10;
  Image image(size, size, 3);
  std::fill(image.pixels.begin(), image.pixels.end(), uint8_t{255});
  auto colour = [](int64_t cluster, int ch) {  // a spread of hues by the golden angle
    const double h = std::fmod(static_cast<double>(cluster) * 0.618034, 1.0) * 6.0;
    const double f = h - std::floor(h), q = 1 - f;
    const double rgb[6][3] = {{1, f, 0}, {q, 1, 0}, {0, 1, f}, {0, q, 1}, {f, 0, 1}, {1, 0, q}};
    return static_cast<uint8_t>(40 + 180 * rgb[static_cast<int>(h) % 6][ch]);
  };
  for (int64_t i = 0; i < n; ++i) {
    const size_t row = static_cast<size_t>(rows[static_cast<size_t>(i)]);
    const int64_t px = margin + static_cast<int64_t>((y[2 * i] - x_low) / std::max(x_high - x_low, 1e-12) * (size - 2 * margin - 1));
    const int64_t py = margin + static_cast<int64_t>((y[2 * i + 1] - y_low) / std::max(y_high - y_low, 1e-12) * (size - 2 * margin - 1));
    const bool is_old = table.rows[row][static_cast<size_t>(old)] == "old";
    const int64_t c = predicted[row];
    const bool wrong = truth[row] >= 0 && (c >= static_cast<int64_t>(class_of_cluster.size()) ||
                                           class_of_cluster[static_cast<size_t>(c)] != truth[row]);
    for (int64_t dy = -4; dy <= 4; ++dy)
      for (int64_t dx = -4; dx <= 4; ++dx) {
        const int64_t r2 = dx * dx + dy * dy;
        const bool inside = is_old ? std::max(std::abs(dx), std::abs(dy)) <= 3 : r2 <= 9;
        const bool ring = wrong && !inside && r2 <= 20;
        if (!inside && !ring) continue;
        const int64_t yy = py + dy, xx = px + dx;
        if (yy < 0 || yy >= size || xx < 0 || xx >= size) continue;
        for (int ch = 0; ch < 3; ++ch) image.at(yy, xx, ch) = ring ? 0 : colour(c, ch);
      }
  }
  write_png_file(run / "embedding.png", image);
  return true;
}

}  // namespace

std::string write_run_report(const std::string& run_dir) {
  const fs::path run(run_dir), metrics_path = run / "metrics.csv";
  check(fs::exists(metrics_path), run_dir, " has no metrics.csv (a run directory written by ./mcdl_train?)");
  probe_writable_directory(run_dir, "free some space there, then run ./mcdl_report " + run_dir + " again");
  const CsvTable metrics = read_csv(metrics_path.string());
  const int64_t epoch = metrics.require_column("epoch");
  std::vector<double> x;
  for (const auto& row : metrics.rows) x.push_back(value_of(row[static_cast<size_t>(epoch)]) + 1.0);

  std::vector<Panel> panels;
  add_panel(panels, metrics, "Accuracy on the unlabelled training images (transductive, v2, %)",
            {"all", "old", "new", "val_all", "val_old", "val_new"}, 100.0);
  add_panel(panels, metrics, "Accuracy on the test split (inductive, v2, %)", {"test_all", "test_old", "test_new"},
            100.0);
  add_panel(panels, metrics, "Loss terms", {"loss", "cls", "cluster", "memax", "contrastive", "supcon", "l_sup",
                                            "l_semi", "l_self"});
  add_panel(panels, metrics, "Credibility buckets (unlabelled samples)", {"high", "medium", "low"});
  add_panel(panels, metrics, "Pseudo-label accuracy of the buckets (%)",
            {"high_pseudo_acc", "medium_pseudo_acc", "val_high_precision", "val_medium_precision"}, 100.0);
  const std::string svg = line_charts_svg(x, panels);
  write_file(run / "curves.svg", svg);

  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + markup_escape(run.filename().string()) +
                     "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1000px}"
                     "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
                     "</style></head><body>\n<h1>Run " + markup_escape(run_dir) + "</h1>\n";
  if (!metrics.rows.empty()) {
    html += "<h2>Last epoch</h2>\n<table>\n";
    for (size_t c = 0; c < metrics.header.size(); ++c)
      html += "<tr><th>" + markup_escape(metrics.header[c]) + "</th><td>" + markup_escape(metrics.rows.back()[c]) +
              "</td></tr>\n";
    html += "</table>\n";
  }
  html += "<h2>Per epoch</h2>\n" + svg;
  if (write_confusion_png(run))
    html += "<h2>Classes against clusters</h2>\n<p>The last evaluation: a row per class (old classes above the "
            "red line), a column per cluster in the order of the Hungarian match, darker = a larger share of the "
            "class.</p>\n<img src=\"confusion.png\" alt=\"confusion matrix\" style=\"image-rendering:pixelated\">\n";
  if (write_embedding_png(run))
    html += "<h2>The evaluated images' features (t-SNE)</h2>\n<p>Colour: the predicted cluster; squares: images of "
            "known classes, discs: new classes; a black ring: the cluster (Hungarian-matched) is not the image's "
            "class.</p>\n<img src=\"embedding.png\" alt=\"t-SNE embedding\">\n";
  const fs::path config_path = run / "config.json";
  if (fs::exists(config_path)) {
    std::ifstream in(config_path);
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json config = nlohmann::json::parse(text.str(), nullptr, false);
    if (config.is_object()) {
      html += "<h2>Settings (config.json)</h2>\n<table>\n";
      for (const auto& [key, value] : config.items())
        html += "<tr><th>" + markup_escape(key) + "</th><td>" +
                markup_escape(value.is_string() ? value.get<std::string>() : value.dump()) + "</td></tr>\n";
      html += "</table>\n";
    }
  }
  html += "</body></html>\n";
  write_file(run / "report.html", html);
  return (run / "report.html").string();
}

}  // namespace mcdl::tools
