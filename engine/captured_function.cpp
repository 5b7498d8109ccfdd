#include "engine/captured_function.h"

#include "engine/autograd.h"
#include "engine/error.h"
#include "kernels/cuda/runtime.h"

namespace mcdl {

CapturedFunction::CapturedFunction(const Function& f, const Tensor& example, const Tensor& output_like)
    : input_(empty(example.shape(), example.dtype(), example.device())),
      output_(empty(output_like.shape(), output_like.dtype(), example.device())) {
  check(example.device().is_cuda(), "CapturedFunction: CUDA graphs record device work; the input is ", example);
  graph_ = cuda::CapturedGraph::capture([&] {
    const NoGradGuard no_grad;
    const Tensor out = f(input_);
    check(out.shape() == output_.shape() && out.dtype() == output_.dtype() && out.device() == output_.device(),
          "CapturedFunction: the function gave ", out, " while recorded, ", output_, " before");
    cuda::copy_device_to_device(output_.raw_data(), out.raw_data(), out.nbytes());
  });
}

CapturedFunction::~CapturedFunction() = default;

Tensor CapturedFunction::operator()(const Tensor& input) {
  check(input.shape() == input_.shape() && input.dtype() == input_.dtype() && input.device() == input_.device(),
        "CapturedFunction: recorded for ", input_, ", called with ", input);
  cuda::copy_device_to_device(input_.raw_data(), input.raw_data(), input.nbytes());
  graph_->replay();
  return output_.clone();
}

}  // namespace mcdl
