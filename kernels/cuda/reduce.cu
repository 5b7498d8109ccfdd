#include "kernels/cuda/reduce.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <type_traits>

#include "kernels/cuda/elementwise_launch.h"

namespace mcdl::cuda {
namespace {

constexpr unsigned warp_width = 32;

// The runs a reduction launch combines. Target j (of targets = outer·inner / width) is `width`
// neighbouring outputs (width > 1: read in one pack per position) and reduces positions k < len
// at x[base(j) + k·inner]. With chunks > 1 each target's positions are split into chunks of
// `chunk` consecutive positions: run r = c·targets + j reduces chunk c of target j (chunk-major,
// so that neighbouring runs read neighbouring memory when inner > 1).
struct Runs {
  int64_t targets, len, inner, chunks, chunk, width;
  __device__ int64_t base(int64_t j) const {
    const int64_t first = j * width;
    return (first / inner) * len * inner + first % inner;
  }
};

// Sums of V neighbouring outputs at once.
template <int V>
struct Sums {
  double v[V];
};

// A reduction over the runs: Acc is the partial result, combine must be associative and
// commutative for the tree order not to matter beyond rounding. load(j, offset, k) reads
// position k of target j; policies with group G > 1 (runs of consecutive positions, inner == 1)
// also read G consecutive positions at once with load_group.
//
// Sums take 16-byte packs where the data allows (sum_axis): V = 4 float (2 double) outputs per
// target when the reduced axis is strided (inner % V == 0), or G = 4 (2) positions per load when
// it is contiguous. A warp then moves 512 bytes per load instead of 128, enough bytes in flight
// to stream at the copy bandwidth (scalar loads left "sum over rows" and "sum all" at about a
// third of it).
template <class In, class Out, int G = 1, int V = 1>
struct SumPolicy {
  static_assert(G == 1 || V == 1, "packs run along one direction");
  static constexpr int group = G;
  using Acc = std::conditional_t<V == 1, double, Sums<V>>;
  const In* x;
  Out* out;
  double divisor;
  __device__ static Acc identity() { return Acc{}; }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (V == 1) {
      return a + b;
    } else {
      MCDL_UNROLL
      for (int i = 0; i < V; ++i) a.v[i] += b.v[i];
      return a;
    }
  }
  __device__ static Acc shuffle_xor(Acc value, unsigned offset) {
    if constexpr (V == 1) {
      return __shfl_xor_sync(0xffffffffu, value, static_cast<int>(offset));
    } else {
      MCDL_UNROLL
      for (int i = 0; i < V; ++i) value.v[i] = __shfl_xor_sync(0xffffffffu, value.v[i], static_cast<int>(offset));
      return value;
    }
  }
  __device__ Acc load(int64_t, int64_t offset, int64_t) const {
    if constexpr (V == 1) {
      return static_cast<double>(x[offset]);
    } else {
      const Pack<In, V> p = load_pack<V>(x + offset);
      Acc a;
      MCDL_UNROLL
      for (int i = 0; i < V; ++i) a.v[i] = static_cast<double>(p.v[i]);
      return a;
    }
  }
  // Positions offset .. offset + G − 1, added in order.
  __device__ Acc load_group(int64_t offset) const {
    const Pack<In, G> p = load_pack<G>(x + offset);
    double s = static_cast<double>(p.v[0]);
    MCDL_UNROLL
    for (int i = 1; i < G; ++i) s += static_cast<double>(p.v[i]);
    return s;
  }
  __device__ void store(int64_t run, Acc s) const {
    if constexpr (V == 1) {
      out[run] = static_cast<Out>(s / divisor);
    } else {
      MCDL_UNROLL
      for (int i = 0; i < V; ++i) out[run * V + i] = static_cast<Out>(s.v[i] / divisor);
    }
  }
};

// A candidate maximum: an element and its position along the axis (index < 0: none yet).
template <class T>
struct Candidate {
  T value;
  int64_t index;
};

// PyTorch's max/argmax order (kernels/cpu/reduce.h): NaN beats every number.
template <class T>
__device__ __forceinline__ bool beats(T candidate, T best) {
  return candidate > best || (candidate != candidate && best == best);
}

template <class T>
struct ArgmaxPolicy {
  static constexpr int group = 1;
  using Acc = Candidate<T>;
  const T* x;
  T* values;  // may be null
  int64_t* index;
  __device__ static Acc identity() { return {T(0), -1}; }
  // The larger; on a tie (equal, or both NaN) the earlier position, as the CPU's first-max scan.
  __device__ static Acc combine(Acc a, Acc b) {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (beats(b.value, a.value)) return b;
    if (beats(a.value, b.value)) return a;
    return b.index < a.index ? b : a;
  }
  __device__ static Acc shuffle_xor(Acc c, unsigned offset) {
    return {__shfl_xor_sync(0xffffffffu, c.value, static_cast<int>(offset)),
            __shfl_xor_sync(0xffffffffu, c.index, static_cast<int>(offset))};
  }
  __device__ Acc load(int64_t, int64_t offset, int64_t k) const { return {x[offset], k}; }
  __device__ void store(int64_t run, Acc c) const {
    index[run] = c.index;
    if (values) values[run] = c.value;
  }
};

// The second pass of a split argmax: the runs read the first pass's per-chunk positions and
// look their elements up in x, whose geometry is `source`.
template <class T>
struct ArgmaxOfChunksPolicy : ArgmaxPolicy<T> {
  const int64_t* chunk_best;
  Runs source;
  __device__ Candidate<T> load(int64_t j, int64_t offset, int64_t) const {
    const int64_t k = chunk_best[offset];
    return {this->x[source.base(j) + k * source.inner], k};
  }
};

// How the threads of a block split over runs: `lanes` runs per block, per_run = blockDim.x / lanes
// threads per run, thread ty of a run combining positions ty, ty + per_run, ... of it in order.
// Strided runs (inner > 1) put the runs on the fast thread index, so that a warp reads `lanes`
// neighbouring outputs (lanes: a power of two up to 32, or blockDim.x for a thread per run).
// Contiguous runs put the positions on the fast index: a warp (per_run 32) or the whole block
// (per_run = blockDim.x) reads one run.
struct Layout {
  unsigned lanes, per_run;
  bool positions_fast;
};

// The threads of one run meet by xor-shuffles inside each warp, then, where a run spans several
// warps, warp by warp in shared memory; a fixed order throughout.
template <class Policy>
__global__ void reduce_kernel(Policy policy, Runs runs, Layout layout) {
  using Acc = typename Policy::Acc;
  constexpr int G = Policy::group;
  // reduce_shared_bytes: a slot per warp and run of the block, where runs span warps.
  MCDL_DYNAMIC_SHARED(Acc, warp_results);
  const unsigned lanes = layout.lanes, per_run = layout.per_run;
  const bool positions_fast = layout.positions_fast;
  const unsigned tx = positions_fast ? threadIdx.x / per_run : threadIdx.x % lanes;
  const unsigned ty = positions_fast ? threadIdx.x % per_run : threadIdx.x / lanes;
  const unsigned lane = threadIdx.x % warp_width, warp = threadIdx.x / warp_width, warps = blockDim.x / warp_width;
  // A run's threads in different warps: several warps per run (positions fast), or every warp
  // holding a share of each of the block's runs (runs fast).
  const bool across_warps = positions_fast ? per_run > warp_width : per_run > 1 && warps > 1;
  const int64_t count = runs.targets * runs.chunks;
  // The loop bounds depend on blockIdx only, so every thread reaches the barriers.
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * lanes; first < count;
       first += static_cast<int64_t>(gridDim.x) * lanes) {
    const int64_t run = first + tx;
    Acc acc = Policy::identity();
    if (run < count) {
      const int64_t j = run % runs.targets, begin = run / runs.targets * runs.chunk;
      const int64_t end = begin + runs.chunk < runs.len ? begin + runs.chunk : runs.len;
      const int64_t base = runs.base(j);
      // The loops are unrolled so that each thread has four loads in flight (they do not depend
      // on the accumulator); the combines stay in position order.
      int64_t rest = begin;  // the first position not read in groups
      if constexpr (G > 1) {  // inner == 1, and base + begin is a multiple of G (plan_reduction)
        const int64_t groups = (end - begin) / G;
        MCDL_UNROLL_BY(4)
        for (int64_t q = ty; q < groups; q += per_run)
          acc = Policy::combine(acc, policy.load_group(base + begin + q * G));
        rest = begin + groups * G;
      }
      MCDL_UNROLL_BY(4)
      for (int64_t k = rest + ty; k < end; k += per_run)
        acc = Policy::combine(acc, policy.load(j, base + k * runs.inner, k));
    }
    // Lanes `offset` apart belong to the same run for these offsets (the same for the whole block).
    for (unsigned offset = warp_width / 2; offset > 0; offset /= 2)
      if (positions_fast ? offset < per_run : offset >= lanes)
        acc = Policy::combine(acc, Policy::shuffle_xor(acc, offset));
    if (!across_warps) {
      if (ty == 0 && run < count) policy.store(run, acc);
      continue;
    }
    // One result per warp and run: slot warp (positions fast) or warp · lanes + tx (runs fast).
    if (positions_fast ? lane == 0 : lane < lanes) warp_results[positions_fast ? warp : warp * lanes + tx] = acc;
    __syncthreads();
    if (ty == 0 && run < count) {
      const unsigned slots = positions_fast ? per_run / warp_width : warps;
      const unsigned slot0 = positions_fast ? tx * slots : tx, step = positions_fast ? 1 : lanes;
      Acc total = warp_results[slot0];
      for (unsigned w = 1; w < slots; ++w) total = Policy::combine(total, warp_results[slot0 + w * step]);
      policy.store(run, total);
    }
    __syncthreads();  // warp_results is rewritten by the next tile
  }
}

