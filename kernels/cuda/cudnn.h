// cuDNN, loaded at run time (dlopen) on first use, like NCCL (kernels/cuda/runtime_library.h): a
// run that never asks for a cuDNN path never needs the library, and one where it is missing falls
// back to the engine's own kernels. Plain C++, so engine code can include it.
//
// Which file is loaded: $MCDL_CUDNN_LIBRARY, else cuDNN 9's libcudnn.so.9 from the loader's path.
// In the emulator build the default is the emulated cuDNN, libmcdl_cudnn_emu.so next to the
// executable, which runs the backend API's operation graphs on the host
// (kernels/emu/cudnn_emu.cpp).
#pragma once
#include <string>

namespace mcdl::cuda {

// "cuDNN 9.14.0 (<file>)", loading the library if needed; throws, naming the file, the loader's
// reason and what to do, when it cannot be loaded or lacks a function the engine calls.
std::string cudnn_description();

}  // namespace mcdl::cuda
