// CUDA parity of the indexing ops (index_select, masked_select, masked_select_rows), forward and
// backward, and their errors on the device. Comparisons are exact (atol = rtol = 0): gathers
// copy values, and the index_select gradient sums each row's positions in the same order in a
// double accumulator on both devices, so even repeated indices give identical bits.
#include <doctest/doctest.h>

#include <random>

#include "engine/ops/indexing.h"
#include "engine/ops/shape.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

// `count` indices into `rows` rows, with runs of repeats (row 5 many times, scattered).
Tensor repeated_indices(int64_t count, int64_t rows, uint64_t seed, DType dtype = DType::i64) {
  std::mt19937_64 engine(seed);
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[i] = i % 7 == 3 ? 5 % rows : static_cast<int64_t>(engine() % rows);
  return from_vector(values, {count}).to(dtype);
}

// A 0/1 mask selecting about half of its entries.
Tensor half_mask(const Shape& shape, uint64_t seed) {
  return random_tensor(shape, seed, 0, 2, DType::f64).to(DType::u8);
}

}  // namespace

TEST_CASE("cuda parity: index_select with repeated indices") {
  const Tensor x = leaf({197, 768}, 1);
  const auto select = [](const std::vector<Tensor>& t) { return index_select(t[0], t[1]); };
  check_cuda_parity("index_select i64", select, {x, repeated_indices(300, 197, 2)}, 0, 0);
  check_cuda_parity("index_select i32", select, {leaf({197, 3, 64}, 3), repeated_indices(64, 197, 4, DType::i32)}, 0,
                    0);
  check_cuda_parity("index_select rows of one", select, {leaf({3}, 5), repeated_indices(197, 3, 6)}, 0, 0);
  check_cuda_parity("index_select no indices", select, {leaf({3, 64}, 7), zeros({0}, DType::i64)}, 0, 0);
  // Two selections from one input: the second gradient accumulates into the first.
  check_cuda_parity(
      "index_select accumulate",
      [](auto& t) { return concat({index_select(t[0], t[1]), index_select(t[0], t[2])}, 0); },
      {leaf({197, 64}, 8), repeated_indices(50, 197, 9), repeated_indices(70, 197, 10, DType::i32)}, 0, 0);
  check_cuda_parity("index_select f64", select, {leaf({197, 3}, 11, DType::f64), repeated_indices(300, 197, 12)}, 0, 0);
  // Rows known on the host (HostIndex): no read-back, the same gather and gradient.
  const auto select_host_rows = [](const std::vector<Tensor>& t) {
    return index_select(t[0], HostIndex(t[1].to(Device::cpu()).to_vector<int64_t>(), t[0].device()));
  };
  check_cuda_parity("index_select HostIndex", select_host_rows, {x, repeated_indices(300, 197, 13)}, 0, 0);
}

TEST_CASE("cuda parity: masked_select and masked_select_rows") {
  const auto select = [](const std::vector<Tensor>& t) { return masked_select(t[0], t[1]); };
  const auto select_rows = [](const std::vector<Tensor>& t) { return masked_select_rows(t[0], t[1]); };
  check_cuda_parity("masked_select_rows", select_rows, {leaf({197, 768}, 20), half_mask({197}, 21)}, 0, 0);
  check_cuda_parity("masked_select_rows 3-D", select_rows, {leaf({197, 3, 64}, 22), half_mask({197}, 23)}, 0, 0);
  // 37,824 mask values: several scan blocks.
  check_cuda_parity("masked_select", select, {leaf({3, 197, 64}, 24), half_mask({3, 197, 64}, 25)}, 0, 0);
  // 151,296 values: 74 scan blocks, more than one tile of block offsets at 64 threads.
  check_cuda_forward_parity("masked_select many blocks", select,
                            {random_tensor({197, 768}, 34, -1, 1, DType::f32), half_mask({197, 768}, 35)});
  check_cuda_parity("masked_select none", select, {leaf({3, 197}, 26), zeros({3, 197}, DType::u8)}, 0, 0);
  check_cuda_parity("masked_select all", select, {leaf({3, 197}, 27), ones({3, 197}, DType::u8)}, 0, 0);
  check_cuda_parity("masked_select empty", select, {leaf({0, 3}, 28), zeros({0, 3}, DType::u8)}, 0, 0);
  check_cuda_parity(
      "masked_select accumulate",
      [](auto& t) { return concat({masked_select(t[0], t[1]), masked_select(t[0], t[2])}, 0); },
      {leaf({3, 197}, 29), half_mask({3, 197}, 30), half_mask({3, 197}, 31)}, 0, 0);
  check_cuda_parity("masked_select f64", select, {leaf({3, 197}, 32, DType::f64), half_mask({3, 197}, 33)}, 0, 0);
}

