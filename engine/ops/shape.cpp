#include "engine/ops/shape.h"

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"

namespace mcdl {
namespace {

// A shape seen as [outer, axis, inner] around one axis.
struct AxisSplit {
  int64_t outer = 1, axis = 1, inner = 1;
};

AxisSplit split_at(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < axis; ++d) s.outer *= shape[d];
  s.axis = shape[axis];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

// The permuted copy behind permute and transpose; perm is already validated.
Tensor permuted(const char* op, const Tensor& x, const std::vector<int64_t>& perm) {
  const int64_t rank = x.dim();
  Shape out_shape(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) out_shape[d] = x.shape()[perm[d]];
  Tensor out = empty(out_shape, x.dtype(), x.device());
  on_device(x.device(), [&](auto k) {
    check(rank <= k.max_permute_rank, op, ": the CUDA kernel takes at most ", k.max_permute_rank, " axes, got ", x);
    dispatch_any(x.dtype(), [&](auto zero) {
      using Bits = cpu::bits_of<decltype(zero)>;
      k.permute(static_cast<const Bits*>(x.raw_data()), static_cast<Bits*>(out.raw_data()), x.shape().data(),
                perm.data(), rank, true);
    });
  });
  std::vector<int64_t> inverse(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) inverse[perm[d]] = d;
  record(out, op, {x}, [op, inverse, out_shape](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), op, [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& dx = sink.buffer(0, mode);
      const int64_t rank = static_cast<int64_t>(inverse.size());
      on_device(g.device(), [&](auto k) {
        k.permute(g.ptr<T>(), dx.ptr<T>(), out_shape.data(), inverse.data(), rank, mode == GradMode::Overwrite);
      });
    });
  });
  return out;
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  check_defined("reshape", x);
  Shape resolved = shape;
  int64_t inferred = -1, known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (inferred >= 0) fail("reshape: at most one dimension may be -1, got ", shape_str(shape));
      inferred = static_cast<int64_t>(d);
    } else {
      if (shape[d] < 0) fail("reshape: invalid dimension ", shape[d], " in ", shape_str(shape));
      known *= shape[d];
    }
  }
  if (inferred >= 0) {
    // PyTorch refuses this too: with zero known elements the -1 could be any size.
    if (known == 0)
      fail("reshape: cannot infer the -1 in ", shape_str(shape), " for ", x,
           ": the other dimensions hold zero elements");
    resolved[inferred] = x.numel() / known;
  }
  if (shape_numel(resolved) != x.numel())
    fail("reshape: cannot reshape ", x, " (", x.numel(), " elements) into ", shape_str(shape));
  Tensor out = view_of(x, resolved, x.storage_offset());
  record(out, "reshape", {x}, [x_shape = x.shape()](const Tensor& g, GradSink& sink) {
    sink.add(0, view_of(g, x_shape, g.storage_offset()));
  });
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  check_defined("permute", x);
  if (static_cast<int64_t>(dims.size()) != x.dim())
    fail("permute: dims ", shape_str(dims), " do not match the rank of ", x);
  std::vector<int64_t> perm;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    const int64_t axis = normalize_axis("permute", d, x.dim());
    if (seen[axis])
      fail("permute: dims ", shape_str(dims), " name axis ", axis, " twice; not a permutation of the axes of ", x);
    seen[axis] = true;
    perm.push_back(axis);
  }
  return permuted("permute", x, perm);
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  check_defined("transpose", x);
  const int64_t a = normalize_axis("transpose", d0, x.dim()), b = normalize_axis("transpose", d1, x.dim());
  std::vector<int64_t> perm(static_cast<size_t>(x.dim()));
  for (int64_t d = 0; d < x.dim(); ++d) perm[d] = d;
  std::swap(perm[a], perm[b]);
  return permuted("transpose", x, perm);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end) {
  check_defined("slice", x);
  const int64_t a = normalize_axis("slice", axis, x.dim());
  const AxisSplit s = split_at(x.shape(), a);
  check(0 <= start && start <= end && end <= s.axis, "slice: range [", start, ", ", end, ") is out of bounds for axis ",
        axis, " of size ", s.axis, " in ", x.str());
  const int64_t count = end - start;
  Shape out_shape = x.shape();
  out_shape[a] = count;
  Tensor out;
  if (a == 0) {  // a contiguous run of the storage: no copy
    out = view_of(x, out_shape, x.storage_offset() + start * s.inner);
  } else {
    out = empty(out_shape, x.dtype(), x.device());
    dispatch_any(x.dtype(), [&](auto zero) {
      using Bits = cpu::bits_of<decltype(zero)>;
      on_device(x.device(), [&](auto k) {
        k.copy_axis_block(static_cast<const Bits*>(x.raw_data()), s.axis, start, static_cast<Bits*>(out.raw_data()),
                          count, 0, s.outer, count, s.inner, true);
      });
    });
  }
  record(out, "slice", {x}, [s, start, count](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "slice", [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& dx = sink.buffer(0, mode);
      on_device(g.device(), [&](auto k) {
        k.slice_backward(g.ptr<T>(), dx.ptr<T>(), s.outer, s.axis, start, count, s.inner, mode == GradMode::Overwrite);
      });
    });
  });
  return out;
}

Tensor concat(const std::vector<Tensor>& tensors, int64_t axis) {
  check(!tensors.empty(), "concat: expected at least one tensor");
  for (size_t i = 0; i < tensors.size(); ++i) check(tensors[i].defined(), "concat: tensor ", i, " is undefined");
  const Tensor& first = tensors[0];
  const int64_t a = normalize_axis("concat", axis, first.dim());
  Shape out_shape = first.shape();
  out_shape[a] = 0;
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_same_dtype_device("concat", first, t);
    bool fits = t.dim() == first.dim();
    for (int64_t d = 0; fits && d < t.dim(); ++d) fits = d == a || t.shape()[d] == first.shape()[d];
    check(fits, "concat: tensor ", i, " ", t, " does not match tensor 0 ", first, " outside axis ", axis);
    lengths.push_back(t.shape()[a]);
    out_shape[a] += t.shape()[a];
  }
  const AxisSplit s = split_at(out_shape, a);
  Tensor out = empty(out_shape, first.dtype(), first.device());
  dispatch_any(first.dtype(), [&](auto zero) {
    using Bits = cpu::bits_of<decltype(zero)>;
    on_device(first.device(), [&](auto k) {
      int64_t offset = 0;
      for (size_t i = 0; i < tensors.size(); ++i) {
        k.copy_axis_block(static_cast<const Bits*>(tensors[i].raw_data()), lengths[i], 0,
                          static_cast<Bits*>(out.raw_data()), s.axis, offset, s.outer, lengths[i], s.inner, true);
        offset += lengths[i];
      }
    });
  });
  record(out, "concat", tensors, [s, lengths](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "concat", [&](auto zero) {
      using T = decltype(zero);
      int64_t offset = 0;
      for (size_t i = 0; i < lengths.size(); offset += lengths[i], ++i) {
        if (!sink.needed(i)) continue;
        GradMode mode;
        Tensor& dx = sink.buffer(i, mode);
        on_device(g.device(), [&](auto k) {
          k.copy_axis_block(g.ptr<T>(), s.axis, offset, dx.ptr<T>(), lengths[i], 0, s.outer, lengths[i], s.inner,
                            mode == GradMode::Overwrite);
        });
      }
    });
  });
  return out;
}

}  // namespace mcdl
