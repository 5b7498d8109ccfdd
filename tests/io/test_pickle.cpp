// The safe unpickler (io/pickle.h) and numpy arrays in pickles (io/numpy_pickle.h).
// Streams marked "pickle.dumps" are Python 3.11's output, pasted as bytes; the numpy fixtures come
// from tools/make_checkpoint_fixtures.py (numpy_py2.pkl imitates Python 2's cPickle and is checked
// there against pickle.load).
#include <doctest/doctest.h>

#include <filesystem>
#include <random>

#include "io/numpy_pickle.h"
#include "io/pickle.h"
#include "tests/io/checkpoint_builders.h"

using namespace mcdl;
using namespace mcdl::testing;
using namespace std::string_literals;
using K = PickleValue::Kind;

namespace {

// pickle.dumps({'a': [1, -2, 3.5, None, True, False], 'b': ('z', 300, 70000, -70000, -1.25e-3),
//               'n': 2**40, 'neg': -2**63, 'big': 2**70, 5: 'int key'}, protocol=2)
const std::string kScalars =
    "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71\x02\x28\x4b\x01\x4a\xfe\xff\xff\xff\x47\x40\x0c"
    "\x00\x00\x00\x00\x00\x00\x4e\x88\x89\x65\x58\x01\x00\x00\x00\x62\x71\x03\x28\x58\x01\x00\x00\x00\x7a\x71\x04\x4d"
    "\x2c\x01\x4a\x70\x11\x01\x00\x4a\x90\xee\xfe\xff\x47\xbf\x54\x7a\xe1\x47\xae\x14\x7b\x74\x71\x05\x58\x01\x00\x00"
    "\x00\x6e\x71\x06\x8a\x06\x00\x00\x00\x00\x00\x01\x58\x03\x00\x00\x00\x6e\x65\x67\x71\x07\x8a\x08\x00\x00\x00\x00"
    "\x00\x00\x00\x80\x58\x03\x00\x00\x00\x62\x69\x67\x71\x08\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40\x4b\x05\x58"
    "\x07\x00\x00\x00\x69\x6e\x74\x20\x6b\x65\x79\x71\x09\x75\x2e"s;

// x = [1]; pickle.dumps({'bytes': b'\x00\xff', 'list': [x, x], 'u': 'h\u00e9llo'}, protocol=4)
const std::string kProtocol4 =
    "\x80\x04\x95\x31\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x05\x62\x79\x74\x65\x73\x94\x43\x02\x00\xff\x94\x8c"
    "\x04\x6c\x69\x73\x74\x94\x5d\x94\x28\x5d\x94\x4b\x01\x61\x68\x05\x65\x8c\x01\x75\x94\x8c\x06\x68\xc3\xa9\x6c\x6c"
    "\x6f\x94\x75\x2e"s;

// pickle.dumps(collections.OrderedDict([('k', 1)]), protocol=2)
const std::string kOrderedDict =
    "\x80\x02\x63\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73\x0a\x4f\x72\x64\x65\x72\x65\x64\x44\x69\x63\x74\x0a\x71"
    "\x00\x29\x52\x71\x01\x58\x01\x00\x00\x00\x6b\x71\x02\x4b\x01\x73\x2e"s;

PickleValue load(const std::string& bytes, const PickleOptions& options = {}) { return unpickle(bytes, options); }

std::string fixture(const std::string& name) {
  namespace fs = std::filesystem;
  return (fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "checkpoints" / name).string();
}

PickleOptions numpy_options() {
  PickleOptions options;
  options.globals = numpy_array_globals();
  return options;
}

}  // namespace