// Runs of at most this many positions get a thread each.
constexpr int64_t serial_length = 16;
// Contiguous runs up to this long get a warp each, longer ones (and a single run, such as the
// second pass of a sum over all elements: no other runs to fill the GPU) a block.
constexpr int64_t warp_run_length = 1024;
// A split reduction aims at one wave of resident blocks (plan_split), with at least this many
// positions per thread.
constexpr int64_t split_min_per_thread = 32;

struct Plan {
  Runs runs;
  Layout layout;
  unsigned block;
  dim3 grid;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How a reduction reads its input: `group` consecutive positions per load (inner == 1) or
// `width` neighbouring outputs per load (inner % width == 0); 1 and 1: element by element.
struct Packing {
  int group = 1, width = 1;
};

// Whether the shape allows `packing` (alignment of the data aside).
bool packing_fits(int64_t outer, int64_t len, int64_t inner, Packing packing) {
  if (packing.width > 1) return inner > 1 && inner % packing.width == 0;
  if (packing.group > 1) return inner == 1 && len > serial_length && (outer == 1 || len % packing.group == 0);
  return true;
}

// How to reduce [outer, len, inner]; `split` allows chunks (a second pass over the partials),
// as many as fill `wave` blocks.
Plan plan_reduction(int64_t outer, int64_t len, int64_t inner, bool split, Packing packing = {}, int64_t wave = 1) {
  Plan plan;
  plan.block = block_size(256);
  const int64_t width = packing.width;
  if (len <= serial_length) {
    plan.layout = {plan.block, 1, false};
  } else if (inner == 1) {
    const unsigned per_run = len <= warp_run_length && outer > 1 ? warp_width : plan.block;
    plan.layout = {plan.block / per_run, per_run, true};
  } else {
    const auto lanes =
        static_cast<unsigned>(std::min<uint64_t>(warp_width, std::bit_ceil(static_cast<uint64_t>(inner / width))));
    plan.layout = {lanes, plan.block / lanes, false};
  }
  const int64_t targets = outer * inner / width, lanes = plan.layout.lanes, per_run = plan.layout.per_run;
  int64_t chunks = 1;
  if (split && per_run > 1)
    chunks = std::max<int64_t>(
        1, std::min(ceil_div(len, per_run * split_min_per_thread), wave / ceil_div(targets, lanes)));
  // Chunks start at multiples of the group, so that grouped loads stay aligned.
  const int64_t chunk = ceil_div(ceil_div(len, chunks), packing.group) * packing.group;
  chunks = ceil_div(len, chunk);  // no empty chunk
  plan.runs = Runs{targets, len, inner, chunks, chunk, width};
  plan.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(ceil_div(targets * chunks, lanes), 1, 65535)));
  return plan;
}

