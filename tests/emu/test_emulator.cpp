// Tests of the CUDA emulator (kernels/emu/): the kernels of kernels/cuda/emu_selftest_kernels.cu
// (built into the emulated kernel library like every .cu file) run on the CPU and are checked
// against host computations, in every thread order.
#include <doctest/doctest.h>
#include <math.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/cuda/launch.h"

// The host launchers of kernels/cuda/emu_selftest_kernels.cu.
namespace mcdl::emu_selftest {
void launch_block_sum(const float* x, float* out, int n, int blocks, int threads, bool dynamic_shared);
void launch_rotate_left(const float* x, float* y, int blocks, int threads, bool synchronize);
void launch_early_exit_barrier(float* y);
void launch_early_exit_barrier_with_stack_objects(int* destroyed);
void launch_split_barrier(float* y);
void launch_half_warp_shuffle(float* y);
void launch_lane_outside_mask(float* y);
void launch_shuffle_patterns(int* out, int width);
void launch_partial_warp(const double* x, double* sums, float* down4);
void launch_votes(const int* x, unsigned* ballots, int* any, int* all, unsigned* even_ballots, int* block);
void launch_atomics(const int* x, int n, int* histogram, unsigned* uhistogram, float* fsum, double* dsum, int* imax,
                    unsigned* umax, unsigned long long* cas_count, int* first_claim);
void launch_reverse_dynamic(const float* x, float* y, int blocks, int threads);
template <class T>
void launch_read_unwritten(T* static_out, T* dynamic_out, int blocks);
void launch_record_indices(int* out, dim3 grid, dim3 block);
void launch_math(const float* x, float* y, int n);
void launch_scale(const float* x, float* y, float a, int n);
void launch_execution_rank(int* counter, int* before, int* after, int threads);
void launch_own_parameters(int* out, int n, int threads);
}  // namespace mcdl::emu_selftest

using mcdl::emu::EmulationError;
using mcdl::emu::for_each_thread_order;
using mcdl::emu::ThreadOrder;
namespace kernels = mcdl::emu_selftest;

namespace {

constexpr int math_outputs = 14;  // results per element of the math kernel

// For launch-configuration errors.
__global__ void copy_one(const float* x, float* y) { *y = *x; }

// Integer-valued floats in [-8, 8], so that every sum is exact whatever the order of additions.
std::vector<float> small_integers(int n, uint32_t seed) {
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int>(seed >> 16) % 17 - 8);
  }
  return values;
}

