#include "mcdl/run/checkpoint_writer.h"

#include <cstdio>
#include <functional>
#include <set>
#include <utility>

#include "io/safetensors.h"

namespace mcdl {
namespace {

// A host copy the writer owns alone: its thread then only reads host memory, never the device.
Tensor host_copy(const Tensor& t) { return t.device().is_cpu() ? t.clone() : t.to(Device::cpu()); }

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

// Rank 0's writer taking `bytes` bytes of rows from `queue` as the training thread receives them.
void take_pieces(PieceQueue& queue, size_t bytes, const std::function<void(const void*, size_t)>& write) {
  for (size_t left = bytes; left > 0;) {
    const std::vector<char> piece = queue.pop();
    check(piece.size() <= left, "checkpoint: a piece of ", piece.size(), " bytes where ", left, " were left");
    write(piece.data(), piece.size());
    left -= piece.size();
  }
}

size_t whole_bytes(const RowBlocks& rows) {
  return static_cast<size_t>(shape_numel(rows.shape())) * dtype_size(rows.own.dtype());
}

}  // namespace

CheckpointWriter::~CheckpointWriter() {
  if (rows_to_send()) {
    between_steps_.clear();
    if (pieces_) pieces_->close();
    if (writer_.joinable()) writer_.join();
    error_ = nullptr;  // the closed queue's: the note says it
    if (world_.rank() == 0)
      std::fprintf(stderr,
                   "note: the checkpoint after epoch %lld was not written: the run ended while the memory banks' "
                   "rows were still on their way to rank 0; %s holds the one before\n",
                   static_cast<long long>(epoch_ + 1), run_.last_checkpoint().c_str());
  }
  try {
    wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
}

bool CheckpointWriter::rows_to_send() const {
  for (const BlockGather& gather : between_steps_)
    if (!gather.done()) return true;
  return false;
}

void CheckpointWriter::send_piece() {
  if (!rows_to_send()) return;
  // Rank 0 says whether its writer has room for a piece: while the disk is slower than the steps,
  // a step sends none rather than wait for it.
  uint8_t room = world_.rank() == 0 ? pieces_->has_room() : 0;
  world_.broadcast(&room, sizeof room, 0);
  if (room) send_next_piece();
}

void CheckpointWriter::send_next_piece() {
  while (between_steps_.front().done()) between_steps_.pop_front();
  between_steps_.front().send_next(world_, [this](const void* data, size_t bytes) { pieces_->push(data, bytes); });
}

void CheckpointWriter::wait() {
  while (rows_to_send()) send_next_piece();  // every rank is here: the pieces go, at the disk's pace
  between_steps_.clear();
  if (writer_.joinable()) writer_.join();
  pieces_.reset();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void CheckpointWriter::save(const std::map<std::string, Tensor>& tensors,
                            const std::map<std::string, RowBlocks>& row_blocks,
                            const std::map<std::string, std::string>& metadata, int64_t epoch, int64_t keep_every) {
  wait();
  epoch_ = epoch;
  const bool writes = world_.rank() == 0;
  Collective* channel = world_.size() > 1 ? world_.side_channel() : nullptr;
  std::map<std::string, Tensor> whole;  // written from memory
  if (writes)
    for (const auto& [name, tensor] : tensors) whole[name] = host_copy(tensor);
  std::map<std::string, RowBlocks> streamed;  // sent to rank 0 while it writes
  for (const auto& [name, rows] : row_blocks) {
    if (world_.size() == 1)
      whole[name] = host_copy(rows.own);
    else
      streamed[name] = {host_copy(rows.own), rows.blocks};
  }
  if (!channel && !streamed.empty()) {  // sent between steps, in the file's (the names') order
    for (const auto& [name, rows] : streamed) between_steps_.emplace_back(world_, rows.own, rows.blocks, 0, piece_bytes_);
    if (writes) pieces_ = std::make_shared<PieceQueue>(2);
  }
  if (!writes && !channel) return;  // nothing to do but send between steps
  writer_ = std::thread([this, writes, channel, queue = pieces_, whole = std::move(whole),
                         streamed = std::move(streamed), metadata, epoch, keep_every] {
    std::set<std::string> sent;  // the streamed tensors whose rows were asked for on the side channel
    try {
      if (!writes) {
        for (const auto& [name, rows] : streamed) stream_rows(*channel, rows, nullptr, piece_bytes_);
        return;
      }
      std::map<std::string, TensorPieces> pieces;
      for (const auto& [name, rows] : streamed)
        pieces[name] = {rows.own.dtype(), rows.shape(), [&, &name = name, &rows = rows](const auto& write) {
                          if (!channel) return take_pieces(*queue, whole_bytes(rows), write);
                          sent.insert(name);
                          stream_rows(*channel, rows, write, piece_bytes_);
                        }};
      run_.save_checkpoint(whole, metadata, epoch, keep_every, pieces);
    } catch (...) {
      error_ = std::current_exception();
      if (!writes) return;
      // Rows sent between steps keep coming: the training thread drops them from now on.
      if (queue) return queue->close();
      if (!channel) return;
      // The other ranks send every streamed tensor whatever failed here: take the rest, unwritten
      // (a failure of that is the same as the one already kept).
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
