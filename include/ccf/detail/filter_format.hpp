// The on-disk format of a cuckoo filter. All integers little-endian. docs/file-format.md has
// both versions and every check in order.
//
// Version 1: one table (every filter writes it; a lock-free filter while it has one level).
//
//   offset  size  field
//   0       8     magic "CCFCUCKO"
//   8       4     format version (1)
//   12      4     layout: 1 = packed, 2 = semi-sorted
//   16      4     fingerprint bits
//   20      4     slots per bucket
//   24      8     bucket count
//   32      8     requested capacity (items)
//   40      8     items stored (victim included)
//   48      8     hash seed
//   56      4     max kicks
//   60      4     victim present (0 / 1)
//   64      8     victim bucket
//   72      4     victim fingerprint
//   76      4     reserved (0)
//   80      8     payload bytes
//   88      8     XXH3-64 of bytes [0, 88)          -- header checked before anything is allocated
//   96      n     payload: the table's buckets, exactly as kept in memory
//   96+n    8     XXH3-64 of the payload
//
// Version 2: a lock-free filter grown to n >= 2 levels (lockfree/lock_free_cuckoo_filter.hpp).
// The same 96-byte header, with layout 3 (K-CAS words), fingerprint bits = level 0's width F,
// bucket count = level 0's m, items = all levels', and at 60: level count n (4), 64: the width
// of levels 1..n-1 (4), 68..79: reserved (0); payload bytes = all levels' payloads together.
// Then, for each level k = 0 .. n-1:
//
//   0       4     fingerprint bits of level k
//   4       4     slots per bucket (4)
//   8       8     bucket count (m * 2^k)
//   16      8     items in level k
//   24      8     payload bytes p_k
//   32      8     XXH3-64 of the record's bytes [0, 32)
//   40      p_k   payload: the level's slot words as kept in memory (64-bit words,
//                 floor(63 / width) slots each from bit 0; every other bit zero)
//   40+p_k  8     XXH3-64 of the payload
//
// Readers check, in order: magic, version, header checksum, parameter sanity (supported shape,
// payload size consistent with the bucket count, victim inside the table, bucket count and
// payload within the 64 TiB size limit and, on seekable streams, within the bytes actually
// present), then read and checksum the payload, and finally validate every bucket. Only then
// does a load take effect. A version-2 file is checked the same way level by level (each
// record against what the header implies before its payload is read; on a seekable stream
// every level's bytes are known present before the first is read). Memory follows the bytes
// actually present, whatever a header claims: a seekable stream's remaining length is checked
// first and the payload then read straight into the table; a stream that cannot seek (a pipe)
// is read in 1 MiB chunks, and the table is built only once the payload is whole and its
// checksum holds -- until then a load holds at most one chunk more than the stream delivered
// (a complete load briefly holds the payload twice).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <istream>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf::detail {

static_assert(std::endian::native == std::endian::little,
              "the ccf file format and bucket layouts assume a little-endian machine");

inline constexpr std::array<char, 8> kFilterMagic = {'C', 'C', 'F', 'C', 'U', 'C', 'K', 'O'};
// Version 1: one table, read by every filter. Version 2: a lock-free filter's levels.
inline constexpr std::uint32_t kFilterFormatVersion = 1;
inline constexpr std::uint32_t kLevelsFormatVersion = 2;
// The most levels a version-2 file holds (the lock-free filter's kMaxLevels).
inline constexpr std::uint32_t kMaxFileLevels = 8;
// The largest table any ccf filter allocates (64 TiB): a bound that rejects absurd capacities
// and corrupted sizes before any allocation is attempted.
inline constexpr std::uint64_t kMaxTableBytes = std::uint64_t{1} << 46;
// Cuckoo kicks an insert may make before it reports the filter full (FilterOptions::max_kicks).
inline constexpr unsigned kMaxKicksLimit = 1u << 20;

// kKcasWords: the lock-free filter's levels in a version-2 file (lockfree/kcas_table.hpp).
enum class TableLayout : std::uint32_t { kPacked = 1, kSemiSorted = 2, kKcasWords = 3 };

// Which versions a reader takes: every filter reads version 1; only the lock-free filter also
// reads version 2. A version-2 file offered to any other reader is refused, naming the filter
// that loads it.
enum class FileVersions { kOneTable, kOneTableOrLevels };

