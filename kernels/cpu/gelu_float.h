// The exact GELU 0.5·x·(1 + erf(x/√2)) and its derivative on floats, on the calling thread: sixteen lanes at a time
// where the processor has AVX-512, four elsewhere (kernels/cpu/erf_float.h). Both compute the same
// operations lane by lane with no fused multiply-add, so every machine gives the same bits.
#pragma once
#include <cstdint>

namespace mcdl::cpu {

// y[i] = gelu(x[i]) for i < n; y may be x.
void gelu_float(const float* x, float* y, int64_t n);

// grad_in[i] = grad_out[i]·gelu'(x[i]) (overwrite) or grad_in[i] + that, with
// gelu'(x) = Φ(x) + x·φ(x) in float (kernels/cpu/exp_float.h's exp), as the CUDA kernel computes it.
void gelu_backward_float(const float* x, const float* grad_out, float* grad_in, int64_t n, bool overwrite);

}  // namespace mcdl::cpu
