#include "io/torch_checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/hex_bytes.h"
#include "io/pickle.h"
#include "io/raw_tensor.h"
#include "io/zip_archive.h"

namespace mcdl {

namespace {

using K = PickleValue::Kind;

// The legacy format's first pickle: LONG1 0x1950a86a20f9469cfc6c, little-endian.
constexpr uint8_t kLegacyMagic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
constexpr int64_t kLegacyProtocol = 1001;
constexpr const char* kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr const char* kWrapperKeys[] = {"teacher", "state_dict", "model", "student"};
constexpr int kMaxWrapperDepth = 3;

// A whole file mapped read-only (a ViT-B checkpoint is 343 MB: mapping avoids a second copy).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    check(fd >= 0, "torch checkpoint: ", path, ": cannot open: ", std::strerror(errno));
    struct stat info;
    const bool ok = ::fstat(fd, &info) == 0;
    const int saved = errno;
    if (!ok || !S_ISREG(info.st_mode)) {
      ::close(fd);
      fail("torch checkpoint: ", path, ": ", ok ? "not a regular file" : std::strerror(saved));
    }
    size_ = static_cast<size_t>(info.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        fail("torch checkpoint: ", path, ": cannot map the file: ", std::strerror(err));
      }
      data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

struct StorageRef {
  std::string key;
  RawType type;
  int64_t numel;
  std::span<const uint8_t> data;  // set once the storage's bytes are located
};

RawType storage_type(const std::string& global) {
  static const std::pair<const char*, RawType> kTypes[] = {
      {"torch.FloatStorage", RawType::f32}, {"torch.DoubleStorage", RawType::f64},
      {"torch.HalfStorage", RawType::f16},  {"torch.BFloat16Storage", RawType::bf16},
      {"torch.LongStorage", RawType::i64},  {"torch.IntStorage", RawType::i32},
      {"torch.ShortStorage", RawType::i16}, {"torch.CharStorage", RawType::i8},
      {"torch.ByteStorage", RawType::u8},   {"torch.BoolStorage", RawType::boolean},
  };
  for (const auto& [name, type] : kTypes) {
    if (global == name) return type;
  }
  fail("storage type ", global, " is not supported");
}

PickleValue first_argument(const PickleValue& args) {
  check(!args.items().empty(), "expected the tensor as first argument");
  return args.items()[0];
}

class CheckpointReader {
 public:
  CheckpointReader(std::span<const uint8_t> bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}

  TorchCheckpoint read() {
    TorchCheckpoint result;
    PickleValue root;
    if (looks_like_zip(bytes_)) {
      result.format = "torch zip";
      root = read_zip();
    } else if (is_legacy(bytes_)) {
      result.format = "torch legacy";
      root = read_legacy();
    } else {
      bad("not a PyTorch checkpoint (neither a zip archive nor the legacy format: the file starts ", first_bytes(),
          ")");
    }
    const PickleValue& state_dict = find_state_dict(root, "", 0, result);
    std::map<RawType, int64_t> widened;  // file element type -> tensors converted on load
    for (const auto& [key, value] : state_dict.entries()) {
      Tensor t = tensor(key, value, widened);
      result.tensors.emplace(key.as_string(), std::move(t));
    }
    for (const auto& [type, count] : widened) {
      result.notes.push_back(std::to_string(count) + " " + raw_type_name(type) + " tensor(s) converted to " +
                             dtype_name(raw_type_engine_dtype(type)));
    }
    return result;
  }

  static bool is_legacy(std::span<const uint8_t> head) {
    return head.size() >= 4 && head[0] == 0x80 && head[1] == 0x02 && head[2] == 0x8a && head[3] == 0x0a;
  }

 private:
  std::span<const uint8_t> bytes_;
  std::string what_;
  std::vector<StorageRef> storages_;
  std::map<std::string, size_t> storage_index_;  // key -> position in storages_

  template <class... Parts>
  [[noreturn]] void bad(const Parts&... parts) const {
    fail("torch checkpoint: ", what_, ": ", parts...);
  }

  std::string first_bytes() const { return bytes_.empty() ? "empty" : hex_bytes(bytes_); }

  PickleOptions options(const std::string& stream, bool legacy) {
    PickleOptions o;
    o.what = stream + " of " + what_;
    o.globals = {
        {"collections.OrderedDict", pickle_call_make_dict},
        {kRebuildTensor, {}},
        {"torch._utils._rebuild_parameter", first_argument},
        {"torch._utils._rebuild_parameter_with_state", first_argument},
        {"argparse.Namespace", {}},
    };
    for (const char* type : {"Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool"}) {
      o.globals.emplace(std::string("torch.") + type + "Storage", PickleCall{});
    }
    o.persistent_load = [this, legacy](const PickleValue& id) { return persistent_load(id, legacy); };
    return o;
  }

