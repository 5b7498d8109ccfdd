// Runs ./mcdl_eval (built at the repository root before the tests by `make test`) on small
// CSV files: exit codes, the printed accuracies and the one-line errors.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "tests/tool_binary.h"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int exit_code;
  std::string out, err;
};

// __FILE__ is relative to the repository root, where the tests run.
fs::path repo_root() { return fs::absolute(fs::path(__FILE__)).parent_path().parent_path().parent_path(); }

fs::path scratch_dir() {
  const fs::path dir = fs::temp_directory_path() / ("mcdl_eval_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path path = scratch_dir() / name;
  std::ofstream(path) << text;
  return path;
}

Outcome run_eval(const std::string& arguments) {
  const fs::path tool = mcdl::testing::tool_binary("mcdl_eval", repo_root().string());
  REQUIRE_MESSAGE(fs::exists(tool), tool.string() << " is missing: build it first (make mcdl_eval)");
  const fs::path out = scratch_dir() / "stdout.txt", err = scratch_dir() / "stderr.txt";
  const std::string command = "'" + tool.string() + "' " + arguments + " > '" + out.string() + "' 2> '" + err.string() + "'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), slurp(out), slurp(err)};
}

const char* kPredictions =
    "id,prediction,label,old\n"
    "10,2,0,old\n"
    "11,2,0,old\n"
    "12,0,1,old\n"
    "13,0,1,old\n"
    "14,3,2,new\n"
    "15,1,2,new\n"
    "16,1,3,new\n";

}  // namespace

TEST_CASE("mcdl_eval: --help and the accuracies of a predictions file") {
  const Outcome help = run_eval("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("usage: mcdl_eval PREDICTIONS.csv") == 0);

  const fs::path csv = write_file("predictions.csv", kPredictions);
  const Outcome result = run_eval("'" + csv.string() + "'");
  CHECK(result.exit_code == 0);
  CHECK(result.err.empty());
  // v2: one map for all (6/7 right); v2b: class accuracies 1, 1, 1/2, 1; v1 as v2 here.
  CHECK(result.out.find("7 samples (4 old, 3 new; old by column 'old')") != std::string::npos);
  CHECK(result.out.find("v2   All 85.71 | Old 100.00 | New 66.67") != std::string::npos);
  CHECK(result.out.find("v2b  All 87.50 | Old 100.00 | New 75.00") != std::string::npos);
  CHECK(result.out.find("v1   All 85.71 | Old 100.00 | New 66.67") != std::string::npos);

  // The options override the column: only class 0 is old.
  const Outcome by_count = run_eval("'" + csv.string() + "' --old-classes 1");
  CHECK(by_count.exit_code == 0);
  CHECK(by_count.out.find("v2   All 85.71 | Old 100.00 | New 80.00") != std::string::npos);
  const fs::path list = write_file("old.txt", "0\n");
  const Outcome by_list = run_eval("--old-list '" + list.string() + "' '" + csv.string() + "'");
  CHECK(by_list.exit_code == 0);
  CHECK(by_list.out.find("v2   All 85.71 | Old 100.00 | New 80.00") != std::string::npos);

  // A 'split' column with 1/0, quoted fields and a CRLF line ending.
  const fs::path split = write_file("split.csv", "id,label,prediction,split\r\n\"a\",0,1,1\r\nb,1,0,0\r\n");
  const Outcome by_split = run_eval("'" + split.string() + "'");
  CHECK(by_split.exit_code == 0);
  CHECK(by_split.out.find("v2   All 100.00 | Old 100.00 | New 100.00") != std::string::npos);
}

TEST_CASE("mcdl_eval: malformed input exits 1 with one line naming the file, line and column") {
  struct Case {
    const char* name;
    std::string csv, arguments, message;
  };
  const Case cases[] = {
      {"bad_int.csv", "id,prediction,label,old\n1,0,0,old\n2,x,1,new\n", "", ":3: column 'prediction': 'x' is not an integer ≥ 0"},
      {"negative.csv", "id,prediction,label,old\n1,0,-2,old\n", "", ":2: column 'label': '-2' is not an integer ≥ 0"},
      {"fields.csv", "id,prediction,label,old\n1,0,0\n", "", ":2: 3 fields, but the header has 4"},
      {"no_label.csv", "id,prediction,old\n1,0,old\n", "", ": no column 'label' in the header (id,prediction,old)"},
      {"dup.csv", "id,prediction,label,old\n7,0,0,old\n7,1,1,new\n", "", ":3: column 'id': id '7' repeats line 2"},
      {"bad_old.csv", "id,prediction,label,old\n1,0,0,maybe\n", "", ":2: column 'old': 'maybe' is neither old/new"},
      {"no_old.csv", "id,prediction,label\n1,0,0\n", "", "no column 'old' or 'split' says which samples are old"},
      {"empty.csv", "", "", ": the file is empty (no header line)"},
      {"twice.csv", "id,prediction,label,id\n1,0,0,1\n", "", ":1: header names column 'id' twice"},
      {"unnamed.csv", "id,,label\n1,0,0\n", "", ":1: header column 2 has no name"},
      {"header_only.csv", "id,prediction,label\n", "", ": no samples after the header"},
      {"quote.csv", "id,prediction,label\n\"1,0,0\n", "", ":2: field 1 has an unterminated quote"},
      {"option.csv", "id,prediction,label\n1,0,0\n", "--old-classes two", "--old-classes needs a non-negative integer"},
      {"unknown.csv", "id,prediction,label\n1,0,0\n", "--frobnicate", "unknown option '--frobnicate'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const fs::path path = write_file(c.name, c.csv);
    const Outcome result = run_eval("'" + path.string() + "' " + c.arguments);
    CHECK(result.exit_code == 1);
    CHECK(result.out.empty());
    CHECK(result.err.rfind("mcdl_eval: ", 0) == 0);
    CHECK(result.err.find(c.message) != std::string::npos);
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  }
  const Outcome missing = run_eval("/nonexistent/predictions.csv");
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("/nonexistent/predictions.csv: cannot open the file") != std::string::npos);
  CHECK(run_eval("").exit_code == 1);
  fs::remove_all(scratch_dir());
}
