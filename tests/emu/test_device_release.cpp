// cuda::release_device() through the emulator, which counts what its runtime and libraries hold
// (kernels/emu/live_objects.h): everything the engine makes on the GPU — the stream, pool
// blocks, cuBLAS and cuBLASLt handles and descriptors, the cuBLASLt workspace, timing events,
// the uploads' page-locked staging buffer and events — is released, and made afresh when used
// again. On a real GPU the same is checked by compute-sanitizer's leak check (make
// test-gpu-sanitize).
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/storage.h"
#include "engine/tensor.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/runtime.h"
#include "kernels/emu/live_objects.h"

using namespace mcdl;

namespace {

std::string describe(const std::map<std::string, int64_t>& counts) {
  std::ostringstream os;
  for (const auto& [kind, count] : counts) os << kind << ": " << count << "; ";
  return os.str();
}

// One of each GPU object: a cuBLAS product, a cuBLASLt product with its bias fused, a timing (two
// events) and an upload through the page-locked staging buffer (one event), on tensors that are
// gone when it returns.
void use_every_kind_of_object() {
  const Device gpu = Device::cuda();
  const Tensor a = full({8, 16}, 0.5, DType::f32, gpu), b = full({16, 12}, 0.25, DType::f32, gpu),
               bias = full({12}, 1.0, DType::f32, gpu);
  Tensor c = full({8, 12}, 0.0, DType::f32, gpu);
  cuda::gemm(false, false, 8, 12, 16, 1.0f, a.ptr<float>(), 16, 0, b.ptr<float>(), 12, 0, 0.0f, c.ptr<float>(), 12, 0,
             1, cuda::GemmMode::fp32);
  REQUIRE(cuda::gemm_bias(false, false, 8, 12, 16, a.ptr<float>(), 16, b.ptr<float>(), 12, bias.ptr<float>(), nullptr,
                          c.ptr<float>(), cuda::GemmMode::fp32));  // fused: cuBLASLt ran
  CHECK(c.to(Device::cpu()).to_vector<float>()[0] == doctest::Approx(3.0));  // 16 · 0.5 · 0.25 + 1
  cuda::time_on_device_ms([](void*) {}, nullptr, 2);
  CHECK(from_vector<float>({1, 2, 3}, {3}, gpu).to_vector<float>() == std::vector<float>{1, 2, 3});
}

}  // namespace

TEST_CASE("release_device: every stream, handle, plan, event and pool block the engine made is released") {
  // What earlier tests in this process made through the engine goes first (none of their tensors
  // is alive). What remains (objects a test made with the emulated API itself) is the baseline.
  REQUIRE(storage_live_bytes(Device::cuda()) == 0);
  release_device_resources();
  const std::map<std::string, int64_t> baseline = emu::live_object_counts();
  if (!baseline.empty()) MESSAGE("left by earlier tests, not by the engine: ", describe(baseline));

  for (int round = 1; round <= 2; ++round) {  // the second after a release: made afresh, released again
    CAPTURE(round);
    use_every_kind_of_object();
    cuda::synchronize();
    std::map<std::string, int64_t> made = emu::live_object_counts();
    for (const auto& [kind, count] : baseline) made[kind] -= count;
    INFO("made: ", describe(made));
    CHECK(made["streams"] == 1);
    CHECK(made["cublas handles"] == 1);
    CHECK(made["cublasLt handles"] == 1);
    CHECK(made["cublasLt descriptors"] >= 1);  // the cached plan's
    CHECK(made["pool blocks in use"] == 1);  // the cuBLASLt workspace
    CHECK(made["pool bytes kept"] > 0);      // the tensors' blocks, kept by the pool for reuse
    CHECK(made["events"] == 1);              // the upload's (a timing destroys its own)
    CHECK(made["pinned host buffers"] == 1);  // the staging buffer

    release_device_resources();
    INFO("live after release: ", describe(emu::live_object_counts()));
    CHECK(emu::live_object_counts() == baseline);
  }
}