struct FilterHeader {
  std::uint32_t version = kFilterFormatVersion;
  TableLayout layout = TableLayout::kPacked;
  std::uint32_t fp_bits = 0;
  std::uint32_t slots = 0;
  std::uint64_t buckets = 0;
  std::uint64_t capacity = 0;
  std::uint64_t items = 0;
  std::uint64_t seed = 0;
  std::uint32_t max_kicks = 0;
  bool victim_used = false;
  std::uint64_t victim_bucket = 0;
  std::uint32_t victim_fp = 0;
  std::uint64_t payload_bytes = 0;
  // Version 2 only: the level count (2 .. kMaxFileLevels) and the fingerprint width of levels
  // 1 .. levels - 1 (level 0's is fp_bits).
  std::uint32_t levels = 1;
  std::uint32_t upper_fp_bits = 0;

  static constexpr std::size_t kEncodedSize = 96;

  std::string shape() const {
    const char* const name = layout == TableLayout::kSemiSorted  ? "semi-sorted"
                             : layout == TableLayout::kKcasWords ? "K-CAS words"
                                                                 : "packed";
    return std::string(name) + " " + std::to_string(fp_bits) + "-bit fingerprints, " +
           std::to_string(slots) + " slots/bucket";
  }
};

// Version 2: what precedes each level's payload.
struct LevelRecord {
  std::uint32_t fp_bits = 0;
  std::uint32_t slots = 0;
  std::uint64_t buckets = 0;
  std::uint64_t items = 0;
  std::uint64_t payload_bytes = 0;

  static constexpr std::size_t kEncodedSize = 40;

  friend bool operator==(const LevelRecord&, const LevelRecord&) = default;

  std::array<unsigned char, kEncodedSize> encode() const {
    std::array<unsigned char, kEncodedSize> bytes{};
    std::memcpy(bytes.data(), &fp_bits, 4);
    std::memcpy(bytes.data() + 4, &slots, 4);
    std::memcpy(bytes.data() + 8, &buckets, 8);
    std::memcpy(bytes.data() + 16, &items, 8);
    std::memcpy(bytes.data() + 24, &payload_bytes, 8);
    const std::uint64_t sum = XXH3_64bits(bytes.data(), 32);
    std::memcpy(bytes.data() + 32, &sum, 8);
    return bytes;
  }

  // Reads level `level`'s record and checks its checksum; throws FormatError.
  static LevelRecord read(std::istream& in, unsigned level) {
    std::array<unsigned char, kEncodedSize> bytes{};
    in.read(reinterpret_cast<char*>(bytes.data()), bytes.size());
    if (static_cast<std::size_t>(in.gcount()) != bytes.size()) {
      throw FormatError("truncated cuckoo filter: the record of level " + std::to_string(level) +
                        " is missing");
    }
    LevelRecord r;
    std::memcpy(&r.fp_bits, bytes.data(), 4);
    std::memcpy(&r.slots, bytes.data() + 4, 4);
    std::memcpy(&r.buckets, bytes.data() + 8, 8);
    std::memcpy(&r.items, bytes.data() + 16, 8);
    std::memcpy(&r.payload_bytes, bytes.data() + 24, 8);
    std::uint64_t sum = 0;
    std::memcpy(&sum, bytes.data() + 32, 8);
    if (sum != XXH3_64bits(bytes.data(), 32)) {
      throw FormatError("level " + std::to_string(level) +
                        " record checksum mismatch (corrupted file)");
    }
    return r;
  }
};

// The bytes a version-2 file holds after its header: every level's record, payload and payload
// checksum (h.payload_bytes is all levels' payloads together).
inline std::uint64_t levels_tail_bytes(const FilterHeader& h) noexcept {
  return h.payload_bytes + std::uint64_t{h.levels} * (LevelRecord::kEncodedSize + 8);
}

class HeaderCodec {
 public:
  static std::array<unsigned char, FilterHeader::kEncodedSize> encode(const FilterHeader& h) {
    HeaderCodec codec;
    codec.put_bytes(kFilterMagic.data(), kFilterMagic.size());
    codec.put(h.version);
    codec.put(static_cast<std::uint32_t>(h.layout));
    codec.put(h.fp_bits);
    codec.put(h.slots);
    codec.put(h.buckets);
    codec.put(h.capacity);
    codec.put(h.items);
    codec.put(h.seed);
    codec.put(h.max_kicks);
    if (h.version == kLevelsFormatVersion) {
      codec.put(h.levels);
      codec.put(h.upper_fp_bits);
      codec.put(std::uint32_t{0});
      codec.put(std::uint64_t{0});
    } else {
      codec.put(std::uint32_t{h.victim_used});
      codec.put(h.victim_bucket);
      codec.put(h.victim_fp);
      codec.put(std::uint32_t{0});
    }
    codec.put(h.payload_bytes);
    codec.put(static_cast<std::uint64_t>(XXH3_64bits(codec.bytes_.data(), codec.at_)));
    return codec.bytes_;
  }

