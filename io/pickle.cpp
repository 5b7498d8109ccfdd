#include "io/pickle.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

#include "engine/error.h"
#include "io/hex_bytes.h"
#include "io/pickle_node.h"

namespace mcdl {

// ---- the machine --------------------------------------------------------------------------

class PickleMachine {
 public:
  PickleMachine(std::span<const uint8_t> bytes, const PickleOptions& options) : in_(bytes), options_(options) {}

  UnpickledPrefix run() {
    while (true) {
      op_at_ = pos_;
      const uint8_t op = read_u8();
      if (op == '.') return {stop(), pos_};
      step(op);
    }
  }

 private:
  using K = PickleValue::Kind;

  std::span<const uint8_t> in_;
  const PickleOptions& options_;
  size_t pos_ = 0, op_at_ = 0;
  std::vector<PickleValue> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PickleValue> memo_;

  template <class... Parts>
  [[noreturn]] void bad(const Parts&... parts) const {
    fail("pickle: ", options_.what, ": byte ", op_at_, ": ", parts...);
  }

  // ---- input ----
  void need(uint64_t n, const char* what) const {
    if (n > in_.size() - pos_) {
      bad(what, " needs ", n, " bytes but only ", in_.size() - pos_, " remain (truncated stream?)");
    }
  }
  uint8_t read_u8() {
    need(1, "an opcode");
    return in_[pos_++];
  }
  uint64_t read_le(size_t n, const char* what) {
    need(n, what);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(in_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string read_text(uint64_t n, const char* what) {
    need(n, what);
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  // A newline-terminated line (GLOBAL, PUT, GET), at most 1024 bytes.
  std::string read_line(const char* what) {
    const size_t limit = std::min<size_t>(in_.size(), pos_ + 1024);
    for (size_t i = pos_; i < limit; ++i) {
      if (in_[i] == '\n') {
        std::string s(reinterpret_cast<const char*>(in_.data() + pos_), i - pos_);
        pos_ = i + 1;
        return s;
      }
    }
    if (limit == in_.size()) bad(what, ": the stream ends before the end of the line (truncated stream?)");
    bad(what, ": no end of line within ", limit - pos_, " bytes");
  }
  uint64_t read_decimal_line(const char* what) {
    const std::string line = read_line(what);
    if (line.empty() || line.size() > 18 ||
        !std::all_of(line.begin(), line.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      bad(what, ": '", line, "' is not a memo index");
    }
    return std::stoull(line);
  }

  // ---- stack ----
  void push(PickleValue v) {
    if (static_cast<int64_t>(stack_.size()) >= options_.max_stack) {
      bad("more than ", options_.max_stack, " values on the stack");
    }
    stack_.push_back(std::move(v));
  }
  PickleValue pop(const char* op) {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor)
      bad(op, " needs a value but the stack", marks_.empty() ? " is empty" : " ends at a MARK");
    PickleValue v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  PickleValue& top(const char* op) {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor)
      bad(op, " needs a value but the stack", marks_.empty() ? " is empty" : " ends at a MARK");
    return stack_.back();
  }
  // The values above the last MARK, removing them and the mark.
  std::vector<PickleValue> pop_mark(const char* op) {
    if (marks_.empty()) bad(op, " without a MARK");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<PickleValue> items(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(mark)),
                                   std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }

  // ---- containment ----
  // `child` becomes part of `parent`: it is sealed (never modified again), so no cycle can form,
  // and the parent's height grows with it, bounded by max_depth.
  void adopt(const PickleValue& parent, const PickleValue& child) {
    if (!child.node_) return;
    if (child.node_ == parent.node_) bad("a ", parent.kind_name(), " would contain itself (recursive structure)");
    child.node_->sealed = true;
    const int64_t height = std::max(parent.node_->height, child.node_->height + 1);
    if (height > options_.max_depth) bad("values nested deeper than ", options_.max_depth, " levels");
    parent.node_->height = height;
  }
  PickleNode& modifiable(const PickleValue& v, K kind, const char* op) {
    if (v.kind_ != kind) bad(op, " applies to a ", pickle_kind_label(kind), ", not to ", v.describe());
    if (v.node_->sealed) {
      bad(op, " modifies a ", v.kind_name(),
          " already stored inside another value (recursive structures are not supported)");
    }
    return *v.node_;
  }
  PickleValue make_sequence(K kind, std::vector<PickleValue> items) {
    PickleValue v = PickleValue::with_node(kind);
    for (const PickleValue& item : items) adopt(v, item);
    v.node_->items = std::move(items);
    return v;
  }
  void append(const PickleValue& list, std::vector<PickleValue> items, const char* op) {
    PickleNode& node = modifiable(list, K::list, op);
    for (PickleValue& item : items) {
      adopt(list, item);
      node.items.push_back(std::move(item));
    }
  }
  void set_items(const PickleValue& dict, std::vector<PickleValue> flat, const char* op) {
    PickleNode& node = modifiable(dict, K::dict, op);
    if (flat.size() % 2 != 0) bad(op, " with an odd number (", flat.size(), ") of keys and values");
    for (size_t i = 0; i < flat.size(); i += 2) {
      const PickleValue& key = flat[i];
      if (key.kind_ != K::string && key.kind_ != K::bytes && key.kind_ != K::integer) {
        bad(op, ": dict key ", key.describe(), " is not a str, bytes or int");
      }
      adopt(dict, key);
      adopt(dict, flat[i + 1]);
      if (node.entry_index.size() != node.entries.size()) {
        node.entry_index.clear();
        for (size_t e = 0; e < node.entries.size(); ++e) node.entry_index.emplace(dict_key_text(node.entries[e].first), e);
      }
      // A repeated key replaces the value, as in Python.
      const auto [at, added] = node.entry_index.emplace(dict_key_text(key), node.entries.size());
      if (added) node.entries.emplace_back(std::move(flat[i]), std::move(flat[i + 1]));
      else node.entries[at->second].second = std::move(flat[i + 1]);
    }
  }
  // A dict key as one string that tells the kinds apart ('s'tr, 'b'ytes, 'i'nt).
  static std::string dict_key_text(const PickleValue& key) {
    if (key.kind_ == K::integer) return "i" + std::to_string(key.int_);
    return (key.kind_ == K::string ? "s" : "b") + key.node_->text;
  }

  // ---- globals and calls ----
  PickleValue global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    if (options_.globals.find(full) == options_.globals.end()) {
      bad("global '", full, "' is not allowed (this reader never runs code; allowed: ", allowed_list(), ")");
    }
    PickleValue v = PickleValue::with_node(K::global);
    v.node_->text = full;
    return v;
  }
  std::string allowed_list() const {
    std::string list;
    for (const auto& entry : options_.globals) list += (list.empty() ? "" : ", ") + entry.first;
    return list.empty() ? "none" : list;
  }
  void call(const char* op) {
    PickleValue args = pop(op);
    PickleValue callable = pop(op);
    if (callable.kind_ != K::global) bad(op, " calls ", callable.describe(), ", not an allowed global");
    if (args.kind_ != K::tuple) bad(op, " of ", callable.global_name(), " with ", args.describe(), ", not a tuple");
    const PickleCall& fn = options_.globals.at(callable.global_name());
    if (fn) {
      try {
        push(fn(args));
      } catch (const Error& e) {
        bad(callable.global_name(), ": ", e.what());
      }
      return;
    }
    PickleValue object = PickleValue::with_node(K::object);
    object.node_->text = callable.global_name();
    adopt(object, args);
    object.node_->args = std::move(args);
    push(std::move(object));
  }
  void build() {
    PickleValue state = pop("BUILD");
    const PickleValue& target = top("BUILD");
    if (target.kind_ != K::object && target.kind_ != K::dict) {
      bad("BUILD sets the state of ", target.describe(), " (only objects and dicts take one)");
    }
    PickleNode& node = modifiable(target, target.kind_, "BUILD");
    if (!node.state.is_none()) bad("BUILD applied twice to ", target.describe());
    adopt(target, state);
    node.state = std::move(state);
  }

  // ---- memo ----
  void put(uint64_t index) { memo_[index] = top("PUT"); }
  void get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) bad("memo index ", index, " was never stored");
    push(it->second);
  }