  // ('storage', torch.<Type>Storage, key, location, numel) [+ view_metadata in the legacy format]
  // -> a handle to the storage table.
  PickleValue persistent_load(const PickleValue& id, bool legacy) {
    const size_t arity = legacy ? 6 : 5;
    check(id.is(K::tuple) && id.items().size() == arity && id.items()[0].is(K::string) &&
              id.items()[0].as_string() == "storage",
          "expected ('storage', type, key, location, numel", legacy ? ", view_metadata" : "", "), got ", id.describe());
    const auto& f = id.items();
    check(f[1].is(K::global), "storage type is ", f[1].describe(), ", not a global");
    const RawType type = storage_type(f[1].global_name());
    const std::string& key = f[2].as_string();
    const int64_t numel = f[4].as_int();
    check(numel >= 0, "storage '", key, "' has negative size ", numel);
    check(!legacy || f[5].is_none(), "storage '", key, "' is a view (legacy view_metadata), not supported");
    auto [it, inserted] = storage_index_.emplace(key, storages_.size());
    if (inserted) {
      storages_.push_back({key, type, numel, {}});
    } else {
      const StorageRef& known = storages_[it->second];
      check(known.type == type && known.numel == numel, "storage '", key, "' is declared twice differently");
    }
    return PickleValue::handle(static_cast<int64_t>(it->second));
  }

  uint64_t storage_bytes(const StorageRef& s) const {
    uint64_t n;
    if (__builtin_mul_overflow(static_cast<uint64_t>(s.numel), raw_type_size(s.type), &n)) {
      bad("storage '", s.key, "': size overflows");
    }
    return n;
  }

  // ---- zip ----
  PickleValue read_zip() {
    const ZipArchive zip(bytes_, what_);
    if (zip.entries().empty()) bad("the zip archive is empty");
    const std::string& first = zip.entries().front().name;
    const size_t slash = first.find('/');
    if (slash == std::string::npos) bad("entry '", first, "' is not inside a top folder (not a torch.save archive)");
    const std::string top = first.substr(0, slash + 1);
    const ZipEntry* pickle = zip.find(top + "data.pkl");
    if (pickle == nullptr) bad("no '", top, "data.pkl' in the archive (not a torch.save archive)");
    if (const ZipEntry* order = zip.find(top + "byteorder")) {
      const auto text = zip.data(*order);
      if (std::string(text.begin(), text.end()) != "little") bad("byteorder is not 'little' (big-endian data)");
    }
    PickleValue root = unpickle(zip.data(*pickle), options(top + "data.pkl", false));
    for (StorageRef& s : storages_) {
      const std::string name = top + "data/" + s.key;
      const ZipEntry* entry = zip.find(name);
      if (entry == nullptr) bad("storage '", s.key, "': no entry '", name, "'");
      s.data = zip.data(*entry);
      if (s.data.size() != storage_bytes(s)) {
        bad("storage '", name, "' holds ", s.data.size(), " bytes but ", s.numel, " ", raw_type_name(s.type),
            " elements need ", storage_bytes(s));
      }
    }
    return root;
  }

  // ---- legacy ----
  PickleValue read_legacy() {
    size_t at = 0;
    auto next = [&](const std::string& stream, bool with_storages) {
      PickleOptions o = options(stream, true);
      if (!with_storages) {
        o.globals.clear();
        o.persistent_load = nullptr;
      }
      UnpickledPrefix p = unpickle_prefix(bytes_.subspan(at), o);
      at += p.bytes_read;
      return p.value;
    };
    const PickleValue magic = next("the magic number", false);
    if (!magic.is(K::big_integer) ||
        magic.big_integer_bytes() != std::string(std::begin(kLegacyMagic), std::end(kLegacyMagic))) {
      bad("wrong magic number ", magic.describe(), " (not a legacy torch.save file)");
    }
    const PickleValue protocol = next("the protocol version", false);
    if (!protocol.is(K::integer) || protocol.as_int() != kLegacyProtocol) {
      bad("protocol version ", protocol.describe(), " is not ", kLegacyProtocol);
    }
    const PickleValue sys_info = next("sys_info", false);
    const PickleValue* little = sys_info.get("little_endian");
    if (little == nullptr || !little->is(K::boolean) || !little->as_bool()) {
      bad("sys_info does not say little_endian=True (big-endian data is not supported)");
    }
    PickleValue root = next("the object pickle", true);
    const PickleValue keys = next("the storage keys", false);
    if (!keys.is(K::list)) bad("the storage key list is ", keys.describe(), ", not a list");
    for (const PickleValue& key_value : keys.items()) {
      const std::string& key = key_value.as_string();
      auto it = storage_index_.find(key);
      if (it == storage_index_.end()) bad("stored storage '", key, "' is not referenced by the object pickle");
      StorageRef& s = storages_[it->second];
      if (bytes_.size() - at < 8) bad("truncated before the size of storage '", key, "'");
      uint64_t count = 0;
      for (int i = 7; i >= 0; --i) count = (count << 8) | bytes_[at + static_cast<size_t>(i)];
      at += 8;
      if (count != static_cast<uint64_t>(s.numel)) {
        bad("storage '", key, "' holds ", count, " elements but the pickle declared ", s.numel);
      }
      const uint64_t n = storage_bytes(s);
      if (bytes_.size() - at < n) {
        bad("truncated: storage '", key, "' needs ", n, " bytes but ", bytes_.size() - at, " remain");
      }
      s.data = bytes_.subspan(at, n);
      at += n;
    }
    for (const StorageRef& s : storages_) {
      if (s.data.data() == nullptr && s.numel > 0) bad("storage '", s.key, "' is referenced but not stored");
    }
    if (at != bytes_.size()) bad(bytes_.size() - at, " trailing bytes after the last storage");
    return root;
  }

