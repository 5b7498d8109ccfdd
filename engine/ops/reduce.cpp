#include "engine/ops/reduce.h"

#include <algorithm>

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"

namespace mcdl {
namespace {

// The input viewed as [outer, len, inner] with the reduced elements in the middle.
struct ReduceGeometry {
  int64_t outer = 1, len = 1, inner = 1;
  Shape out_shape;
};

ReduceGeometry all_geometry(const char* op, const Tensor& a) {
  check_floating(op, a);
  check(a.numel() > 0, op, ": empty reduction: ", a, " has no elements");
  return {1, a.numel(), 1, {}};
}

ReduceGeometry axis_geometry(const char* op, const Tensor& a, int64_t axis, bool keepdim) {
  check_floating(op, a);
  const int64_t rank = a.dim();
  const int64_t d = normalize_axis(op, axis, std::max<int64_t>(rank, 1));
  ReduceGeometry geo{1, 1, 1, a.shape()};
  if (rank == 0) return geo;  // the single element of a 0-dim tensor
  for (int64_t i = 0; i < d; ++i) geo.outer *= a.size(i);
  geo.len = a.size(d);
  for (int64_t i = d + 1; i < rank; ++i) geo.inner *= a.size(i);
  check(geo.len > 0, op, ": empty reduction over axis ", axis, " of ", a);
  if (keepdim) {
    geo.out_shape[static_cast<size_t>(d)] = 1;
  } else {
    geo.out_shape.erase(geo.out_shape.begin() + d);
  }
  return geo;
}

// Scratch of a two-pass reduction (8-byte words of `dtype`); undefined when one pass suffices,
// as it always does on the CPU.
template <class Kernels>
Tensor reduce_scratch(Kernels k, const ReduceGeometry& geo, DType dtype, Device device) {
  const int64_t words = k.reduce_scratch_words(geo.outer, geo.len, geo.inner);
  return words > 0 ? empty({words}, dtype, device) : Tensor();
}

template <class T>
T* ptr_or_null(Tensor& t) {
  return t.defined() ? t.ptr<T>() : nullptr;
}

// Sum (divisor 1) or mean (divisor len) over the middle of the geometry.
Tensor sum_over(const char* op, const Tensor& a, const ReduceGeometry& geo, double divisor) {
  Tensor out = empty(geo.out_shape, a.dtype(), a.device());
  on_device(a.device(), [&](auto k) {
    Tensor scratch = reduce_scratch(k, geo, DType::f64, a.device());
    dispatch_floating(a.dtype(), op, [&](auto zero) {
      using T = decltype(zero);
      k.sum_axis(a.ptr<T>(), out.ptr<T>(), geo.outer, geo.len, geo.inner, divisor, ptr_or_null<double>(scratch));
    });
  });
  record(out, op, {a}, [op, geo, divisor](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), op, [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& da = sink.buffer(0, mode);
      on_device(g.device(), [&](auto k) {
        k.sum_axis_backward(g.ptr<T>(), da.ptr<T>(), geo.outer, geo.len, geo.inner, divisor,
                            mode == GradMode::Overwrite);
      });
    });
  });
  return out;
}

// The position of the first maximum over the middle of the geometry into index, and its value
// into values where that is defined.
void max_positions(const char* op, const Tensor& a, const ReduceGeometry& geo, Tensor& values, Tensor& index) {
  on_device(a.device(), [&](auto k) {
    Tensor scratch = reduce_scratch(k, geo, DType::i64, a.device());
    dispatch_floating(a.dtype(), op, [&](auto zero) {
      using T = decltype(zero);
      k.max_axis(a.ptr<T>(), ptr_or_null<T>(values), index.ptr<int64_t>(), geo.outer, geo.len, geo.inner,
                 ptr_or_null<int64_t>(scratch));
    });
  });
}

// The maximum over the middle of the geometry; the gradient goes to the first maximal element.
Tensor max_over(const char* op, const Tensor& a, const ReduceGeometry& geo) {
  Tensor out = empty(geo.out_shape, a.dtype(), a.device());
  Tensor index = empty(geo.out_shape, DType::i64, a.device());
  max_positions(op, a, geo, out, index);
  record(out, op, {a}, [op, geo, index](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), op, [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& da = sink.buffer(0, mode);
      on_device(g.device(), [&](auto k) {
        k.max_axis_backward(g.ptr<T>(), index.ptr<int64_t>(), da.ptr<T>(), geo.outer, geo.len, geo.inner,
                            mode == GradMode::Overwrite);
      });
    });
  });
  return out;
}

}  // namespace

Tensor sum(const Tensor& a) { return sum_over("sum", a, all_geometry("sum", a), 1.0); }

Tensor mean(const Tensor& a) {
  const ReduceGeometry geo = all_geometry("mean", a);
  return sum_over("mean", a, geo, static_cast<double>(geo.len));
}

