// Libraries the engine loads at run time (dlopen) rather than links: NCCL and cuDNN, which only
// some runs need. Plain C++ (no CUDA headers), included by .cu files.
//
// Which file is loaded: the one the environment variable names, else the library's usual name on
// the loader's path (the CUDA toolkit's lib64 is on the programs' run path) in the GPU build; in
// the emulator build (no nvcc, and the test binary) the emulated library built next to the
// executable.
#pragma once
#include <string>

namespace mcdl::cuda {

// True in the emulator build.
#ifdef __CUDACC__
inline constexpr bool kEmulatedRuntime = false;
#else
inline constexpr bool kEmulatedRuntime = true;
#endif

// $env_variable when set and not empty; else `real_name` (GPU build) or `emulated_name` in the
// executable's folder (emulator build).
std::string runtime_library_path(const char* env_variable, const char* real_name, const char* emulated_name);

// dlopen(path), kept open for the life of the process. Throws std::runtime_error
// "<what> could not be loaded: <the loader's reason>\n<advice>" when it cannot be.
void* open_runtime_library(const std::string& path, const std::string& what, const std::string& advice);

// The named function in a library open_runtime_library returned, or null.
void* runtime_library_symbol(void* library, const char* name);

}  // namespace mcdl::cuda