// The message of the EmulationError that `launch` throws (empty if it throws none).
template <class Launch>
std::string emulation_error(Launch launch) {
  try {
    launch();
  } catch (const EmulationError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("emu: block reduction with shuffles and shared memory is exact at every block size and order") {
  struct Case {
    int n, blocks, threads;
  };
  std::vector<Case> cases = {{197, 1, 96}};
  for (int threads : {32, 64, 128, 256, 512, 1024}) cases.push_back({3 * threads + 5, 2, threads});
  for_each_thread_order([&](ThreadOrder order) {
    for (const Case& c : cases) {
      const std::vector<float> x = small_integers(c.n, static_cast<uint32_t>(c.threads));
      std::vector<float> expected(static_cast<size_t>(c.blocks), 0.0f);
      for (int i = 0; i < c.n; ++i)
        expected[static_cast<size_t>(i / c.threads % c.blocks)] += x[static_cast<size_t>(i)];
      for (bool dynamic_shared : {false, true}) {
        INFO("order " << to_string(order) << ", n " << c.n << ", blockDim " << c.threads
                      << (dynamic_shared ? ", dynamic" : ", static") << " shared memory");
        std::vector<float> out(static_cast<size_t>(c.blocks), NAN);
        kernels::launch_block_sum(x.data(), out.data(), c.n, c.blocks, c.threads, dynamic_shared);
        CHECK(out == expected);
      }
    }
  });
}

TEST_CASE("emu: a missing __syncthreads between a shared write and a neighbour's read gives wrong results") {
  const int blocks = 2, threads = 128;
  std::vector<float> x(blocks * threads), expected(x.size());
  std::iota(x.begin(), x.end(), 0.0f);
  for (int i = 0; i < blocks * threads; ++i)
    expected[static_cast<size_t>(i)] = x[static_cast<size_t>(i / threads * threads + (i + 1) % threads)];
  int wrong_orders = 0;
  for_each_thread_order([&](ThreadOrder order) {
    INFO("order " << to_string(order));
    std::vector<float> y(x.size());
    kernels::launch_rotate_left(x.data(), y.data(), blocks, threads, true);
    CHECK(y == expected);
    kernels::launch_rotate_left(x.data(), y.data(), blocks, threads, false);
    if (y != expected) ++wrong_orders;
    // In forward order each thread finishes before its right neighbour starts, so all but the
    // last thread of a block read the 0xFF poison.
    if (order == ThreadOrder::forward)
      CHECK(std::count_if(y.begin(), y.end(), [](float v) { return std::isnan(v); }) == blocks * (threads - 1));
  });
  CHECK(wrong_orders >= 1);
}

TEST_CASE("emu: divergent barriers and warp operations that can never complete throw instead of hanging, unwound") {
  std::vector<float> y(32, 1.0f);
  for_each_thread_order([&](ThreadOrder order) {
    INFO("order " << to_string(order));
    const std::string early_exit = emulation_error([&] { kernels::launch_early_exit_barrier(y.data()); });
    CHECK(early_exit.find("divergent __syncthreads") != std::string::npos);
    CHECK(early_exit.find("mcdl::emu_selftest::early_exit_barrier(float*)") != std::string::npos);
    CHECK(early_exit.find("block (0,0,0)") != std::string::npos);
    CHECK(early_exit.find("threads 0-15: wait at __syncthreads (") != std::string::npos);
    CHECK(early_exit.find("emu_selftest_kernels.cu:") != std::string::npos);
    CHECK(early_exit.find("threads 16-31: exited") != std::string::npos);

    const std::string split = emulation_error([&] { kernels::launch_split_barrier(y.data()); });
    CHECK(split.find("wait at different barriers") != std::string::npos);

    const std::string shuffle = emulation_error([&] { kernels::launch_half_warp_shuffle(y.data()); });
    CHECK(shuffle.find("warp operation can never complete") != std::string::npos);
    CHECK(shuffle.find("threads 0-15: wait at __shfl_xor_sync (mask 0xffffffff, width 32") != std::string::npos);
    CHECK(shuffle.find("threads 16-31: exited") != std::string::npos);

    const std::string outside = emulation_error([&] { kernels::launch_lane_outside_mask(y.data()); });
    CHECK(outside.find("__shfl_sync (") != std::string::npos);
    CHECK(outside.find("is not in the mask 0x00000001") != std::string::npos);
  });
  // A failed launch unwinds the threads still suspended: every object on their stacks is destroyed
  // (the deferred cp.async and wgmma queues own heap memory), not dropped with the stack.
  for_each_thread_order([&](ThreadOrder order) {
    INFO("order " << to_string(order));
    int destroyed = 0;
    const std::string stuck =
        emulation_error([&] { kernels::launch_early_exit_barrier_with_stack_objects(&destroyed); });
    CHECK(stuck.find("divergent __syncthreads") != std::string::npos);
    CHECK(destroyed == 32);
  });
  // The emulator is usable again after an aborted launch.
  const std::vector<float> x = small_integers(256, 1);
  float sum = NAN;
  kernels::launch_block_sum(x.data(), &sum, 256, 1, 256, false);
  CHECK(sum == std::accumulate(x.begin(), x.end(), 0.0f));
}

TEST_CASE("emu: shuffles honour width: segments, sources outside the segment, xor into earlier segments, a source per lane") {
  for (int width : {1, 2, 4, 8, 16, 32}) {
    for_each_thread_order([&](ThreadOrder order) {
      INFO("order " << to_string(order) << ", width " << width);
      std::vector<int> out(64 * 6, -1);
      kernels::launch_shuffle_patterns(out.data(), width);
      for (int t = 0; t < 64; ++t) {
        const int lane = t % 32, base = t - lane, segment = lane / width * width;
        // xor reaches lanes of the same or an earlier segment; a later one gives the lane's own value.
        auto xor_source = [&](int lane_mask) {
          const int source = lane ^ (lane_mask & 31);
          return source / width <= lane / width ? base + source : t;
        };
        const int expected[6] = {base + segment + 3 % width, lane % width >= 2 ? t - 2 : t,
                                 lane % width + 2 < width ? t + 2 : t, xor_source(1), xor_source(width),
                                 base + segment + (lane * 7 + 3) % 32 % width};
        for (int k = 0; k < 6; ++k) {
          INFO("thread " << t << ", shuffle " << k);
          CHECK(out[static_cast<size_t>(6 * t + k)] == expected[k]);
        }
      }
    });
  }
}

TEST_CASE("emu: a partial last warp shuffles within its lanes; reading a lane past the block's end gives NaN") {
  std::vector<double> x(40), sums(40);
  std::vector<float> down4(40);
  std::iota(x.begin(), x.end(), 1.0);
  for_each_thread_order([&](ThreadOrder order) {
    INFO("order " << to_string(order));
    kernels::launch_partial_warp(x.data(), sums.data(), down4.data());
    for (int t = 0; t < 40; ++t) {
      INFO("thread " << t);
      const int first = t / 8 * 8;
      CHECK(sums[static_cast<size_t>(t)] == 8.0 * (first + 1) + 28.0);  // (first+1) + ... + (first+8)
      const int lane = t % 32;
      if (t < 32)
        CHECK(down4[static_cast<size_t>(t)] == static_cast<float>(lane <= 27 ? t + 4 : t));
      else if (lane < 4)
        CHECK(down4[static_cast<size_t>(t)] == static_cast<float>(t + 4));
      else
        CHECK(std::isnan(down4[static_cast<size_t>(t)]));
    }
  });
}

TEST_CASE("emu: __ballot_sync, __any_sync, __all_sync with full and partial masks, __syncthreads_count/or/and") {
  // Warp 0 mixed (every third lane positive), warp 1 all positive, warp 2 none.
  std::vector<int> x(96);
  for (int t = 0; t < 96; ++t) x[static_cast<size_t>(t)] = t < 32 ? (t % 3 == 0) : t < 64 ? 5 : -5;
  unsigned mixed = 0;
  for (int lane = 0; lane < 32; lane += 3) mixed |= 1u << lane;
  for_each_thread_order([&](ThreadOrder order) {
    INFO("order " << to_string(order));
    std::vector<unsigned> ballots(3), even(3);
    std::vector<int> any(3), all(3), block(3);
    kernels::launch_votes(x.data(), ballots.data(), any.data(), all.data(), even.data(), block.data());
    CHECK(ballots == std::vector<unsigned>{mixed, 0xffffffffu, 0u});
    CHECK(any == std::vector<int>{1, 1, 0});
    CHECK(all == std::vector<int>{0, 1, 0});
    CHECK(even == std::vector<unsigned>{mixed & 0x55555555u, 0x55555555u, 0u});
    CHECK(block == std::vector<int>{11 + 32, 1, 0});
  });
}

TEST_CASE("emu: atomics over a grid-stride loop") {
  const int n = 1000;
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = i * 7919 % n;  // a permutation of 0..999
  for_each_thread_order([&](ThreadOrder order) {
    INFO("order " << to_string(order));
    std::vector<int> histogram(8, 0);
    std::vector<unsigned> uhistogram(8, 0);
    float fsum = 0.0f;
    double dsum = 0.0;
    int imax = INT_MIN, first_claim = -1;
    unsigned umax = 0;
    unsigned long long cas_count = 0;
    kernels::launch_atomics(x.data(), n, histogram.data(), uhistogram.data(), &fsum, &dsum, &imax, &umax, &cas_count,
                            &first_claim);
    CHECK(histogram == std::vector<int>(8, n / 8));
    CHECK(uhistogram == std::vector<unsigned>(8, n / 8));
    CHECK(fsum == 499500.0f);
    CHECK(dsum == 249750.0);
    CHECK(imax == 499);
    CHECK(umax == 999u);
    CHECK(cas_count == 1000ull);
    CHECK((first_claim >= 0 && first_claim < n));
  });
}

TEST_CASE("emu: dynamic shared memory, and shared memory filled with 0xFF at the start of each block") {
  for_each_thread_order([&](ThreadOrder order) {
    INFO("order " << to_string(order));
    const int blocks = 3, threads = 256;
    std::vector<float> x(blocks * threads), y(x.size());
    std::iota(x.begin(), x.end(), 0.0f);
    kernels::launch_reverse_dynamic(x.data(), y.data(), blocks, threads);
    for (int i = 0; i < blocks * threads; ++i)
      CHECK(y[static_cast<size_t>(i)] == x[static_cast<size_t>(i / threads * threads + threads - 1 - i % threads)]);

    // Only block 0 writes: the other blocks must see poison, not block 0's values.
    std::vector<unsigned> ustatic(3 * 64), udynamic(3 * 64);
    kernels::launch_read_unwritten(ustatic.data(), udynamic.data(), 3);
    std::vector<float> fstatic(3 * 64), fdynamic(3 * 64);
    kernels::launch_read_unwritten(fstatic.data(), fdynamic.data(), 3);
    for (size_t i = 0; i < ustatic.size(); ++i) {
      const bool written = i < 64;
      CHECK(ustatic[i] == (written ? 7u : 0xffffffffu));
      CHECK(udynamic[i] == (written ? 7u : 0xffffffffu));
      CHECK(std::bit_cast<uint32_t>(fstatic[i]) == (written ? std::bit_cast<uint32_t>(7.0f) : 0xffffffffu));
      CHECK(std::bit_cast<uint32_t>(fdynamic[i]) == (written ? std::bit_cast<uint32_t>(7.0f) : 0xffffffffu));
    }
  });
}

TEST_CASE("emu: 2-D and 3-D grids and blocks") {
  for (auto [grid, block] : {std::pair{dim3(3, 2, 2), dim3(4, 3, 2)}, std::pair{dim3(2, 3), dim3(16, 8)}}) {
    for_each_thread_order([&, grid = grid, block = block](ThreadOrder order) {
      INFO("order " << to_string(order) << ", block " << block.x << "x" << block.y << "x" << block.z);
      const int threads = static_cast<int>(block.x * block.y * block.z);
      const int blocks = static_cast<int>(grid.x * grid.y * grid.z);
      std::vector<int> out(static_cast<size_t>(13 * threads * blocks), -1);
      kernels::launch_record_indices(out.data(), grid, block);
      for (int b = 0; b < blocks; ++b) {
        for (int t = 0; t < threads; ++t) {
          const int bx = b % static_cast<int>(grid.x), by = b / static_cast<int>(grid.x) % static_cast<int>(grid.y),
                    bz = b / static_cast<int>(grid.x * grid.y);
          const int tx = t % static_cast<int>(block.x), ty = t / static_cast<int>(block.x) % static_cast<int>(block.y),
                    tz = t / static_cast<int>(block.x * block.y);
          const std::vector<int> expected = {tx,
                                             ty,
                                             tz,
                                             bx,
                                             by,
                                             bz,
                                             static_cast<int>(block.x),
                                             static_cast<int>(block.y),
                                             static_cast<int>(block.z),
                                             static_cast<int>(grid.x),
                                             static_cast<int>(grid.y),
                                             static_cast<int>(grid.z),
                                             t ^ 1};
          const auto record = out.begin() + 13 * (b * threads + t);
          CHECK(std::vector<int>(record, record + 13) == expected);
        }
      }
    });
  }
}

TEST_CASE("emu: math intrinsics match the host functions") {
  const int n = 301;
  std::vector<float> x(n), y(static_cast<size_t>(n * math_outputs), NAN);
  for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = -2.0f + 4.0f * static_cast<float>(i) / (n - 1);
  kernels::launch_math(x.data(), y.data(), n);
  for (int i = 0; i < n; ++i) {
    const float v = x[static_cast<size_t>(i)];
    const float expected[math_outputs] = {expf(v),
                                          expf(v),
                                          1.0f / sqrtf(fabsf(v) + 1.0f),
                                          v / 3.0f,
                                          v * 3.0f,
                                          v + 0.5f,
                                          fmaf(v, 2.0f, 1.0f),
                                          fmaxf(v, 0.0f),
                                          erff(v),
                                          nearbyintf(v * 10.0f),
                                          static_cast<float>(std::min(static_cast<int>(v * 10.0f), 3)),
                                          static_cast<float>(std::max(static_cast<int>(v * 10.0f), -3)),
                                          std::clamp(v, 0.0f, 1.0f),
                                          tanhf(v)};
    for (int k = 0; k < math_outputs; ++k) {
      INFO("x " << v << ", output " << k);
      CHECK(y[static_cast<size_t>(math_outputs * i + k)] == expected[k]);
    }
  }
}

TEST_CASE("emu: thread order: forward, reverse, seeded shuffles, reshuffled after each barrier") {
  const int threads = 64;
  auto ranks = [&] {
    int counter = 0;
    std::vector<int> before(threads), after(threads);
    kernels::launch_execution_rank(&counter, before.data(), after.data(), threads);
    return std::pair{before, after};
  };
  std::vector<int> forward(threads), reverse(threads);
  std::iota(forward.begin(), forward.end(), 0);
  std::reverse_copy(forward.begin(), forward.end(), reverse.begin());

  mcdl::emu::set_thread_order(ThreadOrder::reverse);
  std::vector<ThreadOrder> visited;
  for_each_thread_order([&](ThreadOrder order) {
    visited.push_back(order);
    CHECK(mcdl::emu::thread_order() == order);
  });
  CHECK(visited == std::vector<ThreadOrder>{ThreadOrder::forward, ThreadOrder::reverse, ThreadOrder::shuffled});
  CHECK(mcdl::emu::thread_order() == ThreadOrder::reverse);  // restored
  CHECK(ranks() == std::pair{reverse, reverse});

  mcdl::emu::set_thread_order(ThreadOrder::forward);
  CHECK(ranks() == std::pair{forward, forward});

  mcdl::emu::set_thread_order(ThreadOrder::shuffled);
  const uint64_t seed = mcdl::emu::shuffle_seed();
  const auto shuffled = ranks();
  CHECK(shuffled.first != forward);
  CHECK(shuffled.first != reverse);
  CHECK(shuffled.first != shuffled.second);  // a new order after the barrier
  CHECK(std::is_permutation(shuffled.first.begin(), shuffled.first.end(), forward.begin()));
  CHECK(std::is_permutation(shuffled.second.begin(), shuffled.second.end(), forward.begin()));
  CHECK(ranks() == shuffled);  // deterministic
  mcdl::emu::set_shuffle_seed(seed + 1);
  CHECK(ranks() != shuffled);
  mcdl::emu::set_shuffle_seed(seed);
  mcdl::emu::set_thread_order(ThreadOrder::forward);
}

TEST_CASE("emu: each thread gets its own copy of the kernel parameters") {
  std::vector<int> out(40);
  kernels::launch_own_parameters(out.data(), 100, 40);
  std::vector<int> expected(40);
  std::iota(expected.begin(), expected.end(), 100);
  CHECK(out == expected);
}

TEST_CASE("emu: a barrier-free kernel over a million elements") {
  const int n = 1 << 20;
  std::vector<float> x = small_integers(n, 3), y(static_cast<size_t>(n), NAN);
  kernels::launch_scale(x.data(), y.data(), 2.0f, n);
  for (int i = 0; i < n; ++i)
    if (y[static_cast<size_t>(i)] != 2.0f * x[static_cast<size_t>(i)]) FAIL("element " << i);
}

TEST_CASE("emu: invalid launch configurations and intrinsics outside a kernel throw EmulationError") {
  float x = 1.0f, y = 0.0f;
  CHECK_THROWS_WITH_AS(mcdl::cuda::launch(copy_one, 1, 1025, 0, nullptr, &x, &y),
                       doctest::Contains("invalid block (1025,1,1)"), EmulationError);
  CHECK_THROWS_WITH_AS(mcdl::cuda::launch(copy_one, dim3(1, 1, 0), 32, 0, nullptr, &x, &y),
                       doctest::Contains("invalid grid (1,1,0)"), EmulationError);
  CHECK_THROWS_WITH_AS(mcdl::cuda::launch(copy_one, 1, 32, 300000, nullptr, &x, &y),
                       doctest::Contains("dynamic shared memory"), EmulationError);
  CHECK_THROWS_WITH_AS(__syncthreads(), doctest::Contains("__syncthreads called outside a kernel"), EmulationError);
  CHECK_THROWS_WITH_AS(__shfl_sync(0xffffffffu, 1.0f, 0), doctest::Contains("__shfl_sync called outside a kernel"),
                       EmulationError);
  mcdl::cuda::launch(copy_one, 1, 1, 0, nullptr, &x, &y);
  CHECK(y == 1.0f);
}
