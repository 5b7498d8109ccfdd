// make_gcd_split against the reference's own steps run in Python
// (tests/fixtures/splits/gcd_split.txt, tools/make_split_fixtures.py), plus remapping, the
// given-labelled layout, the CSV and bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "data/gcd_split.h"
#include "engine/error.h"
#include "tests/data/split_fixtures.h"

using namespace mcdl;
using namespace mcdl::test;

namespace {

// The fixture's synthetic dataset: class of image i is (7i + i/3) mod K; old classes as listed,
// new classes the others ascending.
Dataset synthetic(int64_t n, int64_t k, const std::vector<int64_t>& old, Dataset::SubsetOrder order) {
  Dataset d;
  d.name = "synthetic";
  d.num_classes = k;
  d.subset_order = order;
  for (int64_t i = 0; i < n; ++i) d.train.push_back({"img" + std::to_string(i), (i * 7 + i / 3) % k});
  d.old_classes = old;
  for (int64_t c = 0; c < k; ++c)
    if (std::find(old.begin(), old.end(), c) == old.end()) d.new_classes.push_back(c);
  return d;
}

std::vector<int64_t> parse_list(const std::string& text) {
  std::vector<int64_t> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) values.push_back(std::stoll(item));
  return values;
}

}  // namespace

TEST_CASE("gcd split: labelled and unlabelled orders match the reference code bit for bit") {
  int cases = 0;
  for (const FixtureLine& line : read_split_fixture("gcd_split.txt")) {
    // "split <mask|index> n K old,list <labelled|unlabelled>"
    std::istringstream key(line.key);
    std::string word, mode, old_text, part;
    int64_t n = 0, k = 0;
    key >> word >> mode >> n >> k >> old_text >> part;
    CAPTURE(line.key);
    const auto order = mode == "mask" ? Dataset::SubsetOrder::ascending : Dataset::SubsetOrder::index_arrays;
    const GcdSplit split = make_gcd_split(synthetic(n, k, parse_list(old_text), order));
    CHECK(matches(part == "labelled" ? split.labelled : split.unlabelled, parse_summary(line.rest)));
    ++cases;
  }
  CHECK(cases == 12);
}

TEST_CASE("gcd split: old classes remap to list order, new classes after them") {
  Dataset d = synthetic(60, 6, {4, 0, 2}, Dataset::SubsetOrder::ascending);
  d.new_classes = {5, 1, 3};  // e.g. Hard, Medium, Easy
  const GcdSplit split = make_gcd_split(d);
  CHECK(split.num_old_classes == 3);
  CHECK(split.num_classes == 6);
  const std::vector<int64_t> expected_label_of_class = {1, 4, 2, 5, 0, 3};
  for (int64_t i = 0; i < d.size(); ++i)
    CHECK(split.label[static_cast<size_t>(i)] == expected_label_of_class[static_cast<size_t>(d.train[static_cast<size_t>(i)].class_id)]);
  // Labelled: half of the 40 old-class images, all old; unlabelled: the other 40, disjoint.
  CHECK(split.labelled.size() == 20);
  CHECK(split.unlabelled.size() == 40);
  for (int64_t i : split.labelled) CHECK(split.label[static_cast<size_t>(i)] < 3);
  std::vector<bool> seen(60, false);
  for (const auto* part : {&split.labelled, &split.unlabelled})
    for (int64_t i : *part) {
      CHECK_FALSE(seen[static_cast<size_t>(i)]);
      seen[static_cast<size_t>(i)] = true;
    }
}

TEST_CASE("gcd split: a layout's given labelled images are used as they are") {
  Dataset d = synthetic(12, 4, {0, 1}, Dataset::SubsetOrder::ascending);
  d.train[11].class_id = -1;  // unknown class, unlabelled
  // Classes of images 0..11: 0 3 2 2 1 0 0 3 2 2 1 0.
  d.given_labelled = {10, 0, 4};
  const GcdSplit split = make_gcd_split(d);
  CHECK(split.labelled == std::vector<int64_t>{10, 0, 4});
  CHECK(split.unlabelled == std::vector<int64_t>{1, 2, 3, 5, 6, 7, 8, 9, 11});
  CHECK(split.label[11] == -1);

  d.given_labelled = {2};  // class 2 is new
  CHECK_THROWS_WITH(make_gcd_split(d), doctest::Contains("is not of an old class"));
  d.given_labelled = {};
  CHECK_THROWS_WITH(make_gcd_split(d), doctest::Contains("has no class"));
}

TEST_CASE("gcd split: bad class lists and proportions are rejected") {
  Dataset d = synthetic(10, 4, {0, 1}, Dataset::SubsetOrder::ascending);
  CHECK_THROWS_WITH(make_gcd_split(d, 1.5), doctest::Contains("outside [0, 1]"));
  Dataset twice = d;
  twice.new_classes = {2, 0};
  CHECK_THROWS_WITH(make_gcd_split(twice), doctest::Contains("class 0 listed twice"));
  Dataset short_list = d;
  short_list.new_classes = {2};
  CHECK_THROWS_WITH(make_gcd_split(short_list), doctest::Contains("expected K = 4"));
  Dataset bad_item = d;
  bad_item.train[3].class_id = 4;
  CHECK_THROWS_WITH(make_gcd_split(bad_item), doctest::Contains("img3 has class 4 outside [0, 4)"));
}

TEST_CASE("write_split_csv writes id,path,label,role in the merged order, quoting paths") {
  Dataset d = synthetic(6, 2, {0}, Dataset::SubsetOrder::ascending);
  d.train[1].path = "a,\"b\".png";
  const GcdSplit split = make_gcd_split(d);
  const auto file = std::filesystem::temp_directory_path() / ("mcdl_split_" + std::to_string(::getpid()) + ".csv");
  write_split_csv(file.string(), d, split);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(file);
  // Classes: image i has (7i + i/3) mod 2 = 0,1,0,0,1,0 -> old images 0, 2, 3, 5; two labelled.
  std::ostringstream expected;
  expected << "id,path,label,role\n";
  for (int64_t i : split.labelled) expected << i << ",img" << i << ",0,labelled\n";
  for (int64_t i : split.unlabelled)
    expected << i << ',' << (i == 1 ? "\"a,\"\"b\"\".png\"" : "img" + std::to_string(i)) << ','
             << split.label[static_cast<size_t>(i)] << ",unlabelled\n";
  CHECK(split.labelled.size() == 2);
  CHECK(text.str() == expected.str());
}