Tensor max(const Tensor& a) { return max_over("max", a, all_geometry("max", a)); }

Tensor sum(const Tensor& a, int64_t axis, bool keepdim) {
  return sum_over("sum", a, axis_geometry("sum", a, axis, keepdim), 1.0);
}

Tensor mean(const Tensor& a, int64_t axis, bool keepdim) {
  const ReduceGeometry geo = axis_geometry("mean", a, axis, keepdim);
  return sum_over("mean", a, geo, static_cast<double>(geo.len));
}

Tensor max(const Tensor& a, int64_t axis, bool keepdim) {
  return max_over("max", a, axis_geometry("max", a, axis, keepdim));
}

Tensor argmax(const Tensor& a, int64_t axis, bool keepdim) {
  const ReduceGeometry geo = axis_geometry("argmax", a, axis, keepdim);
  Tensor index = empty(geo.out_shape, DType::i64, a.device());
  Tensor no_values;
  max_positions("argmax", a, geo, no_values, index);
  return index;
}

Tensor nearest_from_products(const Tensor& products, const Tensor& point_norms, const Tensor& centre_norms) {
  check(products.defined() && point_norms.defined() && centre_norms.defined() && products.dim() == 2 &&
            products.dtype() == DType::f32 && point_norms.dtype() == DType::f64 &&
            centre_norms.dtype() == DType::f64 && point_norms.shape() == Shape{products.size(0)} &&
            centre_norms.shape() == Shape{products.size(1)} && products.size(1) >= 1,
        "nearest_from_products: expected f32 products [n, m >= 1] with f64 norms [n] and [m], got ", products, ", ",
        point_norms, " and ", centre_norms);
  check(point_norms.device() == products.device() && centre_norms.device() == products.device(),
        "nearest_from_products: the products and norms must be on one device, got ", products, ", ", point_norms,
        " and ", centre_norms);
  const int64_t n = products.size(0), m = products.size(1);
  Tensor nearest = empty({n}, DType::i64, products.device());
  on_device(products.device(), [&](auto k) {
    k.nearest_from_products(products.ptr<float>(), point_norms.ptr<double>(), centre_norms.ptr<double>(), n, m,
                            nearest.ptr<int64_t>());
  });
  return nearest;
}

Tensor assigned_squared_distances(const Tensor& points, const Tensor& labels, const Tensor& centres) {
  check(points.defined() && labels.defined() && centres.defined() && points.dim() == 2 &&
            points.dtype() == DType::f32 && labels.dtype() == DType::i64 && labels.shape() == Shape{points.size(0)} &&
            centres.dtype() == DType::f64 && centres.dim() == 2 && centres.size(1) == points.size(1),
        "assigned_squared_distances: expected f32 points [n, D], i64 labels [n] and f64 centres [k, D], got ", points,
        ", ", labels, " and ", centres);
  check(labels.device() == points.device() && centres.device() == points.device(),
        "assigned_squared_distances: the points, labels and centres must be on one device, got ", points, ", ", labels,
        " and ", centres);
  const int64_t n = points.size(0);
  Tensor d2 = empty({n}, DType::f64, points.device());
  on_device(points.device(), [&](auto k) {
    k.assigned_squared_distances(points.ptr<float>(), labels.ptr<int64_t>(), centres.ptr<double>(), n,
                                 points.size(1), d2.ptr<double>());
  });
  return d2;
}

Tensor cluster_sums(const Tensor& points, const Tensor& members, const Tensor& offsets, int64_t first, int64_t last) {
  check(points.defined() && members.defined() && offsets.defined() && points.dim() == 2 &&
            points.dtype() == DType::f32 && members.dtype() == DType::i64 && members.dim() == 1 &&
            offsets.dtype() == DType::i64 && offsets.dim() == 1 && offsets.size(0) >= 1,
        "cluster_sums: expected f32 points [n, D], i64 members [m] and i64 offsets [k + 1], got ", points, ", ",
        members, " and ", offsets);
  check(members.device() == points.device() && offsets.device() == points.device(),
        "cluster_sums: the points, members and offsets must be on one device, got ", points, ", ", members, " and ",
        offsets);
  check(0 <= first && first <= last && last <= points.size(1), "cluster_sums: columns [", first, ", ", last,
        ") are not within the points' ", points.size(1));
  const int64_t k = offsets.size(0) - 1;
  Tensor sums = empty({k, last - first}, DType::f64, points.device());
  on_device(points.device(), [&](auto kernels) {
    kernels.cluster_sums(points.ptr<float>(), members.ptr<int64_t>(), offsets.ptr<int64_t>(), k, points.size(1),
                         first, last, sums.ptr<double>());
  });
  return sums;
}

}  // namespace mcdl
