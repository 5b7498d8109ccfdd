#include "engine/ops/indexing.h"

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"

namespace mcdl {
namespace {

// Calls f(I{}) with I = int64_t or int32_t for an index tensor's dtype.
template <class F>
void dispatch_index(const char* op, const Tensor& indices, F&& f) {
  switch (indices.dtype()) {
    case DType::i64:
      f(int64_t{});
      return;
    case DType::i32:
      f(int32_t{});
      return;
    default:
      fail(op, ": indices must be i64 or i32, got ", indices);
  }
}

// The element at `position` of a tensor on any device, read back to the host.
template <class T>
T read_back(const Tensor& t, int64_t position) {
  return view_of(t, {1}, t.storage_offset() + position).to(Device::cpu()).data<T>()[0];
}

// The positions [0, count) of host indices grouped by target row, as scatter_add_rows reads them:
// [row_starts (rows + 1) | positions (count)], a stable counting sort.
template <class I>
Tensor positions_by_row(const I* indices, int64_t count, int64_t rows) {
  Tensor groups = zeros({rows + 1 + count}, DType::i64);
  int64_t* start = groups.data<int64_t>();
  int64_t* positions = start + rows + 1;
  for (int64_t i = 0; i < count; ++i) ++start[static_cast<int64_t>(indices[i]) + 1];
  for (int64_t r = 0; r < rows; ++r) start[r + 1] += start[r];
  std::vector<int64_t> next(start, start + rows);
  for (int64_t i = 0; i < count; ++i) positions[next[static_cast<size_t>(indices[i])]++] = i;
  return groups;
}

// The places of the selected mask values (see mask_places in kernels/cpu/indexing.h) and the
// summary holding the count and the first invalid position.
struct MaskPlaces {
  Tensor places, summary;
};
MaskPlaces mask_places(const Tensor& mask, int64_t n) {
  MaskPlaces result;
  on_device(mask.device(), [&](auto k) {
    result = {empty({n}, DType::i64, mask.device()), empty({k.mask_summary_size}, DType::i64, mask.device())};
    k.mask_places(mask.ptr<uint8_t>(), n, result.places.ptr<int64_t>(), result.summary.ptr<int64_t>());
  });
  return result;
}

// The rows of x (n rows of shape row_shape) where mask [n] is 1, shared by masked_select
// (rows of one element) and masked_select_rows.
Tensor select_masked_rows(const char* op, const Tensor& x, const Tensor& mask, int64_t n, const Shape& row_shape) {
  const int64_t row = shape_numel(row_shape);
  const MaskPlaces selection = mask_places(mask, n);
  const std::vector<int64_t> summary = view_of(selection.summary, {2}, 0).to_vector<int64_t>();
  const int64_t selected = summary[0], bad = summary[1];
  if (bad < n)
    fail(op, ": mask value ", int{read_back<uint8_t>(mask, bad)}, " at position ", bad, " is not 0 or 1 (mask ", mask,
         ")");
  Shape out_shape{selected};
  out_shape.insert(out_shape.end(), row_shape.begin(), row_shape.end());
  Tensor out = empty(out_shape, x.dtype(), x.device());
  dispatch_any(x.dtype(), [&](auto zero) {
    using Bits = cpu::bits_of<decltype(zero)>;
    on_device(x.device(), [&](auto k) {
      k.masked_gather_rows(static_cast<const Bits*>(x.raw_data()), selection.places.ptr<int64_t>(), n,
                           static_cast<Bits*>(out.raw_data()), row);
    });
  });
  record(out, op, {x}, [op, mask, n, row](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), op, [&](auto zero) {
      using T = decltype(zero);
      const MaskPlaces selection = mask_places(mask, n);
      GradMode mode;
      Tensor& dx = sink.buffer(0, mode);
      on_device(g.device(), [&](auto k) {
        k.masked_scatter_rows(g.ptr<T>(), selection.places.ptr<int64_t>(), n, dx.ptr<T>(), row,
                              mode == GradMode::Overwrite);
      });
    });
  });
  return out;
}

