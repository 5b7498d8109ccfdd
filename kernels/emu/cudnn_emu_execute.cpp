// The emulated cuDNN's execution of a finalized operation graph (kernels/emu/cudnn_emu_graph.h):
// each operation in the graph's order, on the caller's buffers and scratch for virtual tensors,
// every value in its tensor's type and every step in its operation's compute type.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/bf16.h"
#include "kernels/emu/cudnn_emu_graph.h"

namespace mcdl::emu::cudnn_emu {

namespace {

// Offset of `index` in a tensor of `dims` laid out by `strides`, a dimension of size 1 taking
// position 0 (broadcast).
int64_t offset_of(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) offset += (dims[i] == 1 ? 0 : index[i]) * strides[i];
  return offset;
}

int64_t count_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// Calls visit(index) for every index of `dims` in row-major order.
template <class Visit>
void for_each_index(const std::vector<int64_t>& dims, Visit visit) {
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t flat = 0, n = count_of(dims); flat < n; ++flat) {
    visit(index);
    for (size_t i = dims.size(); i-- > 0 && ++index[i] == dims[i];) index[i] = 0;
  }
}

// A tensor's memory during an execution: the caller's (non-virtual; for a by-value tensor a host
// scalar), or scratch (virtual, packed row-major).
struct Buffer {
  const TensorInfo* info;
  void* data;
  std::vector<int64_t> strides;
  int64_t at(const std::vector<int64_t>& index) const { return offset_of(info->dims, strides, index); }
};

double load(const Buffer& b, int64_t offset) {
  switch (b.info->type) {
    case CUDNN_DATA_FLOAT: return static_cast<const float*>(b.data)[offset];
    case CUDNN_DATA_DOUBLE: return static_cast<const double*>(b.data)[offset];
    case CUDNN_DATA_BFLOAT16: return static_cast<float>(static_cast<const mcdl::bf16*>(b.data)[offset]);
    case CUDNN_DATA_INT32: return static_cast<const int32_t*>(b.data)[offset];
    case CUDNN_DATA_INT64: return static_cast<double>(static_cast<const int64_t*>(b.data)[offset]);
    case CUDNN_DATA_HALF: break;  // no engine runs it
  }
  return 0;
}

// Rounds to nearest even straight from double: to float toward zero, the lost bits kept as a sticky
// last bit (round to odd, exact for the 16 bits bf16 then drops), so no value rounds twice.
mcdl::bf16 to_bf16(double value) {
  float single = static_cast<float>(value);
  if (std::isfinite(single) && static_cast<double>(single) != value) {
    if (std::fabs(static_cast<double>(single)) > std::fabs(value)) single = std::nextafter(single, 0.0f);
    uint32_t word;
    std::memcpy(&word, &single, 4);
    word |= 1u;
    std::memcpy(&single, &word, 4);
  }
  return mcdl::bf16(single);
}

void store(const Buffer& b, int64_t offset, double value) {
  switch (b.info->type) {
    case CUDNN_DATA_FLOAT: static_cast<float*>(b.data)[offset] = static_cast<float>(value); break;
    case CUDNN_DATA_DOUBLE: static_cast<double*>(b.data)[offset] = value; break;
    case CUDNN_DATA_BFLOAT16: static_cast<mcdl::bf16*>(b.data)[offset] = to_bf16(value); break;
    case CUDNN_DATA_INT32: static_cast<int32_t*>(b.data)[offset] = mcdl::from_double_value<int32_t>(value); break;
    case CUDNN_DATA_INT64: static_cast<int64_t*>(b.data)[offset] = mcdl::from_double_value<int64_t>(value); break;
    case CUDNN_DATA_HALF: break;  // no engine runs it
  }
}

// A value in the compute type (FLOAT rounds; DOUBLE keeps it). Sums, products and quotients of two
// floats computed in double and rounded once are the float operation's own result.
double in_compute(int64_t compute, double value) {
  return compute == CUDNN_DATA_DOUBLE ? value : static_cast<double>(static_cast<float>(value));
}

double apply_pointwise(int64_t mode, double x, double b) {
  switch (mode) {
    case CUDNN_POINTWISE_ADD: return x + b;
    case CUDNN_POINTWISE_MUL: return x * b;
    case CUDNN_POINTWISE_MIN: return std::min(x, b);
    case CUDNN_POINTWISE_MAX: return std::max(x, b);
    case CUDNN_POINTWISE_DIV: return x / b;
    case CUDNN_POINTWISE_SUB: return x - b;
    case CUDNN_POINTWISE_SQRT: return std::sqrt(x);
    case CUDNN_POINTWISE_EXP: return std::exp(x);
    case CUDNN_POINTWISE_LOG: return std::log(x);
    case CUDNN_POINTWISE_GELU_FWD: return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));  // the exact (erf) form
    default: return x;  // IDENTITY (no engine runs a graph with another mode)
  }
}

// y = op(alpha1·x, alpha2·b), each step in the math precision.
void run_pointwise(const OpInfo& op, const std::vector<const Buffer*>& in, const Buffer& out) {
  const int64_t c = op.compute;
  const double alpha1 = in_compute(c, op.alpha1), alpha2 = in_compute(c, op.alpha2);
  for_each_index(op.output.dims, [&](const std::vector<int64_t>& index) {
    const double x = in_compute(c, alpha1 * in_compute(c, load(*in[0], in[0]->at(index))));
    const double b = in.size() > 1 ? in_compute(c, alpha2 * in_compute(c, load(*in[1], in[1]->at(index)))) : 0;
    store(out, out.at(index), in_compute(c, apply_pointwise(op.mode, x, b)));
  });
}