  // ---- ints ----
  PickleValue long1() {
    const size_t n = read_u8();
    need(n, "LONG1");
    const uint8_t* p = in_.data() + pos_;
    pos_ += n;
    if (n == 0) return PickleValue::integer(0);
    const bool negative = (p[n - 1] & 0x80) != 0;
    // Fits int64 when every byte above the eighth is pure sign extension of byte 8.
    bool fits = true;
    for (size_t i = 8; i < n; ++i) fits = fits && p[i] == (negative ? 0xff : 0x00);
    if (n > 8) fits = fits && ((p[7] & 0x80) != 0) == negative;
    if (!fits) {
      PickleValue v = PickleValue::with_node(K::big_integer);
      v.node_->text.assign(reinterpret_cast<const char*>(p), n);
      return v;
    }
    uint64_t u = negative ? ~uint64_t{0} : 0;
    for (size_t i = 0; i < std::min<size_t>(n, 8); ++i) {
      u &= ~(uint64_t{0xff} << (8 * i));
      u |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
    return PickleValue::integer(static_cast<int64_t>(u));
  }

  PickleValue stop() {
    if (!marks_.empty()) bad("STOP with ", marks_.size(), " unclosed MARK(s)");
    if (stack_.size() != 1) bad("STOP with ", stack_.size(), " values on the stack (expected 1)");
    return std::move(stack_.back());
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        const uint8_t version = read_u8();
        if (version > 5) bad("protocol ", int{version}, " is newer than this reader (at most 5)");
        break;
      }
      case 0x95: {  // FRAME: a length prefix for buffering; the reader needs none
        const uint64_t length = read_le(8, "FRAME");
        need(length, "FRAME");
        break;
      }
      case '(':  // MARK
        if (static_cast<int64_t>(marks_.size()) >= options_.max_depth) {
          bad("MARKs nested deeper than ", options_.max_depth, " levels");
        }
        marks_.push_back(stack_.size());
        break;
      case '0':
        pop("POP");
        break;
      case '1':
        pop_mark("POP_MARK");
        break;
      case '2':
        push(top("DUP"));
        break;
      case 'N':
        push(PickleValue::none());
        break;
      case 0x88:
        push(PickleValue::boolean(true));
        break;  // NEWTRUE
      case 0x89:
        push(PickleValue::boolean(false));
        break;  // NEWFALSE
      case 'J':
        push(PickleValue::integer(static_cast<int32_t>(read_le(4, "BININT"))));
        break;
      case 'K':
        push(PickleValue::integer(static_cast<int64_t>(read_le(1, "BININT1"))));
        break;
      case 'M':
        push(PickleValue::integer(static_cast<int64_t>(read_le(2, "BININT2"))));
        break;
      case 0x8a:
        push(long1());
        break;     // LONG1
      case 'G': {  // BINFLOAT: big-endian IEEE double
        need(8, "BINFLOAT");
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | in_[pos_ + static_cast<size_t>(i)];
        pos_ += 8;
        push(PickleValue::floating(std::bit_cast<double>(bits)));
        break;
      }
      case 'X':
        push(PickleValue::string(read_text(read_le(4, "BINUNICODE"), "BINUNICODE")));
        break;
      case 0x8c:
        push(PickleValue::string(read_text(read_le(1, "SHORT_BINUNICODE"), "SHORT_BINUNICODE")));
        break;
      case 0x8d:
        push(PickleValue::string(read_text(read_le(8, "BINUNICODE8"), "BINUNICODE8")));
        break;
      case 'T': {  // BINSTRING: a Python 2 str, signed 32-bit length
        const int32_t length = static_cast<int32_t>(read_le(4, "BINSTRING"));
        if (length < 0) bad("BINSTRING with negative length ", length);
        push(PickleValue::bytes(read_text(static_cast<uint64_t>(length), "BINSTRING")));
        break;
      }
      case 'U':
        push(PickleValue::bytes(read_text(read_le(1, "SHORT_BINSTRING"), "SHORT_BINSTRING")));
        break;
      case 'C':
        push(PickleValue::bytes(read_text(read_le(1, "SHORT_BINBYTES"), "SHORT_BINBYTES")));
        break;
      case 'B':
        push(PickleValue::bytes(read_text(read_le(4, "BINBYTES"), "BINBYTES")));
        break;
      case 0x8e:
        push(PickleValue::bytes(read_text(read_le(8, "BINBYTES8"), "BINBYTES8")));
        break;
      case ')':
        push(PickleValue::tuple());
        break;    // EMPTY_TUPLE
      case 0x85:  // TUPLE1..3
      case 0x86:
      case 0x87: {
        const size_t n = op - 0x84u;
        std::vector<PickleValue> items(n);
        for (size_t i = n; i-- > 0;) items[i] = pop("TUPLEn");
        push(make_sequence(K::tuple, std::move(items)));
        break;
      }
      case 't':
        push(make_sequence(K::tuple, pop_mark("TUPLE")));
        break;
      case ']':
        push(PickleValue::with_node(K::list));
        break;  // EMPTY_LIST
      case 'l':
        push(make_sequence(K::list, pop_mark("LIST")));
        break;
      case '}':
        push(PickleValue::with_node(K::dict));
        break;     // EMPTY_DICT
      case 'd': {  // DICT
        std::vector<PickleValue> flat = pop_mark("DICT");
        PickleValue dict = PickleValue::with_node(K::dict);
        set_items(dict, std::move(flat), "DICT");
        push(std::move(dict));
        break;
      }
      case 'a': {  // APPEND
        PickleValue item = pop("APPEND");
        std::vector<PickleValue> one;
        one.push_back(std::move(item));
        append(top("APPEND"), std::move(one), "APPEND");
        break;
      }
      case 'e': {  // APPENDS
        std::vector<PickleValue> items = pop_mark("APPENDS");
        append(top("APPENDS"), std::move(items), "APPENDS");
        break;
      }
      case 's': {  // SETITEM
        PickleValue value = pop("SETITEM");
        PickleValue key = pop("SETITEM");
        std::vector<PickleValue> flat;
        flat.push_back(std::move(key));
        flat.push_back(std::move(value));
        set_items(top("SETITEM"), std::move(flat), "SETITEM");
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<PickleValue> flat = pop_mark("SETITEMS");
        set_items(top("SETITEMS"), std::move(flat), "SETITEMS");
        break;
      }
      case 'q':
        put(read_le(1, "BINPUT"));
        break;
      case 'r':
        put(read_le(4, "LONG_BINPUT"));
        break;
      case 'p':
        put(read_decimal_line("PUT"));
        break;
      case 0x94:
        put(memo_.size());
        break;  // MEMOIZE
      case 'h':
        get(read_le(1, "BINGET"));
        break;
      case 'j':
        get(read_le(4, "LONG_BINGET"));
        break;
      case 'g':
        get(read_decimal_line("GET"));
        break;
      case 'c': {  // GLOBAL "module\nname\n"
        const std::string module = read_line("GLOBAL module");
        const std::string name = read_line("GLOBAL name");
        push(global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        PickleValue name = pop("STACK_GLOBAL");
        PickleValue module = pop("STACK_GLOBAL");
        if (name.kind_ != K::string || module.kind_ != K::string) {
          bad("STACK_GLOBAL needs two str, got ", module.describe(), " and ", name.describe());
        }
        push(global(module.as_string(), name.as_string()));
        break;
      }
      case 'R':
        call("REDUCE");
        break;
      case 0x81:
        call("NEWOBJ");
        break;
      case 'b':
        build();
        break;
      case 'Q': {  // BINPERSID
        PickleValue id = pop("BINPERSID");
        if (!options_.persistent_load) bad("a persistent id (", id.describe(), ") but this stream allows none");
        try {
          push(options_.persistent_load(id));
        } catch (const Error& e) {
          bad("persistent id: ", e.what());
        }
        break;
      }
      default:
        bad("opcode 0x", hex_bytes({&op, 1}), " is not supported by this reader");
    }
  }

};

UnpickledPrefix unpickle_prefix(std::span<const uint8_t> bytes, const PickleOptions& options) {
  return PickleMachine(bytes, options).run();
}

PickleValue unpickle(std::span<const uint8_t> bytes, const PickleOptions& options) {
  UnpickledPrefix result = unpickle_prefix(bytes, options);
  check(result.bytes_read == bytes.size(), "pickle: ", options.what, ": ", bytes.size() - result.bytes_read,
        " trailing bytes after STOP at byte ", result.bytes_read - 1);
  return std::move(result.value);
}

PickleValue unpickle(std::string_view bytes, const PickleOptions& options) {
  return unpickle(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), options);
}

}  // namespace mcdl
