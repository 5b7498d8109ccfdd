// The summary lines' accuracy part (mcdl/run/accuracy_report.h): percentages with one decimal, and a plain
// statement instead of "nan" where no evaluated image had a known label.
#include <doctest/doctest.h>

#include <cmath>

#include "mcdl/run/accuracy_report.h"

using namespace mcdl;

TEST_CASE("accuracy summary: percentages, or 'nothing to score' without labels") {
  CHECK(accuracy_summary({0.619, 0.701, 0.578}) == "All 61.9 Old 70.1 New 57.8");
  // Labels known but no new-class image among them: the missing part stays visible.
  CHECK(accuracy_summary({0.5, 0.5, std::nan("")}) == "All 50.0 Old 50.0 New nan");
  const ClusterAccuracy none{std::nan(""), std::nan(""), std::nan("")};
  CHECK(accuracy_summary(none) == "no labels for the unlabelled images: nothing to score");
  CHECK(accuracy_summary(none, "the test images") == "no labels for the test images: nothing to score");
  CHECK(accuracy_summary(known_accuracy(known_labels({-1, -1}, {0, 1}, {false, false}), false)) ==
        "no labels for the unlabelled images: nothing to score");
}
