// The patch convolution on the CUDA device (im2col, the batched GEMM, the channel fill and sums,
// col2im) against the CPU, forward and backward.
//
// Tolerances. f32: the device GEMM accumulates the K = C·P² products of each output in float in
// its own order, the CPU reference in another; the rounding grows with K, so K = 768 (P = 16,
// C = 3) gets 1e-4 absolute and relative, smaller K 1e-5 absolute and 1e-4 relative. TF32
// products: 2e-2, as for matmul. f64: 1e-12.
#include <doctest/doctest.h>

#include "engine/ops.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

Tensor conv(const std::vector<Tensor>& x) { return conv2d_patch(x[0], x[1], x.size() > 2 ? x[2] : Tensor()); }

struct ConvCase {
  const char* name;
  int64_t batch, channels, height, width, patch, out_channels;
  bool bias;
  double atol, rtol;
};

std::vector<Tensor> inputs_for(const ConvCase& c, uint64_t seed) {
  std::vector<Tensor> inputs = {leaf({c.batch, c.channels, c.height, c.width}, seed),
                                leaf({c.out_channels, c.channels, c.patch, c.patch}, seed + 1)};
  if (c.bias) inputs.push_back(leaf({c.out_channels}, seed + 2));
  return inputs;
}

// ViT-style P = 16 on a 3-channel 32×32 image, MNIST-style P = 7 on 28×28, and P = 2 with odd
// channel counts and a non-square image; batch 1 and 3, with and without bias.
const ConvCase parity_cases[] = {
    {"P=16 C=3 32x32 O=5 B=1 bias", 1, 3, 32, 32, 16, 5, true, 1e-4, 1e-4},
    {"P=16 C=3 32x32 O=3 B=3", 3, 3, 32, 32, 16, 3, false, 1e-4, 1e-4},
    {"P=7 C=1 28x28 O=4 B=3 bias", 3, 1, 28, 28, 7, 4, true, 1e-5, 1e-4},
    {"P=2 C=5 6x10 O=7 B=3 bias", 3, 5, 6, 10, 2, 7, true, 1e-5, 1e-4},
    {"P=2 C=3 4x4 O=1 B=1", 1, 3, 4, 4, 2, 1, false, 1e-5, 1e-4},
};

}  // namespace

TEST_CASE("cuda parity: conv2d_patch") {
  uint64_t seed = 100;
  for (const ConvCase& c : parity_cases) {
    CAPTURE(c.name);
    check_cuda_parity(std::string("conv2d_patch ") + c.name, conv, inputs_for(c, seed += 3), c.atol, c.rtol);
  }
  check_cuda_parity("conv2d_patch f64", conv,
                    {leaf({3, 3, 4, 6}, 130, DType::f64), leaf({5, 3, 2, 2}, 131, DType::f64),
                     leaf({5}, 132, DType::f64)},
                    1e-12, 1e-12);
}

TEST_CASE("cuda parity: conv2d_patch with TF32 products") {
  const ScopedEngineSettings tf32(&EngineSettings::matmul_precision, MatmulPrecision::tf32);
  check_cuda_parity("conv2d_patch tf32", conv, {leaf({2, 3, 8, 8}, 400), leaf({5, 3, 4, 4}, 401), leaf({5}, 402)},
                    2e-2, 2e-2);
}
