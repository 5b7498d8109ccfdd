// A safe reader for Python pickles (protocols 2 to 5, the opcodes that torch.save, numpy and
// Python 2's cPickle emit). It never executes code: a GLOBAL is accepted only when the caller
// lists it, and "calling" it (REDUCE / NEWOBJ) either runs a callback the caller supplies or
// records the call as an inert Object value that the caller interprets afterwards.
//
// Used by the PyTorch checkpoint reader (io/torch_checkpoint.h) and by dataset readers
// (CIFAR's python batches; numpy arrays via io/numpy_pickle.h).
//
// Example: a CIFAR-10 batch (a Python 2 protocol 2 pickle of
//   {b'batch_label': b'...', b'labels': [6, 9, ...], b'data': <numpy uint8 [10000, 3072]>,
//    b'filenames': [...]})
//   PickleOptions options;
//   options.globals = numpy_array_globals();              // io/numpy_pickle.h
//   PickleValue batch = unpickle(file_bytes, options);
//   Tensor images = numpy_array_from_pickle(batch.at("data"));     // u8 [10000, 3072]
//   for (const PickleValue& label : batch.at("labels").items()) label.as_int();
//
// Opcodes: PROTO, FRAME, STOP, MARK, POP, POP_MARK, DUP, NONE, NEWTRUE, NEWFALSE, BININT,
// BININT1, BININT2, LONG1, BINFLOAT, BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, BINSTRING,
// SHORT_BINSTRING, BINBYTES, SHORT_BINBYTES, BINBYTES8, EMPTY_TUPLE, TUPLE, TUPLE1-3, EMPTY_LIST,
// LIST, APPEND(S), EMPTY_DICT, DICT, SETITEM(S), PUT, BINPUT, LONG_BINPUT, MEMOIZE, GET, BINGET,
// LONG_BINGET, GLOBAL, STACK_GLOBAL, REDUCE, NEWOBJ (treated as REDUCE), BUILD, BINPERSID. The
// protocol 0 text forms (INT, STRING, ...), sets, extension registry and out-of-band buffers
// are refused as unsupported opcodes.
//
// Values. Python 2 `str` (BINSTRING, SHORT_BINSTRING) and Python 3 `bytes` are both Kind::bytes,
// kept byte for byte: this is what pickle.load(f, encoding='bytes') gives, and what
// encoding='latin1' gives once re-encoded, with no lossy text conversion. Dict lookups by key
// (get / at) match a str or a bytes key with the same bytes, so batch.at("data") finds b'data'.
// Python str (BINUNICODE...) is Kind::string, its UTF-8 bytes.
//
// Lists, dicts and objects are shared (the memo and the stack refer to one value, as in Python).
// Recursive structures are refused: a container may not be modified after it has been stored
// inside another value, nor stored inside itself (no reference cycles, and nesting depth is
// bounded by PickleOptions::max_depth).
//
// Errors: every problem (truncated or malformed stream, a length past the end, an opcode
// outside the supported set, a global that is not allowed, too deep nesting, a memo miss)
// throws mcdl::Error starting "pickle: " + PickleOptions::what, naming the byte offset.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcdl {

class PickleValue;
struct PickleNode;

using PickleDictEntry = std::pair<PickleValue, PickleValue>;

class PickleValue {
 public:
  enum class Kind : uint8_t {
    none,
    boolean,
    integer,      // fits int64
    big_integer,  // LONG1 beyond int64: big_integer_bytes() = little-endian two's complement
    floating,
    string,  // Python str, UTF-8
    bytes,   // Python bytes or Python 2 str
    list,
    tuple,
    dict,    // insertion order kept (dict and collections.OrderedDict alike)
    global,  // a reference to an allowed global: global_name() = "module.name"
    object,  // an allowed global called without a callback: object_global(), object_args(),
             // plus the BUILD state (object_state(), none when BUILD never ran)
    handle,  // an opaque integer made by a caller's callback (e.g. a persistent-id index);
             // the stream itself cannot create one
  };

