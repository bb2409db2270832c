// MappedCuckooFilter: a read-only cuckoo filter served from its file mapped into memory, not
// loaded: open() maps the file and checks its header, and lookups read the pages they touch,
// which the kernel faults in on demand -- a 10 GB filter opens in the time of one mmap.
//
// What open() checks: everything of docs/file-format.md that needs no payload byte -- magic,
// version, header checksum, sane parameters (HeaderCodec::read), a packed layout of a supported
// shape, payload bytes = the bucket count's, a victim fingerprint within F bits -- and that the
// file is at least 96 + payload + 8 bytes long. Invariant: every probe stays inside the mapping
// (a probe loads up to PackedTable::kTailSlack = 8 bytes past the last bucket, and the payload
// checksum is those 8 bytes).
//
// What it does not check: the payload checksum, which needs every byte (and so every page).
// verify() checks it on request. Lookups are safe without it: any bit pattern is a valid packed
// bucket, so a corrupted payload can change answers but never where a lookup reads. Semi-sorted
// files are refused (FormatError): a corrupted bucket code there would index past the decode
// table, so they need the whole validation load() does.
//
// Thread safety: every member is const and reads only; any number of threads may call them.
// The file must not be truncated while mapped (reads past its new end raise SIGBUS); ccf's
// writers replace a file by rename, which leaves an existing mapping intact.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <istream>
#include <span>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/detail/addressing.hpp"
#include "ccf/detail/filter_format.hpp"
#include "ccf/detail/key_api.hpp"
#include "ccf/packed_table.hpp"
#include "ccf/status.hpp"

namespace ccf {
namespace detail {

// A seekable input streambuf over bytes in memory, without a copy (headers of mapped files,
// filters read from a byte string). Seekable, so a load reads the payload straight into place.
class MemoryStreambuf : public std::streambuf {
 public:
  explicit MemoryStreambuf(std::span<const std::byte> bytes) {
    // std::streambuf's get area is char*, but an input-only buffer never writes through it.
    char* const begin = const_cast<char*>(reinterpret_cast<const char*>(bytes.data()));
    setg(begin, begin, begin + bytes.size());
  }

 protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir,
                   std::ios_base::openmode which) override {
    const off_type size = egptr() - eback();
    const off_type base = dir == std::ios_base::beg   ? 0
                          : dir == std::ios_base::cur ? gptr() - eback()
                                                      : size;
    const off_type to = base + off;
    if ((which & std::ios_base::in) == 0 || to < 0 || to > size) return pos_type(off_type(-1));
    setg(eback(), eback() + to, egptr());
    return pos_type(to);
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
    return seekoff(off_type(pos), std::ios_base::beg, which);
  }
};

// A whole regular file mapped read-only and shared (pages come from the page cache on demand).
class ReadOnlyMapping {
 public:
  // Throws std::system_error when the file cannot be opened or mapped, FormatError when it is
  // not a regular file.
  explicit ReadOnlyMapping(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + path);
    struct stat st {};
    const bool stated = ::fstat(fd, &st) == 0;
    const int stat_errno = errno;
    if (stated && S_ISREG(st.st_mode) && st.st_size > 0) {
      size_ = static_cast<std::size_t>(st.st_size);
      void* const mapping = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
      const int map_errno = errno;
      ::close(fd);
      if (mapping == MAP_FAILED) {
        throw std::system_error(map_errno, std::generic_category(), "cannot map " + path);
      }
      data_ = static_cast<const std::byte*>(mapping);
      return;
    }
    ::close(fd);
    if (!stated)
      throw std::system_error(stat_errno, std::generic_category(), "cannot stat " + path);
    if (!S_ISREG(st.st_mode)) throw FormatError(path + " is not a regular file");
    // An empty file maps nothing: the header check reports it.
  }
  ReadOnlyMapping(ReadOnlyMapping&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  ReadOnlyMapping& operator=(ReadOnlyMapping&& other) noexcept {
    ReadOnlyMapping(std::move(other)).swap(*this);
    return *this;
  }
  ReadOnlyMapping(const ReadOnlyMapping&) = delete;
  ReadOnlyMapping& operator=(const ReadOnlyMapping&) = delete;
  ~ReadOnlyMapping() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  void swap(ReadOnlyMapping& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Lookups of one packed shape in a payload laid out by Table (KeyApi gives the key-level calls,
// contains_many through the prefetching pipeline). Holds no memory of its own.
template <class Table>
class MappedTable : public KeyApi<MappedTable<Table>> {
  friend class KeyApi<MappedTable>;

 public:
  static constexpr unsigned kFpBits = Table::kFpBits;
  static constexpr unsigned kSlots = Table::kSlots;

  // `payload` holds the header's buckets and Table::kTailSlack readable bytes after them.
  MappedTable(const FilterHeader& h, const std::byte* payload) noexcept
      : addressing_(h.buckets),
        payload_(payload),
        seed_(h.seed),
        victim_{h.victim_used, h.victim_bucket, h.victim_fp} {}

  std::uint64_t seed() const noexcept { return seed_; }

 private:
  struct Victim {
    bool used;
    std::uint64_t bucket;
    std::uint32_t fp;
  };

  [[gnu::always_inline]] Location stage_lookup(std::uint64_t hash) const noexcept {
    const Location at = locate(addressing_, hash);
    Table::prefetch_in(payload_, at.primary);
    Table::prefetch_in(payload_, at.alternate);
    return at;
  }
  bool finish_lookup(const Location& at) const noexcept {
    const bool in_table = found_in_either(Table::contains_in(payload_, at.primary, at.fp),
                                          Table::contains_in(payload_, at.alternate, at.fp));
    return in_table | (victim_.used && victim_.fp == at.fp &&
                       (victim_.bucket == at.primary || victim_.bucket == at.alternate));
  }
  bool contains_hash(std::uint64_t hash) const noexcept {
    return finish_lookup(locate(addressing_, hash));
  }

  Addressing<kFpBits> addressing_;
  const std::byte* payload_;
  std::uint64_t seed_;
  Victim victim_;
};

template <unsigned F>
using MappedPackedTables =
    std::variant<MappedTable<PackedTable<F, 2>>, MappedTable<PackedTable<F, 4>>,
                 MappedTable<PackedTable<F, 8>>>;
using MappedTableVariant =
    typename concat_variants<MappedPackedTables<4>, MappedPackedTables<8>, MappedPackedTables<12>,
                             MappedPackedTables<16>, MappedPackedTables<32>>::type;

}  // namespace detail

class MappedCuckooFilter {
 public:
  // Maps `path` and checks its header (above). Throws FormatError for a file that is not a
  // packed version-1 cuckoo filter of a supported shape or is too short for its payload, and
  // std::system_error when the file cannot be opened or mapped.
  static MappedCuckooFilter open(const std::string& path) {
    detail::ReadOnlyMapping mapping(path);
    detail::MemoryStreambuf buffer(mapping.bytes());
    std::istream in(&buffer);
    const detail::FilterHeader h = detail::HeaderCodec::read(in);
    if (h.layout != detail::TableLayout::kPacked) {
      throw FormatError("a memory-mapped filter reads packed layouts only; this file holds " +
                        h.shape() + " (load it instead)");
    }
    detail::MappedTableVariant table = select<0>(h, mapping.bytes().data() + kPayloadOffset);
    const std::uint64_t needed = kPayloadOffset + h.payload_bytes + sizeof(std::uint64_t);
    if (mapping.bytes().size() < needed) {
      throw FormatError("truncated cuckoo filter: " + std::to_string(needed) +
                        " bytes needed for its header, payload and checksum, " +
                        std::to_string(mapping.bytes().size()) + " present");
    }
    return MappedCuckooFilter(std::move(mapping), h, table);
  }

  bool contains(std::uint64_t key) const noexcept {
    return std::visit([&](const auto& t) { return t.contains(key); }, table_);
  }
  bool contains(std::string_view key) const noexcept {
    return std::visit([&](const auto& t) { return t.contains(key); }, table_);
  }
  // out[i] = contains(keys[i]) through the prefetching pipeline; returns the hits.
  template <class Key>
  std::size_t contains_many(std::span<const Key> keys, std::span<bool> out) const {
    return std::visit([&](const auto& t) { return t.contains_many(keys, out); }, table_);
  }

  // Recomputes the payload's checksum (reads every page of the file); throws FormatError
  // "cuckoo filter payload checksum mismatch (corrupted file)" when it does not hold.
  void verify() const {
    const std::byte* const payload = mapping_.bytes().data() + kPayloadOffset;
    std::uint64_t stored = 0;
    std::memcpy(&stored, payload + header_.payload_bytes, sizeof stored);
    if (stored != XXH3_64bits(payload, header_.payload_bytes)) {
      throw FormatError("cuckoo filter payload checksum mismatch (corrupted file)");
    }
  }

  // The header's item count (victim included) and the table's slots.
  std::size_t size() const noexcept { return header_.items; }
  std::size_t capacity() const noexcept { return header_.buckets * header_.slots; }
  std::size_t requested_capacity() const noexcept { return header_.capacity; }
  unsigned fp_bits() const noexcept { return header_.fp_bits; }
  unsigned slots_per_bucket() const noexcept { return header_.slots; }
  std::uint64_t seed() const noexcept { return header_.seed; }
  std::string shape() const { return header_.shape(); }
  std::size_t file_bytes() const noexcept { return mapping_.bytes().size(); }

 private:
  static constexpr std::size_t kPayloadOffset = detail::FilterHeader::kEncodedSize;

  MappedCuckooFilter(detail::ReadOnlyMapping&& mapping, const detail::FilterHeader& h,
                     const detail::MappedTableVariant& table)
      : mapping_(std::move(mapping)), header_(h), table_(table) {}

  // The alternative of h's shape over `payload`, after read_table's shape checks.
  template <std::size_t I>
  static detail::MappedTableVariant select(const detail::FilterHeader& h,
                                           const std::byte* payload) {
    if constexpr (I == std::variant_size_v<detail::MappedTableVariant>) {
      throw FormatError("unsupported filter shape in file: " + h.shape() +
                        " (supported: " + std::string(AnyCuckooFilter::kSupported) + ")");
    } else {
      using Mapped = std::variant_alternative_t<I, detail::MappedTableVariant>;
      if (Mapped::kFpBits != h.fp_bits || Mapped::kSlots != h.slots)
        return select<I + 1>(h, payload);
      using Table = PackedTable<Mapped::kFpBits, Mapped::kSlots>;
      if (h.payload_bytes != Table::payload_bytes(h.buckets)) {
        throw FormatError("payload size does not match the bucket count");
      }
      if (h.victim_used && (h.victim_fp == 0 || h.victim_fp > Table::kFpMask)) {
        throw FormatError("corrupted victim fingerprint");
      }
      static_assert(Table::kTailSlack <= sizeof(std::uint64_t), "probes end in the checksum");
      return detail::MappedTableVariant(std::in_place_index<I>, h, payload);
    }
  }

  detail::ReadOnlyMapping mapping_;
  detail::FilterHeader header_;
  detail::MappedTableVariant table_;
};

}  // namespace ccf