void check_mask(const char* op, const Tensor& x, const Tensor& mask) {
  check_defined(op, x, "x");
  check_defined(op, mask, "mask");
  check(mask.dtype() == DType::u8, op, ": mask must be u8, got ", mask);
  check(mask.device() == x.device(), op, ": device mismatch between ", x, " and mask ", mask);
}

}  // namespace

int64_t first_invalid_index(const Tensor& indices, int64_t rows) {
  const int64_t count = indices.numel();
  if (count == 0) return -1;
  // Only the position comes back (one device scalar), not the indices.
  Tensor first_invalid = empty({1}, DType::i64, indices.device());
  dispatch_index("first_invalid_index", indices, [&](auto index_zero) {
    using I = decltype(index_zero);
    on_device(indices.device(), [&](auto k) {
      k.first_invalid_index(indices.ptr<I>(), count, rows, first_invalid.ptr<int64_t>());
    });
  });
  const int64_t position = read_back<int64_t>(first_invalid, 0);
  return position < count ? position : -1;
}

namespace {

// index_select's work once the indices are known valid: the gather, and a gradient that scatters
// back through the positions grouped by row (from `host_indices`; read back from the device only
// when the caller has no host copy).
Tensor gather_checked_rows(const Tensor& x, const Tensor& indices,
                           std::shared_ptr<const std::vector<int64_t>> host_indices) {
  const int64_t rows = x.size(0), count = indices.size(0);
  const int64_t row = shape_numel(Shape(x.shape().begin() + 1, x.shape().end()));
  Shape out_shape = x.shape();
  out_shape[0] = count;
  Tensor out = empty(out_shape, x.dtype(), x.device());
  dispatch_index("index_select", indices, [&](auto index_zero) {
    using I = decltype(index_zero);
    dispatch_any(x.dtype(), [&](auto zero) {
      using Bits = cpu::bits_of<decltype(zero)>;
      on_device(x.device(), [&](auto k) {
        k.gather_rows(static_cast<const Bits*>(x.raw_data()), indices.ptr<I>(), static_cast<Bits*>(out.raw_data()),
                      count, row);
      });
    });
  });
  record(out, "index_select", {x}, [indices, host_indices, rows, count, row](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "index_select", [&](auto zero) {
      using T = decltype(zero);
      dispatch_index("index_select", indices, [&](auto index_zero) {
        using I = decltype(index_zero);
        // Deterministic without float atomics: the positions are grouped by target row on the
        // host, then each dst element sums its positions in order.
        const Tensor groups = (host_indices ? positions_by_row(host_indices->data(), count, rows)
                                            : positions_by_row(indices.to(Device::cpu()).data<I>(), count, rows))
                                  .to(g.device());
        GradMode mode;
        Tensor& dx = sink.buffer(0, mode);
        on_device(g.device(), [&](auto k) {
          k.scatter_add_rows(g.ptr<T>(), groups.ptr<int64_t>(), groups.ptr<int64_t>() + rows + 1, dx.ptr<T>(), rows,
                             row, mode == GradMode::Overwrite);
        });
      });
    });
  });
  return out;
}

}  // namespace

Tensor index_select(const Tensor& x, const Tensor& indices) {
  check_defined("index_select", x, "x");
  check_defined("index_select", indices, "indices");
  check(x.dim() >= 1, "index_select: x must have at least one dimension, got ", x);
  check(indices.dtype() == DType::i64 || indices.dtype() == DType::i32,
        "index_select: indices must be i64 or i32, got ", indices);
  check(indices.dim() == 1, "index_select: indices must be 1-D, got ", indices);
  check(indices.device() == x.device(), "index_select: device mismatch between ", x, " and indices ", indices);
  const int64_t rows = x.size(0);
  dispatch_index("index_select", indices, [&](auto index_zero) {
    using I = decltype(index_zero);
    const int64_t bad = first_invalid_index(indices, rows);
    if (bad >= 0)
      fail("index_select: index ", read_back<I>(indices, bad), " at position ", bad, " is out of range for ", rows,
           " rows of ", x);
  });
  return gather_checked_rows(x, indices, nullptr);
}