TEST_CASE("pickle: scalars, containers and integers of every width (protocol 2)") {
  const PickleValue v = load(kScalars);
  REQUIRE(v.is(K::dict));
  CHECK(v.entries().size() == 6);
  const auto& a = v.at("a").items();
  REQUIRE(a.size() == 6);
  CHECK(v.at("a").is(K::list));
  CHECK(a[0].as_int() == 1);
  CHECK(a[1].as_int() == -2);
  CHECK(a[2].as_float() == 3.5);
  CHECK(a[3].is_none());
  CHECK(a[4].as_bool());
  CHECK_FALSE(a[5].as_bool());
  const PickleValue& b = v.at("b");
  CHECK(b.is(K::tuple));
  CHECK(b.items()[0].as_string() == "z");
  CHECK(b.items()[1].as_int() == 300);
  CHECK(b.items()[2].as_int() == 70000);
  CHECK(b.items()[3].as_int() == -70000);
  CHECK(b.items()[4].as_float() == -1.25e-3);
  CHECK(v.at("n").as_int() == (int64_t{1} << 40));
  CHECK(v.at("neg").as_int() == INT64_MIN);
  CHECK(v.at("big").is(K::big_integer));
  CHECK(v.at("big").big_integer_bytes() == "\0\0\0\0\0\0\0\0\x40"s);
  CHECK(v.entries().back().first.as_int() == 5);
  CHECK(v.entries().back().second.as_string() == "int key");
  CHECK(v.get("missing") == nullptr);
  CHECK_THROWS_WITH(v.at("missing"), doctest::Contains("dict has no key 'missing'"));
  CHECK_THROWS_WITH(v.at("a").as_int(), doctest::Contains("expected int, got list of 6"));
}

TEST_CASE("pickle: protocol 4 (FRAME, MEMOIZE, SHORT_BINUNICODE, SHORT_BINBYTES) and shared values") {
  const PickleValue v = load(kProtocol4);
  CHECK(v.at("bytes").as_bytes() == "\x00\xff"s);
  CHECK(v.at("u").as_string() == "h\xc3\xa9llo");
  const auto& list = v.at("list").items();
  REQUIRE(list.size() == 2);
  CHECK(list[0].items().at(0).as_int() == 1);
  CHECK(&list[0].items() == &list[1].items());  // the memo hands out the same list, as in Python
}

TEST_CASE("pickle: globals are refused unless allowed; allowed ones are called or recorded") {
  CHECK_THROWS_WITH(load(kOrderedDict), doctest::Contains("global 'collections.OrderedDict' is not allowed"));

  PickleOptions as_dict;
  as_dict.globals = {{"collections.OrderedDict", pickle_call_make_dict}};
  const PickleValue d = load(kOrderedDict, as_dict);
  REQUIRE(d.is(K::dict));
  CHECK(d.at("k").as_int() == 1);

  // Without a call the global is only recorded, never run: an object, not a dict.
  PickleOptions as_record;
  as_record.globals = {{"collections.OrderedDict", {}}};
  const PickleValue r = load(kOrderedDict.substr(0, 33) + ".", as_record);  // up to REDUCE, BINPUT
  REQUIRE(r.is(K::object));
  CHECK(r.object_global() == "collections.OrderedDict");
  CHECK(r.object_args().items().empty());
  CHECK_THROWS_WITH(
      load(kOrderedDict, as_record),
      doctest::Contains("byte 43: SETITEM applies to a dict, not to object collections.OrderedDict(...)"));
}

TEST_CASE("pickle: a stream naming os.system is refused before anything runs") {
  // GLOBAL 'os system'; ('echo pwned',); REDUCE, as a malicious pickle does.
  const std::string attack =
      "\x80\x02"
      "cos\nsystem\n"
      "X\x0a\x00\x00\x00"
      "echo pwned"
      "\x85R."s;
  CHECK_THROWS_WITH(load(attack), doctest::Contains("pickle: stream: byte 2: global 'os.system' is not allowed"));
  PickleOptions options = numpy_options();
  CHECK_THROWS_WITH(unpickle(attack, options), doctest::Contains("global 'os.system' is not allowed"));
  // The same through STACK_GLOBAL (protocol 4).
  const std::string stacked = "\x80\x04\x8c\x05posix\x8c\x06system\x93\x8c\x02ls\x85R."s;
  CHECK_THROWS_WITH(load(stacked), doctest::Contains("global 'posix.system' is not allowed"));
}

