#include "engine/autograd.h"

#include <unordered_map>
#include <unordered_set>

#include "engine/backend.h"
#include "engine/dispatch.h"

namespace mcdl {
namespace {
thread_local bool grad_mode_enabled = true;

Edge edge_for(const Tensor& input) {
  Edge edge;
  if (!input.defined() || !input.requires_grad()) return edge;
  if (input.grad_fn()) {
    edge.node = input.grad_fn();
  } else {
    edge.leaf = input.impl_ptr();
  }
  edge.shape = input.shape();
  edge.dtype = input.dtype();
  return edge;
}

// Nodes reachable from `roots`, ordered so that every node comes before the nodes that
// produced its inputs (iterative depth-first search; graphs can be deep). Roots may share nodes.
std::vector<std::shared_ptr<Node>> reverse_topological_order(const std::vector<std::shared_ptr<Node>>& roots) {
  std::vector<std::shared_ptr<Node>> post_order;
  std::unordered_set<Node*> visited;
  for (const auto& root : roots) {
    if (!visited.insert(root.get()).second) continue;
    std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [node, next_input] = stack.back();
      if (next_input < node->inputs.size()) {
        const auto& child = node->inputs[next_input++].node;
        if (child && visited.insert(child.get()).second) stack.emplace_back(child, 0);
      } else {
        post_order.push_back(node);
        stack.pop_back();
      }
    }
  }
  return {post_order.rbegin(), post_order.rend()};
}
}  // namespace

bool grad_enabled() { return grad_mode_enabled; }
NoGradGuard::NoGradGuard() : previous_(grad_mode_enabled) { grad_mode_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_mode_enabled = previous_; }

bool any_requires_grad(std::initializer_list<Tensor> inputs) {
  if (!grad_mode_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void record(Tensor& output, const char* op_name, const std::vector<Tensor>& inputs, BackwardRule rule) {
  if (!grad_mode_enabled) return;
  bool any = false;
  for (const Tensor& t : inputs) any = any || (t.defined() && t.requires_grad());
  if (!any) return;
  auto node = std::make_shared<Node>();
  node->op_name = op_name;
  node->device = output.device();
  node->inputs.reserve(inputs.size());
  for (const Tensor& t : inputs) node->inputs.push_back(edge_for(t));
  node->rule = std::move(rule);
  output.impl()->grad_fn = std::move(node);
  output.impl()->requires_grad = true;
}

void record(Tensor& output, const char* op_name, std::initializer_list<Tensor> inputs, BackwardRule rule) {
  record(output, op_name, std::vector<Tensor>(inputs), std::move(rule));
}

GradSink::GradSink(std::vector<Tensor*> targets, const std::vector<Edge>& edges, Device device)
    : targets_(std::move(targets)), edges_(edges), device_(device) {}

Tensor& GradSink::buffer(size_t input, GradMode& mode) {
  check(input < targets_.size() && targets_[input], "backward: gradient slot ", input, " is not needed");
  Tensor& target = *targets_[input];
  if (target.defined()) {
    mode = GradMode::Accumulate;
  } else {
    target = empty(edges_[input].shape, edges_[input].dtype, device_);
    mode = GradMode::Overwrite;
  }
  return target;
}

void GradSink::add(size_t input, const Tensor& gradient) {
  GradMode mode;
  Tensor& target = buffer(input, mode);
  accumulate_into(target, gradient, mode);
}

void accumulate_into(Tensor& dst, const Tensor& src, GradMode mode) {
  check(dst.shape() == src.shape() && dst.dtype() == src.dtype() && dst.device() == src.device(),
        "accumulate_into: gradient ", src, " does not match buffer ", dst);
  dispatch_floating(dst.dtype(), "accumulate_into", [&](auto zero) {
    using T = decltype(zero);
    T* out = static_cast<T*>(dst.raw_data());
    const T* in = static_cast<const T*>(src.raw_data());
    on_device(dst.device(), [&](auto k) { k.accumulate(out, in, dst.numel(), mode == GradMode::Overwrite); });
  });
}

void run_backward(const Tensor& root, const Tensor& root_grad, bool retain_graph) {
  run_backward(std::vector<Tensor>{root}, std::vector<Tensor>{root_grad}, retain_graph);
}

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads, bool retain_graph) {
  check(roots.size() == root_grads.size(), "backward: ", roots.size(), " roots but ", root_grads.size(),
        " gradients");
  std::unordered_map<Node*, Tensor> pending;
  std::vector<std::shared_ptr<Node>> root_nodes;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& root = roots[i];
    check(root_grads[i].shape() == root.shape(), "backward: root ", i, " is ", root, " but its gradient is ",
          root_grads[i]);
    if (!root.grad_fn()) {  // a leaf: its gradient is the seed itself
      Tensor grad = root.grad();
      if (grad.defined()) {
        accumulate_into(grad, root_grads[i], GradMode::Accumulate);
      } else {
        const_cast<Tensor&>(root).set_grad(root_grads[i].clone());
      }
      continue;
    }
    Tensor& seed = pending[root.grad_fn().get()];
    if (seed.defined()) {  // a second root from the same node: the node's gradient is the sum
      seed = seed.clone();
      accumulate_into(seed, root_grads[i], GradMode::Accumulate);
    } else {
      seed = root_grads[i];
      root_nodes.push_back(root.grad_fn());
    }
  }
  if (root_nodes.empty()) return;
  NoGradGuard no_grad;  // backward rules never build graphs of their own
  for (const auto& node : reverse_topological_order(root_nodes)) {
    auto it = pending.find(node.get());
    if (it == pending.end()) continue;  // no gradient flowed into this node
    check(static_cast<bool>(node->rule), "backward: the graph through '", node->op_name,
          "' was already released by an earlier backward(); pass retain_graph=true to run it twice");
    Tensor grad_output = std::move(it->second);
    pending.erase(it);
    if (!grad_output.defined()) continue;  // its consumers produced no gradient for it
    std::vector<Tensor*> targets;
    targets.reserve(node->inputs.size());
    for (const Edge& edge : node->inputs) {
      if (edge.node) {
        targets.push_back(&pending[edge.node.get()]);
      } else if (edge.leaf) {
        targets.push_back(&edge.leaf->grad);
      } else {
        targets.push_back(nullptr);
      }
    }
    GradSink sink(std::move(targets), node->inputs, node->device);
    node->rule(grad_output, sink);
    if (!retain_graph) node->rule = nullptr;  // frees the saved activations now
  }
}

}  // namespace mcdl