  PickleValue() = default;  // None
  static PickleValue none() { return {}; }
  static PickleValue boolean(bool value);
  static PickleValue integer(int64_t value);
  static PickleValue floating(double value);
  static PickleValue string(std::string text);
  static PickleValue bytes(std::string data);
  static PickleValue list(std::vector<PickleValue> items = {});
  static PickleValue tuple(std::vector<PickleValue> items = {});
  static PickleValue dict(std::vector<PickleDictEntry> entries = {});
  static PickleValue handle(int64_t id);

  Kind kind() const { return kind_; }
  const char* kind_name() const;
  bool is(Kind kind) const { return kind_ == kind; }
  bool is_none() const { return kind_ == Kind::none; }

  // Typed access: each throws "pickle: expected <kind>, got <kind>" on the wrong kind.
  bool as_bool() const;
  int64_t as_int() const;                // integer (or boolean, as Python's int(True))
  double as_float() const;               // floating or integer
  const std::string& as_string() const;  // Kind::string
  const std::string& as_bytes() const;   // Kind::bytes
  const std::string& text() const;       // the bytes of a string or a bytes value
  const std::string& big_integer_bytes() const;
  const std::vector<PickleValue>& items() const;        // list or tuple
  const std::vector<PickleDictEntry>& entries() const;  // dict
  const std::string& global_name() const;
  const std::string& object_global() const;
  const PickleValue& object_args() const;   // the argument tuple
  const PickleValue& object_state() const;  // none until BUILD
  const PickleValue& dict_state() const;    // a dict's BUILD state (e.g. a state dict's _metadata), or none
  int64_t handle_id() const;

  // Dict lookup by a str or bytes key with these bytes; nullptr when absent (or not a dict).
  const PickleValue* get(std::string_view key) const;
  // As get(), but a missing key throws naming it.
  const PickleValue& at(std::string_view key) const;

  // A short description for messages: "tuple of 6", "object torch._utils._rebuild_tensor_v2(...)",
  // "str 'cls_token'", "int 5".
  std::string describe() const;

 private:
  friend class PickleMachine;
  Kind kind_ = Kind::none;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::shared_ptr<PickleNode> node_;  // text, items, entries, object parts

  static PickleValue with_node(Kind kind);
};

// What REDUCE / NEWOBJ do with an allowed global: given the argument tuple, return the result.
// An empty function records the call as a Kind::object value.
using PickleCall = std::function<PickleValue(const PickleValue& args)>;
// Allowed globals by "module.name" (e.g. "collections.OrderedDict").
using PickleGlobals = std::map<std::string, PickleCall>;

struct PickleOptions {
  PickleGlobals globals;
  // BINPERSID: turns a persistent id into a value (torch: the storage tuple -> a handle).
  // Without it a persistent id is an error.
  std::function<PickleValue(const PickleValue& persistent_id)> persistent_load;
  std::string what = "stream";  // names the stream in messages ("data.pkl of x.pth")
  int64_t max_depth = 64;       // nesting depth of values and of MARKs
  int64_t max_stack = 1 << 20;  // values on the stack at once
};

// Ready-made calls.
// collections.OrderedDict(): an empty dict (or from a list of pairs, as OrderedDict([(k, v)])).
PickleValue pickle_call_make_dict(const PickleValue& args);
// _codecs.encode(text, 'latin1'): how Python 3 writes bytes under protocol 2 (numpy array data).
PickleValue pickle_call_codecs_encode(const PickleValue& args);
// builtins.bytes() / __builtin__.bytes(): Python 3's protocol 2 form of b''.
PickleValue pickle_call_empty_bytes(const PickleValue& args);

// Unpickles exactly one pickle that must fill `bytes` (trailing bytes are an error).
PickleValue unpickle(std::span<const uint8_t> bytes, const PickleOptions& options);
PickleValue unpickle(std::string_view bytes, const PickleOptions& options);

// Unpickles the pickle at the start of `bytes` and says where it ended (STOP + 1): for streams
// of consecutive pickles (the legacy torch.save format).
struct UnpickledPrefix {
  PickleValue value;
  size_t bytes_read = 0;
};
UnpickledPrefix unpickle_prefix(std::span<const uint8_t> bytes, const PickleOptions& options);

}  // namespace mcdl
