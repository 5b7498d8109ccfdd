// The patch convolution's forward through cuDNN's graph API (the emulator's stand-in in
// mcdl_tests, the real library in mcdl_tests_gpu), its backward through im2col + GEMM: parity
// with the CPU, agreement with the forced im2col + GEMM forward, the plan lookup itself, the
// fallback where no engine takes a shape, and what the stand-in enforces of cuDNN's contract.
//
// Tolerances. f32: cuDNN accumulates the K = C·P² products of each output in float (in an
// order of its choosing on a GPU), the CPU reference in its own order; the float rounding grows
// with K, so K = 768 (P = 16, C = 3) gets 1e-4 absolute and relative, smaller K 1e-5 absolute and
// 1e-4 relative. An engine computing in TF32 would miss these by orders of magnitude (so they
// also check that fp32 mode never picks a tensor-core engine). TF32 mode: 2e-2, as for matmul.
// f64: 1e-12.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "engine/ops.h"
#include "kernels/cuda/conv_cudnn.h"
#include "kernels/emu/cudnn_api.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

// The emulated binary's device is the emulator (the stand-in runs there); the GPU binary's is real.
bool emulated() { return emu::emulated_device_count() > 0; }

class ForceAlgorithm {
 public:
  explicit ForceAlgorithm(ConvAlgorithm algorithm) : saved_(conv_algorithm()) { set_conv_algorithm(algorithm); }
  ~ForceAlgorithm() { set_conv_algorithm(saved_); }

 private:
  ConvAlgorithm saved_;
};

Tensor conv(const std::vector<Tensor>& x) { return conv2d_patch(x[0], x[1], x.size() > 2 ? x[2] : Tensor()); }

struct ConvCase {
  const char* name;
  int64_t batch, channels, height, width, patch, out_channels;
  bool bias;
  double atol, rtol;
};

std::vector<Tensor> inputs_for(const ConvCase& c, uint64_t seed) {
  std::vector<Tensor> inputs = {leaf({c.batch, c.channels, c.height, c.width}, seed),
                                leaf({c.out_channels, c.channels, c.patch, c.patch}, seed + 1)};
  if (c.bias) inputs.push_back(leaf({c.out_channels}, seed + 2));
  return inputs;
}

// ViT-style P = 16 on a 3-channel 32×32 image, MNIST-style P = 7 on 28×28, and P = 2 with odd
// channel counts and a non-square image; batch 1 and 3, with and without bias.
const ConvCase parity_cases[] = {
    {"P=16 C=3 32x32 O=5 B=1 bias", 1, 3, 32, 32, 16, 5, true, 1e-4, 1e-4},
    {"P=16 C=3 32x32 O=3 B=3", 3, 3, 32, 32, 16, 3, false, 1e-4, 1e-4},
    {"P=7 C=1 28x28 O=4 B=3 bias", 3, 1, 28, 28, 7, 4, true, 1e-5, 1e-4},
    {"P=2 C=5 6x10 O=7 B=3 bias", 3, 5, 6, 10, 2, 7, true, 1e-5, 1e-4},
    {"P=2 C=3 4x4 O=1 B=1", 1, 3, 4, 4, 2, 1, false, 1e-5, 1e-4},
};

}  // namespace

TEST_CASE("cuda parity: conv2d_patch with the forward through cuDNN") {
  ForceAlgorithm cudnn(ConvAlgorithm::cudnn);
  uint64_t seed = 100;
  for (const ConvCase& c : parity_cases) {
    CAPTURE(c.name);
    check_cuda_parity(std::string("conv2d_patch cudnn ") + c.name, conv, inputs_for(c, seed += 3), c.atol, c.rtol);
  }
  check_cuda_parity("conv2d_patch cudnn f64", conv,
                    {leaf({3, 3, 4, 6}, 130, DType::f64), leaf({5, 3, 2, 2}, 131, DType::f64),
                     leaf({5}, 132, DType::f64)},
                    1e-12, 1e-12);
}

