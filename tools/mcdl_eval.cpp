// mcdl_eval: GCD clustering accuracy (v1, v2, v2b: All / Old / New) of a predictions CSV, such
// as the predictions.csv that mcdl_train writes into a run directory.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "engine/error.h"
#include "mcdl/evaluation/cluster_accuracy.h"
#include "tools/common/csv_table.h"

using namespace mcdl;

namespace {

const char* kUsage =
    "usage: mcdl_eval PREDICTIONS.csv [--old-classes N | --old-list FILE]\n"
    "\n"
    "Prints the GCD clustering accuracies of the predictions: v2 (one Hungarian assignment\n"
    "over all samples; the reported metric), v2b (the same assignment, per-class accuracies\n"
    "averaged) and v1 (separate assignments for old- and new-class samples), each as\n"
    "All / Old / New.\n"
    "\n"
    "PREDICTIONS.csv has a header line with the columns id, prediction and label (non-negative\n"
    "integers; ids unique) and, optionally, a column 'old' or 'split' that marks each sample's\n"
    "class as old or new (values old/new, 1/0 or true/false). Which samples are old:\n"
    "  --old-classes N   labels 0..N-1 are the old classes\n"
    "  --old-list FILE   the old class labels, separated by spaces, commas or newlines\n"
    "  (neither)         the 'old' or 'split' column\n"
    "An option takes precedence over the column.\n"
    "\n"
    "Exit status: 0 on success, 1 on any error (one line on stderr naming the file, line and\n"
    "column).\n";

struct Arguments {
  std::string predictions;
  int64_t old_classes = -1;
  std::string old_list;
};

int64_t parse_count(const std::string& text, const char* option) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  check(!text.empty() && *end == '\0' && value >= 0, option, " needs a non-negative integer, got '", text, "'");
  return value;
}

Arguments parse_arguments(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* option) {
      check(i + 1 < argc, option, " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "--old-classes") {
      args.old_classes = parse_count(value("--old-classes"), "--old-classes");
    } else if (arg == "--old-list") {
      args.old_list = value("--old-list");
    } else if (arg.size() > 1 && arg[0] == '-') {
      fail("unknown option '", arg, "' (see --help)");
    } else {
      check(args.predictions.empty(), "more than one predictions file: '", args.predictions, "' and '", arg, "'");
      args.predictions = arg;
    }
  }
  check(!args.predictions.empty(), "no predictions file given (see --help)");
  check(args.old_classes < 0 || args.old_list.empty(), "give either --old-classes or --old-list, not both");
  return args;
}

std::vector<int64_t> read_old_list(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), path, ": cannot open the file");
  std::vector<int64_t> classes;
  std::string line;
  for (int64_t line_number = 1; std::getline(in, line); ++line_number) {
    for (char& c : line)
      if (c == ',' || c == '\t' || c == '\r') c = ' ';
    size_t pos = 0;
    while ((pos = line.find_first_not_of(' ', pos)) != std::string::npos) {
      const size_t end = std::min(line.find(' ', pos), line.size());
      const std::string token = line.substr(pos, end - pos);
      char* stop = nullptr;
      const long long value = std::strtoll(token.c_str(), &stop, 10);
      check(*stop == '\0' && value >= 0, path, ":", line_number, ": '", token, "' is not a class label (an integer ≥ 0)");
      classes.push_back(value);
      pos = end;
    }
  }
  check(!classes.empty(), path, ": lists no class");
  return classes;
}

// The old/new column: old, 1, true → old; new, 0, false → new (case-insensitive).
std::vector<bool> old_column(const tools::CsvTable& table, int64_t column) {
  std::vector<bool> is_old(table.rows.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    std::string value = table.rows[r][column];
    for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (value == "old" || value == "1" || value == "true") {
      is_old[r] = true;
    } else {
      check(value == "new" || value == "0" || value == "false", table.where(static_cast<int64_t>(r), column), "'",
            table.rows[r][column], "' is neither old/new, 1/0 nor true/false");
      is_old[r] = false;
    }
  }
  return is_old;
}

std::string percent(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", value * 100.0);
  return buf;
}

int run(const Arguments& args) {
  const tools::CsvTable table = tools::read_csv(args.predictions);
  check(!table.rows.empty(), args.predictions, ": no samples after the header");
  const int64_t id_col = table.require_column("id"), pred_col = table.require_column("prediction"),
                label_col = table.require_column("label");
  std::vector<int64_t> y_true, y_pred;
  std::map<std::string, int64_t> first_line_of_id;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const int64_t row = static_cast<int64_t>(r);
    const auto [it, inserted] = first_line_of_id.emplace(table.rows[r][id_col], table.line_numbers[r]);
    check(inserted, table.where(row, id_col), "id '", table.rows[r][id_col], "' repeats line ", it->second);
    y_pred.push_back(table.integer(row, pred_col, 0));
    y_true.push_back(table.integer(row, label_col, 0));
  }

  std::vector<bool> is_old;
  std::string source;
  if (args.old_classes >= 0) {
    is_old = old_mask_from_class_count(y_true, args.old_classes);
    source = "--old-classes " + std::to_string(args.old_classes);
  } else if (!args.old_list.empty()) {
    is_old = old_mask_from_classes(y_true, read_old_list(args.old_list));
    source = "--old-list " + args.old_list;
  } else {
    const int64_t old_col = table.column("old") >= 0 ? table.column("old") : table.column("split");
    check(old_col >= 0, args.predictions,
          ": no column 'old' or 'split' says which samples are old; give --old-classes N or --old-list FILE");
    is_old = old_column(table, old_col);
    source = "column '" + table.header[old_col] + "'";
  }

  int64_t old_samples = 0;
  for (bool o : is_old) old_samples += o;
  std::printf("%s: %zu samples (%lld old, %lld new; old by %s), accuracy in %%\n", args.predictions.c_str(), y_true.size(),
              static_cast<long long>(old_samples), static_cast<long long>(y_true.size() - old_samples), source.c_str());
  const struct {
    const char* name;
    ClusterAccuracy acc;
  } lines[] = {{"v2 ", split_cluster_acc_v2(y_true, y_pred, is_old)},
               {"v2b", split_cluster_acc_v2b(y_true, y_pred, is_old)},
               {"v1 ", split_cluster_acc_v1(y_true, y_pred, is_old)}};
  for (const auto& line : lines)
    std::printf("%s  All %s | Old %s | New %s\n", line.name, percent(line.acc.all).c_str(),
                percent(line.acc.old_classes).c_str(), percent(line.acc.new_classes).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  try {
    return run(parse_arguments(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mcdl_eval: %s\n", e.what());
    return 1;
  }
}
