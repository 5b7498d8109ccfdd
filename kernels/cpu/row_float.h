// Row passes on floats for the host's bf16 inference (kernels/cpu/bf16_inference.h): the softmax
// numerators and LayerNorm of one row, sixteen lanes at a time where the processor has AVX-512 and
// four elsewhere. Sums keep sixteen partial sums (partial l adds the elements l, l + 16, l + 32, …
// in order) and add them pairwise at the end, on both paths, with no fused multiply-add: every
// machine gives the same bits.
#pragma once
#include <cstdint>

namespace mcdl::cpu {

// row[c] = exp(row[c] − max(row)) in place (kernels/cpu/exp_float.h); returns their sum.
float softmax_numerators(float* row, int64_t n);

// y = (x − mean)·rstd·gamma + beta over one row of d, rstd = 1/√(var + eps), the biased variance
// from the centred values (two passes, as the device kernel). y may be x.
void layer_norm_row(const float* x, const float* gamma, const float* beta, float* y, int64_t d, float eps);

}  // namespace mcdl::cpu
