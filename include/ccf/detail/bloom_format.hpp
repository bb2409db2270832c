// The on-disk format of the Bloom filters (bloom_filter.hpp, scalable_bloom_filter.hpp). All
// integers little-endian; docs/file-format.md has every field and every check in order.
//
// Kinds 1-3, one bit array (BasicBloomFilter, sequential or concurrent alike):
//
//   offset  size  field
//   0       8     magic "CCFBLOOM"
//   8       4     format version (1)
//   12      4     kind: 1 standard, 2 blocked, 3 counting
//   16      8     requested capacity (items)
//   24      8     bits in the array (a whole number of the layout's grain)
//   32      4     hash functions k
//   36      4     reserved (0)
//   40      8     hash seed
//   48      8     items inserted (size())
//   56      8     saturations (counting; 0 otherwise)
//   64      8     payload bytes (= bits / 8)
//   72      8     XXH3-64 of bytes [0, 72)         -- checked before anything is allocated
//   80      n     payload: the bit array's 64-bit words as kept in memory
//   80+n    8     XXH3-64 of the payload
//
// Kind 4, a scalable Bloom filter: its header() (the same magic, version and kind 4, its
// options and one record per sub-filter, with a checksum), then the sub-filters' bit arrays
// concatenated, oldest first, then XXH3-64 of them.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf::detail {

inline constexpr std::array<char, 8> kBloomMagic = {'C', 'C', 'F', 'B', 'L', 'O', 'O', 'M'};
inline constexpr std::uint32_t kBloomFormatVersion = 1;

enum class BloomKind : std::uint32_t { kStandard = 1, kBlocked = 2, kCounting = 3, kScalable = 4 };

inline std::string bloom_kind_name(std::uint32_t kind) {
  switch (kind) {
    case 1:
      return "a standard Bloom filter (ccf::BloomFilter)";
    case 2:
      return "a blocked Bloom filter (ccf::BlockedBloomFilter)";
    case 3:
      return "a counting Bloom filter (ccf::CountingBloomFilter)";
    case 4:
      return "a scalable Bloom filter (ccf::ScalableBloomFilter)";
    default:
      return "an unknown Bloom filter kind " + std::to_string(kind);
  }
}

// Little-endian field writer / reader over a byte buffer.
class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : out_(out) {}
  template <class T>
  void put(T value) {
    char bytes[sizeof value];
    std::memcpy(bytes, &value, sizeof value);
    out_.append(bytes, sizeof value);
  }
  void put_checksum() { put(static_cast<std::uint64_t>(XXH3_64bits(out_.data(), out_.size()))); }

 private:
  std::string& out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  template <class T>
  T get() noexcept {  // the caller checked the length
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

// The 16 bytes every Bloom file starts with: magic, version and kind. Returns the kind; throws
// FormatError. `prefix` holds what the stream delivered of them.
inline std::uint32_t check_bloom_prefix(std::string_view prefix) {
  if (prefix.size() < kBloomMagic.size() ||
      std::memcmp(prefix.data(), kBloomMagic.data(), kBloomMagic.size()) != 0) {
    throw FormatError("not a ccf Bloom filter (bad magic)");
  }
  if (prefix.size() < 16) throw FormatError("truncated Bloom filter header");
  ByteReader reader(prefix.substr(8));
  const auto version = reader.get<std::uint32_t>();
  if (version != kBloomFormatVersion) {
    throw FormatError("unsupported Bloom filter format version " + std::to_string(version) +
                      " (this build reads version " + std::to_string(kBloomFormatVersion) + ")");
  }
  return reader.get<std::uint32_t>();
}

// Reads up to `size` bytes; returns what the stream delivered.
inline std::string read_up_to(std::istream& in, std::size_t size) {
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

// The bytes left in a seekable stream; nullopt when it cannot seek (only reading will tell).
inline std::optional<std::uint64_t> bytes_remaining(std::istream& in) {
  const std::istream::pos_type here = in.tellg();
  if (here == std::istream::pos_type(-1)) return std::nullopt;
  in.seekg(0, std::ios::end);
  const std::istream::pos_type end = in.tellg();
  in.seekg(here);
  if (end == std::istream::pos_type(-1)) return std::nullopt;
  return static_cast<std::uint64_t>(end - here);
}

// Throws unless a seekable stream still holds `bytes` (a forged size is refused before the
// allocation it would cause). Returns whether it could tell.
inline bool require_bloom_bytes(std::istream& in, std::uint64_t bytes, std::string_view what) {
  const auto left = bytes_remaining(in);
  if (!left) return false;
  if (*left < bytes) {
    throw FormatError("truncated Bloom filter: " + std::to_string(bytes) + " bytes announced for " +
                      std::string(what) + ", " + std::to_string(*left) + " present");
  }
  return true;
}

// Streams `bytes` payload bytes through a buffer of at most 1 MiB, calling sink(offset, chunk)
// for each chunk as it arrives, then checks the XXH3-64 that follows them. Memory follows the
// bytes the stream delivers, whatever was announced. Throws FormatError.
template <class Sink>
void read_bloom_payload(std::istream& in, std::uint64_t bytes, Sink sink) {
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  XXH3_state_t state;
  XXH3_INITSTATE(&state);  // as xxhash.h asks of a state on the stack
  XXH3_64bits_reset(&state);
  std::string chunk;
  for (std::uint64_t done = 0; done < bytes;) {
    chunk = read_up_to(in, static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, bytes - done)));
    if (chunk.empty()) {
      throw FormatError("truncated Bloom filter payload: " + std::to_string(bytes) +
                        " bytes announced, " + std::to_string(done) + " present");
    }
    XXH3_64bits_update(&state, chunk.data(), chunk.size());
    sink(done, std::as_bytes(std::span(chunk.data(), chunk.size())));
    done += chunk.size();
  }
  const std::string sum = read_up_to(in, 8);
  if (sum.size() != 8) throw FormatError("truncated Bloom filter: the payload checksum is missing");
  if (ByteReader(sum).get<std::uint64_t>() != XXH3_64bits_digest(&state)) {
    throw FormatError("Bloom filter payload checksum mismatch (corrupted file)");
  }
}