// Dynamic shared memory of reduce_kernel: a slot per warp and run of a block where a run's
// threads span several warps (runs fast: every warp holds a share of each of the block's runs).
// At most 32 B per thread (Sums<4>), so at most 64 KB per SM at full occupancy: never what
// limits occupancy (resident_blocks relies on that).
size_t reduce_shared_bytes(const Plan& plan, size_t acc_bytes) {
  const Layout& layout = plan.layout;
  const unsigned warps = plan.block / warp_width;
  const bool across_warps = layout.positions_fast ? layout.per_run > warp_width : layout.per_run > 1 && warps > 1;
  if (!across_warps) return 0;
  return (layout.positions_fast ? warps : warps * layout.lanes) * acc_bytes;
}

// The most blocks of `block` threads any kernel keeps resident (2048 threads per SM).
int64_t wave_bound(unsigned block) { return static_cast<int64_t>(sm_count()) * (2048 / block); }

// The plan of a split reduction whose first pass runs Policy: as many chunks as one wave of
// that kernel's resident blocks holds (its occupancy from registers and shared memory), so no
// partly filled second wave of equal-sized blocks doubles the time (a fixed 1024 blocks was
// 1.3 waves at 6 blocks per SM). Never more chunks than with wave_bound, which sizes scratch.
template <class Policy>
Plan plan_split(int64_t outer, int64_t len, int64_t inner, Packing packing) {
  const unsigned block = block_size(256);
  const Plan bound = plan_reduction(outer, len, inner, true, packing, wave_bound(block));
  const size_t shared = reduce_shared_bytes(bound, sizeof(typename Policy::Acc));
  return plan_reduction(outer, len, inner, true, packing, resident_blocks<reduce_kernel<Policy>>(block, shared));
}

