// The safetensors weight format (https://github.com/huggingface/safetensors), the engine's
// native checkpoint format and the one Hugging Face models ship in.
//
// Layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}
// then the data area (offsets are relative to its start, tensors stored row-major, little-endian).
//
// Dtypes: F32, F64, BF16, I32, I64 and U8 map to the engine's dtypes. BOOL is read as u8 (0/1).
// F16 is read and converted to f32 on load, since the engine has no f16 dtype; save never
// writes F16 (it writes each tensor in its own dtype). Other safetensors dtypes are refused.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "engine/tensor.h"
#include "io/file_handle.h"

namespace mcdl {

// A tensor that load_safetensors left in its file (its `leave_in_file`): its dtype and shape, and
// blocks of its rows read when asked, so a process reads only the rows it keeps (a rank's block
// of a checkpoint's memory banks). It keeps the validated file open, so its rows come from that
// file even if the path is replaced or removed since.
class StoredTensor {
 public:
  StoredTensor(std::shared_ptr<const FileHandle> file, std::string path, DType dtype, bool half, Shape shape,
               uint64_t offset);
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  // Rows [begin, end) of the first axis, as a CPU tensor (F16 as f32), read from the file; a file
  // cut short since it was loaded is an error.
  Tensor rows(int64_t begin, int64_t end) const;

 private:
  std::shared_ptr<const FileHandle> file_;
  std::string path_;  // for messages
  DType dtype_;
  bool half_;  // F16 in the file
  Shape shape_;
  uint64_t offset_;  // of the first row, from the file's start
};

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;        // CPU tensors, in the file's dtypes (F16 -> f32)
  std::map<std::string, std::string> metadata;  // the header's "__metadata__" (string -> string)
  std::map<std::string, StoredTensor> stored;   // the tensors left in the file (leave_in_file)
};

// True when the bytes start like a safetensors file: the header's 8-byte length, then the JSON
// header's '{' (at least 9 bytes).
bool looks_like_safetensors(std::span<const uint8_t> head);

// Reads and validates a whole file as the reference implementation does: the tensors must
// exactly tile the data area (no gaps, overlaps or trailing bytes), every size must agree with
// dtype and shape, and the header must be well-formed JSON without duplicate keys. Any problem
// throws mcdl::Error naming the file and the problem.
// The tensors `leave_in_file` names (those with at least one axis) are validated the same way but
// not read: they go to `stored` instead of `tensors`.
SafetensorsFile load_safetensors(const std::string& path,
                                 const std::function<bool(const std::string& name)>& leave_in_file = nullptr);

// A tensor that save_safetensors writes from bytes handed over in order instead of from memory
// (rows streamed from other processes): produce(write) calls write(data, bytes) with every byte of
// the tensor, in order; a count that differs from dtype and shape is an error.
struct TensorPieces {
  DType dtype;
  Shape shape;
  std::function<void(const std::function<void(const void* data, size_t bytes)>& write)> produce;
};

// Writes the tensors (copied to the CPU first) and the pieces, sorted by name together, their data
// contiguous in that order, the header padded with spaces to a multiple of 8 bytes as the
// reference does. The file is written to "<path>.tmp", flushed to disk and renamed over `path`, so
// a crash leaves either the old file or the complete new one.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      const std::map<std::string, TensorPieces>& pieces = {});

}  // namespace mcdl
