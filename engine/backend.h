// The one place the engine picks a kernel's implementation for a device (dlib's tt::
// forwarding to cpu:: / cuda:: twins is the model). Every kernel listed below exists in
// kernels/cpu/ and in kernels/cuda/ under the same name and with the same arguments, so an op
// names it once:
//
//   on_device(x.device(), [&](auto k) { k.gelu_forward(x.ptr<T>(), out.ptr<T>(), x.numel()); });
//
// calls cpu::gelu_forward for a CPU tensor and cuda::gelu_forward for a CUDA one. A name missing
// on either side fails to compile, and so does a call whose arguments one side does not take.
// Each CUDA kernel call runs inside a profiler range named after the kernel (engine/profile.h).
#pragma once
#include <utility>

#include "engine/device.h"
#include "engine/profile.h"
#include "kernels/cpu/bf16_inference.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/copy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/indexing.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/memory_bank.h"
#include "kernels/cpu/nn.h"
#include "kernels/cpu/optim.h"
#include "kernels/cpu/random.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/shape.h"
#include "kernels/cuda/bf16_inference.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/linalg.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/memory_bank.h"
#include "kernels/cuda/nn.h"
#include "kernels/cuda/optim.h"
#include "kernels/cuda/random.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/shape.h"

// The kernels with a twin on each device, by the header that declares them.
#define MCDL_KERNELS(X)                                                                                    \
  /* copy.h, runtime.h */                                                                                  \
  X(fill) X(convert) X(accumulate) X(copy_device_to_device)                                                \
  /* gemm.h, conv.h / linalg.h */                                                                          \
  X(gemm) X(gemm_bias) X(column_sums) X(im2col_patches) X(col2im_patches) X(fill_channels) X(channel_sums) \
  /* elementwise.h */                                                                                      \
  X(unary_forward) X(unary_backward) X(binary_same) X(binary_rows) X(binary_strided) X(binary_grad_same)   \
  X(binary_grad_rows_full) X(binary_grad_rows_reduced) X(binary_grad_strided)                              \
  /* indexing.h */                                                                                         \
  X(first_invalid_index) X(gather_rows) X(scatter_add_rows) X(mask_places) X(masked_gather_rows)           \
  X(masked_scatter_rows)                                                                                   \
  /* loss.h */                                                                                             \
  X(cross_entropy_forward) X(cross_entropy_backward) X(cross_entropy_soft_forward)                         \
  X(cross_entropy_soft_backward) X(mse_forward) X(mse_backward)                                            \
  /* nn.h */                                                                                               \
  X(gelu_forward) X(gelu_backward) X(layer_norm_forward) X(layer_norm_backward_input)                      \
  X(layer_norm_backward_affine) X(softmax_forward) X(softmax_backward) X(log_softmax_forward)              \
  X(log_softmax_backward) X(l2_normalize_forward) X(l2_normalize_backward) X(weight_norm_forward)          \
  X(weight_norm_backward)                                                                                  \
  /* reduce.h */                                                                                           \
  X(sum_axis) X(sum_axis_backward) X(max_axis) X(max_axis_backward) X(nearest_from_products)               \
  X(assigned_squared_distances) X(cluster_sums)                                                            \
  /* shape.h */                                                                                            \
  X(permute) X(copy_axis_block) X(slice_backward)                                                          \
  /* optim.h, random.h */                                                                                  \
  X(sgd_update) X(adamw_update) X(ema_update) X(uniform)                                                \
  /* bf16_inference.h, gemm.h */                                                                           \
  X(linear_bf16) X(linear_gelu_bf16) X(layer_norm_bf16) X(gelu_bf16) X(softmax_bf16) X(attention_bf16) \
  /* memory_bank.h */                                                                                      \
  X(bank_update) X(bank_consistency) X(bank_mean_probs) X(credibility_buckets) X(one_hot)

// The scratch sizes a kernel above needs for a shape: host arithmetic, so no profiler range.
#define MCDL_KERNEL_QUERIES(X) \
  X(cross_entropy_scratch_size) X(mse_scratch_size) X(layer_norm_affine_scratch_size) X(reduce_scratch_words)

// Constants whose value differs between the devices: the most dimensions a kernel takes, and
// scratch sizes.
#define MCDL_KERNEL_CONSTANTS(X) \
  X(max_broadcast_rank) X(max_permute_rank) X(mask_summary_size) X(bank_update_scratch_per_row)

namespace mcdl {

// A forwarder to ns::name, after `prologue` (nothing, or the declaration of a profiler range).
#define MCDL_FORWARD_KERNEL(ns, name, prologue)         \
  template <class... Args>                              \
  static decltype(auto) name(Args&&... args) {          \
    prologue                                            \
    return ns::name(std::forward<Args>(args)...);       \
  }
#define MCDL_FORWARD_CONSTANT(ns, name) static constexpr auto name = ns::name;

#define MCDL_CPU_KERNEL(name) MCDL_FORWARD_KERNEL(cpu, name, )
#define MCDL_CPU_CONSTANT(name) MCDL_FORWARD_CONSTANT(cpu, name)
struct CpuKernels {
  MCDL_KERNELS(MCDL_CPU_KERNEL)
  MCDL_KERNEL_QUERIES(MCDL_CPU_KERNEL)
  MCDL_KERNEL_CONSTANTS(MCDL_CPU_CONSTANT)
};

#define MCDL_CUDA_KERNEL(name) MCDL_FORWARD_KERNEL(cuda, name, const ProfileRange range(Device::cuda(), #name);)
#define MCDL_CUDA_QUERY(name) MCDL_FORWARD_KERNEL(cuda, name, )
#define MCDL_CUDA_CONSTANT(name) MCDL_FORWARD_CONSTANT(cuda, name)
struct CudaKernels {
  MCDL_KERNELS(MCDL_CUDA_KERNEL)
  MCDL_KERNEL_QUERIES(MCDL_CUDA_QUERY)
  MCDL_KERNEL_CONSTANTS(MCDL_CUDA_CONSTANT)
};

#undef MCDL_CPU_KERNEL
#undef MCDL_CPU_CONSTANT
#undef MCDL_CUDA_KERNEL
#undef MCDL_CUDA_QUERY
#undef MCDL_CUDA_CONSTANT
#undef MCDL_FORWARD_KERNEL
#undef MCDL_FORWARD_CONSTANT

// f(CpuKernels{}) or f(CudaKernels{}) for the device: f is generic in its kernels, so both
// devices share the code around the kernel calls.
template <class F>
decltype(auto) on_device(Device device, F&& f) {
  if (device.is_cuda()) return f(CudaKernels{});
  return f(CpuKernels{});
}

}  // namespace mcdl
