// Reads PyTorch checkpoints (torch.save files) without Python: the zip format (torch >= 1.6,
// the default) and the legacy stream format (torch < 1.6, or _use_new_zipfile_serialization=False).
//
// Zip: <top>/data.pkl (the pickled object; any top folder name, taken from the first entry) plus
//   one stored entry <top>/data/<key> per storage; an optional <top>/byteorder must be "little".
// Legacy: consecutive pickles (magic number 0x1950a86a20f9469cfc6c, protocol 1001, sys_info with
//   little_endian True, the object, the sorted storage keys), then for each key an int64 element
//   count and the raw storage bytes.
// Either way the pickle is read with the safe unpickler (io/pickle.h) and these globals only:
//   collections.OrderedDict, torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter
//   (+ _with_state), torch.{Float,Double,Half,BFloat16,Long,Int,Short,Char,Byte,Bool}Storage, and
//   argparse.Namespace (kept as an inert record: DINO's full checkpoints store their "args").
//
// Which dict is the state dict (the checkpoint's layout is not trusted blindly):
//   - the top-level object itself when it is a dict whose every value is a tensor;
//   - otherwise the first of the keys "teacher", "state_dict", "model", "student" whose value is
//     a dict, searched the same way (at most 3 levels): DINO full checkpoints
//     ({"teacher", "student", "optimizer", "epoch", "args", ...}: the teacher is used, as DINO's
//     own evaluation does), and the common {"state_dict": ...} / {"model": ...} wrappers.
//   Anything else is an error listing the keys found. Tensors elsewhere (optimizer state, ...)
//   are never read.
//
// Tensors become contiguous CPU tensors: f32, f64, bf16, i64, i32, u8 as stored; f16 -> f32;
// i16 / i8 -> i32; bool -> u8. Sizes, strides and offsets are checked against their storage
// ("storage smaller than its tensor's extent"), storages against the file. Every problem throws
// mcdl::Error naming the file.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

struct TorchCheckpoint {
  std::map<std::string, Tensor> tensors;  // the state dict
  std::string format;                     // "torch zip" or "torch legacy"
  std::string location;                   // where the state dict was: "" (top level), "teacher", ...
  std::vector<std::string> notes;         // e.g. which wrapper key was used and what was skipped
};

TorchCheckpoint load_torch_checkpoint(const std::string& path);
// The same from bytes in memory; `what` names them in messages.
TorchCheckpoint read_torch_checkpoint(std::span<const uint8_t> bytes, const std::string& what);

// True when the bytes start like a torch.save file: a zip archive ("PK\3\4") or the legacy
// format (PROTO 2 followed by the 10-byte magic number's LONG1 opcode).
bool looks_like_torch_checkpoint(std::span<const uint8_t> head);

}  // namespace mcdl
