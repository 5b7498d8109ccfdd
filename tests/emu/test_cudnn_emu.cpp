// The emulated cuDNN (kernels/emu/cudnn_emu.cpp), loaded through the engine's loader
// (kernels/cuda/cudnn.cu) as the engine loads it: small backend-API graphs against hand-computed
// numbers, the heuristics and plans, and the refusals of bad descriptors, graphs, variant packs and
// handles, each with its status and a message that names the cause.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/cuda/cudnn_backend.h"
#include "kernels/cuda/cudnn_graph.h"
#include "kernels/cuda/runtime_library.h"

using namespace mcdl;
using namespace mcdl::cuda;

namespace {

enum class Kind { plain, intermediate, by_value };

int64_t element_bytes(cudnnDataType_t type) {
  return type == CUDNN_DATA_DOUBLE ? 8 : type == CUDNN_DATA_BFLOAT16 || type == CUDNN_DATA_HALF ? 2 : 4;
}

std::vector<int64_t> packed(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// A finalized tensor, aligned to its element size.
BackendDescriptor tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& strides, Kind kind = Kind::plain) {
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set_data_type(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
      .set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
      .set_int64s(CUDNN_ATTR_TENSOR_STRIDES, strides)
      .set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
      .set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, element_bytes(type))
      .set_bool(CUDNN_ATTR_TENSOR_IS_VIRTUAL, kind == Kind::intermediate)
      .set_bool(CUDNN_ATTR_TENSOR_IS_BY_VALUE, kind == Kind::by_value);
  t.finalize();
  return t;
}

// A cuDNN handle of the test's own.
struct Handle {
  cudnnHandle_t handle = nullptr;
  Handle() { check_cudnn(cudnn_library().create(&handle), "cudnnCreate"); }
  ~Handle() { (void)cudnn_library().destroy(handle); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
};

// A graph under construction (kernels/cuda/cudnn_graph.h, the engine's builder), with the test's
// tensors aligned to their element size, and its plan and execution.
struct Graph : CudnnGraph {
  const BackendDescriptor& tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                                  const std::vector<int64_t>& strides, Kind kind = Kind::plain) {
    return CudnnGraph::tensor(uid, type, dims, strides, element_bytes(type), kind == Kind::intermediate,
                              kind == Kind::by_value);
  }
  // The operation graph of the operations so far; its finalize's status in `status` when given,
  // else it must finalize.
  BackendDescriptor& finalized_graph(cudnnStatus_t* status = nullptr) {
    BackendDescriptor& g = graph();
    if (status)
      *status = g.try_finalize();
    else
      g.finalize();
    return g;
  }
  // Finalized heuristics (mode A) for `graph`.
  BackendDescriptor& heuristics(const BackendDescriptor& graph) {
    BackendDescriptor& h = keep(BackendDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    h.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)
        .finalize();
    return h;
  }
  // The plan of the heuristics' first configuration, which must exist.
  BackendDescriptor& plan() {
    const CudnnLibrary& lib = cudnn_library();
    BackendDescriptor& h = heuristics(finalized_graph());
    int64_t count = 0;
    check_cudnn(
        lib.get_attribute(h.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
        "heuristics count");
    REQUIRE(count == 1);
    BackendDescriptor& config = keep(BackendDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    cudnnBackendDescriptor_t raw = config.get();
    check_cudnn(
        lib.get_attribute(h.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw),
        "heuristics results");
    REQUIRE(count == 1);
    BackendDescriptor& p = keep(BackendDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
    p.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config).finalize();
    return p;
  }
  // cudnnBackendExecute's status for `plan` on a variant pack of `uids` and `pointers`.
  static cudnnStatus_t execute(const BackendDescriptor& plan, const std::vector<int64_t>& uids,
                               std::vector<void*> pointers) {
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* workspace = nullptr;
    pack.set_int64s(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
             pointers.data())
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
        .finalize();
    const Handle handle;
    return cudnn_library().execute(handle.handle, plan.get(), pack.get());
  }
  // Plans the graph and runs it; throws on failure.
  void run(const std::vector<int64_t>& uids, const std::vector<void*>& pointers) {
    check_cudnn(execute(plan(), uids, pointers), "cudnnBackendExecute");
  }
};

// cuDNN's last message, read (and so cleared).
std::string last_message() {
  char text[512] = {};
  cudnn_library().last_error(text, sizeof text);
  return text;
}

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The emulated library's count of live handles and descriptors.
int64_t live_objects() {
  void* library = open_runtime_library(cudnn_library().path, "cuDNN", "");
  void* symbol = runtime_library_symbol(library, "mcdl_cudnn_live_objects");
  REQUIRE(symbol != nullptr);
  return reinterpret_cast<decltype(&mcdl_cudnn_live_objects)>(symbol)();
}

}  // namespace

TEST_CASE("emulated cuDNN: a product of strided inputs, times a by-value scalar, reduced to its row maxima") {
  // A [2, 2, 3] stored transposed in each batch entry (strides 6, 1, 2); B [1, 3, 2] broadcast over
  // the batch; Y [2, 2, 1] stored column-major (strides 1, 2, 1). Dyadic values: every float step is
  // exact, so the double reference is met exactly.
  const std::vector<float> a_store = {1, 4, 2, 5, 3, 6, -1, 0, 2, 1, 0.5f, 3};
  const std::vector<float> b = {1, 0, 0.25f, 1, -2, 1};
  const auto a_at = [&](int batch, int m, int k) { return a_store[static_cast<size_t>(batch * 6 + m + 2 * k)]; };
  Graph g;
  const auto& a_t = g.tensor(1, CUDNN_DATA_FLOAT, {2, 2, 3}, {6, 1, 2});
  const auto& b_t = g.tensor(2, CUDNN_DATA_FLOAT, {1, 3, 2}, {6, 2, 1});
  const auto& scale_t = g.tensor(3, CUDNN_DATA_FLOAT, {1, 1, 1}, {1, 1, 1}, Kind::by_value);
  const auto& y_t = g.tensor(4, CUDNN_DATA_FLOAT, {2, 2, 1}, {1, 2, 1});
  const auto& c_t = g.tensor(100, CUDNN_DATA_FLOAT, {2, 2, 2}, {4, 2, 1}, Kind::intermediate);
  const auto& scaled_t = g.tensor(101, CUDNN_DATA_FLOAT, {2, 2, 2}, {4, 2, 1}, Kind::intermediate);
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
        for (int k = 0; k < 3; ++k) sum += double{a_at(batch, m, k)} * b[static_cast<size_t>(k * 2 + n)];
        best = std::max(best, sum * scale);
      }
      CHECK(y[static_cast<size_t>(batch + 2 * m)] == best);
    }
}

