#include "engine/tensor.h"

#include <sstream>
#include <utility>

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"
#include "engine/profile.h"

namespace mcdl {

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void Tensor::check_defined(const char* what) const {
  check(impl_ != nullptr, what, ": the tensor is undefined");
}

const Shape& Tensor::shape() const {
  check_defined("shape");
  return impl_->shape;
}
int64_t Tensor::size(int64_t axis) const { return shape()[normalize_axis("size", axis, dim())]; }
int64_t Tensor::numel() const { return shape_numel(shape()); }
DType Tensor::dtype() const {
  check_defined("dtype");
  return impl_->dtype;
}
Device Tensor::device() const {
  check_defined("device");
  return impl_->storage->device();
}
std::string Tensor::str() const {
  if (!impl_) return "undefined";
  return std::string(dtype_name(dtype())) + shape_str(shape()) + " " + device().str();
}
void* Tensor::raw_data() {
  check_defined("raw_data");
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * static_cast<int64_t>(dtype_size(dtype()));
}
const void* Tensor::raw_data() const {
  check_defined("raw_data");
  return static_cast<const char*>(std::as_const(*impl_->storage).data()) +
         impl_->offset * static_cast<int64_t>(dtype_size(dtype()));
}
const std::shared_ptr<Storage>& Tensor::storage() const {
  check_defined("storage");
  return impl_->storage;
}
int64_t Tensor::storage_offset() const {
  check_defined("storage_offset");
  return impl_->offset;
}

double Tensor::item() const {
  check(numel() == 1, "item: expected a tensor with one element, got ", *this);
  Tensor host = to(Device::cpu());
  return read_as_double(host.raw_data(), dtype(), 0);
}

bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }
Tensor& Tensor::set_requires_grad(bool on) {
  check_defined("set_requires_grad");
  check(is_leaf(), "set_requires_grad: only a leaf tensor can change requires_grad; use detach() first");
  check(!on || dtype() == DType::f32 || dtype() == DType::f64,
        "set_requires_grad: only f32 and f64 tensors can require gradients, got ", *this);
  impl_->requires_grad = on;
  return *this;
}
bool Tensor::is_leaf() const { return impl_ && impl_->grad_fn == nullptr; }
Tensor Tensor::grad() const {
  check_defined("grad");
  return impl_->grad;
}
void Tensor::set_grad(const Tensor& grad) {
  check_defined("set_grad");
  if (grad.defined()) {
    check(grad.shape() == shape() && grad.dtype() == dtype() && grad.device() == device(),
          "set_grad: gradient ", grad, " does not match tensor ", *this);
  }
  impl_->grad = grad;
}
void Tensor::zero_grad() {
  check_defined("zero_grad");
  impl_->grad = Tensor();
}
const std::shared_ptr<Node>& Tensor::grad_fn() const {
  check_defined("grad_fn");
  return impl_->grad_fn;
}

void Tensor::backward(bool retain_graph) const {
  check_defined("backward");
  check(numel() == 1, "backward: expected a scalar (one element) to start from, got ", *this,
        "; reduce it first (e.g. sum or mean)");
  check(requires_grad(), "backward: the tensor does not require grad (no input had requires_grad, or it was "
        "computed under NoGradGuard)");
  run_backward(*this, full(shape(), 1.0, dtype(), device()), retain_graph);
}

Tensor Tensor::detach() const {
  check_defined("detach");
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = impl_->shape;
  impl->dtype = impl_->dtype;
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  return Tensor(impl);
}

Tensor Tensor::to(Device target) const {
  check_defined("to");
  if (target == device()) return *this;
  Tensor out = empty(shape(), dtype(), target);
  if (target.is_cuda()) {
    const ProfileRange range(target, "copy_host_to_device");
    cuda::copy_host_to_device(out.raw_data(), raw_data(), nbytes());
  } else {
    const ProfileRange range(device(), "copy_device_to_host");  // waits for the device's queued work
    cuda::copy_device_to_host(out.raw_data(), raw_data(), nbytes());
  }
  return out;
}

Tensor Tensor::to(DType target) const {
  check_defined("to");
  if (target == dtype()) return *this;
  Tensor out = empty(shape(), target, device());
  dispatch_any(dtype(), [&](auto src_zero) {
    using Src = decltype(src_zero);
    dispatch_any(target, [&](auto dst_zero) {
      using Dst = decltype(dst_zero);
      const Src* src = static_cast<const Src*>(raw_data());
      Dst* dst = static_cast<Dst*>(out.raw_data());
      on_device(device(), [&](auto k) { k.convert(src, dst, numel()); });
    });
  });
  return out;
}

Tensor Tensor::clone() const {
  check_defined("clone");
  Tensor out = empty(shape(), dtype(), device());
  on_device(device(), [&](auto k) { k.copy_device_to_device(out.raw_data(), raw_data(), nbytes()); });
  return out;
}

Tensor empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0) fail("empty: negative dimension in shape ", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->dtype = dtype;
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  return Tensor(impl);
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor out = empty(shape, dtype, device);
  dispatch_any(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* dst = static_cast<T*>(out.raw_data());
    on_device(device, [&](auto k) { k.fill(dst, from_double_value<T>(value), out.numel()); });
  });
  return out;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }
Tensor scalar_tensor(double value, DType dtype, Device device) { return full({}, value, dtype, device); }

Tensor arange(int64_t n, DType dtype, Device device) {
  check(n >= 0, "arange: n must be >= 0, got ", n);
  Tensor host = empty({n}, dtype, Device::cpu());
  void* data = host.raw_data();
  for (int64_t i = 0; i < n; ++i) write_from_double(data, dtype, i, static_cast<double>(i));
  return host.to(device);
}

Tensor view_of(const Tensor& base, const Shape& shape, int64_t offset) {
  check_defined("view_of", base, "base");
  const int64_t capacity = static_cast<int64_t>(base.storage()->bytes() / dtype_size(base.dtype()));
  if (offset < 0 || offset + shape_numel(shape) > capacity)
    fail("view_of: shape ", shape_str(shape), " at offset ", offset, " exceeds the storage of ", base);
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->dtype = base.dtype();
  impl->storage = base.storage();
  impl->offset = offset;
  return Tensor(impl);
}

double read_as_double(const void* data, DType dtype, int64_t index) {
  double value = 0;
  dispatch_any(dtype, [&](auto zero) {
    using T = decltype(zero);
    value = to_double_value(static_cast<const T*>(data)[index]);
  });
  return value;
}

void write_from_double(void* data, DType dtype, int64_t index, double value) {
  dispatch_any(dtype, [&](auto zero) {
    using T = decltype(zero);
    static_cast<T*>(data)[index] = from_double_value<T>(value);
  });
}

}  // namespace mcdl