TEST_CASE("cuda parity: indexing ops gather every dtype bit for bit") {
  for (DType dtype : all_dtypes) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = values_of(dtype, {197, 3, 5}, 40);
    check_cuda_forward_parity("index_select", [](auto& t) { return index_select(t[0], t[1]); },
                              {x, repeated_indices(300, 197, 41, DType::i32)});
    check_cuda_forward_parity("masked_select", [](auto& t) { return masked_select(t[0], t[1]); },
                              {x, half_mask({197, 3, 5}, 42)});
    check_cuda_forward_parity("masked_select_rows", [](auto& t) { return masked_select_rows(t[0], t[1]); },
                              {x, half_mask({197}, 43)});
  }
}

TEST_CASE("cuda: indexing errors on the device carry the CPU path's messages") {
  const Tensor x = zeros({3, 2}, DType::f32, Device::cuda());
  CHECK_THROWS_WITH(index_select(x, from_vector<int64_t>({0, 2, 3, 7}, {4}, Device::cuda())),
                    doctest::Contains("index_select: index 3 at position 2 is out of range for 3 rows of f32[3, 2] "
                                      "cuda:0"));
  CHECK_THROWS_WITH(index_select(x, from_vector<int32_t>({1, -1}, {2}, Device::cuda())),
                    doctest::Contains("index_select: index -1 at position 1 is out of range for 3 rows"));
  CHECK_THROWS_WITH(masked_select(x, from_vector<uint8_t>({0, 1, 2, 1, 0, 3}, {3, 2}, Device::cuda())),
                    doctest::Contains("masked_select: mask value 2 at position 2 is not 0 or 1 "
                                      "(mask u8[3, 2] cuda:0)"));
  CHECK_THROWS_WITH(masked_select_rows(x, from_vector<uint8_t>({1, 1, 255}, {3}, Device::cuda())),
                    doctest::Contains("masked_select_rows: mask value 255 at position 2 is not 0 or 1"));
  // A bad value far into a long mask (a later scan block) is still the first one reported.
  std::vector<uint8_t> long_mask(40000, 1);
  long_mask[31000] = 7;
  long_mask[39000] = 2;
  CHECK_THROWS_WITH(masked_select(zeros({40000}, DType::f32, Device::cuda()),
                                  from_vector<uint8_t>(long_mask, {40000}, Device::cuda())),
                    doctest::Contains("masked_select: mask value 7 at position 31000 is not 0 or 1"));
}

TEST_CASE("cuda parity: indexing over wide rows and long masks" * doctest::test_suite("slow")) {
  uint64_t seed = 100;
  for (int64_t rows : {1, 3, 197})
    for (int64_t cols : {1, 3, 64, 197, 768, 2304}) {
      CAPTURE(rows);
      CAPTURE(cols);
      const Tensor x = leaf({rows, cols}, ++seed);
      check_cuda_parity("index_select", [](auto& t) { return index_select(t[0], t[1]); },
                        {x, repeated_indices(2 * rows + 1, rows, ++seed)}, 0, 0);
      check_cuda_parity("masked_select_rows", [](auto& t) { return masked_select_rows(t[0], t[1]); },
                        {x, half_mask({rows}, ++seed)}, 0, 0);
      check_cuda_parity("masked_select", [](auto& t) { return masked_select(t[0], t[1]); },
                        {x, half_mask({rows, cols}, ++seed)}, 0, 0);
    }
}

TEST_CASE("cuda parity: a mask longer than the scan's block cap" * doctest::test_suite("slow")) {
  // More than mask_scan_max_blocks (1024) blocks of 2048 values: each block scans a longer span.
  // Forward only (about 45 s in the emulator); the backward reuses the same scan.
  check_cuda_forward_parity("masked_select long", [](auto& t) { return masked_select(t[0], t[1]); },
                            {random_tensor({2100000}, 1, -1, 1, DType::f32), half_mask({2100000}, 2)});
}
