#include "kernels/cuda/runtime_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace mcdl::cuda {

std::string runtime_library_path(const char* env_variable, const char* real_name, const char* emulated_name) {
  const char* named = std::getenv(env_variable);
  if (named && *named) return named;
  if (!kEmulatedRuntime) return real_name;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? emulated_name : (exe.parent_path() / emulated_name).string();
}

void* open_runtime_library(const std::string& path, const std::string& what, const std::string& advice) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw std::runtime_error(what + " could not be loaded: " + dlerror() + "\n" + advice);
  return handle;
}

void* runtime_library_symbol(void* library, const char* name) { return dlsym(library, name); }

}  // namespace mcdl::cuda
