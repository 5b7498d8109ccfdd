// Random tensors on the device: uniforms from the device kernel are bit for bit the CPU's for
// the same stream, and advance the stream by the same number of words; the creators drawn on
// the host (normal, truncated normal, integers, permutations) give the same values on a CUDA
// device. Comparisons are exact (==), never within a tolerance.
#include <doctest/doctest.h>

#include <cmath>
#include <iomanip>

#include "engine/random.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

struct UniformCase {
  Shape shape;
  uint64_t counter;  // where the stream starts: at, or in the middle of, a Philox block
  double low, high;
};

// Values compared as doubles: every f32 and f64 converts exactly, and NaN never compares equal.
void check_same_values(const std::string& label, const Tensor& cpu, const Tensor& cuda) {
  REQUIRE_MESSAGE(cuda.device().is_cuda(), label << ": " << cuda.str());
  REQUIRE_MESSAGE(cuda.shape() == cpu.shape(), label << ": " << cuda.str() << " vs " << cpu.str());
  REQUIRE_MESSAGE(cuda.dtype() == cpu.dtype(), label << ": " << cuda.str() << " vs " << cpu.str());
  const auto expected = cpu.to_vector<double>(), got = cuda.to_vector<double>();
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    if (!(got[i] == expected[i]) && mismatches++ == 0) first = i;
  CHECK_MESSAGE(mismatches == 0, label << ": " << mismatches << " elements differ, first [" << first << "]: cpu "
                                       << std::setprecision(17) << expected[first] << " vs cuda " << got[first]);
}

void check_uniform_cases(const std::vector<UniformCase>& cases, const std::vector<unsigned>& blocks) {
  for (const UniformCase& c : cases)
    for (DType dtype : {DType::f32, DType::f64}) {
      const uint64_t stream = stream_id("uniform parity", {static_cast<int64_t>(c.counter)});
      RandomStream cpu_stream(7, stream, c.counter);
      const Tensor expected = rand_uniform(c.shape, dtype, cpu_stream, c.low, c.high);
      const uint64_t words = static_cast<uint64_t>(shape_numel(c.shape)) * (dtype == DType::f32 ? 1 : 2);
      REQUIRE(cpu_stream.counter() == c.counter + words);
      for (unsigned block : blocks) emu::for_each_thread_order([&](emu::ThreadOrder order) {
        const std::string label = "rand_uniform " + std::string(dtype_name(dtype)) + shape_str(c.shape) +
                                  " counter " + std::to_string(c.counter) + " [" + std::to_string(c.low) + ", " +
                                  std::to_string(c.high) + ") (" + emu::to_string(order) + " order, block " +
                                  std::to_string(block) + ")";
        RandomStream device_stream(7, stream, c.counter);
        Tensor got;
        {
          const ScopedEngineSettings settings(device_run_settings(block));
          got = rand_uniform(c.shape, dtype, device_stream, c.low, c.high, Device::cuda());
        }
        check_same_values(label, expected, got);
        // The same words consumed: the streams continue identically.
        CHECK_MESSAGE(device_stream.counter() == cpu_stream.counter(), label);
        CHECK_MESSAGE(device_stream.next_u32() == RandomStream(cpu_stream).next_u32(), label);
      });
    }
}

}  // namespace

TEST_CASE("cuda random: rand_uniform on the device is bit for bit the CPU's") {
  check_uniform_cases(
      {
          {{1}, 0, 0.0, 1.0},
          {{3}, 1, -1.0, 3.0},
          {{3}, 3, -1.0, 3.0},  // an f64 element straddles two Philox blocks
          {{2, 3, 5}, 6, -0.5, 0.25},
          {{197, 768}, 4097, -0.03, 0.03},
          {{0}, 5, 0.0, 1.0},
          // f32 values that round up to high are clamped to the float below it, as on the CPU.
          {{1000}, 2, 1.0 - 1e-7, 1.0 - 1e-10},
          // f64: half the values round to high and are clamped.
          {{257}, 9, 1.0, std::nextafter(1.0, 2.0)},
      },
      {0, 64});
  // Counters past 2^32 words (the block position's high half in use).
  check_uniform_cases({{{197}, (uint64_t{1} << 34) - 5, -2.0, 2.0}}, {0});
}

TEST_CASE("cuda random: rand_uniform over a full sweep of start offsets" * doctest::test_suite("slow")) {
  std::vector<UniformCase> cases;
  for (uint64_t counter = 0; counter < 8; ++counter)
    for (int64_t n : {1, 2, 3, 4, 5, 64, 197, 768, 197 * 768}) cases.push_back({{n}, counter, -1.0, 1.0});
  check_uniform_cases(cases, {0, 32, 64, 1024});
}

TEST_CASE("cuda random: creators drawn on the host give the same values on the device") {
  auto streams = [](const char* name) {
    return std::pair{RandomStream(11, stream_id(name), 3), RandomStream(11, stream_id(name), 3)};
  };
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    auto [cpu_normal, cuda_normal] = streams("normal");
    check_same_values("rand_normal", rand_normal({3, 197}, dtype, cpu_normal, 0.5, 2.0),
                      rand_normal({3, 197}, dtype, cuda_normal, 0.5, 2.0, Device::cuda()));
    CHECK(cuda_normal.counter() == cpu_normal.counter());

    auto [cpu_trunc, cuda_trunc] = streams("trunc_normal");
    check_same_values("rand_trunc_normal", rand_trunc_normal({197}, dtype, cpu_trunc, 0.0, 0.02, -0.04, 0.04),
                      rand_trunc_normal({197}, dtype, cuda_trunc, 0.0, 0.02, -0.04, 0.04, Device::cuda()));
    CHECK(cuda_trunc.counter() == cpu_trunc.counter());
  }
  auto [cpu_int, cuda_int] = streams("int");
  check_same_values("rand_int", rand_int({3, 197}, -5, 1000, cpu_int),
                    rand_int({3, 197}, -5, 1000, cuda_int, Device::cuda()));
  CHECK(cuda_int.counter() == cpu_int.counter());

  auto [cpu_perm, cuda_perm] = streams("permutation");
  check_same_values("rand_permutation", rand_permutation(197, cpu_perm),
                    rand_permutation(197, cuda_perm, Device::cuda()));
  CHECK(cuda_perm.counter() == cpu_perm.counter());

  RandomStream s(1, 2);
  CHECK_THROWS_WITH(rand_uniform({2}, DType::f32, s, 0.0, 1.0, Device::cuda(1)),
                    doctest::Contains("only cuda:0 is supported"));
  CHECK(s.counter() == 0);  // a failed creation consumes no words
}