TEST_CASE("cuda parity: forcing im2col + GEMM gives the values of the cuDNN forward") {
  uint64_t seed = 200;
  for (const ConvCase& c : parity_cases) {
    CAPTURE(c.name);
    const std::vector<Tensor> inputs = inputs_for(c, seed += 3);
    std::vector<Tensor> on_device;
    for (const Tensor& t : inputs) on_device.push_back(t.detach().to(Device::cuda()));
    Tensor through_cudnn, through_gemm;
    {
      ForceAlgorithm cudnn(ConvAlgorithm::cudnn);
      through_cudnn = conv(on_device);
    }
    {
      ForceAlgorithm gemm(ConvAlgorithm::im2col_gemm);
      through_gemm = conv(on_device);
    }
    check_close(std::string(c.name) + " cudnn vs im2col", through_gemm, through_cudnn, c.atol, c.rtol);
  }
  ForceAlgorithm gemm(ConvAlgorithm::im2col_gemm);
  const ConvCase& c = parity_cases[3];
  check_cuda_parity(std::string("conv2d_patch im2col ") + c.name, conv, inputs_for(c, 250), c.atol, c.rtol);
}

TEST_CASE("cuda: conv2d_patch_cudnn has a plan for f32 shapes, any pointer alignment") {
  const PatchGrid grid{3, 5, 6, 10, 2};
  const int64_t out_channels = 7;
  const Tensor x = random_tensor({3, 5, 6, 10}, 300, -1, 1, DType::f32),
               w = random_tensor({7, 5, 2, 2}, 301, -1, 1, DType::f32);
  const Tensor reference = conv2d_patch(x, w);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // offset 0: 16-byte aligned storage; offset 1: only 4-byte aligned pointers (a separate plan).
  for (int64_t offset : {0, 1}) {
    CAPTURE(offset);
    auto placed = [&](const Tensor& t) {
      std::vector<float> values(static_cast<size_t>(offset), nan);
      for (float v : t.to_vector<float>()) values.push_back(v);
      return view_of(from_vector(values, {t.numel() + offset}, Device::cuda()), t.shape(), offset);
    };
    Tensor xd = placed(x), wd = placed(w), yd = placed(full(reference.shape(), nan, DType::f32));
    const bool ran = cuda::conv2d_patch_cudnn(xd.ptr<float>(), wd.ptr<float>(), yd.ptr<float>(), grid, out_channels,
                                              cuda::GemmMode::fp32);
    if (offset == 0 || emulated()) REQUIRE(ran);
    if (ran)
      check_close("conv2d_patch_cudnn", reference, yd, 1e-5, 1e-4);
    else
      MESSAGE("cuDNN has no engine for 4-byte aligned f32 tensors here: the engine uses im2col + GEMM");
  }
}

TEST_CASE("cuda parity: conv2d_patch through cuDNN with TF32 allowed") {
  ForceAlgorithm cudnn(ConvAlgorithm::cudnn);
  set_matmul_precision(MatmulPrecision::tf32);
  const std::vector<Tensor> inputs = {leaf({2, 3, 8, 8}, 400), leaf({5, 3, 4, 4}, 401), leaf({5}, 402)};
  check_cuda_parity("conv2d_patch cudnn tf32", conv, inputs, 2e-2, 2e-2);
  if (emulated()) {  // the stand-in's tensor-core engine rounds to TF32: it was picked, and only here
    std::vector<Tensor> on_device;
    for (const Tensor& t : inputs) on_device.push_back(t.detach().to(Device::cuda()));
    const auto tf32 = conv(on_device).to(Device::cpu()).to_vector<double>();
    set_matmul_precision(MatmulPrecision::fp32);
    CHECK(conv(on_device).to(Device::cpu()).to_vector<double>() != tf32);
  }
  set_matmul_precision(MatmulPrecision::fp32);
}

// Emulator only: the stand-in's engines refuse tensors above a size limit, as real engines
// refuse what their 32-bit indexing cannot address; lowered here so that no engine takes the
// shape. The result is cached per shape, so this shape is used nowhere else.
TEST_CASE("cuda: where no cuDNN engine takes the shape, conv2d_patch falls back to im2col + GEMM") {
  if (!emulated()) {
    MESSAGE("skipped: needs the emulator's cuDNN stand-in");
    return;
  }
  ForceAlgorithm cudnn(ConvAlgorithm::cudnn);
  const int64_t saved_limit = emu::max_tensor_elements();
  emu::max_tensor_elements() = 100;
  const std::vector<Tensor> inputs = {leaf({2, 2, 6, 9}, 500), leaf({3, 2, 3, 3}, 501), leaf({3}, 502)};
  Tensor x = inputs[0].detach().to(Device::cuda()), w = inputs[1].detach().to(Device::cuda());
  Tensor y = empty({2, 3, 2, 3}, DType::f32, Device::cuda());
  CHECK_FALSE(cuda::conv2d_patch_cudnn(x.ptr<float>(), w.ptr<float>(), y.ptr<float>(), PatchGrid{2, 2, 6, 9, 3}, 3,
                                       cuda::GemmMode::fp32));
  check_cuda_parity("conv2d_patch without a cuDNN engine", conv, inputs, 1e-5, 1e-4);
  emu::max_tensor_elements() = saved_limit;
}

