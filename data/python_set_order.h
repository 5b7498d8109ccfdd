// The order in which CPython (3.6 – 3.12) iterates `set(range(n)) - set(removed)`.
//
// The GCD reference builds its unlabelled set as
//   set(whole_training_set.uq_idxs) - set(train_dataset_labelled.uq_idxs)
// and, for SCars, CIFAR and ImageNet, indexes the data with np.array(list(that set)), so the
// unlabelled images come in set iteration order. That order is ascending for the sizes of the
// real datasets, but not in general (a table smaller than the largest index wraps around), so
// it is reproduced here from CPython's setobject.c: hash(i) == i for these ints, open
// addressing with 9 linear probes then perturbed jumps, growth when fill*5 >= mask*3 (to
// used*4, or used*2 beyond 50000 entries), and set_difference's two paths (build a new set
// from the survivors, or copy and discard when len(a) >> 2 > len(b)).
#pragma once
#include <cstdint>
#include <vector>

namespace mcdl {

// list(set(range(n)) - set(removed)); every value of `removed` must lie in [0, n), no repeats.
std::vector<int64_t> python_set_difference_order(int64_t n, const std::vector<int64_t>& removed);

}  // namespace mcdl
