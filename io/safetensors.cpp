#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "io/durable_file.h"
#include "io/raw_tensor.h"

namespace mcdl {

// Tensor data is copied byte for byte; safetensors stores it little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

using nlohmann::json;

// The reference implementation's limit: a larger header is refused before it is read.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct FileDType {
  const char* name;
  size_t size;   // bytes per element in the file
  DType engine;  // what the engine holds it as
};

// The file dtypes the engine reads. F16 becomes f32 and BOOL becomes u8; the first entry
// for each engine dtype is the one save writes.
constexpr FileDType kFileDTypes[] = {
    {"F32", 4, DType::f32}, {"F64", 8, DType::f64}, {"BF16", 2, DType::bf16}, {"I32", 4, DType::i32},
    {"I64", 8, DType::i64}, {"U8", 1, DType::u8},   {"F16", 2, DType::f32},   {"BOOL", 1, DType::u8},
};

const FileDType* find_file_dtype(const std::string& name) {
  for (const FileDType& d : kFileDTypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const char* file_dtype_name(const std::string& path, DType dtype) {
  for (const FileDType& d : kFileDTypes) {
    if (d.engine == dtype) return d.name;
  }
  fail("save_safetensors: ", path, ": no safetensors dtype for ", dtype_name(dtype));
}

struct Entry {
  std::string name;
  const FileDType* dtype;
  Shape shape;
  uint64_t begin, end;  // relative to the data area
};

[[noreturn]] void read_failed(const std::string& path, const std::string& what) {
  fail("load_safetensors: ", path, ": ", what);
}

// `bytes` bytes at `offset` of the file into `dst`.
void read_exact(const std::string& path, int fd, void* dst, uint64_t offset, uint64_t bytes) {
  char* out = static_cast<char*>(dst);
  while (bytes > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bytes, 1u << 30));
    const ssize_t got = ::pread(fd, out, chunk, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) read_failed(path, "read failed at byte " + std::to_string(offset) + ": " + std::strerror(errno));
    if (got == 0)
      read_failed(path,
                  "unexpected end of file at byte " + std::to_string(offset) + " (the file changed while loading?)");
    out += got;
    offset += static_cast<uint64_t>(got);
    bytes -= static_cast<uint64_t>(got);
  }
}

// A tensor of `shape` stored at `offset` (F16 when `half`: read as f32).
Tensor read_block(const std::string& path, int fd, DType dtype, bool half, const Shape& shape, uint64_t offset) {
  Tensor tensor = empty(shape, dtype);
  if (half) {
    std::vector<uint16_t> halves(static_cast<size_t>(tensor.numel()));
    read_exact(path, fd, halves.data(), offset, halves.size() * sizeof(uint16_t));
    float* out = tensor.data<float>();
    for (size_t i = 0; i < halves.size(); ++i) out[i] = half_to_float(halves[i]);
  } else {
    read_exact(path, fd, tensor.raw_data(), offset, static_cast<uint64_t>(tensor.nbytes()));
  }
  return tensor;
}

class Loader {
 public:
  explicit Loader(const std::string& path) : path_(path) {}

