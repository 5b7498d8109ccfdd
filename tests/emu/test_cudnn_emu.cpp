// The emulated cuDNN (kernels/emu/cudnn_emu.cpp), loaded through the engine's loader
// (kernels/cuda/cudnn.cu) as the engine loads it: small backend-API graphs against hand-computed
// numbers, and the refusals of bad descriptors, graphs and variant packs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/cuda/cudnn_backend.h"

using namespace mcdl;
using namespace mcdl::cuda;

namespace {

BackendDescriptor tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& strides, bool is_virtual = false, bool by_value = false) {
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set_data_type(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
      .set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
      .set_int64s(CUDNN_ATTR_TENSOR_STRIDES, strides)
      .set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
      .set_bool(CUDNN_ATTR_TENSOR_IS_VIRTUAL, is_virtual)
      .set_bool(CUDNN_ATTR_TENSOR_IS_BY_VALUE, by_value);
  t.finalize();
  return t;
}

// A graph under construction; the descriptors live as long as it does.
struct Graph {
  std::vector<std::unique_ptr<BackendDescriptor>> parts;
  std::vector<cudnnBackendDescriptor_t> ops;

  BackendDescriptor& keep(BackendDescriptor&& d) {
    parts.push_back(std::make_unique<BackendDescriptor>(std::move(d)));
    return *parts.back();
  }
  BackendDescriptor& operation(cudnnBackendDescriptorType_t type) {
    return keep(BackendDescriptor(type));
  }
  void matmul(const BackendDescriptor& a, const BackendDescriptor& b, const BackendDescriptor& c) {
    BackendDescriptor& desc = operation(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    desc.set_data_type(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT).finalize();
    BackendDescriptor& op = operation(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
        .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
        .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
        .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, desc)
        .finalize();
    ops.push_back(op.get());
  }
  void pointwise(cudnnPointwiseMode_t mode, const BackendDescriptor& x, const BackendDescriptor* b,
                 const BackendDescriptor& y) {
    BackendDescriptor& desc = operation(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    desc.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode).finalize();
    BackendDescriptor& op = operation(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc)
        .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
        .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    if (b) op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
    op.finalize();
    ops.push_back(op.get());
  }
  void reduction(cudnnReduceTensorOp_t reduce, const BackendDescriptor& x, const BackendDescriptor& y) {
    BackendDescriptor& desc = operation(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    desc.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce).finalize();
    BackendDescriptor& op = operation(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc)
        .set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
        .set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
        .finalize();
    ops.push_back(op.get());
  }
  // The finalized operation graph; its status when it does not finalize.
  cudnnStatus_t build(BackendDescriptor& graph) {
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops.size()),
              ops.data());
    return graph.try_finalize();
  }
  // Builds the graph, asks the heuristics, makes the plan and executes it on `pointers`.
  void run(const std::vector<int64_t>& uids, std::vector<void*> pointers) {
    BackendDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    REQUIRE(build(graph) == CUDNN_STATUS_SUCCESS);
    BackendDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    heuristics.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)
        .finalize();
    const CudnnLibrary& lib = cudnn_library();
    int64_t count = 0;
    check_cudnn(lib.get_attribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                  &count, nullptr),
                "heuristics count");
    REQUIRE(count == 1);
    BackendDescriptor config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    cudnnBackendDescriptor_t raw = config.get();
    check_cudnn(lib.get_attribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                  &count, &raw),
                "heuristics results");
    BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config).finalize();
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set_int64s(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
             pointers.data())
        .finalize();
    cudnnHandle_t handle = nullptr;
    check_cudnn(lib.create(&handle), "cudnnCreate");
    const cudnnStatus_t status = lib.execute(handle, plan.get(), pack.get());
    (void)lib.destroy(handle);
    check_cudnn(status, "cudnnBackendExecute");
  }
};

// cuDNN's last message, read (and cleared).
std::string last_message() {
  char text[512] = {};
  cudnn_library().last_error(text, sizeof text);
  return text;
}

}  // namespace

TEST_CASE("emulated cuDNN: a product of strided inputs, times a by-value scalar, reduced to its row maxima") {
  // A [2, 2, 3] stored transposed in each batch entry (strides 6, 1, 2), B [2, 3, 2] packed.
  const std::vector<float> a_store = {1, 4, 2, 5, 3, 6, -1, 0, 2, 1, 0.5f, 3};
  const std::vector<float> b = {1, 0, 0, 1, 1, 1, 2, -1, 0, 1, 1, 0};
  const auto a_at = [&](int batch, int m, int k) { return a_store[static_cast<size_t>(batch * 6 + m + 2 * k)]; };
  Graph g;
  const auto& a_t = g.keep(tensor(1, CUDNN_DATA_FLOAT, {2, 2, 3}, {6, 1, 2}));
  const auto& b_t = g.keep(tensor(2, CUDNN_DATA_FLOAT, {2, 3, 2}, {6, 2, 1}));
  const auto& scale_t = g.keep(tensor(3, CUDNN_DATA_FLOAT, {1, 1, 1}, {1, 1, 1}, false, true));
  const auto& y_t = g.keep(tensor(4, CUDNN_DATA_FLOAT, {2, 2, 1}, {2, 1, 1}));
  const auto& c_t = g.keep(tensor(100, CUDNN_DATA_FLOAT, {2, 2, 2}, {4, 2, 1}, true));
  const auto& scaled_t = g.keep(tensor(101, CUDNN_DATA_FLOAT, {2, 2, 2}, {4, 2, 1}, true));
  // Given out of order: the graph orders them by their tensors.
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, scaled_t, y_t);
  g.pointwise(CUDNN_POINTWISE_MUL, c_t, &scale_t, scaled_t);
  g.matmul(a_t, b_t, c_t);
  float scale = -0.5f;
  std::vector<float> y(4, 0.0f);
  g.run({1, 2, 3, 4}, {const_cast<float*>(a_store.data()), const_cast<float*>(b.data()), &scale, y.data()});
  for (int batch = 0; batch < 2; ++batch)
    for (int m = 0; m < 2; ++m) {
      double best = -INFINITY;
      for (int n = 0; n < 2; ++n) {
        double sum = 0;
        for (int k = 0; k < 3; ++k) sum += a_at(batch, m, k) * b[static_cast<size_t>(batch * 6 + k * 2 + n)];
        best = std::max(best, sum * scale);
      }
      CHECK(y[static_cast<size_t>(batch * 2 + m)] == doctest::Approx(best));
    }
}