TEST_CASE("emulated cuDNN: a bf16 virtual product holds bf16 values, rounded once to nearest even") {
  SUBCASE("a float product") {
    // Row sums 1 + 2^-8 (a tie: to even, 1), 1 + 2^-8 + 2^-9 and 1 + 2^-8 + 2^-12 (past the tie:
    // up), 3 + 2^-6 (a bf16 value already); bf16 keeps 8 significant bits.
    const std::vector<float> a = {1, 0x1p-8f, 0, 1, 0x1p-8f, 0x1p-9f, 1, 0x1p-8f, 0x1p-12f, 2, 1, 0x1p-6f};
    const std::vector<float> ones = {1, 1, 1};
    Graph g;
    const auto& a_t = g.tensor(1, CUDNN_DATA_FLOAT, {1, 4, 3}, {12, 3, 1});
    const auto& b_t = g.tensor(2, CUDNN_DATA_FLOAT, {1, 3, 1}, {3, 1, 1});
    const auto& y_t = g.tensor(3, CUDNN_DATA_FLOAT, {1, 4, 1}, {4, 1, 1});
    const auto& c_t = g.tensor(100, CUDNN_DATA_BFLOAT16, {1, 4, 1}, {4, 1, 1}, Kind::intermediate);
    g.matmul(a_t, b_t, c_t);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, c_t, nullptr, y_t);
    std::vector<float> y(4, 0.0f);
    g.run({1, 2, 3}, {const_cast<float*>(a.data()), const_cast<float*>(ones.data()), y.data()});
    CHECK(y == std::vector<float>{1.0f, 1.0078125f, 1.0078125f, 3.015625f});
    for (size_t row = 0; row < 4; ++row)
      CHECK(y[row] == static_cast<float>(bf16(a[row * 3] + a[row * 3 + 1] + a[row * 3 + 2])));
  }
  SUBCASE("a double product just past a tie, which rounding through float would take to the tie") {
    const std::vector<double> a = {1, 0x1p-8, 0x1p-40};
    const std::vector<double> ones = {1, 1, 1};
    Graph g;
    const auto& a_t = g.tensor(1, CUDNN_DATA_DOUBLE, {1, 1, 3}, {3, 3, 1});
    const auto& b_t = g.tensor(2, CUDNN_DATA_DOUBLE, {1, 3, 1}, {3, 1, 1});
    const auto& y_t = g.tensor(3, CUDNN_DATA_FLOAT, {1, 1, 1}, {1, 1, 1});
    const auto& c_t = g.tensor(100, CUDNN_DATA_BFLOAT16, {1, 1, 1}, {1, 1, 1}, Kind::intermediate);
    g.matmul(a_t, b_t, c_t, CUDNN_DATA_DOUBLE);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, c_t, nullptr, y_t);
    float y = 0;
    g.run({1, 2, 3}, {const_cast<double*>(a.data()), const_cast<double*>(ones.data()), &y});
    CHECK(y == 1.0078125f);
  }
}