TEST_CASE("pickle: persistent ids go through the caller's callback and become handles") {
  const std::string stream = "\x80\x02(X\x01\x00\x00\x00kK\x07tQ."s;  // BINPERSID ('k', 7)
  CHECK_THROWS_WITH(load(stream), doctest::Contains("persistent id (tuple of 2) but this stream allows none"));
  PickleOptions options;
  options.persistent_load = [](const PickleValue& id) {
    CHECK(id.items()[0].as_string() == "k");
    return PickleValue::handle(id.items()[1].as_int() * 10);
  };
  CHECK(load(stream, options).handle_id() == 70);
}

TEST_CASE("pickle: every truncation of a valid stream is an error, never a crash") {
  for (const std::string* stream : {&kScalars, &kProtocol4}) {
    for (size_t n = 0; n < stream->size(); ++n) {
      INFO("prefix of ", n, " bytes");
      CHECK_THROWS_AS(load(stream->substr(0, n)), Error);
    }
  }
  CHECK_THROWS_WITH(load(kScalars.substr(0, 40)), doctest::Contains("truncated stream"));
}

TEST_CASE("pickle: malformed streams name the problem and the byte") {
  CHECK_THROWS_WITH(load("\x80\x02X\xff\xff\xff\xff"s),
                    doctest::Contains("BINUNICODE needs 4294967295 bytes but only 0 remain"));
  CHECK_THROWS_WITH(load("\x80\x02T\xff\xff\xff\xff."s), doctest::Contains("BINSTRING with negative length -1"));
  CHECK_THROWS_WITH(load("\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\xff."s), doctest::Contains("BINUNICODE8 needs"));
  CHECK_THROWS_WITH(load("\x80\x02\x95\x00\x10\x00\x00\x00\x00\x00\x00N."s),
                    doctest::Contains("FRAME needs 4096 bytes"));
  CHECK_THROWS_WITH(load("\x80\x02j\x05\x00\x00\x00."s), doctest::Contains("byte 2: memo index 5 was never stored"));
  CHECK_THROWS_WITH(load("\x80\x02."s), doctest::Contains("STOP with 0 values on the stack"));
  CHECK_THROWS_WITH(load("\x80\x02NN."s), doctest::Contains("STOP with 2 values on the stack"));
  CHECK_THROWS_WITH(load("\x80\x02(N."s), doctest::Contains("STOP with 1 unclosed MARK"));
  CHECK_THROWS_WITH(load("\x80\x02N.N"s), doctest::Contains("1 trailing bytes after STOP"));
  CHECK_THROWS_WITH(load("\x80\x02\x8b\x01\x00\x00\x00\x01."s), doctest::Contains("opcode 0x8b is not supported"));
  CHECK_THROWS_WITH(load("\x80\x06N."s), doctest::Contains("protocol 6 is newer"));
  CHECK_THROWS_WITH(load("\x80\x02N)R."s), doctest::Contains("REDUCE calls None, not an allowed global"));
  CHECK_THROWS_WITH(load("\x80\x02NK\x01"
                         "a."s),
                    doctest::Contains("APPEND applies to a list, not to None"));
  CHECK_THROWS_WITH(load("\x80\x02}K\x01s."s), doctest::Contains("SETITEM needs a value but the stack is empty"));
  CHECK_THROWS_WITH(load("\x80\x02](a."s), doctest::Contains("APPEND needs a value but the stack ends at a MARK"));
  CHECK_THROWS_WITH(load("\x80\x02}(K\x01u."s), doctest::Contains("SETITEMS with an odd number (1)"));
  CHECK_THROWS_WITH(load("\x80\x02}(]K\x01u."s), doctest::Contains("dict key list of 0 is not a str, bytes or int"));
  CHECK_THROWS_WITH(load("\x80\x02"
                         "cos\nsys"s),
                    doctest::Contains("GLOBAL name: the stream ends before the end of the line"));
  CHECK_THROWS_WITH(load("\x80\x02"
                         "c" +
                         std::string(2000, 'x')),
                    doctest::Contains("GLOBAL module: no end of line within 1024 bytes"));
}

