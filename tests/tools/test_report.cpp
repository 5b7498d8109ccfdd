// mcdl_report's pictures of a run: curves.svg draws every per-epoch column of metrics.csv in
// its panel (a missing value breaks its line), report.html holds the charts, the last epoch and
// the settings; a directory without metrics is refused.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "data/decode.h"
#include "engine/random.h"
#include "io/npy.h"
#include "mcdl/harness/run.h"
#include "tests/synthetic_folder_dataset.h"
#include "tools/common/run_report.h"
#include "tools/common/svg_chart.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("svg charts: one polyline per run of values, legends, a NaN breaks the line") {
  const std::string svg = tools::line_charts_svg(
      {1, 2, 3, 4}, {{"Accuracy", {{"all", {0.5, 0.6, 0.7, 0.8}}, {"new", {0.4, std::nan(""), 0.6, 0.7}}}},
                     {"Loss", {{"loss", {3, 2, 1.5, 1}}}}});
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "<polyline") == 3);  // all, new from epoch 3 (its first value stands alone), loss
  CHECK(count(svg, "<circle") == 11);   // a marker per value, the NaN none
  for (const char* label : {">Accuracy<", ">Loss<", ">all<", ">new<", ">loss<"}) CHECK(svg.find(label) != std::string::npos);
}

TEST_CASE("mcdl_report: curves.svg and report.html in the run directory") {
  const fs::path run = fs::temp_directory_path() / ("mcdl-report-" + std::to_string(::getpid()));
  fs::create_directories(run);
  std::ofstream(run / "metrics.csv") << "epoch,lr,loss,cls,l_sup,all,old,new,high,medium,low,high_pseudo_acc,seconds\n"
                                        "0,0.1,5.1,2.0,0,0.40,0.5,0.35,0,0,100,nan,1.5\n"
                                        "1,0.05,4.2,1.1,0.3,0.55,0.6,0.52,20,5,75,0.8,1.4\n";
  std::ofstream(run / "config.json") << R"({"dataset": "folder", "method": "simgcd+mcdl", "epochs": 2})";
  const std::string html_path = tools::write_run_report(run.string());
  const std::string svg = testing::read_text(run / "curves.svg"), html = testing::read_text(html_path);
  CHECK(count(svg, "<polyline") == 3 + 3 + 3 + 0);  // accuracy, losses, buckets; one pseudo-accuracy value
  CHECK(svg.find("Pseudo-label accuracy") != std::string::npos);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("<th>method</th><td>simgcd+mcdl</td>") != std::string::npos);
  CHECK(html.find("<th>all</th><td>0.55</td>") != std::string::npos);
  CHECK_FALSE(fs::exists(run / "confusion.png"));  // no predictions.csv yet

  // Three classes (0 and 1 old) predicted as clusters 2, 0, 1, class 1 once in cluster 2: the
  // Hungarian order puts each class's cluster on the diagonal.
  std::ofstream(run / "predictions.csv") << "id,prediction,label,old\n1,2,0,old\n2,2,0,old\n3,0,1,old\n4,0,1,old\n"
                                            "5,2,1,old\n6,1,2,new\n7,1,2,new\n8,5,-1,unknown\n";
  tools::write_run_report(run.string());
  const Image confusion = decode_image((run / "confusion.png").string());
  const int64_t cell = 600 / 3;  // 3 classes, 3 clusters (the unlabelled row's cluster 5 is not scored)
  CHECK(confusion.height == 3 * cell);
  CHECK(confusion.width == 3 * cell);
  auto red = [&](int64_t row, int64_t column) { return confusion.at(row * cell + cell / 2, column * cell + cell / 2, 0); };
  CHECK(red(0, 0) < 40);                 // class 0 wholly in its cluster
  CHECK(red(1, 1) < red(1, 0));          // class 1: two thirds in its own, a third in class 0's
  CHECK(red(1, 0) < 255);
  CHECK(red(2, 2) < 40);
  CHECK(red(0, 1) == 255);
  CHECK(confusion.at(2 * cell, 5, 0) == 220);  // the red line under the old classes
  CHECK(testing::read_text(run / "report.html").find("confusion.png") != std::string::npos);
  CHECK_FALSE(fs::exists(run / "embedding.png"));  // no features.npy yet

  // features.npy row for row with predictions.csv: the t-SNE picture. 8 rows, 4 dimensions.
  std::vector<float> features;
  RandomStream stream(1, stream_id("report-test"));
  for (int i = 0; i < 8 * 4; ++i) features.push_back(static_cast<float>(stream.normal()));
  write_npy((run / "features.npy").string(), from_vector(features, {8, 4}));
  tools::write_run_report(run.string());
  const Image embedding = decode_image((run / "embedding.png").string());
  CHECK(embedding.width == 600);
  CHECK(std::count(embedding.pixels.begin(), embedding.pixels.end(), uint8_t{255}) < 600 * 600 * 3);  // points drawn
  CHECK(testing::read_text(run / "report.html").find("embedding.png") != std::string::npos);
  write_npy((run / "features.npy").string(), from_vector(features, {4, 8}));
  CHECK_THROWS_WITH(tools::write_run_report(run.string()), doctest::Contains("not from the same evaluation"));

  CHECK_THROWS_WITH(tools::write_run_report((run / "nothing").string()), doctest::Contains("has no metrics.csv"));
  fs::remove_all(run);
}

TEST_CASE("report.html of a trained run renders in headless Chromium, without console errors" *
          doctest::test_suite("slow")) {
  std::string browser;
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(candidate)) browser = candidate;
  REQUIRE_MESSAGE(!browser.empty(), "this test needs Debian's chromium: apt-get install chromium");
  const fs::path scratch = fs::temp_directory_path() / ("mcdl-report-browser-" + std::to_string(::getpid()));
  TrainConfig c = testing::squares_run_config(testing::coloured_squares_dataset("report"), scratch / "run");
  c.method = parse_method("simgcd+mcdl");
  c.epochs = 3;
  c.mu = 1;
  c.mcdl_start = 1;
  run_training(c, false);
  const std::string html = tools::write_run_report(c.out);
  for (const char* picture : {"curves.svg", "confusion.png", "embedding.png"}) CHECK(fs::exists(fs::path(c.out) / picture));

  const fs::path shot = scratch / "shot.png", log = scratch / "chromium.log";
  const std::string command = browser + " --headless --no-sandbox --disable-gpu --hide-scrollbars "
                              "--window-size=1000,3000 --enable-logging=stderr --v=0 --screenshot=" + shot.string() +
                              " file://" + fs::absolute(html).string() + " > /dev/null 2> " + log.string();
  REQUIRE(std::system(command.c_str()) == 0);
  const std::string messages = testing::read_text(log);
  INFO("chromium: ", messages);
  CHECK(messages.find("CONSOLE") == std::string::npos);  // no console message: no script or load error
  CHECK(messages.find("Failed to load") == std::string::npos);
  const Image page = decode_image(shot.string());
  const auto white = std::count(page.pixels.begin(), page.pixels.end(), uint8_t{255});
  CHECK(static_cast<double>(white) < 0.97 * static_cast<double>(page.pixels.size()));  // not blank
  fs::remove_all(scratch);
}