TEST_CASE("emulated cuDNN: a [b, h, s, 1] row maximum broadcasts in a scaled point-wise SUB") {
  // y = 2·x − 0.5·max over the last dimension, x [2, 2, 3, 4].
  const std::vector<int64_t> dims = {2, 2, 3, 4}, rows = {2, 2, 3, 1};
  std::vector<float> x(48);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((static_cast<int>(i) * 7) % 11) - 5.0f;
  Graph g;
  const auto& x_t = g.tensor(1, CUDNN_DATA_FLOAT, dims, packed(dims));
  const auto& y_t = g.tensor(2, CUDNN_DATA_FLOAT, dims, packed(dims));
  const auto& max_t = g.tensor(100, CUDNN_DATA_FLOAT, rows, packed(rows), Kind::intermediate);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, x_t, max_t);
  g.pointwise(CUDNN_POINTWISE_SUB, x_t, &max_t, y_t, 2.0f, 0.5f);
  std::vector<float> y(48, 0.0f);
  g.run({1, 2}, {x.data(), y.data()});
  for (size_t row = 0; row < 12; ++row) {
    float best = -INFINITY;
    for (size_t j = 0; j < 4; ++j) best = std::max(best, x[row * 4 + j]);
    for (size_t j = 0; j < 4; ++j) CHECK(y[row * 4 + j] == 2.0f * x[row * 4 + j] - 0.5f * best);
  }
}

