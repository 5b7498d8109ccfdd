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
#include <map>
#include <string>

#include "engine/tensor.h"

namespace mcdl {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;        // CPU tensors, in the file's dtypes (F16 -> f32)
  std::map<std::string, std::string> metadata;  // the header's "__metadata__" (string -> string)
};

// Reads and validates a whole file as the reference implementation does: the tensors must
// exactly tile the data area (no gaps, overlaps or trailing bytes), every size must agree with
// dtype and shape, and the header must be well-formed JSON without duplicate keys. Any problem
// throws mcdl::Error naming the file and the problem.
SafetensorsFile load_safetensors(const std::string& path);

// Writes the tensors (copied to the CPU first) sorted by name, their data contiguous in that
// order, the header padded with spaces to a multiple of 8 bytes as the reference does. The file
// is written to "<path>.tmp", flushed to disk and renamed over `path`, so a crash leaves either
// the old file or the complete new one.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace mcdl
