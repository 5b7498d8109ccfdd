// A function of one CUDA tensor, recorded once as a CUDA graph and replayed (kernels/cuda/
// runtime.h's CapturedGraph): the host queues one launch instead of each kernel of the function,
// and the result is bit for bit the eager one, since the same kernels run with the same arguments.
//
// The recording keeps an input and an output tensor of its own: a call copies its input into the
// first, replays the graph, and returns a copy of the second, so results stay valid across calls.
// The function must be deterministic in the input's values, free every intermediate it makes, and
// have run once before (so that what it caches exists); it runs without a gradient.
#pragma once
#include <functional>
#include <memory>

#include "engine/tensor.h"

namespace mcdl::cuda {
class CapturedGraph;
}

namespace mcdl {

class CapturedFunction {
 public:
  using Function = std::function<Tensor(const Tensor&)>;
  // Records f for inputs of `example`'s shape and dtype on the CUDA device; `output_like` gives the
  // shape and dtype of f's result (from the run before). Throws cuda::CaptureError when f cannot be
  // recorded (it reads results back, uploads, or frees older memory).
  CapturedFunction(const Function& f, const Tensor& example, const Tensor& output_like);
  ~CapturedFunction();
  CapturedFunction(const CapturedFunction&) = delete;
  CapturedFunction& operator=(const CapturedFunction&) = delete;

  // f(input) by replay; `input` must have the example's shape, dtype and device.
  Tensor operator()(const Tensor& input);

 private:
  Tensor input_, output_;
  std::unique_ptr<cuda::CapturedGraph> graph_;
};

}  // namespace mcdl