  // Reads and checks the header; throws FormatError with the reason. A version-2 file is
  // refused unless `versions` takes it, after its header checksum held: the message names the
  // filter that loads it.
  static FilterHeader read(std::istream& in, FileVersions versions = FileVersions::kOneTable) {
    HeaderCodec codec;
    in.read(reinterpret_cast<char*>(codec.bytes_.data()), codec.bytes_.size());
    if (in.gcount() < 8 ||
        std::memcmp(codec.bytes_.data(), kFilterMagic.data(), kFilterMagic.size()) != 0) {
      throw FormatError("not a ccf cuckoo filter (bad magic)");
    }
    if (static_cast<std::size_t>(in.gcount()) != codec.bytes_.size()) {
      throw FormatError("truncated cuckoo filter header");
    }
    codec.at_ = kFilterMagic.size();
    FilterHeader h;
    h.version = codec.get<std::uint32_t>();
    if (h.version != kFilterFormatVersion && h.version != kLevelsFormatVersion) {
      throw FormatError("unsupported cuckoo filter format version " + std::to_string(h.version) +
                        " (this build reads versions " + std::to_string(kFilterFormatVersion) +
                        " and " + std::to_string(kLevelsFormatVersion) + ")");
    }
    const bool levels = h.version == kLevelsFormatVersion;
    const auto layout = codec.get<std::uint32_t>();
    h.fp_bits = codec.get<std::uint32_t>();
    h.slots = codec.get<std::uint32_t>();
    h.buckets = codec.get<std::uint64_t>();
    h.capacity = codec.get<std::uint64_t>();
    h.items = codec.get<std::uint64_t>();
    h.seed = codec.get<std::uint64_t>();
    h.max_kicks = codec.get<std::uint32_t>();
    std::uint32_t victim_used = 0;
    std::uint64_t reserved = 0;
    if (levels) {
      h.levels = codec.get<std::uint32_t>();
      h.upper_fp_bits = codec.get<std::uint32_t>();
      reserved = codec.get<std::uint32_t>();
      reserved |= codec.get<std::uint64_t>();
    } else {
      victim_used = codec.get<std::uint32_t>();
      h.victim_bucket = codec.get<std::uint64_t>();
      h.victim_fp = codec.get<std::uint32_t>();
      codec.get<std::uint32_t>();  // reserved
    }
    h.payload_bytes = codec.get<std::uint64_t>();
    const std::uint64_t expected = XXH3_64bits(codec.bytes_.data(), codec.at_);
    if (codec.get<std::uint64_t>() != expected) {
      throw FormatError("cuckoo filter header checksum mismatch (corrupted file)");
    }
    if (levels ? layout != 3 : layout != 1 && layout != 2) {
      throw FormatError("unknown bucket layout " + std::to_string(layout) + " in format version " +
                        std::to_string(h.version));
    }
    if (levels && (h.levels < 2 || h.levels > kMaxFileLevels)) {
      throw FormatError("corrupted level count " + std::to_string(h.levels) + " (2 to " +
                        std::to_string(kMaxFileLevels) + " in format version 2)");
    }
    if (reserved != 0) throw FormatError("corrupted reserved header field (not zero)");
    if (levels && versions != FileVersions::kOneTableOrLevels) {
      throw FormatError("the file holds a lock-free filter with " + std::to_string(h.fp_bits) +
                        "-bit fingerprints grown to " + std::to_string(h.levels) +
                        " levels (format version 2); load it with LockFreeCuckooFilter<" +
                        std::to_string(h.fp_bits) + ">");
    }
    if (victim_used > 1) throw FormatError("corrupted victim flag");
    if (h.max_kicks > kMaxKicksLimit) {
      throw FormatError("corrupted max_kicks " + std::to_string(h.max_kicks) + " (at most " +
                        std::to_string(kMaxKicksLimit) + ")");
    }
    h.layout = static_cast<TableLayout>(layout);
    h.victim_used = victim_used == 1;
    // Every bucket takes at least one byte, so this also bounds the bucket count.
    if (h.buckets == 0 || h.buckets > kMaxTableBytes) {
      throw FormatError("impossible bucket count " + std::to_string(h.buckets));
    }
    if (h.payload_bytes > kMaxTableBytes) {
      throw FormatError("payload of " + std::to_string(h.payload_bytes) +
                        " bytes exceeds the 64 TiB table size limit");
    }
    if (h.victim_used && h.victim_bucket >= h.buckets) {
      throw FormatError("victim bucket outside the table");
    }
    // Version 2: levels of m, 2m, ..., 2^(n-1) m buckets, (2^n - 1) m in all (no overflow:
    // m <= 2^46, n <= 8).
    const std::uint64_t all_buckets = h.buckets * ((std::uint64_t{1} << h.levels) - 1);
    if (h.items > all_buckets * std::uint64_t{h.slots} + (h.victim_used ? 1 : 0)) {
      throw FormatError("item count larger than the table");
    }
    return h;
  }

