// PickleValue (io/pickle.h): construction, typed access, lookup and description of the values
// an unpickling produces, and the ready-made calls for allowed globals.
#include <algorithm>
#include <sstream>

#include "engine/error.h"
#include "io/pickle.h"
#include "io/pickle_node.h"

namespace mcdl {

const char* pickle_kind_label(PickleValue::Kind kind) {
  using K = PickleValue::Kind;
  switch (kind) {
    case K::none:
      return "None";
    case K::boolean:
      return "bool";
    case K::integer:
      return "int";
    case K::big_integer:
      return "int (beyond 64 bits)";
    case K::floating:
      return "float";
    case K::string:
      return "str";
    case K::bytes:
      return "bytes";
    case K::list:
      return "list";
    case K::tuple:
      return "tuple";
    case K::dict:
      return "dict";
    case K::global:
      return "global";
    case K::object:
      return "object";
    case K::handle:
      return "handle";
  }
  return "?";
}

namespace {

bool has_children(PickleValue::Kind kind) {
  using K = PickleValue::Kind;
  return kind == K::list || kind == K::tuple || kind == K::dict || kind == K::object;
}

}  // namespace

// ---- PickleValue ------------------------------------------------------------------------

PickleValue PickleValue::with_node(Kind kind) {
  PickleValue v;
  v.kind_ = kind;
  v.node_ = std::make_shared<PickleNode>();
  if (has_children(kind)) v.node_->height = 1;
  return v;
}

PickleValue PickleValue::boolean(bool value) {
  PickleValue v;
  v.kind_ = Kind::boolean;
  v.bool_ = value;
  return v;
}

PickleValue PickleValue::integer(int64_t value) {
  PickleValue v;
  v.kind_ = Kind::integer;
  v.int_ = value;
  return v;
}

PickleValue PickleValue::floating(double value) {
  PickleValue v;
  v.kind_ = Kind::floating;
  v.float_ = value;
  return v;
}

PickleValue PickleValue::string(std::string text) {
  PickleValue v = with_node(Kind::string);
  v.node_->text = std::move(text);
  return v;
}

PickleValue PickleValue::bytes(std::string data) {
  PickleValue v = with_node(Kind::bytes);
  v.node_->text = std::move(data);
  return v;
}

PickleValue PickleValue::handle(int64_t id) {
  PickleValue v;
  v.kind_ = Kind::handle;
  v.int_ = id;
  return v;
}

// Values built by the API (not the stream) are trusted to be acyclic: a fresh container cannot
// contain itself. Their children are sealed like the stream's.
PickleValue PickleValue::list(std::vector<PickleValue> items) {
  PickleValue v = with_node(Kind::list);
  for (const PickleValue& item : items) {
    if (item.node_) {
      item.node_->sealed = true;
      v.node_->height = std::max(v.node_->height, item.node_->height + 1);
    }
  }
  v.node_->items = std::move(items);
  return v;
}

PickleValue PickleValue::tuple(std::vector<PickleValue> items) {
  PickleValue v = list(std::move(items));
  v.kind_ = Kind::tuple;
  return v;
}

PickleValue PickleValue::dict(std::vector<PickleDictEntry> entries) {
  PickleValue v = with_node(Kind::dict);
  for (const auto& [key, value] : entries) {
    for (const PickleValue* part : {&key, &value}) {
      if (part->node_) {
        part->node_->sealed = true;
        v.node_->height = std::max(v.node_->height, part->node_->height + 1);
      }
    }
  }
  v.node_->entries = std::move(entries);
  return v;
}

const char* PickleValue::kind_name() const { return pickle_kind_label(kind_); }

namespace {
[[noreturn]] void wrong_kind(const PickleValue& value, const char* expected) {
  fail("pickle: expected ", expected, ", got ", value.describe());
}
}  // namespace

bool PickleValue::as_bool() const {
  if (kind_ != Kind::boolean) wrong_kind(*this, "bool");
  return bool_;
}

int64_t PickleValue::as_int() const {
  if (kind_ == Kind::boolean) return bool_ ? 1 : 0;
  if (kind_ != Kind::integer) wrong_kind(*this, "int");
  return int_;
}

double PickleValue::as_float() const {
  if (kind_ == Kind::integer) return static_cast<double>(int_);
  if (kind_ != Kind::floating) wrong_kind(*this, "float");
  return float_;
}

const std::string& PickleValue::as_string() const {
  if (kind_ != Kind::string) wrong_kind(*this, "str");
  return node_->text;
}

const std::string& PickleValue::as_bytes() const {
  if (kind_ != Kind::bytes) wrong_kind(*this, "bytes");
  return node_->text;
}

const std::string& PickleValue::text() const {
  if (kind_ != Kind::string && kind_ != Kind::bytes) wrong_kind(*this, "str or bytes");
  return node_->text;
}

const std::string& PickleValue::big_integer_bytes() const {
  if (kind_ != Kind::big_integer) wrong_kind(*this, "int beyond 64 bits");
  return node_->text;
}

const std::vector<PickleValue>& PickleValue::items() const {
  if (kind_ != Kind::list && kind_ != Kind::tuple) wrong_kind(*this, "list or tuple");
  return node_->items;
}

const std::vector<PickleDictEntry>& PickleValue::entries() const {
  if (kind_ != Kind::dict) wrong_kind(*this, "dict");
  return node_->entries;
}

const std::string& PickleValue::global_name() const {
  if (kind_ != Kind::global) wrong_kind(*this, "global");
  return node_->text;
}

const std::string& PickleValue::object_global() const {
  if (kind_ != Kind::object) wrong_kind(*this, "object");
  return node_->text;
}

const PickleValue& PickleValue::object_args() const {
  if (kind_ != Kind::object) wrong_kind(*this, "object");
  return node_->args;
}

const PickleValue& PickleValue::object_state() const {
  if (kind_ != Kind::object) wrong_kind(*this, "object");
  return node_->state;
}

const PickleValue& PickleValue::dict_state() const {
  if (kind_ != Kind::dict) wrong_kind(*this, "dict");
  return node_->state;
}

int64_t PickleValue::handle_id() const {
  if (kind_ != Kind::handle) wrong_kind(*this, "handle");
  return int_;
}

const PickleValue* PickleValue::get(std::string_view key) const {
  if (kind_ != Kind::dict) return nullptr;
  for (const auto& [k, v] : node_->entries) {
    if ((k.kind_ == Kind::string || k.kind_ == Kind::bytes) && k.node_->text == key) return &v;
  }
  return nullptr;
}

const PickleValue& PickleValue::at(std::string_view key) const {
  if (kind_ != Kind::dict) wrong_kind(*this, "dict");
  const PickleValue* value = get(key);
  if (value == nullptr) fail("pickle: dict has no key '", key, "'");
  return *value;
}

std::string PickleValue::describe() const {
  std::ostringstream os;
  switch (kind_) {
    case Kind::none:
      os << "None";
      break;
    case Kind::boolean:
      os << (bool_ ? "True" : "False");
      break;
    case Kind::integer:
      os << "int " << int_;
      break;
    case Kind::floating:
      os << "float " << float_;
      break;
    case Kind::string:
    case Kind::bytes: {
      const std::string& t = node_->text;
      os << kind_name() << " '" << t.substr(0, 40) << (t.size() > 40 ? "...'" : "'");
      break;
    }
    case Kind::list:
    case Kind::tuple:
      os << kind_name() << " of " << node_->items.size();
      break;
    case Kind::dict:
      os << "dict of " << node_->entries.size();
      break;
    case Kind::global:
      os << "global " << node_->text;
      break;
    case Kind::object:
      os << "object " << node_->text << "(...)";
      break;
    case Kind::big_integer:
    case Kind::handle:
      os << kind_name();
      break;
  }
  return os.str();
}

// ---- ready-made calls -----------------------------------------------------------------

PickleValue pickle_call_make_dict(const PickleValue& args) {
  const auto& a = args.items();
  if (a.empty()) return PickleValue::dict();
  check(a.size() == 1 && a[0].is(PickleValue::Kind::list), "OrderedDict: expected () or ([pairs],), got ", a.size(),
        " arguments");
  std::vector<PickleDictEntry> entries;
  for (const PickleValue& pair : a[0].items()) {
    check(pair.is(PickleValue::Kind::tuple) && pair.items().size() == 2, "OrderedDict: an item is ", pair.describe(),
          ", not a (key, value) pair");
    entries.emplace_back(pair.items()[0], pair.items()[1]);
  }
  return PickleValue::dict(std::move(entries));
}

PickleValue pickle_call_codecs_encode(const PickleValue& args) {
  const auto& a = args.items();
  check(a.size() == 2 && a[0].is(PickleValue::Kind::string) && a[1].is(PickleValue::Kind::string),
        "_codecs.encode: expected (str, encoding)");
  check(a[1].as_string() == "latin1" || a[1].as_string() == "latin-1", "_codecs.encode: encoding '", a[1].as_string(),
        "' is not supported (only latin1)");
  // UTF-8 -> latin1: every code point must be below 256, i.e. one or two UTF-8 bytes.
  const std::string& text = a[0].as_string();
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      const bool two_byte =
          (c == 0xc2 || c == 0xc3) && i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xc0) == 0x80;
      check(two_byte, "_codecs.encode: text is not latin1-encodable at byte ", i);
      out.push_back(static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3f)));
      ++i;
    }
  }
  return PickleValue::bytes(std::move(out));
}

PickleValue pickle_call_empty_bytes(const PickleValue& args) {
  check(args.items().empty(), "bytes: expected no arguments, got ", args.items().size());
  return PickleValue::bytes("");
}

}  // namespace mcdl
