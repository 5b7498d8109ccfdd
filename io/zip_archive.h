// A read-only zip reader for PyTorch checkpoints (torch.save's zip format): the central
// directory (Zip64 records and extra fields included), stored (uncompressed) entries only.
//
// torch.save writes every entry stored, payloads aligned to 64 bytes by an extra field, with
// sizes 0 in the local headers (the sizes follow in data descriptors), so the sizes come from
// the central directory and only the local header's name and extra lengths are read from it.
//
// Every offset and length is checked against the archive; problems throw mcdl::Error
// "zip: <what>: ..." (not a zip file, truncated, multi-disk, an entry outside the file, a
// duplicate name; a compressed or encrypted entry or a CRC mismatch when its data is asked for).
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mcdl {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;       // 0 = stored, 8 = deflate, ...
  uint16_t flags = 0;        // general purpose bits (bit 0 = encrypted)
  uint64_t data_offset = 0;  // of the payload, from the start of the archive
  uint64_t compressed_size = 0;
  uint64_t size = 0;  // uncompressed
  uint32_t crc32 = 0;
};

class ZipArchive {
 public:
  // Parses the archive in `bytes`, which must outlive this object (not copied). `what` names
  // it in messages (a file path).
  ZipArchive(std::span<const uint8_t> bytes, std::string what);

  // In central-directory order.
  const std::vector<ZipEntry>& entries() const { return entries_; }
  // nullptr when there is no entry of that name.
  const ZipEntry* find(std::string_view name) const;
  // The payload of a stored, unencrypted entry, after checking its CRC-32 (a damaged download
  // fails here rather than as wrong weights).
  std::span<const uint8_t> data(const ZipEntry& entry) const;
  // As find() + data(), throwing "zip: <what>: no entry '<name>'" when absent.
  std::span<const uint8_t> data(std::string_view name) const;

 private:
  std::span<const uint8_t> bytes_;
  std::string what_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in entries_
};

// True when `bytes` starts like a zip archive (a local file header, "PK\3\4").
bool looks_like_zip(std::span<const uint8_t> bytes);

}  // namespace mcdl