TEST_CASE("emulated cuDNN: GELU_FWD is the exact (erf) GELU of its fp32 input, rounded once") {
  // y = GELU(x + bias) rounded to bf16, x [1, 5, 2] and a bias broadcast over the rows: the sum in
  // fp32 (exact here), the GELU in double rounded to float, then to bf16, as the engine's fc1 graph.
  const std::vector<float> x = {-3, 0.5f, -1, 0, 0.25f, 1, 2, -0.125f, 4, 3};
  const std::vector<float> bias = {0.5f, -0.25f};
  Graph g;
  const auto& x_t = g.tensor(1, CUDNN_DATA_FLOAT, {1, 5, 2}, {10, 2, 1});
  const auto& b_t = g.tensor(2, CUDNN_DATA_FLOAT, {1, 1, 2}, {2, 2, 1});
  const auto& y_t = g.tensor(3, CUDNN_DATA_BFLOAT16, {1, 5, 2}, {10, 2, 1});
  const auto& sum_t = g.tensor(100, CUDNN_DATA_FLOAT, {1, 5, 2}, {10, 2, 1}, Kind::intermediate);
  g.pointwise(CUDNN_POINTWISE_ADD, x_t, &b_t, sum_t);
  g.pointwise(CUDNN_POINTWISE_GELU_FWD, sum_t, nullptr, y_t);
  std::vector<bf16> y(10);
  g.run({1, 2, 3}, {const_cast<float*>(x.data()), const_cast<float*>(bias.data()), y.data()});
  for (size_t i = 0; i < 10; ++i) {
    const double s = x[i] + bias[i % 2];
    const float expected = static_cast<float>(0.5 * s * (1.0 + std::erf(s / std::sqrt(2.0))));
    CAPTURE(s);
    CHECK(static_cast<float>(y[i]) == static_cast<float>(bf16(expected)));
  }
  // A unary mode: a B operand is refused.
  Graph wrong;
  const auto& u = wrong.tensor(1, CUDNN_DATA_FLOAT, {1, 2}, {2, 1});
  const auto& v = wrong.tensor(2, CUDNN_DATA_FLOAT, {1, 2}, {2, 1});
  CHECK_THROWS_WITH(wrong.pointwise(CUDNN_POINTWISE_GELU_FWD, u, &u, v), doctest::Contains("a unary mode takes no B"));
}

TEST_CASE("emulated cuDNN: the heuristics offer one engine, and none for a graph of HALF tensors") {
  const CudnnLibrary& lib = cudnn_library();
  CHECK(lib.emulated);
  CHECK(lib.version == 91400);
  CHECK(std::string(lib.error_string(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)) == "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED");
  SUBCASE("a plan from the heuristics, and one from an engine built by hand, with no workspace") {
    std::vector<float> x = {1, 4, 9, 16}, y(4, 0.0f);
    Graph g;
    g.pointwise(CUDNN_POINTWISE_SQRT, g.tensor(1, CUDNN_DATA_FLOAT, {1, 4}, {4, 1}), nullptr,
                g.tensor(2, CUDNN_DATA_FLOAT, {1, 4}, {4, 1}));
    const BackendDescriptor& planned = g.plan();
    int64_t workspace = -1, count = 0;
    check_cudnn(lib.get_attribute(planned.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                  &workspace),
                "workspace size");
    CHECK(workspace == 0);
    CHECK(count == 1);
    check_cudnn(Graph::execute(planned, {1, 2}, {x.data(), y.data()}), "execute");
    CHECK(y == std::vector<float>{1, 2, 3, 4});

    BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    engine.set_descriptor(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, g.finalized_graph())
        .set_int64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 0);
    engine.finalize();
    BackendDescriptor config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    config.set_descriptor(CUDNN_ATTR_ENGINECFG_ENGINE, engine).finalize();
    BackendDescriptor by_hand(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    by_hand.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config).finalize();
    y.assign(4, 0.0f);
    check_cudnn(Graph::execute(by_hand, {1, 2}, {x.data(), y.data()}), "execute");
    CHECK(y == std::vector<float>{1, 2, 3, 4});
  }
  SUBCASE("HALF") {
    Graph g;
    g.pointwise(CUDNN_POINTWISE_EXP, g.tensor(1, CUDNN_DATA_HALF, {1, 4}, {4, 1}), nullptr,
                g.tensor(2, CUDNN_DATA_HALF, {1, 4}, {4, 1}));
    BackendDescriptor& graph = g.finalized_graph();
    int64_t count = -1;
    check_cudnn(lib.get_attribute(g.heuristics(graph).get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                "heuristics count");
    CHECK(count == 0);
    BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    engine.set_descriptor(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph);
    CHECK(engine.try_finalize() == CUDNN_STATUS_NOT_SUPPORTED);
    CHECK(mentions(last_message(), "tensor 1 is HALF"));
  }
}