  // ---- the state dict ----
  static bool is_tensor(const PickleValue& v) { return v.is(K::object) && v.object_global() == kRebuildTensor; }

  static bool is_state_dict(const PickleValue& v) {
    if (!v.is(K::dict) || v.entries().empty()) return false;
    for (const auto& [key, value] : v.entries()) {
      if (!key.is(K::string) || !is_tensor(value)) return false;
    }
    return true;
  }

  std::string describe_keys(const PickleValue& dict) const {
    std::string list;
    for (const auto& [key, value] : dict.entries()) {
      if (list.size() > 300) return list + ", ...";
      list += (list.empty() ? "" : ", ") +
              (key.is(K::string) || key.is(K::bytes) ? "'" + key.text() + "'" : key.describe());
      list += ": " + (is_tensor(value) ? std::string("tensor") : value.describe());
    }
    return list;
  }

  const PickleValue& find_state_dict(const PickleValue& v, const std::string& path, int depth,
                                     TorchCheckpoint& result) const {
    if (is_state_dict(v)) {
      result.location = path;
      return v;
    }
    const std::string where = path.empty() ? "the checkpoint" : "'" + path + "'";
    if (!v.is(K::dict)) bad(where, " holds ", v.describe(), ", not a state dict (a dict of tensors)");
    if (depth < kMaxWrapperDepth) {
      for (const char* key : kWrapperKeys) {
        const PickleValue* inner = v.get(key);
        if (inner == nullptr || !inner->is(K::dict)) continue;
        const std::string inner_path = path.empty() ? key : path + "." + key;
        std::string others;
        for (const auto& [k, value] : v.entries()) {
          if (!(k.is(K::string) && k.as_string() == key))
            others += (others.empty() ? "" : ", ") + (k.is(K::string) ? k.as_string() : k.describe());
        }
        result.notes.push_back("state dict taken from '" + inner_path + "'" +
                               (others.empty() ? "" : "; ignored the other entries: " + others));
        return find_state_dict(*inner, inner_path, depth + 1, result);
      }
    }
    bad(where,
        " is not a state dict (a dict whose values are all tensors) and has none of the keys 'teacher', "
        "'state_dict', 'model', 'student'; it holds {",
        describe_keys(v), "}");
  }

  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  Tensor tensor(const PickleValue& key, const PickleValue& value, std::map<RawType, int64_t>& widened) const {
    const std::string name = "tensor '" + key.as_string() + "'";
    const auto& args = value.object_args().items();
    if (args.size() != 6 && args.size() != 7)
      bad(name, ": _rebuild_tensor_v2 with ", args.size(), " arguments (expected 6 or 7)");
    if (!args[0].is(K::handle)) bad(name, ": the storage is ", args[0].describe(), ", not a persistent storage");
    const StorageRef& s = storages_.at(static_cast<size_t>(args[0].handle_id()));
    auto ints = [&](const PickleValue& tuple, const char* what) {
      if (!tuple.is(K::tuple)) bad(name, ": ", what, " is ", tuple.describe(), ", not a tuple");
      std::vector<int64_t> out;
      for (const PickleValue& v : tuple.items()) {
        if (!v.is(K::integer)) bad(name, ": ", what, " holds ", v.describe());
        out.push_back(v.as_int());
      }
      return out;
    };
    if (!args[1].is(K::integer)) bad(name, ": storage offset is ", args[1].describe());
    const Shape shape = ints(args[2], "size");
    const std::vector<int64_t> strides = ints(args[3], "stride");
    if (raw_type_size(s.type) != dtype_size(raw_type_engine_dtype(s.type)) || s.type == RawType::boolean) {
      ++widened[s.type];
    }
    return tensor_from_raw(s.data, s.type, shape, strides, args[1].as_int(),
                           "torch checkpoint: " + what_ + ": " + name + " (storage '" + s.key + "')");
  }
};

}  // namespace

bool looks_like_torch_checkpoint(std::span<const uint8_t> head) {
  return looks_like_zip(head) || CheckpointReader::is_legacy(head);
}

TorchCheckpoint read_torch_checkpoint(std::span<const uint8_t> bytes, const std::string& what) {
  return CheckpointReader(bytes, what).read();
}

TorchCheckpoint load_torch_checkpoint(const std::string& path) {
  const MappedFile file(path);
  return read_torch_checkpoint(file.bytes(), path);
}

}  // namespace mcdl
