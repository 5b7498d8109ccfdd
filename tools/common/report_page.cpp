#include "tools/common/report_page.h"

#include <cmath>
#include <filesystem>

#include "tools/common/report_text.h"
#include "tools/common/svg_chart.h"

namespace mcdl::tools {
namespace {

// The rows of the accuracy table: a column prefix, and the images it scores.
struct ScoredSet {
  std::string prefix, images;
};
const ScoredSet kScoredSets[] = {{"", "the unlabelled training images (transductive)"},
                                 {"test_", "the test split (inductive)"},
                                 {"val_", "the validation images (held-out labelled images)"}};

std::string field(const CsvTable& metrics, size_t row, const std::string& column) {
  const int64_t c = metrics.column(column);
  return c < 0 ? "" : metrics.rows[row][static_cast<size_t>(c)];
}

double value(const CsvTable& metrics, size_t row, const std::string& column) {
  return metric_value(field(metrics, row, column));
}

bool is_accuracy_triple(const std::string& column) {
  for (const ScoredSet& set : kScoredSets)
    for (const char* suffix : {"", "_v2b"})
      for (const char* part : {"all", "old", "new"})
        if (column == set.prefix + part + suffix) return true;
  return false;
}

// "3 of 10" (1-based), or "3" when the planned number is unknown.
std::string epoch_of(const CsvTable& metrics, size_t row, int64_t planned_epochs) {
  const std::string epoch = column_value("epoch", value(metrics, row, "epoch"));
  return planned_epochs > 0 ? epoch + " of " + std::to_string(planned_epochs) : epoch;
}

}  // namespace

double metric_value(const std::string& text) {
  if (text.empty() || text == "nan") return std::nan("");
  try {
    return std::stod(text);
  } catch (const std::exception&) {
    return std::nan("");
  }
}

std::string run_title(const nlohmann::ordered_json& config, const std::string& run_dir) {
  auto text = [&](const char* key) {
    return config.is_object() && config.contains(key) && config[key].is_string() ? config[key].get<std::string>() : "";
  };
  const std::string method = text("method"), dataset = text("dataset");
  if (method.empty() || dataset.empty()) return "Run " + run_dir;
  std::string title = method_title(method) + " on " + dataset_title(dataset);
  if (dataset == "folder" && !text("data-root").empty()) {  // the folder's own name: "shoes" of /data/shoes/
    std::filesystem::path root = std::filesystem::path(text("data-root")).lexically_normal();
    if (!root.has_filename()) root = root.parent_path();
    title += " (" + root.filename().string() + ")";
  }
  return title;
}

std::string accuracy_section(const CsvTable& metrics, int64_t planned_epochs, const LabelsKnown& labels) {
  std::vector<std::pair<ScoredSet, std::string>> sets;  // with the column suffix ("" or "_v2b")
  for (const ScoredSet& set : kScoredSets)
    for (const char* suffix : {"", "_v2b"})
      if (metrics.column(set.prefix + "all" + suffix) >= 0) sets.push_back({set, suffix});
  if (sets.empty() || metrics.rows.empty()) return "";
  // The last epoch that scored anything (with --eval-every, or a run stopped early, not every one did).
  size_t row = metrics.rows.size() - 1;
  for (size_t r = metrics.rows.size(); r-- > 0;) {
    bool scored = false;
    for (const auto& [set, suffix] : sets) scored = scored || std::isfinite(value(metrics, r, set.prefix + "all" + suffix));
    if (scored) {
      row = r;
      break;
    }
  }
  std::string html = "<h2>Accuracy after epoch " + epoch_of(metrics, row, planned_epochs) +
                     "</h2>\n<table class=\"accuracy\">\n<tr><th>images scored</th><th>All</th><th>Old</th>"
                     "<th>New</th></tr>\n";
  for (const auto& [set, suffix] : sets) {
    const std::string name = set.images + (suffix.empty() ? "" : ", balanced (v2b)");
    html += "<tr><th>" + markup_escape(name) + "</th>";
    const double all = value(metrics, row, set.prefix + "all" + suffix);
    if (std::isfinite(all)) {
      for (const char* part : {"all", "old", "new"})
        html += "<td>" + percent_text(value(metrics, row, set.prefix + part + suffix)) + "</td>";
    } else {
      const std::optional<bool> known = set.prefix.empty() ? labels.unlabelled : set.prefix == "test_" ? labels.test
                                                                                                        : std::optional<bool>(true);
      const std::string images = set.prefix.empty() ? "the unlabelled images" : set.prefix == "test_" ? "the test images"
                                                                                                        : "the validation images";
      html += "<td colspan=\"3\" class=\"none\">" +
              (known == false ? "no labels for " + images + ": nothing to score" : std::string("not scored at this epoch")) +
              "</td>";
    }
    html += "</tr>\n";
  }
  return html + "</table>\n<p class=\"note\">Clustering accuracy (v2): every cluster counts as the class that one "
                "Hungarian match over all the scored images gives it. All: every image; Old: the images of the known "
                "classes; New: those of the new classes.</p>\n";
}

std::string last_epoch_section(const CsvTable& metrics, int64_t planned_epochs) {
  if (metrics.rows.empty()) return "";
  const size_t row = metrics.rows.size() - 1;
  std::string html = "<h2>Epoch " + epoch_of(metrics, row, planned_epochs) +
                     " in numbers</h2>\n<table class=\"numbers\">\n";
  for (const std::string& column : metrics.header) {
    if (column == "epoch" || is_accuracy_triple(column)) continue;
    html += "<tr><th>" + markup_escape(column_label(column)) + (column_label(column) == column ? "" : " <code>" + markup_escape(column) + "</code>") +
            "</th><td>" + column_value(column, value(metrics, row, column)) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string every_epoch_section(const CsvTable& metrics) {
  if (metrics.rows.empty()) return "";
  std::string html = "<details><summary>Every epoch's numbers (metrics.csv)</summary>\n<table class=\"epochs\">\n<tr>";
  for (const std::string& column : metrics.header) html += "<th>" + markup_escape(column) + "</th>";
  html += "</tr>\n";
  for (size_t r = 0; r < metrics.rows.size(); ++r) {
    html += "<tr>";
    for (const std::string& column : metrics.header) html += "<td>" + column_value(column, value(metrics, r, column)) + "</td>";
    html += "</tr>\n";
  }
  return html + "</table>\n<p class=\"note\">Epochs counted from 1; metrics.csv counts them from 0.</p></details>\n";
}

std::string settings_section(const nlohmann::ordered_json& config) {
  if (!config.is_object()) return "";
  std::string html = "<h2>Settings (config.json)</h2>\n<table class=\"settings\">\n";
  for (const auto& [key, entry] : config.items())
    html += "<tr><th>" + markup_escape(key) + "</th><td>" +
            markup_escape(entry.is_string() ? entry.get<std::string>() : entry.dump()) + "</td></tr>\n";
  return html + "</table>\n";
}

}  // namespace mcdl::tools