template <class Policy>
void run(const Policy& policy, const Plan& plan) {
  launch(reduce_kernel<Policy>, plan.grid, dim3(plan.block), reduce_shared_bytes(plan, sizeof(typename Policy::Acc)),
         engine_stream(), policy, plan.runs, plan.layout);
}

void require_scratch(const Plan& plan, const void* scratch) {
  if (plan.runs.chunks > 1 && scratch == nullptr)
    throw std::invalid_argument("mcdl::cuda: this reduction needs scratch (reduce_scratch_words)");
}

template <class T>
__global__ void sum_axis_backward_kernel(const T* g, T* dx, int64_t n, int64_t len, int64_t inner, double divisor,
                                         bool overwrite) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const T value = static_cast<T>(g[i / (len * inner) * inner + i % inner] / divisor);
    dx[i] = overwrite ? value : dx[i] + value;
  }
}

template <class T>
__global__ void max_axis_backward_kernel(const T* g, const int64_t* index, T* dx, int64_t n, int64_t len,
                                         int64_t inner, bool overwrite) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const int64_t j = i / (len * inner) * inner + i % inner;
    const bool hit = index[j] == i / inner % len;
    // As the CPU: zero-fill, then add g at the maximum (0 + g, so -0 becomes +0 there too).
    if (overwrite) {
      dx[i] = hit ? T(0) + g[j] : T(0);
    } else if (hit) {
      dx[i] += g[j];
    }
  }
}