TEST_CASE("emulated cuDNN: descriptors keep what was set in them after the caller destroys it") {
  std::vector<float> x = {1, -2, 3}, y(3, 0.0f);
  Graph g;
  {
    const BackendDescriptor x_t = tensor(1, CUDNN_DATA_FLOAT, {3, 1}, {1, 1});
    const BackendDescriptor y_t = tensor(2, CUDNN_DATA_FLOAT, {3, 1}, {1, 1});
    g.pointwise(CUDNN_POINTWISE_ADD, x_t, &x_t, y_t);
  }  // the tensors' descriptors are destroyed here; the operation still holds them
  g.run({1, 2}, {x.data(), y.data()});
  CHECK(y == std::vector<float>{2, -4, 6});
}

TEST_CASE("emulated cuDNN: bad descriptors, graphs and variant packs are refused with their cause") {
  const CudnnLibrary& lib = cudnn_library();
  const auto x_t = tensor(1, CUDNN_DATA_FLOAT, {2, 3}, {3, 1});
  const auto y_t = tensor(4, CUDNN_DATA_FLOAT, {2, 3}, {3, 1});
  SUBCASE("an unfinalized descriptor as an attribute, and check_cudnn's exception") {
    BackendDescriptor loose(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    const cudnnBackendDescriptor_t raw = loose.get();
    CHECK(lib.set_attribute(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw) ==
          CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
    CHECK(last_message() == "a descriptor attribute names an unfinalized TENSOR");
    CHECK(last_message().empty());  // read once
    CHECK_THROWS_WITH_AS(op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, loose),
                         "cuDNN cudnnBackendSetAttribute failed: CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED (a descriptor "
                         "attribute names an unfinalized TENSOR)",
                         std::runtime_error);
  }
  SUBCASE("attributes of another descriptor type, element type or count, and one set after finalize") {
    BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t values[2] = {3, 4};
    const double real = 3;
    CHECK(lib.set_attribute(t.get(), CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_INT64, 1, values) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message() == "TENSOR: attribute 1500 is not one it takes");
    CHECK(lib.set_attribute(t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_DOUBLE, 1, &real) ==
          CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
    CHECK(mentions(last_message(), "UNIQUE_ID takes element type 3, got 5"));
    CHECK(lib.set_attribute(t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 2, values) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message() == "TENSOR: UNIQUE_ID takes 1 elements, got 2");
    CHECK(lib.set_attribute(t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, nullptr) ==
          CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    CHECK(mentions(last_message(), "null array"));
    CHECK(lib.set_attribute(x_t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, values) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(mentions(last_message(), "already finalized"));
    CHECK(lib.finalize(x_t.get()) == CUDNN_STATUS_BAD_PARAM);
    CHECK(mentions(last_message(), "finalized twice"));
  }
  SUBCASE("a tensor without its alignment, and a by-value tensor that is no scalar") {
    BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    t.set_data_type(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_DATA_FLOAT)
        .set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, {2, 3})
        .set_int64s(CUDNN_ATTR_TENSOR_STRIDES, {3, 1})
        .set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, 7);
    CHECK(t.try_finalize() == CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message() == "TENSOR 7: byte alignment 1 is not a positive multiple of its 4-byte elements");
    t.set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16).set_bool(CUDNN_ATTR_TENSOR_IS_BY_VALUE, true);
    CHECK(t.try_finalize() == CUDNN_STATUS_BAD_PARAM);
    CHECK(mentions(last_message(), "a by-value tensor is a scalar"));
  }
  SUBCASE("a product and a point-wise operation whose shapes do not match") {
    const auto a_t = tensor(11, CUDNN_DATA_FLOAT, {2, 3, 4}, {12, 4, 1});
    const auto b_t = tensor(12, CUDNN_DATA_FLOAT, {2, 4, 6}, {24, 6, 1});
    const auto c_t = tensor(13, CUDNN_DATA_FLOAT, {2, 3, 5}, {15, 5, 1});
    BackendDescriptor desc(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    desc.finalize();
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a_t)
        .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b_t)
        .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c_t)
        .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, desc);
    CHECK(op.try_finalize() == CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
    CHECK(last_message() == "OPERATION_MATMUL: C's dims [2,3,5] do not match A [2,3,4] x B [2,4,6]");

    const auto row_t = tensor(14, CUDNN_DATA_FLOAT, {2, 2}, {2, 1});
    BackendDescriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    const cudnnPointwiseMode_t mode = CUDNN_POINTWISE_SUB;
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode).finalize();
    BackendDescriptor sub(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    sub.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw)
        .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x_t)
        .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, row_t)
        .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y_t);
    CHECK(sub.try_finalize() == CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
    CHECK(last_message() == "OPERATION_POINTWISE: input dims [2,2] do not broadcast to Y's [2,3]");
  }
  SUBCASE("a virtual tensor read that no operation writes") {
    Graph g;
    g.pointwise(CUDNN_POINTWISE_EXP, g.tensor(100, CUDNN_DATA_FLOAT, {2, 3}, {3, 1}, Kind::intermediate), nullptr, y_t);
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    g.finalized_graph(&status);
    CHECK(status == CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message() == "OPERATIONGRAPH: virtual tensor 100 is read but no operation writes it");
  }
  SUBCASE("graphs with a tensor written twice, two tensors of one id, a cycle") {
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    Graph twice;
    twice.pointwise(CUDNN_POINTWISE_EXP, x_t, nullptr, y_t);
    twice.pointwise(CUDNN_POINTWISE_LOG, x_t, nullptr, y_t);
    twice.finalized_graph(&status);
    CHECK(status == CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message() == "OPERATIONGRAPH: tensor 4 is written by two operations");

    Graph clash;
    clash.pointwise(CUDNN_POINTWISE_EXP, x_t, nullptr, y_t);
    clash.pointwise(CUDNN_POINTWISE_LOG, clash.tensor(1, CUDNN_DATA_FLOAT, {2, 3}, {1, 2}), nullptr,
                    clash.tensor(5, CUDNN_DATA_FLOAT, {2, 3}, {3, 1}));
    clash.finalized_graph(&status);
    CHECK(status == CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message() == "OPERATIONGRAPH: two different tensor descriptors have unique id 1");

    Graph cycle;
    const auto& u = cycle.tensor(100, CUDNN_DATA_FLOAT, {2, 3}, {3, 1}, Kind::intermediate);
    const auto& v = cycle.tensor(101, CUDNN_DATA_FLOAT, {2, 3}, {3, 1}, Kind::intermediate);
    cycle.pointwise(CUDNN_POINTWISE_EXP, u, nullptr, v);
    cycle.pointwise(CUDNN_POINTWISE_LOG, v, nullptr, u);
    cycle.finalized_graph(&status);
    CHECK(status == CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message() == "OPERATIONGRAPH: the operations form a cycle");
  }
  SUBCASE("variant packs: a pointer missing, an id the graph lacks, an id twice, a misaligned pointer") {
    Graph g;
    g.pointwise(CUDNN_POINTWISE_EXP, x_t, nullptr, y_t);
    const BackendDescriptor& plan = g.plan();
    std::vector<float> x(6, 0.0f), y(7, 0.0f);
    CHECK(Graph::execute(plan, {4}, {y.data()}) == CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message() == "execute: the variant pack has no pointer for tensor 1");
    CHECK_THROWS_WITH_AS(
        check_cudnn(Graph::execute(plan, {4}, {y.data()}), "cudnnBackendExecute"),
        doctest::Contains("CUDNN_STATUS_BAD_PARAM (execute: the variant pack has no pointer for tensor 1)"),
        std::runtime_error);
    CHECK(Graph::execute(plan, {1, 4, 9}, {x.data(), y.data(), y.data()}) == CUDNN_STATUS_BAD_PARAM);
    CHECK(last_message() == "execute: the variant pack names tensor 9, which the graph does not have");
    CHECK_THROWS_WITH_AS(
        Graph::execute(plan, {1, 1}, {x.data(), y.data()}),
        doctest::Contains("CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES (VARIANT_PACK: unique id 1 appears twice)"),
        std::runtime_error);
    void* misaligned = reinterpret_cast<char*>(y.data()) + 2;
    CHECK(Graph::execute(plan, {1, 4}, {x.data(), misaligned}) == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);
    CHECK(last_message() == "execute: tensor 4's pointer is not aligned to its byte alignment 4");
  }
}

