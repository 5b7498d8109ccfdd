#include "io/zip_archive.h"

#include <zlib.h>

#include <algorithm>

#include "engine/error.h"

namespace mcdl {

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint64_t kEndSize = 22, kLocatorSize = 20, kZip64EndSize = 56, kCentralSize = 46, kLocalSize = 30;

// Little-endian reads at a position already checked to lie inside the archive.
uint64_t le(std::span<const uint8_t> bytes, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(bytes[at + static_cast<uint64_t>(i)]) << (8 * i);
  return v;
}

}  // namespace

bool looks_like_zip(std::span<const uint8_t> bytes) { return bytes.size() >= 4 && le(bytes, 0, 4) == kLocalHeader; }

ZipArchive::ZipArchive(std::span<const uint8_t> bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {
  const uint64_t size = bytes.size();
  auto bad = [&](const auto&... parts) { fail("zip: ", what_, ": ", parts...); };
  // [at, at + n) inside the archive, without overflow.
  auto require = [&](uint64_t at, uint64_t n, const char* thing) {
    if (at > size || n > size - at)
      bad(thing, " at byte ", at, " (", n, " bytes) lies past the end of the ", size, "-byte file");
  };

  // The end-of-central-directory record: the last "PK\5\6" whose comment reaches the end exactly.
  if (size < kEndSize) bad("not a zip archive (", size, " bytes, too short for its end record)");
  uint64_t end = size - kEndSize;
  const uint64_t lowest = size - kEndSize > 0xffff ? size - kEndSize - 0xffff : 0;
  while (!(le(bytes, end, 4) == kEndOfDirectory && end + kEndSize + le(bytes, end + 20, 2) == size)) {
    if (end == lowest) bad("not a zip archive or truncated: no end-of-central-directory record");
    --end;
  }
  if (le(bytes, end + 4, 2) != 0 || le(bytes, end + 6, 2) != 0) bad("multi-disk archives are not supported");
  uint64_t count = le(bytes, end + 10, 2);
  uint64_t directory_size = le(bytes, end + 12, 4);
  uint64_t directory_offset = le(bytes, end + 16, 4);

  // Zip64: a locator right before the end record points at the Zip64 end record, whose counts
  // and offsets replace the 16/32-bit ones.
  if (end >= kLocatorSize && le(bytes, end - kLocatorSize, 4) == kZip64Locator) {
    const uint64_t locator = end - kLocatorSize;
    if (le(bytes, locator + 4, 4) != 0 || le(bytes, locator + 16, 4) > 1) bad("multi-disk archives are not supported");
    const uint64_t record = le(bytes, locator + 8, 8);
    require(record, kZip64EndSize, "the Zip64 end record");
    if (le(bytes, record, 4) != kZip64End)
      bad("the Zip64 locator points at byte ", record, ", not at a Zip64 end record");
    if (le(bytes, record + 16, 4) != 0 || le(bytes, record + 20, 4) != 0) bad("multi-disk archives are not supported");
    count = le(bytes, record + 32, 8);
    directory_size = le(bytes, record + 40, 8);
    directory_offset = le(bytes, record + 48, 8);
  }
  require(directory_offset, directory_size, "the central directory");
  if (count > directory_size / kCentralSize) {
    bad(count, " entries cannot fit in a central directory of ", directory_size, " bytes");
  }

  uint64_t at = directory_offset;
  const uint64_t directory_end = directory_offset + directory_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (at > directory_end || directory_end - at < kCentralSize || le(bytes, at, 4) != kCentralHeader) {
      bad("central directory entry ", i, " at byte ", at, " is malformed or missing");
    }
    ZipEntry entry;
    entry.flags = static_cast<uint16_t>(le(bytes, at + 8, 2));
    entry.method = static_cast<uint16_t>(le(bytes, at + 10, 2));
    entry.crc32 = static_cast<uint32_t>(le(bytes, at + 16, 4));
    entry.compressed_size = le(bytes, at + 20, 4);
    entry.size = le(bytes, at + 24, 4);
    const uint64_t name_length = le(bytes, at + 28, 2), extra_length = le(bytes, at + 30, 2),
                   comment_length = le(bytes, at + 32, 2);
    uint64_t disk = le(bytes, at + 34, 2);
    uint64_t local = le(bytes, at + 42, 4);
    const uint64_t record_size = kCentralSize + name_length + extra_length + comment_length;
    if (directory_end - at < record_size) bad("central directory entry ", i, " runs past the directory");
    entry.name.assign(reinterpret_cast<const char*>(bytes.data() + at + kCentralSize), name_length);

    // Zip64 extra field: 64-bit values for the fields that hold all ones, in this order.
    uint64_t extra = at + kCentralSize + name_length;
    const uint64_t extra_end = extra + extra_length;
    while (extra_end - extra >= 4) {
      const uint64_t id = le(bytes, extra, 2), length = le(bytes, extra + 2, 2);
      if (extra_end - extra - 4 < length) bad("entry '", entry.name, "': an extra field runs past its record");
      if (id == kZip64ExtraId) {
        uint64_t field = extra + 4;
        auto take = [&](uint64_t& value, int width) {
          if (field + static_cast<uint64_t>(width) > extra + 4 + length) {
            bad("entry '", entry.name, "': the Zip64 extra field is too short");
          }
          value = le(bytes, field, width);
          field += static_cast<uint64_t>(width);
        };
        if (entry.size == 0xffffffffu) take(entry.size, 8);
        if (entry.compressed_size == 0xffffffffu) take(entry.compressed_size, 8);
        if (local == 0xffffffffu) take(local, 8);
        if (disk == 0xffffu) take(disk, 4);
      }
      extra += 4 + length;
    }
    if (disk != 0) bad("entry '", entry.name, "' is on disk ", disk, " (multi-disk archives are not supported)");

    // The payload follows the local header, whose own name and extra lengths count (torch's
    // alignment padding lives in the local extra field).
    require(local, kLocalSize, ("the local header of entry '" + entry.name + "'").c_str());
    if (le(bytes, local, 4) != kLocalHeader) bad("entry '", entry.name, "': no local header at byte ", local);
    entry.data_offset = local + kLocalSize + le(bytes, local + 26, 2) + le(bytes, local + 28, 2);
    require(entry.data_offset, entry.compressed_size, ("the data of entry '" + entry.name + "'").c_str());

    if (!index_.emplace(entry.name, entries_.size()).second) bad("duplicate entry '", entry.name, "'");
    entries_.push_back(std::move(entry));
    at += record_size;
  }
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::span<const uint8_t> ZipArchive::data(const ZipEntry& entry) const {
  check((entry.flags & 1) == 0, "zip: ", what_, ": entry '", entry.name, "' is encrypted");
  check(entry.method == 0, "zip: ", what_, ": entry '", entry.name, "' is compressed (method ", entry.method,
        "); only stored entries are supported, as torch.save writes them");
  check(entry.compressed_size == entry.size, "zip: ", what_, ": stored entry '", entry.name, "' has sizes ",
        entry.compressed_size, " and ", entry.size, " that differ");
  const std::span<const uint8_t> data = bytes_.subspan(entry.data_offset, entry.size);
  // zlib's crc32 takes 32-bit lengths: feed it in chunks.
  uLong crc = ::crc32(0, nullptr, 0);
  for (size_t at = 0; at < data.size(); at += 1u << 30) {
    crc = ::crc32(crc, data.data() + at, static_cast<uInt>(std::min<size_t>(data.size() - at, 1u << 30)));
  }
  check(crc == entry.crc32, "zip: ", what_, ": entry '", entry.name, "' fails its CRC-32 check (damaged file?)");
  return data;
}

std::span<const uint8_t> ZipArchive::data(std::string_view name) const {
  const ZipEntry* entry = find(name);
  check(entry != nullptr, "zip: ", what_, ": no entry '", name, "'");
  return data(*entry);
}

}  // namespace mcdl
