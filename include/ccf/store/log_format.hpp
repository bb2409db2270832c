// The log store's file format (version 1): an append-only sequence of checksummed entries.
// docs/log_store.md has the whole format and the recovery rules; all integers little-endian.
//
//   file header   16 bytes   magic "CCF-LOG\n" | u32 version (1) | u32 = low 32 bits of
//                            XXH3-64 of the first 12 bytes
//   entry         16 bytes   u64 checksum | u8 kind | u8 0 | u16 key bytes | u32 data bytes
//                 then the key, then the data (no padding)
//
// checksum = XXH3-64 (seeded with kEntrySeed) of everything in the entry after the checksum
// field: kind, lengths, key and data. A put carries data; a tombstone (kind 2) carries none and
// records that its key was deleted, so that recovery, which replays the log in order, sees the
// delete. Keys are 1 .. kMaxKeyBytes bytes (a content key is the 20 bytes of SHA-1(data)),
// data 0 .. kMaxDataBytes.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ccf/hash.hpp"

namespace ccf::store {

static_assert(std::endian::native == std::endian::little,
              "the log format is read and written as little-endian memory");

// A log that cannot be opened or read: missing, foreign, of another version, corrupt, or in
// use by another writer. The message names the file and what was wrong.
class LogError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::array<char, 8> kLogMagic = {'C', 'C', 'F', '-', 'L', 'O', 'G', '\n'};
inline constexpr std::uint32_t kLogVersion = 1;
inline constexpr std::size_t kFileHeaderBytes = 16;
inline constexpr std::size_t kEntryHeaderBytes = 16;
inline constexpr std::size_t kMaxKeyBytes = 1024;
inline constexpr std::size_t kMaxDataBytes = std::size_t{1} << 30;
// One read of this many bytes fetches an entry's header and key (and all of a short entry).
inline constexpr std::size_t kProbeBytes = 4096;
static_assert(kProbeBytes >= kEntryHeaderBytes + kMaxKeyBytes);
inline constexpr std::uint64_t kEntrySeed = 0x6c6f672d63636621ULL;

enum class EntryKind : std::uint8_t { kPut = 1, kTombstone = 2 };

struct EntryHeader {
  std::uint64_t checksum = 0;
  EntryKind kind = EntryKind::kPut;
  std::uint16_t key_bytes = 0;
  std::uint32_t data_bytes = 0;

  std::uint64_t entry_bytes() const noexcept {
    return kEntryHeaderBytes + key_bytes + std::uint64_t{data_bytes};
  }
};

inline std::array<char, kFileHeaderBytes> encode_file_header() noexcept {
  std::array<char, kFileHeaderBytes> out{};
  std::memcpy(out.data(), kLogMagic.data(), kLogMagic.size());
  std::memcpy(out.data() + 8, &kLogVersion, 4);
  const auto check = static_cast<std::uint32_t>(XXH3_64bits(out.data(), 12));
  std::memcpy(out.data() + 12, &check, 4);
  return out;
}

// Why a file header is not a version-1 log header; nullopt when it is one.
inline std::optional<std::string> file_header_problem(const char* bytes) {
  if (std::memcmp(bytes, kLogMagic.data(), kLogMagic.size()) != 0) {
    return "not a ccf log (the file does not start with \"CCF-LOG\")";
  }
  std::uint32_t version = 0;
  std::uint32_t check = 0;
  std::memcpy(&version, bytes + 8, 4);
  std::memcpy(&check, bytes + 12, 4);
  if (check != static_cast<std::uint32_t>(XXH3_64bits(bytes, 12))) {
    return "the file header's checksum does not match (corrupt header)";
  }
  if (version != kLogVersion) {
    return "log format version " + std::to_string(version) + " (this build reads version " +
           std::to_string(kLogVersion) + ")";
  }
  return std::nullopt;
}

// Checksum of an entry whose header fields (all but the checksum) are in `fields` (8 bytes).
inline std::uint64_t entry_checksum(const char* fields, std::string_view key,
                                    std::string_view data) noexcept {
  XXH3_state_t state;
  // A state on the stack must be initialized first: reset_withSeed skips deriving the secret
  // when the (otherwise uninitialized) stored seed already equals the new one.
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset_withSeed(&state, kEntrySeed);
  XXH3_64bits_update(&state, fields, kEntryHeaderBytes - 8);
  XXH3_64bits_update(&state, key.data(), key.size());
  XXH3_64bits_update(&state, data.data(), data.size());
  return XXH3_64bits_digest(&state);
}

// The 16 header bytes of an entry for key and data, checksum filled in.
inline std::array<char, kEntryHeaderBytes> encode_entry_header(EntryKind kind, std::string_view key,
                                                               std::string_view data) noexcept {
  std::array<char, kEntryHeaderBytes> out{};
  out[8] = static_cast<char>(kind);
  const auto key_bytes = static_cast<std::uint16_t>(key.size());
  const auto data_bytes = static_cast<std::uint32_t>(data.size());
  std::memcpy(out.data() + 10, &key_bytes, 2);
  std::memcpy(out.data() + 12, &data_bytes, 4);
  const std::uint64_t checksum = entry_checksum(out.data() + 8, key, data);
  std::memcpy(out.data(), &checksum, 8);
  return out;
}

// Decodes and checks the fixed part of an entry header (not the checksum, which needs the
// key and data). nullopt when the fields cannot belong to any entry this format writes.
inline std::optional<EntryHeader> decode_entry_header(const char* bytes) noexcept {
  EntryHeader header;
  std::memcpy(&header.checksum, bytes, 8);
  const auto kind = static_cast<std::uint8_t>(bytes[8]);
  std::memcpy(&header.key_bytes, bytes + 10, 2);
  std::memcpy(&header.data_bytes, bytes + 12, 4);
  const bool kind_ok =
      kind == static_cast<std::uint8_t>(EntryKind::kPut) ||
      (kind == static_cast<std::uint8_t>(EntryKind::kTombstone) && header.data_bytes == 0);
  if (!kind_ok || bytes[9] != 0 || header.key_bytes == 0 || header.key_bytes > kMaxKeyBytes ||
      header.data_bytes > kMaxDataBytes) {
    return std::nullopt;
  }
  header.kind = static_cast<EntryKind>(kind);
  return header;
}

// True when a whole entry (header bytes, then key, then data) carries its checksum.
inline bool entry_intact(const EntryHeader& header, const char* header_bytes, std::string_view key,
                         std::string_view data) noexcept {
  return entry_checksum(header_bytes + 8, key, data) == header.checksum;
}

}  // namespace ccf::store
