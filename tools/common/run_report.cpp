#include "tools/common/run_report.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"
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