// What the emulated cuDNN enforces of the real library's contract, and its arithmetic: a true
// convolution (flipped filter) of x read through non-packed strides, y = 2·conv + 0.5·y.
TEST_CASE("cudnn stand-in: descriptor validation, alignment, workspace, alpha and beta") {
  if (!emulated()) {
    MESSAGE("skipped: tests the emulator's cuDNN stand-in");
    return;
  }
  cudnnHandle_t handle = nullptr;
  REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
  std::vector<cudnnBackendDescriptor_t> created;
  auto make = [&](cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = nullptr;
    REQUIRE(cudnnBackendCreateDescriptor(type, &d) == CUDNN_STATUS_SUCCESS);
    created.push_back(d);
    return d;
  };
  auto set = [](cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                int64_t count, const void* values) { return cudnnBackendSetAttribute(d, name, type, count, values); };
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const int64_t alignment = 16;
  auto tensor = [&](int64_t uid, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                    bool finalize = true) {
    cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    REQUIRE(set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data()) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment) == CUDNN_STATUS_SUCCESS);
    if (finalize) REQUIRE(cudnnBackendFinalize(t) == CUDNN_STATUS_SUCCESS);
    return t;
  };

  // Attribute types, element counts, required attributes, finalized state.
  cudnnBackendDescriptor_t loose = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int32_t dims32[4] = {1, 1, 3, 3};
  const int64_t two_ids[2] = {1, 2};
  CHECK(set(loose, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT32, 4, dims32) == CUDNN_STATUS_BAD_PARAM);
  CHECK(set(loose, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 2, two_ids) == CUDNN_STATUS_BAD_PARAM);
  CHECK(set(loose, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, two_ids) == CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnBackendFinalize(loose) == CUDNN_STATUS_BAD_PARAM);
  int64_t count = 0, value = 0;
  CHECK(cudnnBackendGetAttribute(loose, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &count, &value) ==
        CUDNN_STATUS_NOT_INITIALIZED);

  cudnnBackendDescriptor_t x = tensor(1, {1, 1, 3, 3}, {9, 9, 1, 3});  // stored transposed: (h, w) at h + 3w
  cudnnBackendDescriptor_t w = tensor(2, {1, 1, 2, 2}, {4, 4, 2, 1});
  cudnnBackendDescriptor_t y = tensor(3, {1, 1, 2, 2}, {4, 4, 2, 1});
  cudnnBackendDescriptor_t wrong_y = tensor(4, {1, 1, 3, 2}, {6, 6, 2, 1});
  cudnnBackendDescriptor_t same_uid_as_x = tensor(1, {1, 1, 2, 2}, {4, 4, 2, 1});
  cudnnBackendDescriptor_t unfinalized = tensor(5, {1, 1, 2, 2}, {4, 4, 2, 1}, false);
  CHECK(set(x, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &value) == CUDNN_STATUS_NOT_INITIALIZED);
  CHECK(cudnnBackendGetAttribute(x, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &count, &value) ==
        CUDNN_STATUS_SUCCESS);
  CHECK((count == 1 && value == 1));

  cudnnBackendDescriptor_t conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
  const int64_t spatial = 2, ones[2] = {1, 1}, zeros[2] = {0, 0};
  REQUIRE(set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, zeros) == CUDNN_STATUS_SUCCESS);
  CHECK(cudnnBackendFinalize(conv) == CUDNN_STATUS_BAD_PARAM);  // POST_PADDINGS missing
  REQUIRE(set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, zeros) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnBackendFinalize(conv) == CUDNN_STATUS_SUCCESS);

  const double alpha = 2, beta = 0.5;
  auto operation = [&](cudnnBackendDescriptor_t xd, cudnnBackendDescriptor_t wd, cudnnBackendDescriptor_t yd) {
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    const auto d = CUDNN_TYPE_BACKEND_DESCRIPTOR;
    REQUIRE(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, d, 1, &xd) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, d, 1, &wd) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, d, 1, &yd) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, d, 1, &conv) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_DOUBLE, 1, &alpha) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_DOUBLE, 1, &beta) ==
            CUDNN_STATUS_SUCCESS);
    return op;
  };
  cudnnBackendDescriptor_t unfinished_op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  CHECK(set(unfinished_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &unfinalized) == CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  CHECK(set(unfinished_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv) ==
        CUDNN_STATUS_BAD_PARAM);  // a convolution descriptor where a tensor belongs
  CHECK(cudnnBackendFinalize(operation(x, w, wrong_y)) == CUDNN_STATUS_BAD_PARAM);  // y must be 2×2

  auto graph_of = [&](cudnnBackendDescriptor_t op) {
    cudnnBackendDescriptor_t graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    REQUIRE(set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op) == CUDNN_STATUS_SUCCESS);
    return graph;
  };
  cudnnBackendDescriptor_t duplicate_op = operation(x, w, same_uid_as_x);
  REQUIRE(cudnnBackendFinalize(duplicate_op) == CUDNN_STATUS_SUCCESS);
  CHECK(cudnnBackendFinalize(graph_of(duplicate_op)) == CUDNN_STATUS_BAD_PARAM);  // x and y share UNIQUE_ID 1

  cudnnBackendDescriptor_t op = operation(x, w, y);
  REQUIRE(cudnnBackendFinalize(op) == CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t graph = graph_of(op);
  REQUIRE(cudnnBackendFinalize(graph) == CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t heuristics = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_A;
  REQUIRE(set(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnBackendFinalize(heuristics) == CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t configs[2] = {make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR),
                                         make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)};
  REQUIRE(cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 2, &count,
                                   configs) == CUDNN_STATUS_SUCCESS);
  REQUIRE(count == 2);
  cudnnBackendDescriptor_t plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  REQUIRE(set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[1]) ==
          CUDNN_STATUS_SUCCESS);  // the FMA engine: exact float arithmetic, needs a workspace
  REQUIRE(cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS);
  int64_t workspace_bytes = 0;
  REQUIRE(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                   &workspace_bytes) == CUDNN_STATUS_SUCCESS);
  CHECK(workspace_bytes == 16);

  alignas(16) float x_data[12] = {1, 4, 7, 2, 5, 8, 3, 6, 9}, w_data[4] = {1, 2, 3, 4}, y_data[4] = {10, 20, 30, 40};
  alignas(16) float workspace[4];
  const int64_t uids[3] = {1, 2, 3};
  auto execute = [&](void* x_pointer, void* workspace_pointer) {
    cudnnBackendDescriptor_t pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* pointers[3] = {x_pointer, w_data, y_data};
    REQUIRE(set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace_pointer) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnBackendFinalize(pack) == CUDNN_STATUS_SUCCESS);
    return cudnnBackendExecute(handle, plan, pack);
  };
  CHECK(execute(x_data + 1, workspace) == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);  // x declared 16-byte aligned
  CHECK(execute(x_data, nullptr) == CUDNN_STATUS_BAD_PARAM_NULL_POINTER);              // the workspace is missing
  CHECK(std::vector<float>(y_data, y_data + 4) == std::vector<float>{10, 20, 30, 40});
  REQUIRE(execute(x_data, workspace) == CUDNN_STATUS_SUCCESS);
  // conv(x, w) flips w: [[23, 33], [53, 63]]; then 2·conv + 0.5·[10, 20, 30, 40].
  CHECK(std::vector<float>(y_data, y_data + 4) == std::vector<float>{51, 76, 121, 146});

  for (cudnnBackendDescriptor_t d : created) CHECK(cudnnBackendDestroyDescriptor(d) == CUDNN_STATUS_SUCCESS);
  CHECK(cudnnBackendDestroyDescriptor(x) == CUDNN_STATUS_BAD_PARAM);  // already destroyed
  CHECK(cudnnDestroy(handle) == CUDNN_STATUS_SUCCESS);
  CHECK(cudnnDestroy(handle) == CUDNN_STATUS_BAD_PARAM);  // already destroyed
}