 private:
  template <class T>
  void put(T value) {
    std::memcpy(bytes_.data() + at_, &value, sizeof value);
    at_ += sizeof value;
  }
  void put_bytes(const char* data, std::size_t size) {
    std::memcpy(bytes_.data() + at_, data, size);
    at_ += size;
  }
  template <class T>
  T get() {
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }

  std::array<unsigned char, FilterHeader::kEncodedSize> bytes_{};
  std::size_t at_ = 0;
};

// Throws unless `in` (when seekable) still holds at least `bytes` bytes: a corrupted or forged
// size is rejected before the allocation it would cause. Returns whether it could tell (false:
// the stream cannot seek, and only reading will tell).
inline bool require_available(std::istream& in, std::uint64_t bytes) {
  const std::istream::pos_type here = in.tellg();
  if (here == std::istream::pos_type(-1)) return false;
  in.seekg(0, std::ios::end);
  const std::istream::pos_type end = in.tellg();
  in.seekg(here);
  if (end == std::istream::pos_type(-1)) return false;
  if (static_cast<std::uint64_t>(end - here) < bytes) {
    throw FormatError("truncated cuckoo filter: " + std::to_string(bytes) +
                      " payload bytes announced, " + std::to_string(end - here) + " present");
  }
  return true;
}

// A stream that cannot seek is read in chunks of this size, so memory grows with the bytes it
// actually delivers, never with the size a header announces.
inline constexpr std::size_t kPayloadChunkBytes = std::size_t{1} << 20;

// Reads `bytes` payload bytes, kPayloadChunkBytes at a time, each into the place(offset, size)
// returns, hashing as it goes; then the checksum after them. Throws FormatError if the stream
// ends early or the checksum fails.
template <class Place>
void read_checked_payload(std::istream& in, std::uint64_t bytes, Place place) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);  // as xxhash.h asks of a state on the stack
  XXH3_64bits_reset(&state);
  for (std::uint64_t done = 0; done < bytes;) {
    const auto size =
        static_cast<std::size_t>(std::min<std::uint64_t>(kPayloadChunkBytes, bytes - done));
    std::byte* const to = place(done, size);
    in.read(reinterpret_cast<char*>(to), static_cast<std::streamsize>(size));
    done += static_cast<std::uint64_t>(in.gcount());
    if (!in) {
      throw FormatError("truncated cuckoo filter payload: " + std::to_string(bytes) +
                        " bytes announced, " + std::to_string(done) + " present");
    }
    XXH3_64bits_update(&state, to, size);
  }
  std::uint64_t checksum = 0;
  in.read(reinterpret_cast<char*>(&checksum), sizeof checksum);
  if (!in) throw FormatError("truncated cuckoo filter: the payload checksum is missing");
  if (checksum != XXH3_64bits_digest(&state)) {
    throw FormatError("cuckoo filter payload checksum mismatch (corrupted file)");
  }
}

// The payload of a stream that cannot seek: read into chunks (at most one more than the stream
// delivered), then copied into a new table, each chunk freed once copied.
template <class Table>
Table table_from_unseekable(const FilterHeader& h, std::istream& in) {
  std::vector<std::unique_ptr<std::byte[]>> chunks;
  read_checked_payload(in, h.payload_bytes, [&](std::uint64_t, std::size_t size) {
    return chunks.emplace_back(std::make_unique_for_overwrite<std::byte[]>(size)).get();
  });
  Table table(h.buckets);
  const std::span<std::byte> payload = table.payload();
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const std::size_t at = i * kPayloadChunkBytes;
    std::memcpy(payload.data() + at, chunks[i].get(),
                std::min(kPayloadChunkBytes, payload.size() - at));
    chunks[i].reset();
  }
  return table;
}