// Reads a payload of `bytes` bytes (and its checksum) into build()'s result through
// fill(result, offset, chunk); returns the result. On a seekable stream the bytes are known
// present before build() allocates, and land in place; on one that cannot seek they are
// gathered first, so that nothing the header announces is allocated before the stream has
// delivered it (a complete load then briefly holds the payload twice).
template <class Build, class Fill>
auto load_bloom_payload(std::istream& in, std::uint64_t bytes, Build build, Fill fill) {
  if (require_bloom_bytes(in, bytes + 8, "the payload and its checksum")) {
    auto result = build();
    read_bloom_payload(in, bytes, [&](std::uint64_t at, std::span<const std::byte> chunk) {
      fill(result, at, chunk);
    });
    return result;
  }
  std::vector<std::string> chunks;
  read_bloom_payload(in, bytes, [&](std::uint64_t, std::span<const std::byte> chunk) {
    chunks.emplace_back(reinterpret_cast<const char*>(chunk.data()), chunk.size());
  });
  auto result = build();
  std::uint64_t at = 0;
  for (std::string& chunk : chunks) {
    fill(result, at, std::as_bytes(std::span(chunk.data(), chunk.size())));
    at += chunk.size();
    std::string().swap(chunk);
  }
  return result;
}

// Writes `bytes` payload bytes, got by copy(offset, buffer) a chunk at a time (a concurrent
// filter's words are read with atomic loads, never with memcpy), then their XXH3-64.
template <class Copy>
void write_bloom_payload(std::ostream& out, std::uint64_t bytes, Copy copy) {
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  std::vector<std::byte> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, bytes)));
  for (std::uint64_t done = 0; done < bytes;) {
    const auto size = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, bytes - done));
    copy(done, std::span(buffer.data(), size));
    XXH3_64bits_update(&state, buffer.data(), size);
    out.write(reinterpret_cast<const char*>(buffer.data()), static_cast<std::streamsize>(size));
    done += size;
  }
  const std::uint64_t sum = XXH3_64bits_digest(&state);
  out.write(reinterpret_cast<const char*>(&sum), sizeof sum);
  if (!out) throw std::ios_base::failure("writing the Bloom filter failed");
}

// Kinds 1-3: the 80-byte header.
struct BloomFileHeader {
  BloomKind kind = BloomKind::kStandard;
  std::uint64_t capacity = 0;
  std::uint64_t bits = 0;
  std::uint32_t hashes = 0;
  std::uint64_t seed = 0;
  std::uint64_t items = 0;
  std::uint64_t saturations = 0;
  std::uint64_t payload_bytes = 0;

  static constexpr std::size_t kEncodedSize = 80;

  std::string encode() const {
    std::string bytes(kBloomMagic.data(), kBloomMagic.size());
    ByteWriter writer(bytes);
    writer.put(kBloomFormatVersion);
    writer.put(static_cast<std::uint32_t>(kind));
    writer.put(capacity);
    writer.put(bits);
    writer.put(hashes);
    writer.put(std::uint32_t{0});
    writer.put(seed);
    writer.put(items);
    writer.put(saturations);
    writer.put(payload_bytes);
    writer.put_checksum();
    return bytes;
  }

  // Reads and checks magic, version, kind (== `expected`, else a message naming both filters),
  // length and checksum. The caller checks the sizes against its layout.
  static BloomFileHeader read(std::istream& in, BloomKind expected) {
    const std::string bytes = read_up_to(in, kEncodedSize);
    const std::uint32_t kind = check_bloom_prefix(bytes);
    if (kind != static_cast<std::uint32_t>(expected)) {
      throw FormatError("the file holds " + bloom_kind_name(kind) + "; this filter is " +
                        bloom_kind_name(static_cast<std::uint32_t>(expected)));
    }
    if (bytes.size() != kEncodedSize) throw FormatError("truncated Bloom filter header");
    ByteReader reader(std::string_view(bytes).substr(16));
    BloomFileHeader h;
    h.kind = expected;
    h.capacity = reader.get<std::uint64_t>();
    h.bits = reader.get<std::uint64_t>();
    h.hashes = reader.get<std::uint32_t>();
    const auto reserved = reader.get<std::uint32_t>();
    h.seed = reader.get<std::uint64_t>();
    h.items = reader.get<std::uint64_t>();
    h.saturations = reader.get<std::uint64_t>();
    h.payload_bytes = reader.get<std::uint64_t>();
    if (XXH3_64bits(bytes.data(), kEncodedSize - 8) !=
        ByteReader(std::string_view(bytes).substr(kEncodedSize - 8)).get<std::uint64_t>()) {
      throw FormatError("Bloom filter header checksum mismatch (corrupted file)");
    }
    if (reserved != 0) throw FormatError("corrupted reserved header field (not zero)");
    return h;
  }
};

}  // namespace ccf::detail