TEST_CASE("emulated cuDNN: handles and descriptors are counted, and null or stale ones refused") {
  const CudnnLibrary& lib = cudnn_library();
  const int64_t before = live_objects();
  {
    Graph g;
    g.pointwise(CUDNN_POINTWISE_IDENTITY, g.tensor(1, CUDNN_DATA_FLOAT, {2}, {1}), nullptr,
                g.tensor(2, CUDNN_DATA_FLOAT, {2}, {1}));
    g.plan();
    const Handle handle;
    // 2 tensors, the point-wise descriptor and operation, the graph, the heuristics, the
    // configuration, the plan (the engine the heuristics made lives inside the configuration), and
    // the handle.
    CHECK(live_objects() == before + 8 + 1);
  }
  CHECK(live_objects() == before);

  cudnnBackendDescriptor_t raw = nullptr;
  // 1: cuDNN's CONVOLUTION descriptor, which the emulator does not have.
  CHECK(lib.create_descriptor(static_cast<cudnnBackendDescriptorType_t>(1), &raw) == CUDNN_STATUS_NOT_SUPPORTED);
  CHECK(mentions(last_message(), "descriptor type 1 is not emulated"));
  CHECK(lib.finalize(nullptr) == CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  CHECK(last_message() == "cudnnBackendFinalize: null descriptor");
  REQUIRE(lib.create_descriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &raw) == CUDNN_STATUS_SUCCESS);
  int64_t count = 0, value = 0;
  CHECK(lib.get_attribute(raw, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &count, &value) ==
        CUDNN_STATUS_NOT_INITIALIZED);
  CHECK(last_message() == "TENSOR: read before it is finalized");
  CHECK(lib.destroy_descriptor(raw) == CUDNN_STATUS_SUCCESS);
  CHECK(lib.destroy_descriptor(raw) == CUDNN_STATUS_BAD_PARAM);
  CHECK(mentions(last_message(), "not a live descriptor"));

  CHECK(lib.create(nullptr) == CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  CHECK(lib.set_stream(nullptr, nullptr) == CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  cudnnHandle_t handle = nullptr;
  REQUIRE(lib.create(&handle) == CUDNN_STATUS_SUCCESS);
  CHECK(lib.set_stream(handle, nullptr) == CUDNN_STATUS_SUCCESS);
  CHECK(lib.execute(handle, nullptr, nullptr) == CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  CHECK(lib.destroy(handle) == CUDNN_STATUS_SUCCESS);
  CHECK(lib.destroy(handle) == CUDNN_STATUS_BAD_PARAM);
  CHECK(last_message() == "cudnnDestroy: not a live handle (destroyed, or never created)");
  CHECK(live_objects() == before);
}
