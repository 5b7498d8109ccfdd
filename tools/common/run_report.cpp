#include "tools/common/run_report.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/decode.h"
#include "engine/error.h"
#include "mcdl/cluster_accuracy.h"
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

std::string html_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '&') out += "&amp;";
    else if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '"') out += "&quot;";
    else out += ch;
  }
  return out;
}

void write_file(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    check(out.good(), "cannot write ", tmp.string(), " (disk full or no permission?)");
  }
  fs::rename(tmp, path);
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
  write_png((run / "confusion.png").string(), image);
  return true;
}

}  // namespace

std::string write_run_report(const std::string& run_dir) {
  const fs::path run(run_dir), metrics_path = run / "metrics.csv";
  check(fs::exists(metrics_path), run_dir, " has no metrics.csv (a run directory written by ./mcdl_train?)");
  const CsvTable metrics = read_csv(metrics_path.string());
  const int64_t epoch = metrics.require_column("epoch");
  std::vector<double> x;
  for (const auto& row : metrics.rows) x.push_back(value_of(row[static_cast<size_t>(epoch)]) + 1.0);

  std::vector<Panel> panels;
  add_panel(panels, metrics, "Accuracy on the unlabelled training images (v2, %)",
            {"all", "old", "new", "val_all", "val_old", "val_new"}, 100.0);
  add_panel(panels, metrics, "Loss terms", {"loss", "cls", "cluster", "memax", "contrastive", "supcon", "l_sup",
                                            "l_semi", "l_self"});
  add_panel(panels, metrics, "Credibility buckets (unlabelled samples)", {"high", "medium", "low"});
  add_panel(panels, metrics, "Pseudo-label accuracy of the buckets (%)",
            {"high_pseudo_acc", "medium_pseudo_acc", "val_high_precision", "val_medium_precision"}, 100.0);
  const std::string svg = line_charts_svg(x, panels);
  write_file(run / "curves.svg", svg);

  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html_escape(run.filename().string()) +
                     "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1000px}"
                     "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
                     "</style></head><body>\n<h1>Run " + html_escape(run_dir) + "</h1>\n";
  if (!metrics.rows.empty()) {
    html += "<h2>Last epoch</h2>\n<table>\n";
    for (size_t c = 0; c < metrics.header.size(); ++c)
      html += "<tr><th>" + html_escape(metrics.header[c]) + "</th><td>" + html_escape(metrics.rows.back()[c]) +
              "</td></tr>\n";
    html += "</table>\n";
  }
  html += "<h2>Per epoch</h2>\n" + svg;
  if (write_confusion_png(run))
    html += "<h2>Classes against clusters</h2>\n<p>The last evaluation: a row per class (old classes above the "
            "red line), a column per cluster in the order of the Hungarian match, darker = a larger share of the "
            "class.</p>\n<img src=\"confusion.png\" alt=\"confusion matrix\" style=\"image-rendering:pixelated\">\n";
  const fs::path config_path = run / "config.json";
  if (fs::exists(config_path)) {
    std::ifstream in(config_path);
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json config = nlohmann::json::parse(text.str(), nullptr, false);
    if (config.is_object()) {
      html += "<h2>Settings (config.json)</h2>\n<table>\n";
      for (const auto& [key, value] : config.items())
        html += "<tr><th>" + html_escape(key) + "</th><td>" +
                html_escape(value.is_string() ? value.get<std::string>() : value.dump()) + "</td></tr>\n";
      html += "</table>\n";
    }
  }
  html += "</body></html>\n";
  write_file(run / "report.html", html);
  return (run / "report.html").string();
}

}  // namespace mcdl::tools