// One warp per point (warps of the grid striding over the points).
__global__ void nearest_from_products_kernel(const float* products, const double* point_norms,
                                             const double* centre_norms, int64_t n, int64_t m, int64_t* nearest) {
  const unsigned lane = threadIdx.x % warp_width;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / warp_width);
  for (int64_t i = grid_index() / warp_width; i < n; i += warps) {
    const float* p = products + i * m;
    int64_t best = -1;
    double best_distance = 0.0;
    for (int64_t c = lane; c < m; c += warp_width) {
      // The CPU's order, each step rounded (2·p is exact), and its clamp: a NaN becomes 0.
      const double d = __dadd_rn(__dsub_rn(point_norms[i], 2.0 * static_cast<double>(p[c])), centre_norms[c]);
      const double distance = 0.0 < d ? d : 0.0;
      if (best < 0 || distance < best_distance) best = c, best_distance = distance;
    }
    for (unsigned offset = warp_width / 2; offset > 0; offset /= 2) {
      const int64_t other = __shfl_down_sync(0xffffffffu, best, offset);
      const double other_distance = __shfl_down_sync(0xffffffffu, best_distance, offset);
      const bool better =
          other_distance < best_distance || (other_distance == best_distance && other < best);
      if (other >= 0 && (best < 0 || better)) best = other, best_distance = other_distance;
    }
    if (lane == 0) nearest[i] = best;
  }
}

// A thread per point (the grid striding over the points).
__global__ void assigned_squared_distances_kernel(const float* points, const int64_t* labels, const double* centres,
                                                  int64_t n, int64_t dim, double* d2) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const float* x = points + i * dim;
    const double* c = centres + labels[i] * dim;
    double s = 0.0;
    for (int64_t d = 0; d < dim; ++d) {
      const double e = __dsub_rn(static_cast<double>(x[d]), c[d]);
      s = __dadd_rn(s, __dmul_rn(e, e));
    }
    d2[i] = s;
  }
}

// A thread per (cluster, column) of [k, last − first] (the grid striding over them).
__global__ void cluster_sums_kernel(const float* points, const int64_t* members, const int64_t* offsets, int64_t k,
                                    int64_t dim, int64_t first, int64_t width, double* sums) {
  for (int64_t t = grid_index(); t < k * width; t += grid_stride()) {
    const int64_t c = t / width, d = first + t % width;
    double s = 0.0;
    for (int64_t j = offsets[c]; j < offsets[c + 1]; ++j)
      s = __dadd_rn(s, static_cast<double>(points[members[j] * dim + d]));
    sums[t] = s;
  }
}

}  // namespace

void assigned_squared_distances(const float* points, const int64_t* labels, const double* centres, int64_t n,
                                int64_t dim, double* d2) {
  if (n == 0) return;
  launch(assigned_squared_distances_kernel, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), points,
         labels, centres, n, dim, d2);
}

void cluster_sums(const float* points, const int64_t* members, const int64_t* offsets, int64_t k, int64_t dim,
                  int64_t first, int64_t last, double* sums) {
  const int64_t width = last - first;
  if (k * width == 0) return;
  launch(cluster_sums_kernel, elementwise_grid(k * width), dim3(elementwise_block()), 0, engine_stream(), points,
         members, offsets, k, dim, first, width, sums);
}

void nearest_from_products(const float* products, const double* point_norms, const double* centre_norms, int64_t n,
                           int64_t m, int64_t* nearest) {
  if (n == 0) return;
  const unsigned block = elementwise_block();
  launch(nearest_from_products_kernel, dim3(std::max(1u, std::min(blocks_for(n, block / warp_width), 4096u))),
         dim3(block), 0, engine_stream(), products, point_norms, centre_norms, n, m, nearest);
}

int64_t reduce_scratch_words(int64_t outer, int64_t len, int64_t inner) {
  // The most any packing sum_axis or max_axis may choose for this shape needs.
  int64_t words = 0;
  for (const Packing packing : {Packing{1, 1}, Packing{2, 1}, Packing{4, 1}, Packing{1, 2}, Packing{1, 4}}) {
    if (!packing_fits(outer, len, inner, packing)) continue;
    const Plan plan = plan_reduction(outer, len, inner, true, packing, wave_bound(block_size(256)));
    if (plan.runs.chunks > 1) words = std::max(words, outer * inner * plan.runs.chunks);
  }
  return words;
}

