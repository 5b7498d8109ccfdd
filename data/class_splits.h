// The known / novel class lists of the GCD reference: the Semantic Shift Benchmark splits of CUB,
// Stanford Cars and FGVC-Aircraft, and Herbarium19's Old / New lists. List order matters: it
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

}  // namespace mcdl
