// Uploads through page-locked staging (kernels/cuda/upload_staging.cu): the placement of the
// spans in the ring (kernels/cuda/staging_spans.h), and the bytes that arrive, for uploads that
// reuse a host buffer at once and for one above the staged size.
#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "engine/tensor.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/staging_spans.h"

using namespace mcdl;
using cuda::StagingSpans;

TEST_CASE("staging spans: in order, wrapping to the start, full until the oldest is released") {
  StagingSpans spans(100);
  CHECK(spans.take(40) == 0);
  CHECK(spans.take(40) == 40);
  CHECK_FALSE(spans.take(30).has_value());  // 20 left at the end, the start still live
  spans.release_oldest();                   // [0, 40) free
  CHECK(spans.take(30) == 0);               // wraps
  CHECK_FALSE(spans.take(20).has_value());  // wrapped: only [30, 40) is free
  CHECK(spans.take(10) == 30);
  CHECK_FALSE(spans.take(1).has_value());   // head met the oldest: full
  spans.release_oldest();                   // [40, 80) free, and the end beyond it
  CHECK(spans.take(50) == 40);              // up to the end
  CHECK(spans.live() == 3);
  spans.release_oldest();
  spans.release_oldest();
  spans.release_oldest();
  CHECK(spans.take(100) == 0);  // empty: from the start again, the whole buffer
  CHECK_THROWS(spans.take(101));
  CHECK_THROWS(spans.take(0));
  spans.release_oldest();
  CHECK_THROWS(spans.release_oldest());
}

TEST_CASE("uploads: a host buffer reused at once after each upload, one above the staged size, several joined") {
  const Device gpu = Device::cuda();
  std::vector<int32_t> host(1000);
  std::vector<Tensor> uploaded;
  for (int32_t round = 0; round < 50; ++round) {
    std::iota(host.begin(), host.end(), round * 1000);
    const int64_t n = 1 + (round * 37) % 1000;
    Tensor t = empty({n}, DType::i32, gpu);
    cuda::copy_host_to_device(t.raw_data(), host.data(), static_cast<size_t>(n) * sizeof(int32_t));
    uploaded.push_back(t);
  }
  for (int32_t round = 0; round < 50; ++round) {
    const std::vector<int32_t> values = uploaded[static_cast<size_t>(round)].to_vector<int32_t>();
    CAPTURE(round);
    REQUIRE(!values.empty());
    CHECK(values.front() == round * 1000);
    CHECK(values.back() == round * 1000 + static_cast<int32_t>(values.size()) - 1);
  }
  std::vector<uint8_t> big((size_t{65} << 20) + 3);  // above 64 MB: a synchronised copy
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<uint8_t>(i % 251);
  Tensor device_big = empty({static_cast<int64_t>(big.size())}, DType::u8, gpu);
  cuda::copy_host_to_device(device_big.raw_data(), big.data(), big.size());
  CHECK(device_big.to_vector<uint8_t>() == big);

  // Several host buffers back to back, staged and above the staged size (an empty part included).
  const std::vector<uint8_t> head = {1, 2, 3}, tail = {9, 8};
  for (const std::vector<uint8_t>* middle : {&head, static_cast<const std::vector<uint8_t>*>(&big)}) {
    std::vector<uint8_t> expected = head;
    expected.insert(expected.end(), middle->begin(), middle->end());
    expected.insert(expected.end(), tail.begin(), tail.end());
    Tensor joined = empty({static_cast<int64_t>(expected.size())}, DType::u8, gpu);
    cuda::copy_host_parts_to_device(joined.raw_data(), {{head.data(), head.size()},
                                                        {middle->data(), middle->size()},
                                                        {nullptr, 0},
                                                        {tail.data(), tail.size()}});
    CHECK(joined.to_vector<uint8_t>() == expected);
  }
}
