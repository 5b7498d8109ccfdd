// The read-only zip reader (io/zip_archive.h): archives laid out as torch.save writes them
// (built in memory by tests/io/checkpoint_builders.h, and a real torch 1.13 file), Zip64
// fields, and every kind of damage.
#include <doctest/doctest.h>

#include <filesystem>

#include "engine/error.h"
#include "io/zip_archive.h"
#include "tests/io/checkpoint_builders.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

ZipSpec two_entries() {
  ZipSpec spec;
  spec.entries = {{"archive/data.pkl", "pickle bytes"}, {"archive/data/0", std::string(100, '\x07')}};
  return spec;
}

std::string text(std::span<const uint8_t> bytes) { return {bytes.begin(), bytes.end()}; }

}  // namespace

TEST_CASE("zip: stored entries with zero local sizes, alignment padding and Zip64 end records") {
  for (bool zip64 : {true, false}) {
    for (bool entry_fields : {false, true}) {
      INFO("zip64 records ", zip64, ", zip64 entry fields ", entry_fields);
      ZipSpec spec = two_entries();
      spec.zip64_records = zip64;
      spec.zip64_entry_fields = entry_fields;
      spec.comment = "a comment";
      const std::string bytes = build_zip(spec);
      const ZipArchive zip(as_bytes(bytes), "test.zip");
      REQUIRE(zip.entries().size() == 2);
      CHECK(zip.entries()[0].name == "archive/data.pkl");
      CHECK(zip.entries()[1].size == 100);
      CHECK(zip.entries()[1].data_offset % 64 == 0);
      CHECK(text(zip.data("archive/data.pkl")) == "pickle bytes");
      CHECK(text(zip.data(*zip.find("archive/data/0"))) == std::string(100, '\x07'));
      CHECK(zip.find("archive/missing") == nullptr);
    }
  }
}

TEST_CASE("zip: a real torch.save archive (torch 1.13, top folder named after the file)") {
  namespace fs = std::filesystem;
  const std::string path =
      (fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "checkpoints" / "tiny_hf.bin").string();
  const std::string bytes = read_binary_file(path);
  const ZipArchive zip(as_bytes(bytes), path);
  REQUIRE(!zip.entries().empty());
  CHECK(zip.entries().front().name == "tiny_hf/data.pkl");
  CHECK(text(zip.data("tiny_hf/version")) == "3\n");
  for (const ZipEntry& e : zip.entries()) {
    CHECK(e.method == 0);
    CHECK(e.data_offset % 64 == 0);
    CHECK(zip.data(e).size() == e.size);  // CRC-32 verified
  }
}

TEST_CASE("zip: damaged archives give clear errors") {
  const std::string good = build_zip(two_entries());
  auto open = [](const std::string& bytes) { return ZipArchive(as_bytes(bytes), "bad.zip"); };

  CHECK_THROWS_WITH(open("PK\x03\x04 not really"), doctest::Contains("zip: bad.zip: not a zip archive (15 bytes"));
  CHECK_THROWS_WITH(open(std::string(100, 'x')), doctest::Contains("no end-of-central-directory record"));
  CHECK_THROWS_WITH(open(good.substr(0, good.size() - 30)), doctest::Contains("no end-of-central-directory record"));
  for (size_t n = 0; n < good.size(); ++n) {  // every truncation fails cleanly
    INFO("prefix of ", n, " bytes");
    CHECK_THROWS_AS(open(good.substr(0, n)), Error);
  }

  // The central directory offset (in the Zip64 end record) moved past the end of the file.
  std::string moved = good;
  const size_t record = moved.find("PK\x06\x06");
  REQUIRE(record != std::string::npos);
  moved[record + 48 + 7] = '\x01';
  CHECK_THROWS_WITH(open(moved), doctest::Contains("the central directory at byte"));

  // An entry whose size reaches past the end of the file.
  ZipSpec big = two_entries();
  big.zip64_records = false;
  std::string oversized = build_zip(big);
  const size_t central = oversized.find("PK\x01\x02");
  oversized[central + 24 + 3] = '\x10';  // uncompressed size
  oversized[central + 20 + 3] = '\x10';  // compressed size
  CHECK_THROWS_WITH(open(oversized), doctest::Contains("the data of entry 'archive/data.pkl'"));

  // A duplicate name.
  ZipSpec duplicate = two_entries();
  duplicate.entries[1].name = duplicate.entries[0].name;
  CHECK_THROWS_WITH(open(build_zip(duplicate)), doctest::Contains("duplicate entry 'archive/data.pkl'"));

  // Compressed entries open, but their data is refused.
  ZipSpec deflated = two_entries();
  deflated.entries[0].method = 8;
  const std::string deflated_bytes = build_zip(deflated);
  const ZipArchive zip = open(deflated_bytes);
  CHECK_THROWS_WITH(zip.data("archive/data.pkl"), doctest::Contains("is compressed (method 8)"));
  CHECK_THROWS_WITH(zip.data("archive/nothing"), doctest::Contains("no entry 'archive/nothing'"));

  // A flipped payload byte fails the CRC check.
  std::string flipped = good;
  flipped[flipped.find("pickle bytes")] = 'P';
  CHECK_THROWS_WITH(open(flipped).data("archive/data.pkl"), doctest::Contains("fails its CRC-32 check"));

  // A local header offset pointing elsewhere.
  std::string misplaced = good;
  const size_t entry = misplaced.find("PK\x01\x02");
  misplaced[entry + 42] = '\x05';
  CHECK_THROWS_WITH(open(misplaced), doctest::Contains("entry 'archive/data.pkl': no local header at byte 5"));
}
