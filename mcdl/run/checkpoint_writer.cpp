#include "mcdl/run/checkpoint_writer.h"

#include <cstdio>
#include <utility>

namespace mcdl {

CheckpointWriter::~CheckpointWriter() {
  try {
    wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
}

void CheckpointWriter::wait() {
  if (writer_.joinable()) writer_.join();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void CheckpointWriter::save(const std::map<std::string, Tensor>& tensors,
                            const std::map<std::string, std::string>& metadata, int64_t epoch, int64_t keep_every) {
  wait();
  // Host copies the writer owns alone: the thread then only reads host memory, never the device.
  std::map<std::string, Tensor> snapshot;
  for (const auto& [name, tensor] : tensors)
    snapshot[name] = tensor.device().is_cpu() ? tensor.clone() : tensor.to(Device::cpu());
  writer_ = std::thread([this, snapshot = std::move(snapshot), metadata, epoch, keep_every] {
    try {
      run_.save_checkpoint(snapshot, metadata, epoch, keep_every);
    } catch (...) {
      error_ = std::current_exception();
    }
  });
}

}  // namespace mcdl
