// fmnist-pairs: a fine-grained GCD benchmark composed from Fashion-MNIST's garments, the offline
// analogue of CUB (docs/fmnist-pairs.md gives the design and its calibration).
//
// An image is a 56 × 56 grayscale canvas holding two 28 × 28 garments, one above the other, each
// shifted at random; its class is the ordered pair (upper garment class, lower garment class),
// id = 10 · upper + lower, so K = 100. The garments are stacked vertically, not side by side,
// because the training views flip images left-right: a flip keeps an (upper, lower) pair, while
// it would turn a (left, right) pair into another class.
//
// Fashion-MNIST's 60,000 training garments are split once, per garment class, into three disjoint
// pools: the training pool (600 garments), the test pool (600) and the pretraining pool (the rest,
// 4,800 in the real files). The training split has 30 images per class and the test split 30, so
// every garment of those pools appears in exactly one image (a class is upper in 10 pairs and
// lower in 10: 20 · 30 = 600 uses). The pretraining set (`fmnist-pairs-pretrain`) pairs the
// pretraining pool's garments at random, each once: unlabelled images for ./mcdl_pretrain, the
// transferred backbone's source, built from garments that no training or test image shows.
//
// Everything is a fixed function of the idx files' labels: the pools, the pairing and the shifts
// come from counter-based streams of a fixed seed (engine/random.h), drawn in one thread.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"

namespace mcdl::fmnist_pairs {

inline constexpr int64_t kGarmentClasses = 10;
inline constexpr int64_t kClasses = kGarmentClasses * kGarmentClasses;
inline constexpr int64_t kGarmentSide = 28;  // Fashion-MNIST's images
inline constexpr int64_t kCanvasSide = 2 * kGarmentSide;
// Shifts, in pixels, drawn uniformly per garment: the left edge in kCentredLeft ± kShiftX
// (kCentredLeft centres a garment); the upper garment's top edge in [0, kMaxShiftY], the lower
// one's in [28 − kMaxShiftY, 28]. Where the two overlap the brighter pixel wins. kShiftX sets the
// benchmark's difficulty (calibrated in docs/fmnist-pairs.md).
inline constexpr int64_t kCentredLeft = (kCanvasSide - kGarmentSide) / 2;
inline constexpr int64_t kShiftX = 4;
inline constexpr int64_t kMaxShiftY = 2;
inline constexpr int64_t kTrainPerClass = 30;
inline constexpr int64_t kTestPerClass = 30;
// Garments of each class that the training (test) split uses: 2 · 10 pairs · 30 images.
inline constexpr int64_t kTrainPoolPerGarment = 2 * kGarmentClasses * kTrainPerClass;
inline constexpr int64_t kTestPoolPerGarment = 2 * kGarmentClasses * kTestPerClass;
inline constexpr uint64_t kSeed = 0;

// One garment on the canvas: its index in the idx file and its top-left corner.
struct Placement {
  int64_t garment = 0;
  int64_t top = 0, left = 0;
};

struct PairImage {
  int64_t class_id = 0;  // 10 · upper garment class + lower garment class
  Placement upper, lower;
};

// Garment indices (into the idx file) of each pool, grouped by garment class in class order.
struct Pools {
  std::vector<int64_t> train, test, pretrain;
};

struct Plan {
  Pools pools;
  std::vector<PairImage> train;     // class by class (id ascending), kTrainPerClass each
  std::vector<PairImage> test;      // likewise, kTestPerClass each
  std::vector<PairImage> pretrain;  // the pretraining pool paired at random, each garment once
};

// The plan for an idx file's labels (each in 0..9). Throws naming the garment class when a class
// has no more than kTrainPoolPerGarment + kTestPoolPerGarment garments (the pretraining pool
// would be empty).
Plan make_plan(const std::vector<int64_t>& garment_labels);

// The 56 × 56 canvas of one pair; the garments must be 28 × 28 grayscale.
Image compose(const Image& upper, const Image& lower, const PairImage& pair);

// "T-shirt/top over Trouser" for class 1.
std::vector<std::string> class_names();

}  // namespace mcdl::fmnist_pairs