TEST_CASE("pickle: recursive structures and deep nesting are refused") {
  // l = []; l.append(l)
  CHECK_THROWS_WITH(load("\x80\x02]q\x00h\x00"
                         "a."s),
                    doctest::Contains("a list would contain itself"));
  // a = []; b = [a]; a.append(b): a is already inside b, so it can no longer change.
  CHECK_THROWS_WITH(load("\x80\x02]q\x00]h\x00"
                         "aa."s),
                    doctest::Contains("modifies a list already stored inside another value"));

  std::string nested = "\x80\x02"s;
  for (int i = 0; i < 100; ++i) nested += "]";
  for (int i = 0; i < 99; ++i) nested += "a";
  nested += ".";
  CHECK_THROWS_WITH(load(nested), doctest::Contains("nested deeper than 64 levels"));
  CHECK_THROWS_WITH(load("\x80\x02" + std::string(100, '(')), doctest::Contains("MARKs nested deeper than 64"));

  PickleOptions small;
  small.max_stack = 3;
  CHECK_THROWS_WITH(load("\x80\x02NNNN"s, small), doctest::Contains("more than 3 values on the stack"));
  // At the limit it works.
  std::string deep = "\x80\x02"s;
  for (int i = 0; i < 63; ++i) deep += "]";
  for (int i = 0; i < 62; ++i) deep += "a";
  CHECK(load(deep + ".").items().size() == 1);
}

TEST_CASE("pickle: ready-made calls") {
  const PickleValue latin1 = pickle_call_codecs_encode(
      PickleValue::tuple({PickleValue::string("a\xc3\xbf\xc2\x80"), PickleValue::string("latin1")}));
  CHECK(latin1.as_bytes() == "a\xff\x80");
  CHECK_THROWS_WITH(pickle_call_codecs_encode(
                        PickleValue::tuple({PickleValue::string("\xe2\x82\xac"), PickleValue::string("latin1")})),
                    doctest::Contains("not latin1-encodable"));
  CHECK_THROWS_WITH(
      pickle_call_codecs_encode(PickleValue::tuple({PickleValue::string("x"), PickleValue::string("utf-8")})),
      doctest::Contains("encoding 'utf-8' is not supported"));
  CHECK(pickle_call_empty_bytes(PickleValue::tuple()).as_bytes().empty());
}

TEST_CASE("numpy pickle: a Python 2 CIFAR-style batch (BINSTRING keys and data)") {
  const PickleValue batch = unpickle(read_binary_file(fixture("numpy_py2.pkl")), numpy_options());
  CHECK(batch.at("batch_label").as_bytes() == "training batch 1 of 5");
  const auto& labels = batch.at("labels").items();
  REQUIRE(labels.size() == 2);
  CHECK(labels[0].as_int() == 6);
  CHECK(labels[1].as_int() == 300);
  const Tensor data = numpy_array_from_pickle(batch.at("data"));
  CHECK(data.dtype() == DType::u8);
  CHECK(data.shape() == Shape{2, 12});
  const std::vector<uint8_t> values = data.to_vector<uint8_t>();
  for (size_t i = 0; i < values.size(); ++i) CHECK(values[i] == (i * 37) % 256);  // bytes >= 0x80 intact
}

TEST_CASE("numpy pickle: Python 3 protocol 2 (_codecs.encode) and protocol 4 arrays agree") {
  for (const char* name : {"numpy_proto2.pkl", "numpy_proto4.pkl"}) {
    INFO(name);
    const PickleValue v = unpickle(read_binary_file(fixture(name)), numpy_options());
    const Tensor data = numpy_array_from_pickle(v.at("data"));
    CHECK(data.shape() == Shape{2, 5});
    const std::vector<uint8_t> d = data.to_vector<uint8_t>();
    for (size_t i = 0; i < d.size(); ++i) CHECK(d[i] == (i * 29) % 256);
    CHECK(v.at("labels").items()[2].as_int() == 70000);
    const Tensor f = numpy_array_from_pickle(v.at("f64"));  // Fortran order on disk, C order here
    CHECK(f.dtype() == DType::f64);
    CHECK(f.to_vector<double>() == std::vector<double>{1.5, -2.0, 3.25, 4.0, 5.5, -6.75});
    const Tensor i = numpy_array_from_pickle(v.at("i64"));
    CHECK(i.dtype() == DType::i64);
    CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{-1, int64_t{1} << 40, 7});
  }
}