// Calls f(Packing as types) with the packing sum_axis uses for x: 16-byte packs of outputs when
// the reduced axis is strided, of positions when it is contiguous, else element by element.
template <class T, class F>
void with_sum_packing(const T* x, int64_t outer, int64_t len, int64_t inner, F&& f) {
  constexpr int V = pack_width<T>;
  using One = std::integral_constant<int, 1>;
  using Pack16 = std::integral_constant<int, V>;
  if (packs_aligned(x) && packing_fits(outer, len, inner, {1, V})) {
    f(One{}, Pack16{});
  } else if (packs_aligned(x) && packing_fits(outer, len, inner, {V, 1})) {
    f(Pack16{}, One{});
  } else {
    f(One{}, One{});
  }
}

template <class T>
void sum_axis(const T* x, T* out, int64_t outer, int64_t len, int64_t inner, double divisor, double* scratch) {
  if (outer * inner == 0) return;
  with_sum_packing(x, outer, len, inner, [&](auto group, auto width) {
    constexpr int G = decltype(group)::value, V = decltype(width)::value;
    const Plan plan = plan_split<SumPolicy<T, double, G, V>>(outer, len, inner, Packing{G, V});
    if (plan.runs.chunks == 1) {
      run(SumPolicy<T, T, G, V>{x, out, divisor}, plan);
      return;
    }
    require_scratch(plan, scratch);
    // Pass 1: chunk sums [chunks, outer·inner] in double; pass 2: the sum over chunks of each output.
    run(SumPolicy<T, double, G, V>{x, scratch, 1.0}, plan);
    run(SumPolicy<double, T>{scratch, out, divisor}, plan_reduction(1, plan.runs.chunks, outer * inner, false));
  });
}

template <class T>
void sum_axis_backward(const T* g, T* dx, int64_t outer, int64_t len, int64_t inner, double divisor, bool overwrite) {
  const int64_t n = outer * len * inner;
  if (n == 0) return;
  launch(sum_axis_backward_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), g, dx, n,
         len, inner, divisor, overwrite);
}

template <class T>
void max_axis(const T* x, T* values, int64_t* index, int64_t outer, int64_t len, int64_t inner, int64_t* scratch) {
  if (outer * inner == 0) return;
  const Plan plan = plan_split<ArgmaxPolicy<T>>(outer, len, inner, Packing{});
  if (plan.runs.chunks == 1) {
    run(ArgmaxPolicy<T>{x, values, index}, plan);
    return;
  }
  require_scratch(plan, scratch);
  // Pass 1: the first maximum of each chunk [chunks, targets]; pass 2: the best of those.
  run(ArgmaxPolicy<T>{x, nullptr, scratch}, plan);
  run(ArgmaxOfChunksPolicy<T>{{x, values, index}, scratch, plan.runs},
      plan_reduction(1, plan.runs.chunks, plan.runs.targets, false));
}

template <class T>
void max_axis_backward(const T* g, const int64_t* index, T* dx, int64_t outer, int64_t len, int64_t inner,
                       bool overwrite) {
  const int64_t n = outer * len * inner;
  if (n == 0) return;
  launch(max_axis_backward_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), g, index,
         dx, n, len, inner, overwrite);
}

#define MCDL_INSTANTIATE_REDUCE(T)                                                                 \
  template void sum_axis<T>(const T*, T*, int64_t, int64_t, int64_t, double, double*);             \
  template void sum_axis_backward<T>(const T*, T*, int64_t, int64_t, int64_t, double, bool);       \
  template void max_axis<T>(const T*, T*, int64_t*, int64_t, int64_t, int64_t, int64_t*);          \
  template void max_axis_backward<T>(const T*, const int64_t*, T*, int64_t, int64_t, int64_t, bool);
MCDL_INSTANTIATE_REDUCE(float)
MCDL_INSTANTIATE_REDUCE(double)
#undef MCDL_INSTANTIATE_REDUCE

}  // namespace mcdl::cuda
