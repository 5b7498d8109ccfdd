// Test helpers that assemble zip archives and pickle streams byte by byte, the way torch.save
// writes them, so tests can build well-formed and deliberately broken checkpoints in memory.
#pragma once
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

namespace mcdl::testing {

inline std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

inline std::string read_binary_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open ", path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_binary_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

struct ZipSpec {
  struct Entry {
    std::string name, data;
    uint16_t method = 0;  // 8 claims deflate (the data is not really compressed)
  };
  std::vector<Entry> entries;
  bool zip64_records = true;        // Zip64 end record + locator, as torch.save writes
  bool zip64_entry_fields = false;  // sizes and offsets only in a Zip64 extra field
  bool zero_local_sizes = true;     // local headers with CRC / sizes 0 (data descriptor flag)
  std::string comment;
};

// A stored-entry zip like PyTorch's writer: payloads aligned to 64 bytes by an "FB" extra field
// of 'Z's in the local header, data descriptors after the payloads, then the central directory.
inline std::string build_zip(const ZipSpec& spec) {
  std::string out, central;
  for (const ZipSpec::Entry& e : spec.entries) {
    const uint32_t crc = static_cast<uint32_t>(
        ::crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size())));
    const uint64_t local = out.size();
    const uint16_t flags = spec.zero_local_sizes ? 0x0808 : 0x0800;
    put_le(out, 0x04034b50, 4);
    put_le(out, 20, 2);
    put_le(out, flags, 2);
    put_le(out, e.method, 2);
    put_le(out, 0, 4);  // time, date
    put_le(out, spec.zero_local_sizes ? 0 : crc, 4);
    put_le(out, spec.zero_local_sizes ? 0 : e.data.size(), 4);
    put_le(out, spec.zero_local_sizes ? 0 : e.data.size(), 4);
    put_le(out, e.name.size(), 2);
    const size_t unpadded = out.size() + 2 + e.name.size() + 4;
    const size_t padding = (64 - unpadded % 64) % 64;
    put_le(out, 4 + padding, 2);
    out += e.name;
    out += "FB";
    put_le(out, padding, 2);
    out.append(padding, 'Z');
    out += e.data;
    if (spec.zero_local_sizes) {
      put_le(out, 0x08074b50, 4);
      put_le(out, crc, 4);
      put_le(out, e.data.size(), 4);
      put_le(out, e.data.size(), 4);
    }

    std::string extra;
    if (spec.zip64_entry_fields) {
      put_le(extra, 0x0001, 2);
      put_le(extra, 24, 2);
      put_le(extra, e.data.size(), 8);
      put_le(extra, e.data.size(), 8);
      put_le(extra, local, 8);
    }
    const uint64_t all_ones = 0xffffffffu;
    put_le(central, 0x02014b50, 4);
    put_le(central, 45, 2);
    put_le(central, 45, 2);
    put_le(central, flags, 2);
    put_le(central, e.method, 2);
    put_le(central, 0, 4);
    put_le(central, crc, 4);
    put_le(central, spec.zip64_entry_fields ? all_ones : e.data.size(), 4);
    put_le(central, spec.zip64_entry_fields ? all_ones : e.data.size(), 4);
    put_le(central, e.name.size(), 2);
    put_le(central, extra.size(), 2);
    put_le(central, 0, 2);  // comment
    put_le(central, 0, 2);  // disk
    put_le(central, 0, 2);
    put_le(central, 0, 4);
    put_le(central, spec.zip64_entry_fields ? all_ones : local, 4);
    central += e.name + extra;
  }
  const uint64_t directory_offset = out.size();
  out += central;
  if (spec.zip64_records) {
    const uint64_t record = out.size();
    put_le(out, 0x06064b50, 4);
    put_le(out, 44, 8);
    put_le(out, 45, 2);
    put_le(out, 45, 2);
    put_le(out, 0, 4);
    put_le(out, 0, 4);
    put_le(out, spec.entries.size(), 8);
    put_le(out, spec.entries.size(), 8);
    put_le(out, central.size(), 8);
    put_le(out, directory_offset, 8);
    put_le(out, 0x07064b50, 4);
    put_le(out, 0, 4);
    put_le(out, record, 8);
    put_le(out, 1, 4);
  }
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 4);
  put_le(out, spec.zip64_records ? 0xffff : spec.entries.size(), 2);
  put_le(out, spec.zip64_records ? 0xffff : spec.entries.size(), 2);
  put_le(out, spec.zip64_records ? 0xffffffffu : central.size(), 4);
  put_le(out, spec.zip64_records ? 0xffffffffu : directory_offset, 4);
  put_le(out, spec.comment.size(), 2);
  out += spec.comment;
  return out;
}

// Protocol 2 pickle opcodes, appended one call at a time.
class PickleBuilder {
 public:
  PickleBuilder() : out_("\x80\x02", 2) {}
  PickleBuilder& raw(const std::string& bytes) { return out_ += bytes, *this; }
  PickleBuilder& op(char code) { return out_.push_back(code), *this; }
  PickleBuilder& mark() { return op('('); }
  PickleBuilder& str(const std::string& s) {  // BINUNICODE
    op('X');
    put_le(out_, s.size(), 4);
    return raw(s);
  }
  PickleBuilder& integer(int32_t v) {  // BININT
    op('J');
    put_le(out_, static_cast<uint32_t>(v), 4);
    return *this;
  }
  PickleBuilder& global(const std::string& module, const std::string& name) {
    return op('c').raw(module + "\n" + name + "\n");
  }
  PickleBuilder& tuple() { return op('t'); }
  PickleBuilder& ints(const std::vector<int32_t>& values) {
    mark();
    for (int32_t v : values) integer(v);
    return tuple();
  }
  // _rebuild_tensor_v2(<persistent storage key, FloatStorage, numel>, offset, size, stride, False,
  // OrderedDict()), as torch.save writes a float32 tensor.
  PickleBuilder& float_tensor(const std::string& key, int32_t numel, int32_t offset, const std::vector<int32_t>& size,
                              const std::vector<int32_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    mark().str("storage").global("torch", "FloatStorage").str(key).str("cpu").integer(numel).tuple().op('Q');
    integer(offset).ints(size).ints(stride).op('\x89');
    global("collections", "OrderedDict").op(')').op('R');
    return tuple().op('R');
  }
  std::string stop() const { return out_ + "."; }

 private:
  std::string out_;
};

// A fresh empty directory under the system temp dir, removed when the object goes away.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace mcdl::testing
