// The tensor handle: shape, dtype, device, and a contiguous row-major window into a
// reference-counted Storage (offset in elements). Copying a Tensor copies the handle, not
// the data. Autodiff state (requires_grad, grad, grad_fn) lives in the shared TensorImpl.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "engine/device.h"
#include "engine/dtype.h"
#include "engine/error.h"
#include "engine/storage.h"

namespace mcdl {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);
int64_t shape_numel(const Shape& shape);

struct TensorImpl;
struct Node;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const;
  DType dtype() const;
  Device device() const;
  std::string str() const;  // "f32[2, 3] cpu", for messages

  // Typed access to the first element (CPU only; checks the dtype).
  template <class T> T* data();
  template <class T> const T* data() const;
  // Typed pointer to the first element on the tensor's own device (checks the dtype only):
  // what an op passes to its CPU or CUDA kernel.
  template <class T> T* ptr();
  template <class T> const T* ptr() const;
  void* raw_data();
  const void* raw_data() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }
  const std::shared_ptr<Storage>& storage() const;
  int64_t storage_offset() const;

  // Copies to the host and converts: values as a flat vector.
  template <class T> std::vector<T> to_vector() const;
  double item() const;  // the value of a one-element tensor as double

  // Autodiff.
  bool requires_grad() const;
  Tensor& set_requires_grad(bool on);  // only on leaves
  bool is_leaf() const;
  Tensor grad() const;  // undefined until a backward reaches this leaf
  void set_grad(const Tensor& grad);
  void zero_grad();  // drops .grad
  const std::shared_ptr<Node>& grad_fn() const;
  // Runs reverse-mode autodiff from this scalar. The graph's saved tensors are released
  // afterwards unless retain_graph is set.
  void backward(bool retain_graph = false) const;
  Tensor detach() const;  // same storage, no history

  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor clone() const;  // a fresh copy without history

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
  void check_defined(const char* what) const;
  template <class T> void check_access(const char* what, bool host_only) const;
};

struct TensorImpl {
  Shape shape;
  DType dtype = DType::f32;
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
};

// Prints str(): a check's message can take the tensor itself and format it only on failure.
inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// ---- creation -----------------------------------------------------------------------
Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = Device::cpu());
Tensor arange(int64_t n, DType dtype = DType::i64, Device device = Device::cpu());
Tensor scalar_tensor(double value, DType dtype = DType::f32, Device device = Device::cpu());
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device = Device::cpu());
// A tensor over the same storage (a view); `shape` must hold numel() elements from `offset`.
Tensor view_of(const Tensor& base, const Shape& shape, int64_t offset);

// Converts element i of a typed buffer to double and back, for any dtype.
double read_as_double(const void* data, DType dtype, int64_t index);
void write_from_double(void* data, DType dtype, int64_t index, double value);

// ---- template definitions -------------------------------------------------------------
template <class T>
void Tensor::check_access(const char* what, bool host_only) const {
  check_defined(what);
  check(dtype_of<T>::value == dtype(), what, "<", dtype_name(dtype_of<T>::value), ">: tensor is ", *this);
  check(!host_only || device().is_cpu(), what, ": tensor ", *this,
        " is not on the cpu; copy it with .to(Device::cpu())");
}
// The const accessors read the storage through its const side: only a writable pointer counts
// as a write (Storage::writes).
template <class T>
T* Tensor::data() {
  check_access<T>("data", true);
  return static_cast<T*>(impl_->storage->data()) + impl_->offset;
}
template <class T>
const T* Tensor::data() const {
  check_access<T>("data", true);
  return static_cast<const T*>(std::as_const(*impl_->storage).data()) + impl_->offset;
}

template <class T>
T* Tensor::ptr() {
  check_access<T>("ptr", false);
  return static_cast<T*>(impl_->storage->data()) + impl_->offset;
}
template <class T>
const T* Tensor::ptr() const {
  check_access<T>("ptr", false);
  return static_cast<const T*>(std::as_const(*impl_->storage).data()) + impl_->offset;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  const Tensor host = to(Device::cpu()).to(dtype_of<T>::value);
  const T* p = host.data<T>();
  return std::vector<T>(p, p + host.numel());
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    fail("from_vector: ", values.size(), " values do not fill shape ", shape_str(shape));
  Tensor host = empty(shape, dtype_of<T>::value, Device::cpu());
  std::copy(values.begin(), values.end(), host.data<T>());
  return device.is_cpu() ? host : host.to(device);
}

}  // namespace mcdl
