#include "tools/common/run_report.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"
#include "io/durable_file.h"
#include "tools/common/confusion_svg.h"
#include "tools/common/csv_table.h"
#include "tools/common/report_page.h"
#include "tools/common/report_text.h"
#include "tools/common/run_classes.h"
#include "tools/common/run_pictures.h"
#include "tools/common/svg_chart.h"

namespace fs = std::filesystem;

namespace mcdl::tools {
namespace {

// The panel of the table's columns that hold a value (none: no panel), each labelled for people.
void add_panel(std::vector<Panel>& panels, const CsvTable& metrics, const std::string& title,
               const std::vector<std::string>& columns, const std::string& y_label, double scale = 1.0) {
  Panel panel{title, {}, y_label};
  for (const std::string& name : columns) {
    const int64_t c = metrics.column(name);
    if (c < 0) continue;
    Series series{column_label(name), {}};
    bool any = false;
    for (const auto& row : metrics.rows) {
      series.y.push_back(scale * metric_value(row[static_cast<size_t>(c)]));
      any = any || std::isfinite(series.y.back());
    }
    if (any) panel.series.push_back(std::move(series));  // a column never scored (no labels) draws nothing
  }
  if (!panel.series.empty()) panels.push_back(std::move(panel));
}

std::string curves_svg(const CsvTable& metrics) {
  const int64_t epoch = metrics.require_column("epoch");
  std::vector<double> x;  // 1-based, as the console's "epoch 3/10"
  for (const auto& row : metrics.rows) x.push_back(metric_value(row[static_cast<size_t>(epoch)]) + 1.0);
  std::vector<Panel> panels;
  add_panel(panels, metrics, "Accuracy on the unlabelled training images (transductive, v2)",
            {"all", "old", "new", "val_all", "val_old", "val_new"}, "accuracy (%)", 100.0);
  add_panel(panels, metrics, "Accuracy on the test split (inductive, v2)", {"test_all", "test_old", "test_new"},
            "accuracy (%)", 100.0);
  add_panel(panels, metrics, "Loss terms",
            {"loss", "cls", "cluster", "memax", "contrastive", "supcon", "l_sup", "l_semi", "l_self"}, "loss");
  add_panel(panels, metrics, "Credibility buckets of the unlabelled images", {"high", "medium", "low"}, "images");
  // The paper's premise: do the consistency buckets hold more correct pseudo-labels than as many
  // samples chosen by the confidence of their latest prediction?
  add_panel(panels, metrics, "Pseudo-label accuracy: the buckets against as many samples chosen by confidence",
            {"high_pseudo_acc", "high_conf_acc", "medium_pseudo_acc", "medium_conf_acc"}, "accuracy (%)", 100.0);
  add_panel(panels, metrics, "The same on the validation images (labels the user has)",
            {"val_high_precision", "val_high_conf_precision", "val_medium_precision", "val_medium_conf_precision"},
            "precision (%)", 100.0);
  add_panel(panels, metrics, "Make-up of the high bucket (by pseudo-label), and how full the banks are",
            {"high_top_share", "high_old_share", "bank_full"}, "share (%)", 100.0);
  add_panel(panels, metrics, "Labelled rows predicted as their label: weak against strong view",
            {"labelled_weak_acc", "labelled_strong_acc"}, "accuracy (%)", 100.0);
  return line_charts_svg(x, panels);
}

nlohmann::ordered_json read_config(const fs::path& path) {
  if (!fs::exists(path)) return nlohmann::ordered_json();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::ordered_json::parse(text.str(), nullptr, false);
}

std::optional<bool> has_labels(const std::optional<Evaluation>& evaluation) {
  return evaluation ? std::optional<bool>(evaluation->has_labels()) : std::nullopt;
}

const char* kStyle =
    "body{font-family:sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}"
    "h1{margin-bottom:0.2em}p.sub{color:#555;margin-top:0}"
    "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:3px 10px;text-align:left}"
    "table.accuracy td,table.numbers td,table.classes td:nth-child(n+3),table.epochs td{text-align:right}"
    "td.none{text-align:left!important;color:#a40}p.note{color:#555;font-size:0.9em}"
    "svg{max-width:100%;height:auto}details{margin:1em 0}table.epochs{font-size:0.85em}";

}  // namespace

std::string write_run_report(const std::string& run_dir) {
  const fs::path run(run_dir), metrics_path = run / "metrics.csv";
  check(fs::exists(metrics_path), run_dir, " has no metrics.csv (a run directory written by ./mcdl_train?)");
  probe_writable_directory(run_dir, "free some space there, then run ./mcdl_report " + run_dir + " again");
  const CsvTable metrics = read_csv(metrics_path.string());
  const nlohmann::ordered_json config = read_config(run / "config.json");
  const int64_t planned_epochs =
      config.is_object() && config.contains("epochs") && config["epochs"].is_number_integer() ? config["epochs"].get<int64_t>() : 0;

  const std::string curves = curves_svg(metrics);
  write_file_atomically((run / "curves.svg").string(), curves);
  const std::optional<Evaluation> evaluation = read_evaluation((run / "predictions.csv").string());
  const LabelsKnown labels{has_labels(evaluation), has_labels(read_evaluation((run / "test_predictions.csv").string()))};

  const std::string title = run_title(config, run_dir);
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
                     markup_escape(title + " – " + run_dir) + "</title>\n<style>" + kStyle +
                     "</style></head><body>\n<h1>" + markup_escape(title) + "</h1>\n<p class=\"sub\">Run directory <code>" +
                     markup_escape(run_dir) + "</code>: " + std::to_string(metrics.rows.size()) + " epoch" +
                     (metrics.rows.size() == 1 ? "" : "s") + " recorded" +
                     (planned_epochs > 0 ? " of " + std::to_string(planned_epochs) + " planned" : "") + ".</p>\n";
  html += accuracy_section(metrics, planned_epochs, labels);
  html += last_epoch_section(metrics, planned_epochs);
  html += "<h2>Per epoch</h2>\n" + curves + every_epoch_section(metrics);
  if (evaluation) {
    // The classes against the clusters, where the evaluated images have labels.
    const std::optional<ClassClusters> table =
        evaluation->has_labels() ? std::optional<ClassClusters>(class_clusters(*evaluation)) : std::nullopt;
    const std::vector<std::string> names = run_class_names(run_dir, table ? table->classes : 0);
    html += "<h2>Classes against clusters</h2>\n";
    if (table) {
      const std::string confusion = confusion_svg(*table, names);
      write_file_atomically((run / "confusion.svg").string(), confusion);
      html += "<p>The last evaluation: a row per class, a column per cluster, the clusters in the order of the "
              "Hungarian match, so that each class's own cluster is on the diagonal. Point at a cell for its "
              "numbers.</p>\n" + confusion;
      const std::string classes = class_table_html(*table, names);
      html += table->classes > 30 ? "<details><summary>Every class</summary>\n" + classes + "</details>\n" : classes;
    } else {
      html += "<p class=\"note\">No labels for the unlabelled images: nothing to score, so no classes to set "
              "against the clusters.</p>\n";
    }
    if (const std::optional<std::string> embedding = embedding_picture(run_dir, *evaluation, table, names)) {
      write_file_atomically((run / "embedding.svg").string(), *embedding);
      html += "<h2>The evaluated images' features (t-SNE)</h2>\n<p>Images with similar features lie close "
              "together. Point at a mark for its class and cluster.</p>\n" + *embedding;
    }
  }
  html += settings_section(config);
  html += "</body></html>\n";
  write_file_atomically((run / "report.html").string(), html);
  return (run / "report.html").string();
}

}  // namespace mcdl::tools