HostIndex::HostIndex(std::vector<int64_t> values, Device device)
    : host_(std::make_shared<const std::vector<int64_t>>(std::move(values))),
      tensor_(from_vector(*host_, {static_cast<int64_t>(host_->size())}, device)) {}

int64_t HostIndex::first_outside(int64_t bound) const {
  for (size_t i = 0; i < host_->size(); ++i)
    if ((*host_)[i] < 0 || (*host_)[i] >= bound) return static_cast<int64_t>(i);
  return -1;
}

Tensor index_select(const Tensor& x, const HostIndex& index) {
  check_defined("index_select", x, "x");
  check(x.dim() >= 1, "index_select: x must have at least one dimension, got ", x);
  check(index.tensor().device() == x.device(), "index_select: device mismatch between ", x, " and indices ",
        index.tensor());
  const int64_t rows = x.size(0), bad = index.first_outside(rows);
  if (bad >= 0)
    fail("index_select: index ", index.host()[static_cast<size_t>(bad)], " at position ", bad, " is out of range for ",
         rows, " rows of ", x);
  return gather_checked_rows(x, index.tensor(), index.host_data());
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  check_mask("masked_select", x, mask);
  check(mask.shape() == x.shape(), "masked_select: mask ", mask, " does not match x ", x);
  return select_masked_rows("masked_select", x, mask, x.numel(), {});
}

Tensor masked_select_rows(const Tensor& x, const Tensor& mask) {
  check_mask("masked_select_rows", x, mask);
  check(x.dim() >= 1 && mask.dim() == 1 && mask.size(0) == x.size(0), "masked_select_rows: mask ", mask,
        " must be [N] for x ", x, " [N, ...]");
  return select_masked_rows("masked_select_rows", x, mask, x.size(0), Shape(x.shape().begin() + 1, x.shape().end()));
}

namespace {

// one_hot once the classes are known to lie in [0, num_classes).
Tensor one_hot_checked(const Tensor& classes, int64_t num_classes, DType dtype) {
  const int64_t n = classes.numel();
  Tensor out = empty({n, num_classes}, dtype, classes.device());
  dispatch_floating(dtype, "one_hot", [&](auto zero) {
    using T = decltype(zero);
    on_device(classes.device(), [&](auto k) { k.one_hot(classes.ptr<int64_t>(), n, num_classes, out.ptr<T>()); });
  });
  return out;
}

}  // namespace

Tensor one_hot(const Tensor& classes, int64_t num_classes, DType dtype) {
  check(classes.defined() && classes.dtype() == DType::i64 && classes.dim() == 1,
        "one_hot: classes must be i64 [n], got ", classes);
  check(num_classes > 0, "one_hot: num_classes must be positive, got ", num_classes);
  const int64_t bad = first_invalid_index(classes, num_classes);
  if (bad >= 0)
    fail("one_hot: class ", view_of(classes, {1}, classes.storage_offset() + bad).item(), " at position ", bad,
         " is outside [0, ", num_classes, ")");
  return one_hot_checked(classes, num_classes, dtype);
}

Tensor one_hot(const HostIndex& classes, int64_t num_classes, DType dtype) {
  check(num_classes > 0, "one_hot: num_classes must be positive, got ", num_classes);
  const int64_t bad = classes.first_outside(num_classes);
  if (bad >= 0)
    fail("one_hot: class ", classes.host()[static_cast<size_t>(bad)], " at position ", bad, " is outside [0, ",
         num_classes, ")");
  return one_hot_checked(classes.tensor(), num_classes, dtype);
}

}  // namespace mcdl
