#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include "data/randaugment.h"
#include "tests/data/augment_fixtures.h"

using namespace mcdl;
using namespace mcdl::testing;

TEST_CASE("apply_augment: every op bit-identical to torchvision 0.14 _apply_op on PIL images") {
  // Both signs at bins 9 and 30, RGB / L / low-contrast inputs, blend extrapolation, the rotate
  // fast paths, the float affine path, a flat image.
  const auto cases = augment_cases("op");
  REQUIRE(cases.size() >= 150);
  std::map<std::string, int> per_op;
  for (const auto& c : cases) {
    const int64_t channels = std::stoll(c[2]);
    const auto op = augment_op_from_name(c[3]);
    REQUIRE(op.has_value());
    const double magnitude = std::strtod(c[4].c_str(), nullptr);
    const Image out = apply_augment(fixture_image(c[1], channels), {*op, magnitude});
    INFO(c[1], " ", c[3], " ", c[4], " (", c[5], ")");
    CHECK(differing_bytes(out, fixture_image(c[5], channels)) == 0);
    ++per_op[c[3]];
  }
  CHECK(per_op.size() == num_augment_ops);
}

TEST_CASE("augment_magnitude: torchvision's _augmentation_space tables") {
  int exact = 0, total = 0;
  for (const auto& c : augment_cases("magnitude")) {
    const auto op = augment_op_from_name(c[1]);
    REQUIRE(op.has_value());
    const int bin = std::stoi(c[2]), bins = std::stoi(c[3]);
    const double expected = std::strtod(c[6].c_str(), nullptr);
    const double got = augment_magnitude(*op, bin, bins, std::stoll(c[4]), std::stoll(c[5]));
    INFO(c[1], " bin ", bin, "/", bins, " at ", c[4], "x", c[5]);
    if (bin == 9 && bins == 31) CHECK(got == expected);  // RandAugment's default: exact
    CHECK(std::fabs(got - expected) <= 1.2e-7 * std::fabs(expected));  // else within one float32 ulp
    exact += got == expected;
    ++total;
  }
  REQUIRE(total > 1000);
  CHECK(exact > total * 95 / 100);
  // Bin 9 of 31 at 224x224, as docs/backbone-and-data-facts.md §3.3 lists them.
  CHECK(augment_magnitude(AugmentOp::shear_x, 9, 31, 224, 224) == static_cast<double>(0.09f));
  CHECK(static_cast<int>(augment_magnitude(AugmentOp::translate_x, 9, 31, 224, 224)) == 30);
  CHECK(augment_magnitude(AugmentOp::rotate, 9, 31, 224, 224) == 9.0);
  CHECK(augment_magnitude(AugmentOp::brightness, 9, 31, 224, 224) == doctest::Approx(0.27).epsilon(1e-7));
  CHECK(augment_magnitude(AugmentOp::posterize, 9, 31, 224, 224) == 7.0);
  CHECK(augment_magnitude(AugmentOp::solarize, 9, 31, 224, 224) == 178.5);
  CHECK_THROWS_WITH(augment_magnitude(AugmentOp::rotate, 31, 31, 8, 8), doctest::Contains("bin 31 of 31"));
}

TEST_CASE("augment op names: torchvision's, case-insensitive") {
  for (int i = 0; i < num_augment_ops; ++i) {
    const auto op = static_cast<AugmentOp>(i);
    CHECK(augment_op_from_name(augment_op_name(op)) == op);
  }
  CHECK(augment_op_from_name("shearx") == AugmentOp::shear_x);
  CHECK(augment_op_from_name("AUTOCONTRAST") == AugmentOp::auto_contrast);
  CHECK_FALSE(augment_op_from_name("Invert").has_value());
  CHECK(augment_op_signed(AugmentOp::sharpness));
  CHECK_FALSE(augment_op_signed(AugmentOp::posterize));
}

TEST_CASE("draw_randaugment: uniform ops, fair signs on signed ops only, bin-9 magnitudes") {
  RandomStream stream(11, stream_id("test_randaugment"));
  const int n = 14000;
  std::vector<int> counts(num_augment_ops, 0), negative(num_augment_ops, 0);
  for (int i = 0; i < n / 2; ++i) {
    const auto steps = draw_randaugment(stream, 224, 224);
    REQUIRE(steps.size() == 2);
    for (const AugmentStep& s : steps) {
      const int k = static_cast<int>(s.op);
      ++counts[static_cast<size_t>(k)];
      negative[static_cast<size_t>(k)] += s.magnitude < 0;
      CHECK(std::fabs(s.magnitude) == augment_magnitude(s.op, 9, 31, 224, 224));
    }
  }
  for (int k = 0; k < num_augment_ops; ++k) {
    const auto op = static_cast<AugmentOp>(k);
    INFO(augment_op_name(op));
    CHECK(std::abs(counts[static_cast<size_t>(k)] - n / 14) < 5 * std::sqrt(n / 14.0));
    if (augment_op_signed(op)) {
      CHECK(std::abs(2 * negative[static_cast<size_t>(k)] - counts[static_cast<size_t>(k)]) <
            5 * std::sqrt(counts[static_cast<size_t>(k)]));
    } else {
      CHECK(negative[static_cast<size_t>(k)] == 0);
    }
  }
  CHECK(draw_randaugment(stream, 32, 32, 0).empty());
}

TEST_CASE("apply_randaugment: the steps in order; errors name the op") {
  const Image im = fixture_image("rgb.png", 3);
  const std::vector<AugmentStep> steps = {{AugmentOp::rotate, -9.0}, {AugmentOp::solarize, 178.5}};
  CHECK(apply_randaugment(im, steps) == apply_augment(apply_augment(im, steps[0]), steps[1]));
  CHECK(apply_randaugment(im, {}) == im);
  CHECK_THROWS_WITH(apply_augment(im, {AugmentOp::posterize, 9.0}),
                    doctest::Contains("apply_augment: Posterize: bits must be in [0, 8]"));
  CHECK_THROWS_WITH(apply_augment(Image(2, 2, 4), {AugmentOp::equalize, 0.0}),
                    doctest::Contains("apply_augment: Equalize: images have 3 or 1 channels, got 4"));
}
