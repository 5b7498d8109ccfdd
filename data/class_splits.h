// The known / novel class lists of the GCD reference: the Semantic Shift Benchmark splits of CUB,
// Stanford Cars and FGVC-Aircraft, and Herbarium19's Old / New lists; and fmnist-pairs' own. List order matters: it
// fixes the remapped labels (old classes in list order, then Hard, Medium, Easy).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mcdl {

struct SsbClassSplit {
  std::vector<int64_t> known;  // 0-based class ids, pickle order
  std::vector<int64_t> hard, medium, easy;
  std::vector<int64_t> new_classes() const;  // hard + medium + easy, the reference's order
};

// "cub", "scars" or "aircraft".
const SsbClassSplit& ssb_class_split(const std::string& dataset);

const std::vector<int64_t>& herbarium19_old_classes();  // 341 ImageFolder indices
const std::vector<int64_t>& herbarium19_new_classes();  // 342

// fmnist-pairs (data/datasets/fmnist_pairs.h): its 50 old classes, ascending; the other 50 of the
// 100 (upper, lower) garment pairs are new. Drawn once so that every garment class is the upper
// garment of exactly 5 old pairs and the lower garment of exactly 5:
//   r = np.random.RandomState(0); u = r.permutation(10); l = r.permutation(10)
//   old = [10 * a + b for a in range(10) for b in range(10) if (u[a] + l[b]) % 10 < 5]
const std::vector<int64_t>& fmnist_pairs_old_classes();

}  // namespace mcdl