// Each Y element gathers the X elements that equal it in Y's kept dimensions, in X's index order.
void run_reduction(const OpInfo& op, const Buffer& in, const Buffer& out) {
  const int64_t c = op.compute;
  const double start = op.mode == CUDNN_REDUCE_TENSOR_ADD   ? 0.0
                       : op.mode == CUDNN_REDUCE_TENSOR_MUL ? 1.0
                       : op.mode == CUDNN_REDUCE_TENSOR_MIN ? std::numeric_limits<double>::infinity()
                                                            : -std::numeric_limits<double>::infinity();
  const std::vector<int64_t>& y_dims = op.output.dims;
  const std::vector<int64_t> y_packed = packed_strides(y_dims);
  std::vector<double> totals(static_cast<size_t>(count_of(y_dims)), start);
  for_each_index(op.inputs[0].dims, [&](const std::vector<int64_t>& index) {
    double& total = totals[static_cast<size_t>(offset_of(y_dims, y_packed, index))];
    const double x = in_compute(c, load(in, in.at(index)));
    switch (op.mode) {
      case CUDNN_REDUCE_TENSOR_ADD: total = in_compute(c, total + x); break;
      case CUDNN_REDUCE_TENSOR_MUL: total = in_compute(c, total * x); break;
      case CUDNN_REDUCE_TENSOR_MIN: total = std::min(total, x); break;
      default: total = std::max(total, x); break;  // MAX
    }
  });
  for_each_index(y_dims, [&](const std::vector<int64_t>& index) {
    store(out, out.at(index), totals[static_cast<size_t>(offset_of(y_dims, y_packed, index))]);
  });
}

// C[.., m, n] = Σ_k A[.., m, k]·B[.., k, n], k in order, each product and sum in the compute type.
void run_matmul(const OpInfo& op, const Buffer& a, const Buffer& b, const Buffer& c) {
  const int64_t comp = op.compute;
  const size_t rank = op.output.dims.size();
  const int64_t k_count = op.inputs[0].dims[rank - 1];
  const int64_t a_step = a.strides[rank - 1], b_step = b.strides[rank - 2];
  std::vector<int64_t> a_index, b_index;
  for_each_index(op.output.dims, [&](const std::vector<int64_t>& index) {
    a_index = b_index = index;
    a_index[rank - 1] = 0;  // A[.., m, 0]
    b_index[rank - 2] = 0;  // B[.., 0, n]
    const int64_t a0 = a.at(a_index), b0 = b.at(b_index);
    double total = 0;
    for (int64_t k = 0; k < k_count; ++k) {
      const double product =
          in_compute(comp, in_compute(comp, load(a, a0 + k * a_step)) * in_compute(comp, load(b, b0 + k * b_step)));
      total = in_compute(comp, total + product);
    }
    store(c, c.at(index), total);
  });
}

// The caller's pointer for a non-virtual tensor, checked against the pack and the tensor's alignment.
cudnnStatus_t caller_buffer(const TensorInfo& t, const std::map<int64_t, void*>& given, Buffer& out) {
  const auto found = given.find(t.uid);
  if (found == given.end() || !found->second)
    return fail(CUDNN_STATUS_BAD_PARAM, "execute: the variant pack has no pointer for tensor " + std::to_string(t.uid));
  // A by-value scalar's pointer is the caller's host variable, not device memory of that alignment.
  if (!t.by_value && reinterpret_cast<uintptr_t>(found->second) % static_cast<uintptr_t>(t.alignment) != 0)
    return fail(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "execute: tensor " + std::to_string(t.uid) +
                                                               "'s pointer is not aligned to its byte alignment " +
                                                               std::to_string(t.alignment));
  out = Buffer{&t, found->second, t.strides};
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

cudnnStatus_t execute_graph(const GraphInfo& graph, const std::map<int64_t, void*>& given, bool run) {
  for (const auto& [uid, pointer] : given) {
    const auto found = graph.tensors.find(uid);
    if (found == graph.tensors.end())
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "execute: the variant pack names tensor " + std::to_string(uid) + ", which the graph does not have");
    if (found->second.is_virtual)
      return fail(CUDNN_STATUS_BAD_PARAM, "execute: the variant pack gives virtual tensor " + std::to_string(uid));
  }
  std::map<int64_t, Buffer> buffers;
  std::vector<std::vector<unsigned char>> scratch;
  for (const auto& [uid, t] : graph.tensors) {
    if (t.is_virtual) {
      if (!run) continue;
      scratch.emplace_back(tensor_bytes(t));
      buffers[uid] = Buffer{&t, scratch.back().data(), packed_strides(t.dims)};
    } else if (const cudnnStatus_t status = caller_buffer(t, given, buffers[uid]); status != CUDNN_STATUS_SUCCESS) {
      return status;
    }
  }
  if (!run) return CUDNN_STATUS_SUCCESS;
  for (const OpInfo& op : graph.ops) {
    std::vector<const Buffer*> in;
    for (const TensorInfo& t : op.inputs) in.push_back(&buffers.at(t.uid));
    const Buffer& out = buffers.at(op.output.uid);
    switch (op.kind) {
      case OpKind::pointwise: run_pointwise(op, in, out); break;
      case OpKind::reduction: run_reduction(op, *in[0], out); break;
      case OpKind::matmul: run_matmul(op, *in[0], *in[1], out); break;
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

size_t tensor_bytes(const TensorInfo& t) { return static_cast<size_t>(count_of(t.dims)) * element_bytes(t.type); }

}  // namespace mcdl::emu::cudnn_emu