TEST_CASE("emulated cuDNN: a bf16 virtual tensor holds bf16 values; a [.., 1] input broadcasts") {
  // x [1, 2, 3] minus its row [1, 2, 1], through a bf16 virtual copy of x.
  const std::vector<float> x = {1.00390625f, 2.0f, 3.0078125f, -1.0f, 0.333333343f, 7.0f};
  const std::vector<float> row = {0.5f, 2.0f};
  Graph g;
  const auto& x_t = g.keep(tensor(1, CUDNN_DATA_FLOAT, {1, 2, 3}, {6, 3, 1}));
  const auto& row_t = g.keep(tensor(2, CUDNN_DATA_FLOAT, {1, 2, 1}, {2, 1, 1}));
  const auto& y_t = g.keep(tensor(3, CUDNN_DATA_FLOAT, {1, 2, 3}, {6, 3, 1}));
  const auto& rounded_t = g.keep(tensor(100, CUDNN_DATA_BFLOAT16, {1, 2, 3}, {6, 3, 1}, true));
  g.pointwise(CUDNN_POINTWISE_IDENTITY, x_t, nullptr, rounded_t);
  g.pointwise(CUDNN_POINTWISE_SUB, rounded_t, &row_t, y_t);
  std::vector<float> y(6, 0.0f);
  g.run({1, 2, 3}, {const_cast<float*>(x.data()), const_cast<float*>(row.data()), y.data()});
  for (size_t i = 0; i < 6; ++i)
    CHECK(y[i] == static_cast<float>(bf16(x[i])) - row[i / 3]);
  CHECK(y[0] == 1.0f - 0.5f);  // 1 + 2^-8 is a tie, rounded to even
}

TEST_CASE("emulated cuDNN: bad descriptors, graphs and variant packs are refused with their cause") {
  const CudnnLibrary& lib = cudnn_library();
  const auto x_t = tensor(1, CUDNN_DATA_FLOAT, {2, 3}, {3, 1});
  SUBCASE("an unfinalized descriptor as an attribute") {
    BackendDescriptor loose(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    const cudnnBackendDescriptor_t raw = loose.get();
    CHECK(lib.set_attribute(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw) ==
          CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
    CHECK(last_message().find("unfinalized TENSOR") != std::string::npos);
    CHECK_THROWS_WITH_AS(op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, loose),
                         doctest::Contains("CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED"), std::runtime_error);
  }
  SUBCASE("an attribute of another descriptor type, and one set after finalize") {
    BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    CHECK_THROWS_WITH_AS(t.set_int64(CUDNN_ATTR_MATMUL_COMP_TYPE, 0), doctest::Contains("is not one it takes"),
                         std::runtime_error);
    const int64_t uid = 9;
    CHECK(lib.set_attribute(x_t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message().find("already finalized") != std::string::npos);
  }
  SUBCASE("a product whose shapes do not match") {
    const auto b_t = tensor(2, CUDNN_DATA_FLOAT, {4, 5}, {5, 1});
    const auto c_t = tensor(3, CUDNN_DATA_FLOAT, {2, 5}, {5, 1});
    BackendDescriptor desc(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    desc.finalize();
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, x_t)
        .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b_t)
        .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c_t)
        .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, desc);
    CHECK(op.try_finalize() == CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
    CHECK(last_message() == "OPERATION_MATMUL: C's dims [2,5] do not match A [2,3] x B [4,5]");
  }
  SUBCASE("a virtual tensor read that no operation writes") {
    Graph g;
    const auto& hidden = g.keep(tensor(100, CUDNN_DATA_FLOAT, {2, 3}, {3, 1}, true));
    const auto& y_t = g.keep(tensor(4, CUDNN_DATA_FLOAT, {2, 3}, {3, 1}));
    g.pointwise(CUDNN_POINTWISE_EXP, hidden, nullptr, y_t);
    BackendDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    CHECK(g.build(graph) == CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message().find("virtual tensor 100 is read but no operation writes it") != std::string::npos);
  }
  SUBCASE("a variant pack without a tensor's pointer") {
    Graph g;
    const auto& y_t = g.keep(tensor(4, CUDNN_DATA_FLOAT, {2, 3}, {3, 1}));
    g.pointwise(CUDNN_POINTWISE_EXP, x_t, nullptr, y_t);
    std::vector<float> y(6);
    CHECK_THROWS_WITH_AS(g.run({4}, {y.data()}), doctest::Contains("no pointer for tensor 1"), std::runtime_error);
  }
}
