// Reverse-mode autodiff on a dynamic graph. Each op that sees an input with requires_grad
// (and runs with grad mode on) attaches a Node to its output. A Node holds one Edge per
// input and a backward rule; backward() walks the nodes in reverse topological order.
//
// Gradient buffers follow an explicit overwrite/accumulate contract: a backward rule asks
// its GradSink for the buffer of input i; the first writer gets a fresh buffer and must
// write every element (mode Overwrite), later writers add into it (mode Accumulate). A
// leaf's .grad is used as that buffer directly, so backward adds to existing gradients.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

enum class GradMode { Overwrite, Accumulate };

struct Edge {
  std::shared_ptr<Node> node;         // input produced by an op, or
  std::shared_ptr<TensorImpl> leaf;   // an input that is a leaf with requires_grad
  Shape shape;                        // the input's shape and dtype, for its gradient
  DType dtype = DType::f32;
  bool active() const { return node || leaf; }
};

class GradSink;
using BackwardRule = std::function<void(const Tensor& grad_output, GradSink& sink)>;

struct Node {
  const char* op_name = "";
  Device device;
  std::vector<Edge> inputs;
  BackwardRule rule;  // captures the saved tensors; cleared when the graph is released
};

// What a backward rule writes into: one slot per input of the node.
class GradSink {
 public:
  GradSink(std::vector<Tensor*> targets, const std::vector<Edge>& edges, Device device);
  bool needed(size_t input) const { return targets_[input] != nullptr; }
  // The buffer for input i's gradient and how to write it. A fresh buffer is allocated
  // (uninitialised) when none exists yet.
  Tensor& buffer(size_t input, GradMode& mode);
  // Adds a computed gradient into input i's slot (copies on first write).
  void add(size_t input, const Tensor& gradient);

 private:
  std::vector<Tensor*> targets_;
  const std::vector<Edge>& edges_;
  Device device_;
};

// Grad mode: thread-local. Inside a NoGradGuard no graph is recorded, so no activation is
// kept alive for a backward that will never run.
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Called by every op after computing `output`: records a node when any of `inputs` needs a
// gradient and grad mode is on. `rule` receives the output gradient and a sink with one
// slot per input, in the order given. Tensors saved by the rule that alias the output must
// be captured through detach() (a node must not own its own output).
void record(Tensor& output, const char* op_name, std::initializer_list<Tensor> inputs, BackwardRule rule);
void record(Tensor& output, const char* op_name, const std::vector<Tensor>& inputs, BackwardRule rule);

// True when an op with these inputs would record a node.
bool any_requires_grad(std::initializer_list<Tensor> inputs);

// dst = src (Overwrite) or dst += src (Accumulate); same shape, dtype and device.
void accumulate_into(Tensor& dst, const Tensor& src, GradMode mode);

// Runs backward from `root` with the given output gradient (same shape as root).
void run_backward(const Tensor& root, const Tensor& root_grad, bool retain_graph);
// The same from several roots at once, each with its gradient: one pass over their joint graph,
// so a node that several roots reach runs once, with the sum of what flowed into it.
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads, bool retain_graph);

}  // namespace mcdl