TEST_CASE("numpy pickle: errors name what is wrong") {
  std::string bytes = read_binary_file(fixture("numpy_py2.pkl"));
  const PickleValue batch = unpickle(bytes, numpy_options());
  CHECK_THROWS_WITH(numpy_array_from_pickle(batch.at("labels")), doctest::Contains("expected a pickled ndarray"));
  // Shape [2, 12] -> [2, 11]: the 24 data bytes no longer match.
  const size_t shape_at = bytes.find("K\x02K\x0c\x86"s);
  REQUIRE(shape_at != std::string::npos);
  bytes[shape_at + 3] = '\x0b';
  CHECK_THROWS_WITH(numpy_array_from_pickle(unpickle(bytes, numpy_options()).at("data")),
                    doctest::Contains("numpy array: data holds 24 bytes but uint8[2, 11] needs 22"));
  // dtype 'u1' -> 'c1' (not a supported type code)
  std::string other = read_binary_file(fixture("numpy_py2.pkl"));
  const size_t code = other.find("U\x02u1"s);
  REQUIRE(code != std::string::npos);
  other[code + 2] = 'c';
  CHECK_THROWS_WITH(numpy_array_from_pickle(unpickle(other, numpy_options()).at("data")),
                    doctest::Contains("dtype 'c1' is not supported"));
}

TEST_CASE("pickle: random byte flips give a value or an error, never a crash") {
  const std::string numpy_stream = read_binary_file(fixture("numpy_proto2.pkl"));
  std::mt19937 rng(2024);
  for (const std::string* stream : {&kScalars, &kProtocol4, &numpy_stream}) {
    for (int trial = 0; trial < 2000; ++trial) {
      std::string damaged = *stream;
      damaged[rng() % damaged.size()] = static_cast<char>(rng());
      if (trial % 3 == 0) damaged[rng() % damaged.size()] = static_cast<char>(rng());
      try {
        const PickleValue v = unpickle(damaged, numpy_options());
        if (const PickleValue* data = v.get("data")) numpy_array_from_pickle(*data);
      } catch (const Error&) {
      }
    }
  }
}

TEST_CASE("pickle: a dict of many keys, repeated ones replacing their value in place, str / bytes / int apart") {
  // {0: 0, 1: 1, ..., n-1: n-1} by SETITEM one key at a time (BININT), then key 7 again, then
  // the str '7' and the bytes b'7', which are other keys.
  const int n = 200000;
  std::string bytes = "\x80\x02}"s;
  auto binint = [](int value) {
    std::string out = "J"s;
    for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((value >> shift) & 0xff);
    return out;
  };
  for (int i = 0; i < n; ++i) bytes += binint(i) + binint(i) + "s";
  bytes += binint(7) + binint(-7) + "s";
  bytes += "X\x01\x00\x00\x00"s + "7" + binint(1) + "s";
  bytes += "C\x01"s + "7" + binint(2) + "s.";
  const PickleValue v = load(bytes);
  const auto& entries = v.entries();
  REQUIRE(entries.size() == static_cast<size_t>(n) + 2);
  CHECK(entries[7].first.as_int() == 7);
  CHECK(entries[7].second.as_int() == -7);  // replaced where it stood, as Python's dict does
  CHECK(entries[n - 1].second.as_int() == n - 1);
  CHECK(v.at("7").as_int() == 1);
  CHECK(entries.back().first.is(K::bytes));
}
