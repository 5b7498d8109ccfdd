// A permutation of a contiguous tensor's axes in its simplest form, as both backends' permute
// kernels walk it: size-1 axes dropped and dst axes that are consecutive src axes, in the same
// order, merged. Fewer axes mean fewer index computations per element, and the transpose at the
// heart of the permutation shows: permute (1, 2, 0) of [A, B, C] is the 2-D transpose
// [A, B·C] → [B·C, A]; permute (0, 2, 1, 3) of [B, 1, S, D] is a plain copy.
#pragma once
#include <cstdint>
#include <vector>

namespace mcdl {

struct PermuteRuns {
  std::vector<int64_t> dst_shape;   // positions along each merged dst axis (at least one axis)
  std::vector<int64_t> src_stride;  // the distance in src, in elements, between its positions
};

// dst axis d is src axis perm[d]; src is contiguous with shape src_shape[0..rank).
inline PermuteRuns permute_runs(const int64_t* src_shape, const int64_t* perm, int64_t rank) {
  std::vector<int64_t> kept_index(static_cast<size_t>(rank), -1), kept_shape;
  for (int64_t a = 0; a < rank; ++a) {
    if (src_shape[a] == 1) continue;
    kept_index[static_cast<size_t>(a)] = static_cast<int64_t>(kept_shape.size());
    kept_shape.push_back(src_shape[a]);
  }
  struct Run {  // kept src axes [first, last], in dst order
    int64_t first, last;
  };
  std::vector<Run> runs;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t a = kept_index[static_cast<size_t>(perm[d])];
    if (a < 0) continue;
    if (!runs.empty() && runs.back().last + 1 == a) {
      runs.back().last = a;
    } else {
      runs.push_back({a, a});
    }
  }
  if (runs.empty()) return {{1}, {1}};  // a single element
  PermuteRuns out;
  for (const Run& run : runs) {
    int64_t size = 1, stride = 1;
    for (int64_t a = run.first; a <= run.last; ++a) size *= kept_shape[static_cast<size_t>(a)];
    for (size_t a = static_cast<size_t>(run.last) + 1; a < kept_shape.size(); ++a) stride *= kept_shape[a];
    out.dst_shape.push_back(size);
    out.src_stride.push_back(stride);
  }
  return out;
}

}  // namespace mcdl