  SafetensorsFile load(const std::function<bool(const std::string& name)>& leave_in_file) {
    // Shared with the tensors left in the file, which read from it later.
    const auto file = std::make_shared<const FileHandle>(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (file->get() < 0) bad("cannot open the file: ", std::strerror(errno));
    struct stat info;
    if (::fstat(file->get(), &info) != 0) bad("cannot stat the file: ", std::strerror(errno));
    if (!S_ISREG(info.st_mode)) bad("not a regular file");
    const uint64_t file_size = static_cast<uint64_t>(info.st_size);
    if (file_size < 8) bad("the file is ", file_size, " bytes, shorter than the 8-byte header length");

    unsigned char length_bytes[8];
    read_exact(path_, file->get(), length_bytes, 0, 8);
    uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | length_bytes[i];
    if (header_size > kMaxHeaderBytes) {
      bad("header length ", header_size, " exceeds the ", kMaxHeaderBytes, "-byte limit (not a safetensors file?)");
    }
    if (header_size > file_size - 8) {
      bad("header length ", header_size, " is larger than the file (", file_size, " bytes)");
    }
    std::string text(header_size, '\0');
    read_exact(path_, file->get(), text.data(), 8, header_size);
    const json header = parse_header(text);

    const uint64_t data_start = 8 + header_size;
    const uint64_t data_size = file_size - data_start;
    SafetensorsFile result;
    std::vector<Entry> entries;
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        result.metadata = parse_metadata(value);
      } else {
        entries.push_back(parse_entry(name, value, data_size));
      }
    }
    check_layout(entries, data_size);
    for (const Entry& entry : entries) {
      const bool half = std::string_view(entry.dtype->name) == "F16";
      const uint64_t offset = data_start + entry.begin;
      if (leave_in_file && !entry.shape.empty() && leave_in_file(entry.name)) {
        result.stored.emplace(entry.name,
                              StoredTensor(file, path_, entry.dtype->engine, half, entry.shape, offset));
        continue;
      }
      result.tensors.emplace(entry.name,
                             read_block(path_, file->get(), entry.dtype->engine, half, entry.shape, offset));
    }
    return result;
  }

 private:
  std::string path_;

  template <class... Parts>
  [[noreturn]] void bad(const Parts&... parts) const {
    fail("load_safetensors: ", path_, ": ", parts...);
  }

  // Parses the header, refusing duplicate keys (nlohmann would silently keep the last) and
  // nesting deeper than a valid header has (object > entry > shape), so a hostile header
  // cannot build a deep tree.
  json parse_header(const std::string& text) const {
    std::vector<std::set<std::string>> open_objects;
    int depth = 0;
    auto on_event = [&](int, json::parse_event_t event, json& value) {
      switch (event) {
        case json::parse_event_t::object_start:
        case json::parse_event_t::array_start:
          if (++depth > 3) bad("header JSON is nested deeper than a safetensors header");
          if (event == json::parse_event_t::object_start) open_objects.emplace_back();
          break;
        case json::parse_event_t::object_end:
          open_objects.pop_back();
          --depth;
          break;
        case json::parse_event_t::array_end: --depth; break;
        case json::parse_event_t::key:
          if (!open_objects.back().insert(value.get<std::string>()).second) {
            if (open_objects.size() == 1) bad("duplicate tensor name \"", value.get<std::string>(), "\" in the header");
            bad("duplicate key \"", value.get<std::string>(), "\" in the header");
          }
          break;
        case json::parse_event_t::value: break;
      }
      return true;
    };
    json header;
    try {
      header = json::parse(text, on_event);
    } catch (const json::exception& e) {
      bad("header is not valid JSON: ", e.what());
    }
    if (!header.is_object()) bad("header is not a JSON object but ", header.type_name());
    return header;
  }

  std::map<std::string, std::string> parse_metadata(const json& value) const {
    if (!value.is_object()) bad("\"__metadata__\" must be an object of strings, got ", value.type_name());
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : value.items()) {
      if (!item.is_string()) bad("\"__metadata__\" value for \"", key, "\" is a ", item.type_name(), ", not a string");
      metadata.emplace(key, item.get<std::string>());
    }
    return metadata;
  }

  const json& field(const std::string& name, const json& info, const char* key) const {
    auto it = info.find(key);
    if (it == info.end()) bad("tensor \"", name, "\" has no \"", key, "\"");
    return *it;
  }

  Entry parse_entry(const std::string& name, const json& info, uint64_t data_size) const {
    if (!info.is_object()) bad("tensor \"", name, "\" is a ", info.type_name(), ", not an object");
    Entry entry{name, nullptr, {}, 0, 0};

    const json& dtype = field(name, info, "dtype");
    if (!dtype.is_string()) bad("tensor \"", name, "\": \"dtype\" must be a string, got ", dtype.dump());
    entry.dtype = find_file_dtype(dtype.get<std::string>());
    if (entry.dtype == nullptr) {
      bad("tensor \"", name, "\": unknown or unsupported dtype \"", dtype.get<std::string>(),
          "\" (supported: F32, F64, BF16, F16, I64, I32, U8, BOOL)");
    }

    const json& shape = field(name, info, "shape");
    if (!shape.is_array()) bad("tensor \"", name, "\": \"shape\" must be an array, got ", shape.dump());
    int64_t numel = 1;
    for (const json& d : shape) {
      if (d.is_number_integer() && !d.is_number_unsigned()) {
        bad("tensor \"", name, "\": negative dimension in shape ", shape.dump());
      }
      if (!d.is_number_unsigned()) bad("tensor \"", name, "\": shape ", shape.dump(), " must hold integers");
      const uint64_t size = d.get<uint64_t>();
      if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(numel, static_cast<int64_t>(size), &numel)) {
        bad("tensor \"", name, "\": the element count of shape ", shape.dump(), " overflows");
      }
      entry.shape.push_back(static_cast<int64_t>(size));
    }
    uint64_t nbytes;
    if (__builtin_mul_overflow(static_cast<uint64_t>(numel), entry.dtype->size, &nbytes)) {
      bad("tensor \"", name, "\": the byte size of shape ", shape.dump(), " overflows");
    }

    const json& offsets = field(name, info, "data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      bad("tensor \"", name, "\": \"data_offsets\" must be [begin, end] with non-negative integers, got ",
          offsets.dump());
    }
    entry.begin = offsets[0].get<uint64_t>();
    entry.end = offsets[1].get<uint64_t>();
    if (entry.begin > entry.end) bad("tensor \"", name, "\": data_offsets ", offsets.dump(), " end before they begin");
    if (entry.end > data_size) {
      bad("tensor \"", name, "\": data_offsets ", offsets.dump(), " extend past the data area (", data_size,
          " bytes)");
    }
    if (entry.end - entry.begin != nbytes) {
      bad("tensor \"", name, "\": data_offsets ", offsets.dump(), " span ", entry.end - entry.begin, " bytes but ",
          entry.dtype->name, shape.dump(), " needs ", nbytes);
    }
    return entry;
  }

  // The reference implementation requires the tensors to tile the data area exactly.
  void check_layout(std::vector<Entry> entries, uint64_t data_size) const {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
    uint64_t covered = 0;
    const Entry* previous = nullptr;
    for (const Entry& entry : entries) {
      if (entry.begin < covered) {
        bad("tensors \"", previous->name, "\" and \"", entry.name, "\" overlap (bytes ", entry.begin, "..", covered,
            ")");
      }
      if (entry.begin > covered) bad("a gap of ", entry.begin - covered, " bytes before tensor \"", entry.name, "\"");
      covered = entry.end;
      previous = &entry;
    }
    if (covered != data_size) {
      bad(data_size - covered, " trailing bytes after the last tensor (the data area is ", data_size, " bytes)");
    }
  }

};

}  // namespace

