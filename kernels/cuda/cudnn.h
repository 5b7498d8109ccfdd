// cuDNN, loaded at run time (dlopen) on first use, like NCCL (kernels/cuda/runtime_library.h): a
// run that never asks for a cuDNN path never needs the library, and one where it is missing falls
// back to the engine's own kernels. Plain C++, so engine code can include it.
//
// Which file is loaded: $MCDL_CUDNN_LIBRARY, else cuDNN 9's libcudnn.so.9 from the loader's path.
// In the emulator build the default is the emulated cuDNN, libmcdl_cudnn_emu.so next to the
// executable, which runs the backend API's operation graphs on the host
// (kernels/emu/cudnn_emu.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mcdl::cuda {

// "cuDNN 9.14.0 (<file>)", loading the library if needed; throws, naming the file, the loader's
// reason and what to do, when it cannot be loaded or lacks a function the engine calls.
std::string cudnn_description();

// The batch sizes the engine's cuDNN graphs are planned for, and how a batch runs as them: powers
// of two up to 128, largest first (108 = 64 + 32 + 8 + 4). A plan can cost a second to build (on
// Hopper cuDNN compiles its fused kernels then), and MixMatch's forwards change size from step to
// step: with chunks, any mix of sizes builds at most eight plans per graph and shape.
std::vector<int64_t> cudnn_batch_chunks(int64_t batch);

// What the loaded cuDNN says of one of the engine's graphs on a device it is only told about
// (cuDNN's device-property JSON, read by cuDNN 9.8 and later), without a GPU: `statuses`, by
// engine index, the status of the engine's configuration for that device (CUDNN_STATUS_SUCCESS,
// or CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING from an engine that compiles its
// kernels at run time and finds no CUDA driver library, mean that its pattern matcher took the
// graph); `heuristics_a` and `fallback`, the engines cuDNN's heuristics offer in each mode, best
// first (the order in which a plan is built on a GPU; engines that cannot compile are left out);
// `plan_status`, the status of the first offer's execution plan, compiled for that device.
struct CudnnEngineVerdicts {
  std::vector<int> statuses;
  std::vector<int64_t> heuristics_a, fallback;
  std::optional<int> plan_status;
};

}  // namespace mcdl::cuda