// Writes a whole filter: header, payload, payload checksum. Throws std::ios_base::failure.
inline void write_filter(std::ostream& out, const FilterHeader& header,
                         std::span<const std::byte> payload) {
  const auto encoded = HeaderCodec::encode(header);
  const std::uint64_t checksum = XXH3_64bits(payload.data(), payload.size());
  out.write(reinterpret_cast<const char*>(encoded.data()), encoded.size());
  out.write(reinterpret_cast<const char*>(payload.data()),
            static_cast<std::streamsize>(payload.size()));
  out.write(reinterpret_cast<const char*>(&checksum), sizeof checksum);
  if (!out) throw std::ios_base::failure("writing the cuckoo filter failed");
}

template <class Table>
constexpr TableLayout layout_of() {
  return Table::kLayout == std::string_view("semi-sorted")   ? TableLayout::kSemiSorted
         : Table::kLayout == std::string_view("K-CAS words") ? TableLayout::kKcasWords
                                                             : TableLayout::kPacked;
}

// The shape of a Table, for messages and headers.
template <class Table>
FilterHeader shape_of() {
  FilterHeader h;
  h.layout = layout_of<Table>();
  h.fp_bits = Table::kFpBits;
  h.slots = Table::kSlots;
  return h;
}

// The rest of a filter whose header `h` was read: checks that the file's shape is Table's and
// its sizes are consistent, reads the payload into a new Table (directly where the stream's
// length was checked, else through chunks) with its checksum, and checks that every bucket is
// valid and that the occupied slots (+ victim) match the item count. Throws FormatError; builds
// nothing the caller sees unless everything holds.
template <class Table>
Table read_table(const FilterHeader& h, std::istream& in) {
  const FilterHeader mine = shape_of<Table>();
  if (h.layout != mine.layout || h.fp_bits != mine.fp_bits || h.slots != mine.slots) {
    throw FormatError("file holds a filter with " + h.shape() + "; this filter has " +
                      mine.shape());
  }
  if (h.payload_bytes != Table::payload_bytes(h.buckets)) {
    throw FormatError("payload size does not match the bucket count");
  }
  if (h.victim_used && (h.victim_fp == 0 || h.victim_fp > Table::kFpMask)) {
    throw FormatError("corrupted victim fingerprint");
  }
  Table table = [&] {
    if (!require_available(in, h.payload_bytes + sizeof(std::uint64_t))) {
      return table_from_unseekable<Table>(h, in);
    }
    Table direct(h.buckets);  // the stream holds the bytes: read them where they belong
    const std::span<std::byte> payload = direct.payload();
    read_checked_payload(in, h.payload_bytes,
                         [&](std::uint64_t at, std::size_t) { return payload.data() + at; });
    return direct;
  }();
  const auto occupied = table.count_occupied();
  if (!occupied) throw FormatError("malformed bucket in the cuckoo filter payload");
  if (*occupied + (h.victim_used ? 1 : 0) != h.items) {
    throw FormatError("item count does not match the table contents");
  }
  return table;
}

// Version 2: reads level `level`'s record, checks it against `expected` (the shape and sizes
// the file's header implies; items aside), then reads its payload as read_table does. Throws
// FormatError; builds nothing the caller sees unless everything holds.
template <class Table>
Table read_level(std::istream& in, unsigned level, const LevelRecord& expected) {
  const LevelRecord r = LevelRecord::read(in, level);
  if (r.fp_bits != expected.fp_bits || r.slots != expected.slots || r.buckets != expected.buckets ||
      r.payload_bytes != expected.payload_bytes) {
    throw FormatError(
        "level " + std::to_string(level) +
        " record does not match the header: " + std::to_string(r.buckets) + " buckets of " +
        std::to_string(r.slots) + " slots, " + std::to_string(r.fp_bits) + "-bit fingerprints, " +
        std::to_string(r.payload_bytes) + " payload bytes where the header implies " +
        std::to_string(expected.buckets) + ", " + std::to_string(expected.slots) + ", " +
        std::to_string(expected.fp_bits) + "-bit and " + std::to_string(expected.payload_bytes));
  }
  if (r.items > r.buckets * r.slots) {
    throw FormatError("item count of level " + std::to_string(level) + " larger than the level");
  }
  FilterHeader h = shape_of<Table>();
  h.buckets = r.buckets;
  h.items = r.items;
  h.payload_bytes = r.payload_bytes;
  return read_table<Table>(h, in);
}

}  // namespace ccf::detail