bool looks_like_safetensors(std::span<const uint8_t> head) { return head.size() >= 9 && head[8] == '{'; }

SafetensorsFile load_safetensors(const std::string& path,
                                 const std::function<bool(const std::string& name)>& leave_in_file) {
  return Loader(path).load(leave_in_file);
}

StoredTensor::StoredTensor(std::shared_ptr<const FileHandle> file, std::string path, DType dtype, bool half,
                           Shape shape, uint64_t offset)
    : file_(std::move(file)),
      path_(std::move(path)),
      dtype_(dtype),
      half_(half),
      shape_(std::move(shape)),
      offset_(offset) {}

Tensor StoredTensor::rows(int64_t begin, int64_t end) const {
  check(0 <= begin && begin <= end && end <= shape_[0], "load_safetensors: ", path_, ": rows [", begin, ", ", end,
        ") of a tensor of ", shape_[0]);
  Shape block = shape_;
  block[0] = end - begin;
  if (begin == end) return empty(block, dtype_);
  int64_t row_elements = 1;  // at most the tensor's element count, whose product was checked: shape_[0] >= 1
  for (size_t a = 1; a < shape_.size(); ++a) row_elements *= shape_[a];
  const uint64_t row_bytes = static_cast<uint64_t>(row_elements) * (half_ ? 2 : dtype_size(dtype_));
  return read_block(path_, file_->get(), dtype_, half_, block, offset_ + static_cast<uint64_t>(begin) * row_bytes);
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata,
                      const std::map<std::string, TensorPieces>& pieces) {
  // What goes into the data area, in name order: a host tensor, or pieces.
  struct Item {
    Tensor host;
    const TensorPieces* pieces = nullptr;
    uint64_t bytes = 0;
  };
  std::map<std::string, Item> items;  // sorted by name, byte-wise like the reference
  for (const auto& [name, tensor] : tensors) {
    check(tensor.defined(), "save_safetensors: ", path, ": tensor \"", name, "\" is undefined");
    Tensor host = tensor.to(Device::cpu());
    const uint64_t bytes = host.nbytes();
    items[name] = {std::move(host), nullptr, bytes};
  }
  for (const auto& [name, streamed] : pieces) {
    check(!tensors.count(name), "save_safetensors: ", path, ": tensor \"", name, "\" given twice");
    uint64_t numel = 1;
    for (int64_t extent : streamed.shape) {
      check(extent >= 0 && !__builtin_mul_overflow(numel, static_cast<uint64_t>(extent), &numel),
            "save_safetensors: ", path, ": tensor \"", name, "\" has shape ", shape_str(streamed.shape));
    }
    items[name] = {Tensor(), &streamed, numel * dtype_size(streamed.dtype)};
  }
  // The reference writes "__metadata__" first and each entry's fields in this order.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, item] : items) {
    check(name != "__metadata__", "save_safetensors: ", path, ": \"__metadata__\" is reserved, not a tensor name");
    const DType dtype = item.pieces ? item.pieces->dtype : item.host.dtype();
    const Shape& shape = item.pieces ? item.pieces->shape : item.host.shape();
    header[name] = {
        {"dtype", file_dtype_name(path, dtype)}, {"shape", shape}, {"data_offsets", {offset, offset + item.bytes}}};
    offset += item.bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail("save_safetensors: ", path, ": a tensor name or metadata string is not valid UTF-8 (", e.what(), ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  unsigned char length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<unsigned char>(uint64_t{text.size()} >> (8 * i));
  AtomicFile file(path, "save_safetensors: " + path);
  file.write(length_bytes, 8);
  file.write(text.data(), text.size());
  for (const auto& [name, item] : items) {
    if (!item.pieces) {
      file.write(item.host.raw_data(), item.host.nbytes());
      continue;
    }
    uint64_t written = 0;
    item.pieces->produce([&, &name = name, &item = item](const void* data, size_t bytes) {
      check(written + bytes <= item.bytes, "save_safetensors: ", path, ": tensor \"", name,
            "\" was handed more than its ", item.bytes, " bytes");
      file.write(data, bytes);
      written += bytes;
    });
    check(written == item.bytes, "save_safetensors: ", path, ": tensor \"", name, "\" was handed ", written,
          " of its ", item.bytes, " bytes");
  }
  file.commit();
}

}  // namespace mcdl
