#include "mcdl/run/checkpoint_writer.h"

#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <utility>

#include "io/safetensors.h"

namespace mcdl {
namespace {

// A host copy the writer owns alone: its thread then only reads host memory, never the device.
Tensor host_copy(const Tensor& t) { return t.device().is_cpu() ? t.clone() : t.to(Device::cpu()); }

// The rows put together whole on rank 0 (undefined elsewhere), on the calling thread.
Tensor gathered_whole(Collective& world, const RowBlocks& rows, size_t piece_bytes) {
  Tensor whole = world.rank() == 0 ? empty(rows.shape(), rows.own.dtype(), Device::cpu()) : Tensor();
  char* next = whole.defined() ? static_cast<char*>(whole.raw_data()) : nullptr;
  gather_blocks(world, rows.own.to(Device::cpu()), rows.blocks, 0, [&next](const void* data, size_t bytes) {
    std::memcpy(next, data, bytes);
    next += bytes;
  }, piece_bytes);
  return whole;
}

// The rows streamed to rank 0 on `channel`, where `write` takes them in order. When `write` fails,
// the rest is still received, since the other ranks send it whatever happens here; the first
// error is raised after.
void stream_rows(Collective& channel, const RowBlocks& rows, const std::function<void(const void*, size_t)>& write,
                 size_t piece_bytes) {
  std::exception_ptr failed;
  gather_blocks(channel, rows.own, rows.blocks, 0, [&](const void* data, size_t bytes) {
    if (failed) return;
    try {
      write(data, bytes);
    } catch (...) {
      failed = std::current_exception();
    }
  }, piece_bytes);
  if (failed) std::rethrow_exception(failed);
}

}  // namespace

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
                            const std::map<std::string, RowBlocks>& row_blocks,
                            const std::map<std::string, std::string>& metadata, int64_t epoch, int64_t keep_every) {
  wait();
  const bool writes = world_.rank() == 0;
  Collective* channel = world_.size() > 1 ? world_.side_channel() : nullptr;
  std::map<std::string, Tensor> whole;  // written from memory
  if (writes)
    for (const auto& [name, tensor] : tensors) whole[name] = host_copy(tensor);
  std::map<std::string, RowBlocks> streamed;  // sent to rank 0 while it writes
  for (const auto& [name, rows] : row_blocks) {
    if (world_.size() == 1) {
      whole[name] = host_copy(rows.own);
    } else if (!channel) {
      Tensor all = gathered_whole(world_, rows, piece_bytes_);
      if (writes) whole[name] = std::move(all);
    } else {
      streamed[name] = {host_copy(rows.own), rows.blocks};
    }
  }
  writer_ = std::thread([this, writes, channel, whole = std::move(whole), streamed = std::move(streamed), metadata,
                         epoch, keep_every] {
    std::set<std::string> sent;  // the streamed tensors whose rows were asked for
    try {
      if (!writes) {
        for (const auto& [name, rows] : streamed) stream_rows(*channel, rows, nullptr, piece_bytes_);
        return;
      }
      std::map<std::string, TensorPieces> pieces;
      for (const auto& [name, rows] : streamed)
        pieces[name] = {rows.own.dtype(), rows.shape(), [&, &name = name, &rows = rows](const auto& write) {
                          sent.insert(name);
                          stream_rows(*channel, rows, write, piece_bytes_);
                        }};
      run_.save_checkpoint(whole, metadata, epoch, keep_every, pieces);
    } catch (...) {
      error_ = std::current_exception();
      // The other ranks send every streamed tensor whatever failed here: take the rest, unwritten
      // (a failure of that is the same as the one already kept).
      if (!writes) return;
      for (const auto& [name, rows] : streamed) {
        if (sent.count(name)) continue;
        try {
          stream_rows(*channel, rows, [](const void*, size_t) {}, piece_bytes_);
        } catch (...) {
          return;
        }
      }
    }
  });
}

}  // namespace mcdl
