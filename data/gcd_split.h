// The GCD split of a training set, exactly as the reference builds it (SimGCD's data/*.py,
// identical in GCD and MCDL):
//
// - labels are remapped: old classes become 0..K_old-1 in the dataset's old-class list order,
//   new classes K_old..K-1 in its new-class order (get_datasets' target_transform);
// - the labelled set is drawn from the old-class training images, kept in train order:
//   np.random.seed(0); np.random.choice(range(n_old), int(prop * n_old), replace=False)
//   (subsample_instances; uniform, not stratified per class);
// - the unlabelled set is every other training image (set(all) - set(labelled)).
//
// Order of the two sets (it fixes the merged indexing: labelled first, then unlabelled) follows
// each dataset's subsample_dataset, recorded in Dataset::subset_order:
// - ascending: a boolean mask keeps train order for both sets (CUB, Aircraft, Herbarium19);
// - index_arrays: the labelled set in draw order, the unlabelled set in the iteration order of
//   the Python set difference (SCars, CIFAR, ImageNet; see data/python_set_order.h).
//
// A layout that names its labelled images itself (Dataset::given_labelled, the folder layout)
// uses them as they are; its unlabelled set is the rest, ascending.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace mcdl {

struct GcdSplit {
  int64_t num_old_classes = 0;
  int64_t num_classes = 0;
  std::vector<int64_t> label;       // remapped label per train item (-1: unknown)
  std::vector<int64_t> labelled;    // train indices, in the reference order
  std::vector<int64_t> unlabelled;  // train indices, in the reference order
  std::vector<int64_t> test_label;  // remapped label per test item (the same remapping)
};

GcdSplit make_gcd_split(const Dataset& dataset, double prop_labelled = 0.5);

// One row per image, labelled first then unlabelled (the merged order):
// id,path,label,role with id the train index, label the remapped label (-1 unknown) and role
// `labelled` or `unlabelled`. In-memory images have an empty path.
void write_split_csv(const std::string& path, const Dataset& dataset, const GcdSplit& split);

}  // namespace mcdl
