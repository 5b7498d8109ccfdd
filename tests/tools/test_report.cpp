// mcdl_report's pictures of a run, for people: curves.svg draws every per-epoch column of
// metrics.csv in its panel (a missing value breaks its line) with axis titles and legends;
// confusion.svg and embedding.svg name the classes; report.html is titled with the method and
// the dataset, shows percentages with one decimal and 1-based epochs, and says so where there is
// nothing to score; a directory without metrics is refused.
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
#include "tools/common/report_text.h"
#include "tools/common/run_classes.h"
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

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// A number with six or more decimals, as metrics.csv writes them ("0.55123457"), with what
// surrounds it (empty: none): no place for it on a page for people, whose longest numbers are
// the console's (lr 0.02508, loss 4.1235).
// (Scanned by hand: std::regex trips GCC 12's maybe-uninitialized warning under make test-asan.)
std::string long_fraction(const std::string& text) {
  auto digit = [&](size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
  for (size_t dot = 1; dot < text.size(); ++dot) {
    if (text[dot] != '.' || !digit(dot - 1)) continue;
    size_t end = dot + 1;
    while (digit(end)) ++end;
    if (end - dot - 1 >= 6) {
      const size_t from = dot > 41 ? dot - 41 : 0;
      return text.substr(from, std::min(text.size(), end + 20) - from);
    }
  }
  return "";
}

// Whether `text` holds "<td>" + one to three digits + "." + one digit + "%</td>".
bool has_one_decimal_percentage(const std::string& text) {
  for (size_t at = text.find("<td>"); at != std::string::npos; at = text.find("<td>", at + 1)) {
    size_t i = at + 4, digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
    if (digits >= 1 && digits <= 3 && text.compare(i, 1, ".") == 0 && i + 1 < text.size() && text[i + 1] >= '0' &&
        text[i + 1] <= '9' && text.compare(i + 2, 6, "%</td>") == 0)
      return true;
  }
  return false;
}

fs::path scratch_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("mcdl-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("report test helpers: a long fraction and a one-decimal percentage are found") {
  CHECK(long_fraction("lr 0.02508 loss 4.1235") == "");
  CHECK(long_fraction("all 0.55123457,") == "all 0.55123457,");
  CHECK(has_one_decimal_percentage("<tr><td>55.1%</td></tr>"));
  CHECK_FALSE(has_one_decimal_percentage("<td>55.12%</td><td>1234.5%</td><td>.5%</td>"));
}

TEST_CASE("svg charts: one polyline per run of values, legends, axis titles, a NaN breaks the line") {
  const std::string svg = tools::line_charts_svg(
      {1, 2, 3, 4}, {{"Accuracy", {{"All", {50, 60, 70, 80}}, {"New", {40, std::nan(""), 60, 70}}}, "accuracy (%)"},
                     {"Loss", {{"loss", {3, 2, 1.5, 1}}}, "loss"}});
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(contains(svg, "</svg>"));
  CHECK(count(svg, "<polyline") == 3);  // all, new from epoch 3 (its first value stands alone), loss
  CHECK(count(svg, "<circle") == 11);   // a marker per value, the NaN none
  for (const char* label : {">Accuracy<", ">Loss<", ">All<", ">New<", ">loss<", ">accuracy (%)<", ">epoch<"})
    CHECK(contains(svg, label));
  CHECK(count(svg, "rotate(-90)") == 2);  // a y axis title per panel
}

TEST_CASE("report text: percentages with one decimal, 1-based epochs, labels and titles for people") {
  CHECK(tools::percent_text(0.55) == "55.0%");
  CHECK(tools::percent_text(0.123456789) == "12.3%");
  CHECK(tools::percent_text(std::nan("")) == "–");
  CHECK(tools::column_value("all", 0.55123456) == "55.1%");
  CHECK(tools::column_value("test_new_v2b", 1.0) == "100.0%");
  CHECK(tools::column_value("val_old", 0.5) == "50.0%");
  CHECK(tools::column_value("high_pseudo_acc", 0.8) == "80.0%");
  CHECK(tools::column_value("val_high_precision", 0.25) == "25.0%");
  CHECK(tools::column_value("epoch", 0) == "1");  // metrics.csv counts from 0, people from 1
  CHECK(tools::column_value("epoch", 9) == "10");
  CHECK(tools::column_value("loss", 4.123456789) == "4.1235");
  CHECK(tools::column_value("lr", 0.0999383) == "0.09994");
  CHECK(tools::column_value("lr", 0.000123456) == "0.00012");
  CHECK(tools::column_value("seconds", 1.44) == "1.4 s");
  CHECK(tools::column_value("high", 20) == "20");
  CHECK(tools::column_value("loss", std::nan("")) == "–");
  CHECK_FALSE(tools::is_fraction_column("high"));
  CHECK_FALSE(tools::is_fraction_column("val_high"));
  CHECK_FALSE(tools::is_fraction_column("loss"));
  CHECK(tools::column_label("all") == "All");
  CHECK(tools::column_label("test_old") == "test Old");
  CHECK(tools::column_label("val_new") == "validation New");
  CHECK(tools::column_label("new_v2b") == "New (balanced)");
  CHECK(tools::column_label("l_sup") == "l_sup");  // the console's name
  CHECK(tools::column_label("high_pseudo_acc") == "pseudo acc., high");
  CHECK(tools::column_label("eval_cluster_seconds") == "evaluation: clustering and matching");
  CHECK(tools::method_title("simgcd+mcdl") == "SimGCD + MCDL");
  CHECK(tools::method_title("gcd") == "GCD");
  CHECK(tools::dataset_title("fmnist") == "Fashion-MNIST");
  CHECK(tools::dataset_title("cub") == "CUB-200-2011");
  CHECK(tools::dataset_title("mystery") == "mystery");
}

TEST_CASE("run class names: labels.csv, else classes.csv's old classes, else 'class <label>'") {
  const fs::path run = scratch_dir("run-classes");
  CHECK(tools::run_class_names(run.string(), 2) == std::vector<std::string>{"class 0", "class 1"});
  std::ofstream(run / "classes.csv") << "cluster,class_id,name\n0,4,Coat\n";
  CHECK(tools::run_class_names(run.string(), 2) == std::vector<std::string>{"Coat", "class 1"});
  std::ofstream(run / "labels.csv") << "label,class_id,name,group\n0,4,Coat,old\n1,7,\"Sneaker, white\",new\n2,9,,new\n";
  CHECK(tools::run_class_names(run.string(), 3) == std::vector<std::string>{"Coat", "Sneaker, white", "class 2"});
  fs::remove_all(run);
}

TEST_CASE("mcdl_report: the pictures and the page of a run directory, for people") {
  const fs::path run = scratch_dir("report");
  // Two epochs, metrics.csv's 0-based numbering and its eight significant digits.
  std::ofstream(run / "metrics.csv") << "epoch,lr,loss,cls,l_sup,all,old,new,high,medium,low,high_pseudo_acc,seconds\n"
                                        "0,0.1,5.1234567,2.0,0,0.40123457,0.5,0.35,0,0,100,nan,1.5\n"
                                        "1,0.05,4.2345678,1.1,0.3,0.55123457,0.6,0.52345678,20,5,75,0.8,1.4\n";
  std::ofstream(run / "config.json") << R"({"dataset": "fmnist", "method": "simgcd+mcdl", "epochs": 2})";
  const std::string html_path = tools::write_run_report(run.string());
  const std::string svg = testing::read_text(run / "curves.svg"), html = testing::read_text(html_path);
  CHECK(count(svg, "<polyline") == 3 + 3 + 3 + 0);  // accuracy, losses, buckets; one pseudo-accuracy value
  for (const char* text : {"Pseudo-label accuracy", ">accuracy (%)<", ">loss<", ">images<", ">All<", ">Old<", ">New<"})
    CHECK(contains(svg, text));
  // The premise's panels: the buckets against selection by confidence, the high bucket's make-up,
  // the views on the labelled rows (one value each: no line, a panel all the same).
  std::ofstream(run / "metrics.csv") << "epoch,lr,loss,all,old,new,high,medium,low,high_pseudo_acc,medium_pseudo_acc,"
                                        "high_conf_acc,medium_conf_acc,high_clusters,high_top_share,high_old_share,"
                                        "labelled_weak_acc,labelled_strong_acc,val_high_precision,"
                                        "val_high_conf_precision,seconds\n"
                                        "0,0.1,5.0,0.4,0.5,0.35,10,5,85,0.6,0.4,0.5,0.3,3,0.5,0.7,0.9,0.6,0.8,0.7,1.5\n"
                                        "1,0.05,4.0,0.5,0.6,0.45,20,5,75,0.7,0.5,0.6,0.35,4,0.4,0.6,0.95,0.7,0.85,0.75,1.4\n";
  tools::write_run_report(run.string());
  const std::string premise = testing::read_text(run / "curves.svg");
  for (const char* text : {"against as many samples chosen by confidence", "pseudo acc., as many by confidence as high",
                           "The same on the validation images", "Make-up of the high bucket",
                           "known classes' share", "labelled rows, strong view"})
    CHECK(contains(premise, text));
  CHECK(contains(testing::read_text(run / "report.html"), "<td>95.0%</td>"));  // labelled_weak_acc as a percentage
  std::ofstream(run / "metrics.csv") << "epoch,lr,loss,cls,l_sup,all,old,new,high,medium,low,high_pseudo_acc,seconds\n"
                                        "0,0.1,5.1234567,2.0,0,0.40123457,0.5,0.35,0,0,100,nan,1.5\n"
                                        "1,0.05,4.2345678,1.1,0.3,0.55123457,0.6,0.52345678,20,5,75,0.8,1.4\n";
  CHECK(contains(html, "<title>SimGCD + MCDL on Fashion-MNIST"));
  CHECK(contains(html, "<h1>SimGCD + MCDL on Fashion-MNIST</h1>"));
  CHECK(contains(html, "<svg"));
  CHECK(contains(html, "<th>method</th><td>simgcd+mcdl</td>"));
  // The accuracies of the last epoch as percentages with one decimal; epochs counted from 1.
  CHECK(contains(html, "Accuracy after epoch 2 of 2"));
  CHECK(contains(html, "<td>55.1%</td><td>60.0%</td><td>52.3%</td>"));
  CHECK(contains(html, "Epoch 2 of 2 in numbers"));
  CHECK(contains(html, "<td>4.2346</td>"));
  CHECK_FALSE(contains(html, "epoch 0"));
  CHECK(long_fraction(html) == "");
  CHECK_FALSE(contains(html, ">nan<"));
  CHECK_FALSE(fs::exists(run / "confusion.svg"));  // no predictions.csv yet

  // Three classes (0 and 1 old) predicted as clusters 2, 0, 1, class 1 once in cluster 2 (class
  // 0's): the Hungarian order puts each class's cluster on the diagonal, named by its class.
  std::ofstream(run / "labels.csv") << "label,class_id,name,group\n0,0,T-shirt/top,old\n1,1,Trouser,old\n"
                                       "2,8,Bag & <belt>,new\n";
  std::ofstream(run / "predictions.csv") << "id,prediction,label,old\n1,2,0,old\n2,2,0,old\n3,0,1,old\n4,0,1,old\n"
                                            "5,2,1,old\n6,1,2,new\n7,1,2,new\n8,5,-1,unknown\n";
  tools::write_run_report(run.string());
  const std::string confusion = testing::read_text(run / "confusion.svg");
  CHECK(confusion.rfind("<svg", 0) == 0);
  for (const char* text : {">T-shirt/top<", ">Trouser<", ">Bag &amp; &lt;belt&gt;<", ">true class<", "predicted cluster",
                           ">0%<", ">100%<", "share of the class's images"})
    CHECK(contains(confusion, text));
  CHECK(contains(confusion, "Trouser in the cluster of Trouser: 66.7% (2 of 3 images)"));
  CHECK(contains(confusion, "Trouser in the cluster of T-shirt/top: 33.3% (1 of 3 images)"));
  CHECK(contains(confusion, "T-shirt/top in the cluster of T-shirt/top: 100.0% (2 of 2 images)"));
  CHECK(contains(confusion, ">66.7<"));  // the share written in the cell
  CHECK_FALSE(contains(confusion, "cluster 5"));  // only the unlabelled image is in it: not scored
  CHECK(count(confusion, "stroke=\"#dc0000\"") == 3);  // the old / new boundary across, down, and in the legend
  std::string page = testing::read_text(run / "report.html");
  CHECK(contains(page, "Classes against clusters"));
  CHECK(contains(page, "<td>Trouser</td><td>known</td><td>3</td><td>66.7%</td><td>T-shirt/top (33.3%)</td>"));
  CHECK(contains(page, "<td>Bag &amp; &lt;belt&gt;</td><td>new</td><td>2</td><td>100.0%</td><td>–</td>"));
  CHECK_FALSE(fs::exists(run / "embedding.svg"));  // no features.npy yet

  // features.npy row for row with predictions.csv: the t-SNE map. 8 rows, 4 dimensions.
  std::vector<float> features;
  RandomStream stream(1, stream_id("report-test"));
  for (int i = 0; i < 8 * 4; ++i) features.push_back(static_cast<float>(stream.normal()));
  write_npy((run / "features.npy").string(), from_vector(features, {8, 4}));
  tools::write_run_report(run.string());
  const std::string embedding = testing::read_text(run / "embedding.svg");
  for (const char* text : {"t-SNE dimension 1", "t-SNE dimension 2", "Colour: predicted cluster", ">T-shirt/top<",
                           ">Trouser<", ">Bag &amp; &lt;belt&gt;<", ">cluster 5<", "image of a known (old) class",
                           "its cluster is not its class's"})
    CHECK(contains(embedding, text));
  CHECK(count(embedding, "<title>") == 8);  // a tooltip per image
  CHECK(contains(embedding, "<title>Trouser (known class) in the cluster of T-shirt/top</title>"));
  CHECK(count(embedding, "r=\"5.6\"") == 1 + 1);  // the one misplaced image's ring, and the legend's
  page = testing::read_text(run / "report.html");
  CHECK(contains(page, "t-SNE dimension 1"));
  CHECK(long_fraction(page) == "");
  write_npy((run / "features.npy").string(), from_vector(features, {4, 8}));
  CHECK_THROWS_WITH(tools::write_run_report(run.string()), doctest::Contains("not from the same evaluation"));

  CHECK_THROWS_WITH(tools::write_run_report((run / "nothing").string()), doctest::Contains("has no metrics.csv"));
  fs::remove_all(run);
}

TEST_CASE("mcdl_report: a run without labels for its unlabelled images says there is nothing to score") {
  const fs::path run = scratch_dir("report-unlabelled");
  std::ofstream(run / "metrics.csv") << "epoch,lr,loss,all,old,new,high,medium,low,high_pseudo_acc,medium_pseudo_acc\n"
                                        "0,0.1,5.1234567,nan,nan,nan,3,2,1,nan,nan\n";
  std::ofstream(run / "config.json") << R"({"dataset": "folder", "data-root": "/data/shoes/", "method": "simgcd"})";
  std::ofstream(run / "predictions.csv") << "id,prediction,label,old\n1,2,-1,unknown\n2,0,-1,unknown\n3,1,-1,unknown\n";
  const std::string html = testing::read_text(tools::write_run_report(run.string()));
  CHECK(contains(html, "<title>SimGCD on a folder dataset (shoes)"));
  CHECK(contains(html, "no labels for the unlabelled images: nothing to score"));
  CHECK(contains(html, "Accuracy after epoch 1<"));
  CHECK_FALSE(contains(html, ">nan<"));
  CHECK_FALSE(fs::exists(run / "confusion.svg"));  // no class to set against the clusters
  const std::string svg = testing::read_text(run / "curves.svg");
  CHECK_FALSE(contains(svg, "Accuracy on the unlabelled"));  // a panel of nothing is left out
  CHECK_FALSE(contains(svg, "Pseudo-label accuracy"));
  CHECK(contains(svg, "Credibility buckets"));
  // The images' map is still drawn, coloured by cluster, without rings.
  std::vector<float> features = {0, 0, 1, 0, 0, 1};
  write_npy((run / "features.npy").string(), from_vector(features, {3, 2}));
  tools::write_run_report(run.string());
  const std::string embedding = testing::read_text(run / "embedding.svg");
  CHECK(contains(embedding, ">cluster 0<"));
  CHECK(contains(embedding, "an image (its class unknown)"));
  CHECK_FALSE(contains(embedding, "r=\"5.6\""));
  fs::remove_all(run);
}

TEST_CASE("report.html of a trained run renders in headless Chromium, for people, without console errors" *
          doctest::test_suite("slow")) {
  std::string browser;
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(candidate)) browser = candidate;
  REQUIRE_MESSAGE(!browser.empty(), "this test needs Debian's chromium: apt-get install chromium");
  const fs::path scratch = scratch_dir("report-browser");
  TrainConfig c = testing::squares_run_config(testing::coloured_squares_dataset("report"), scratch / "run");
  c.method = parse_method("simgcd+mcdl");
  c.epochs = 3;
  c.mu = 1;
  c.mcdl_start = 1;
  run_training(c, false);
  const std::string html = tools::write_run_report(c.out);
  for (const char* picture : {"curves.svg", "confusion.svg", "embedding.svg"}) CHECK(fs::exists(fs::path(c.out) / picture));

  const std::string page = "file://" + fs::absolute(html).string();
  const fs::path shot = scratch / "shot.png", log = scratch / "chromium.log", dom = scratch / "dom.html";
  const std::string flags = " --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,5000 ";
  const std::string command = browser + flags + "--enable-logging=stderr --v=0 --screenshot=" + shot.string() + " " +
                              page + " > /dev/null 2> " + log.string();
  REQUIRE(std::system(command.c_str()) == 0);
  const std::string messages = testing::read_text(log);
  INFO("chromium: ", messages);
  CHECK(messages.find("CONSOLE") == std::string::npos);  // no console message: no script or load error
  CHECK(messages.find("Failed to load") == std::string::npos);
  const Image shot_image = decode_image(shot.string());
  const auto white = std::count(shot_image.pixels.begin(), shot_image.pixels.end(), uint8_t{255});
  CHECK(static_cast<double>(white) < 0.97 * static_cast<double>(shot_image.pixels.size()));  // not blank

  // The page as the browser built it: what a reader sees.
  const std::string dump = browser + flags + "--dump-dom " + page + " > " + dom.string() + " 2> /dev/null";
  REQUIRE(std::system(dump.c_str()) == 0);
  const std::string text = testing::read_text(dom);
  INFO("page: ", text.substr(0, 3000));
  CHECK(contains(text, "<title>SimGCD + MCDL on a folder dataset (mcdl-report-"));
  CHECK(has_one_decimal_percentage(text));
  CHECK(long_fraction(text) == "");
  CHECK(contains(text, "Accuracy after epoch 3 of 3"));
  CHECK(contains(text, "Epoch 3 of 3 in numbers"));
  // The squares' class folders by name (labels.csv), not "class 4" (no names known).
  for (const char* name : {">class0<", ">class2<", ">class4<"}) CHECK(contains(text, name));
  for (const char* axis : {">true class<", "predicted cluster", ">epoch<", ">accuracy (%)<", "t-SNE dimension 1"})
    CHECK(contains(text, axis));
  fs::remove_all(scratch);
}
