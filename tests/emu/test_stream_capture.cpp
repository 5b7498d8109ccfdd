// The emulator's stream capture (kernels/emu/stream_capture.h), through the emulated CUDA runtime
// API itself: work queued on a stream being captured runs at each launch of the graph and not
// before, memory allocated during the capture lives as long as the graph, and what CUDA refuses
// during a capture invalidates it here too.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kernels/cuda/launch.h"
#include "kernels/emu/runtime_api.h"

namespace mcdl::emu_selftest {
void launch_scale_on(const float* x, float* y, float a, int n, cudaStream_t stream);
void launch_scale(const float* x, float* y, float a, int n);
}  // namespace mcdl::emu_selftest

using namespace mcdl;

namespace {

struct Stream {
  cudaStream_t stream = nullptr;
  Stream() { REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess); }
  ~Stream() { (void)cudaStreamDestroy(stream); }
};

float* device_floats(const std::vector<float>& values, cudaStream_t stream) {
  void* p = nullptr;
  REQUIRE(cudaMallocAsync(&p, values.size() * sizeof(float), stream) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(p, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice, stream) ==
          cudaSuccess);
  return static_cast<float*>(p);
}

std::vector<float> values_of(const float* p, size_t n) { return std::vector<float>(p, p + n); }

int64_t live(const char* kind) {
  const auto counts = emu::live_object_counts();
  const auto found = counts.find(kind);
  return found == counts.end() ? 0 : found->second;
}

}  // namespace

TEST_CASE("emulated capture: kernels, copies and fills run at each launch of the graph, not before") {
  const Stream s;
  float* x = device_floats({1, 2, 3}, s.stream);
  float* y = device_floats({7, 7, 7}, s.stream);
  float* z = device_floats({7, 7, 7}, s.stream);
  const int64_t graphs = live("graphs"), executables = live("graph execs");
  REQUIRE(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cudaStreamCaptureStatus status;
  REQUIRE(cudaStreamIsCapturing(s.stream, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);
  void* scratch = nullptr;
  REQUIRE(cudaMallocAsync(&scratch, 3 * sizeof(float), s.stream) == cudaSuccess);  // the graph's
  REQUIRE(cudaMemsetAsync(scratch, 0, 3 * sizeof(float), s.stream) == cudaSuccess);
  emu_selftest::launch_scale_on(x, static_cast<float*>(scratch), 2.0f, 3, s.stream);
  REQUIRE(cudaMemcpyAsync(z, scratch, 3 * sizeof(float), cudaMemcpyDeviceToDevice, s.stream) == cudaSuccess);
  REQUIRE(cudaMemsetAsync(y, 0, 3 * sizeof(float), s.stream) == cudaSuccess);
  REQUIRE(cudaFreeAsync(scratch, s.stream) == cudaSuccess);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(s.stream, &graph) == cudaSuccess);
  REQUIRE(graph);
  CHECK(values_of(z, 3) == std::vector<float>{7, 7, 7});  // nothing ran
  CHECK(values_of(y, 3) == std::vector<float>{7, 7, 7});
  cudaGraphExec_t executable = nullptr;
  REQUIRE(cudaGraphInstantiate(&executable, graph, 0) == cudaSuccess);
  CHECK(live("graphs") == graphs + 1);
  CHECK(live("graph execs") == executables + 1);
  REQUIRE(cudaGraphLaunch(executable, s.stream) == cudaSuccess);
  CHECK(values_of(z, 3) == std::vector<float>{2, 4, 6});
  CHECK(values_of(y, 3) == std::vector<float>{0, 0, 0});
  x[0] = 10;  // the emulated device's memory is host memory
  REQUIRE(cudaGraphLaunch(executable, s.stream) == cudaSuccess);
  CHECK(values_of(z, 3) == std::vector<float>{20, 4, 6});
  CHECK(cudaGraphExecDestroy(executable) == cudaSuccess);
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  CHECK(live("graphs") == graphs);
  CHECK(live("graph execs") == executables);
  for (float* p : {x, y, z}) CHECK(cudaFreeAsync(p, s.stream) == cudaSuccess);
}

TEST_CASE("emulated capture: what CUDA refuses during a capture invalidates it") {
  const Stream s;
  float* x = device_floats({1, 2}, s.stream);
  cudaGraph_t graph = nullptr;
  SUBCASE("a wait for the captured stream") {
    REQUIRE(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaStreamSynchronize(s.stream) == cudaErrorStreamCaptureUnsupported);
    cudaStreamCaptureStatus status;
    REQUIRE(cudaStreamIsCapturing(s.stream, &status) == cudaSuccess);
    CHECK(status == cudaStreamCaptureStatusInvalidated);
    CHECK(cudaStreamEndCapture(s.stream, &graph) == cudaErrorStreamCaptureInvalidated);
    CHECK(graph == nullptr);
  }
  SUBCASE("a kernel on the legacy default stream") {
    REQUIRE(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    float y[2];
    CHECK_THROWS_AS(emu_selftest::launch_scale(x, y, 2.0f, 2), emu::EmulationError);
    CHECK(cudaStreamEndCapture(s.stream, &graph) == cudaErrorStreamCaptureInvalidated);
  }
  SUBCASE("an event recorded on the captured stream (not emulated)") {
    cudaEvent_t event = nullptr;
    REQUIRE(cudaEventCreate(&event) == cudaSuccess);
    REQUIRE(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaEventRecord(event, s.stream) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s.stream, &graph) == cudaErrorStreamCaptureInvalidated);
    CHECK(cudaEventDestroy(event) == cudaSuccess);
  }
  SUBCASE("the free of memory allocated before the capture") {
    REQUIRE(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaFreeAsync(x, s.stream) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s.stream, &graph) == cudaErrorStreamCaptureInvalidated);
  }
  SUBCASE("a second capture while one is in progress (stricter than CUDA)") {
    const Stream other;
    REQUIRE(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaStreamBeginCapture(other.stream, cudaStreamCaptureModeThreadLocal) == cudaErrorIllegalState);
    CHECK(cudaStreamEndCapture(other.stream, &graph) == cudaErrorIllegalState);
    REQUIRE(cudaStreamEndCapture(s.stream, &graph) == cudaSuccess);
    CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  }
  CHECK(cudaFreeAsync(x, s.stream) == cudaSuccess);
}

TEST_CASE("emulated capture: memory a graph does not free is the caller's, and such a graph is not instantiated") {
  const Stream s;
  REQUIRE(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  void* kept = nullptr;
  REQUIRE(cudaMallocAsync(&kept, 64, s.stream) == cudaSuccess);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(s.stream, &graph) == cudaSuccess);
  cudaGraphExec_t executable = nullptr;
  CHECK(cudaGraphInstantiate(&executable, graph, 0) == cudaErrorInvalidValue);
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  CHECK(cudaFreeAsync(kept, s.stream) == cudaSuccess);  // not freed with the graph
}
