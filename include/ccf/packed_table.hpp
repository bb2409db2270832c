// PackedTable: the plain bucket storage of a cuckoo filter.
//
// m buckets of `Slots` fingerprints of `FpBits` bits each, packed back to back with no padding
// between buckets, so the table costs exactly m * Slots * FpBits bits (+ 8 bytes of tail slack
// that lets every access be one unaligned 64-bit load). A fingerprint value of 0 marks an empty
// slot; the filter never stores 0.
//
//   bucket i starts at byte i * kBucketBytes; inside it, slot s holds bits [s*F, (s+1)*F):
//
//   byte: | 0        | 1        | 2        | 3        | 4        | 5        | 6 ...
//         |<-- slot 0 (F=12) -->|<-- slot 1 -->|<-- slot 2 -->|<-- slot 3 -->| next bucket
//
// A bucket is processed as kGroups groups of kGroupLanes slots, each group small enough to sit
// in one 64-bit word (e.g. F=12, b=4: one 48-bit group; F=16, b=8: two 64-bit groups), and each
// group is searched with the SWAR lane tricks of bit_lanes.hpp: a lookup in a bucket is one
// load, one xor, one subtract and two ands -- no per-slot loop.
//
// Not thread-safe: stores are 64-bit read-modify-writes that may overlap a neighbouring bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "ccf/detail/bit_lanes.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/prefetch.hpp"

namespace ccf {

template <unsigned FpBits, unsigned Slots = 4>
class PackedTable {
  static constexpr unsigned lanes_per_group() {
    // The most slots whose bits fill whole bytes and fit one 64-bit word, dividing Slots.
    unsigned best = 1;
    for (unsigned lanes = 1; lanes <= Slots; ++lanes) {
      const unsigned bits = lanes * FpBits;
      if (bits <= 64 && bits % 8 == 0 && Slots % lanes == 0) best = lanes;
    }
    return best;
  }

 public:
  static_assert(FpBits == 4 || FpBits == 8 || FpBits == 12 || FpBits == 16 || FpBits == 32,
                "supported fingerprint widths: 4, 8, 12, 16, 32 bits");
  static_assert(Slots == 2 || Slots == 4 || Slots == 8, "supported bucket sizes: 2, 4, 8 slots");

  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = Slots;
  static constexpr std::uint32_t kFpMask =
      FpBits == 32 ? ~std::uint32_t{0} : (std::uint32_t{1} << FpBits) - 1;
  static constexpr std::size_t kBucketBytes = std::size_t{FpBits} * Slots / 8;
  static constexpr std::string_view kLayout = "packed";
  static constexpr double kBitsPerSlot = FpBits;

  explicit PackedTable(std::size_t buckets)
      : buckets_(buckets), storage_(payload_bytes(buckets) + kTailSlack) {}

  static constexpr std::size_t payload_bytes(std::size_t buckets) noexcept {
    return buckets * kBucketBytes;
  }

  std::size_t bucket_count() const noexcept { return buckets_; }
  std::size_t memory_bytes() const noexcept { return storage_.size(); }
  bool huge_pages_advised() const noexcept { return storage_.huge_pages_advised(); }

  // The first and the last byte a probe of the bucket loads: a bucket whose loads straddle two
  // cache lines (1 in 11 for F = 12, b = 4) would otherwise pay an unprefetched miss for the
  // second. Where both are one line the second prefetch merges with the first.
  [[gnu::always_inline]] void prefetch(std::size_t bucket) const noexcept {
    prefetch_in(storage_.data(), bucket);
  }

  bool contains(std::size_t bucket, std::uint32_t fp) const noexcept {
    return contains_in(storage_.data(), bucket, fp);
  }

  // The same two steps on buckets laid out at `payload` by a table of this shape (a file's
  // payload mapped read-only: mapped_cuckoo_filter.hpp). Every bit pattern is a valid bucket;
  // `payload` must be readable for kTailSlack bytes past the last bucket.
  [[gnu::always_inline]] static void prefetch_in(const std::byte* payload,
                                                 std::size_t bucket) noexcept {
    const std::byte* const first = payload + bucket * kBucketBytes;
    detail::prefetch_line(first);
    if constexpr (!kLoadsStayInOneLine) detail::prefetch_line(first + kLoadedBytes - 1);
  }
  static bool contains_in(const std::byte* payload, std::size_t bucket, std::uint32_t fp) noexcept {
    bool found = false;
    for (unsigned g = 0; g < kGroups; ++g) {
      found |= Lanes::lanes_equal(group_in(payload, bucket, g), fp) != 0;
    }
    return found;
  }
  // Bytes past the payload that a probe of the last bucket may load.
  static constexpr std::size_t kTailSlack = 8;

  // Empty slots hold fingerprint 0.
  bool has_empty(std::size_t bucket) const noexcept { return contains(bucket, 0); }
  unsigned free_slots(std::size_t bucket) const noexcept {
    unsigned free = 0;
    for (unsigned g = 0; g < kGroups; ++g) free += Lanes::count_zero_lanes(group(bucket, g));
    return free;
  }

  bool try_insert(std::size_t bucket, std::uint32_t fp) noexcept {
    for (unsigned g = 0; g < kGroups; ++g) {
      const std::uint64_t word = group(bucket, g);
      if (const std::uint64_t empty = Lanes::zero_lanes(word)) {
        set_group(bucket, g,
                  word | std::uint64_t{fp} << (Lanes::first_flagged_lane(empty) * FpBits));
        return true;
      }
    }
    return false;
  }

  // Clears one slot holding `fp`; false if the bucket has none.
  bool try_erase(std::size_t bucket, std::uint32_t fp) noexcept {
    for (unsigned g = 0; g < kGroups; ++g) {
      const std::uint64_t word = group(bucket, g);
      if (const std::uint64_t match = Lanes::lanes_equal(word, fp)) {
        set_group(bucket, g, Lanes::set(word, Lanes::first_flagged_lane(match), 0));
        return true;
      }
    }
    return false;
  }

  std::uint32_t read(std::size_t bucket, unsigned slot) const noexcept {
    return Lanes::get(group(bucket, slot / kGroupLanes), slot % kGroupLanes);
  }

  // Stores `fp` in `slot` and returns what was there (the cuckoo "kick").
  std::uint32_t exchange(std::size_t bucket, unsigned slot, std::uint32_t fp) noexcept {
    const unsigned g = slot / kGroupLanes;
    const std::uint64_t word = group(bucket, g);
    set_group(bucket, g, Lanes::set(word, slot % kGroupLanes, fp));
    return Lanes::get(word, slot % kGroupLanes);
  }

  std::span<const std::byte> payload() const noexcept {
    return {storage_.data(), payload_bytes(buckets_)};
  }
  std::span<std::byte> payload() noexcept { return {storage_.data(), payload_bytes(buckets_)}; }

  void clear() noexcept { storage_.clear(); }

  // Occupied slots; used to validate a table read from a file (any bit pattern is a valid
  // packed table, so this never reports a malformed one).
  std::optional<std::uint64_t> count_occupied() const noexcept {
    std::uint64_t occupied = 0;
    for (std::size_t bucket = 0; bucket < buckets_; ++bucket) {
      for (unsigned slot = 0; slot < Slots; ++slot) occupied += read(bucket, slot) != 0;
    }
    return occupied;
  }

 private:
  static constexpr unsigned kGroupLanes = lanes_per_group();
  static constexpr unsigned kGroups = Slots / kGroupLanes;
  static constexpr std::size_t kGroupBytes = kBucketBytes / kGroups;
  static constexpr std::size_t kLoadedBytes = (kGroups - 1) * kGroupBytes + 8;  // by group()
  static constexpr bool kLoadsStayInOneLine =
      64 % kBucketBytes == 0 && kLoadedBytes <= kBucketBytes;
  using Lanes = detail::BitLanes<FpBits, kGroupLanes>;

  static std::uint64_t group_in(const std::byte* payload, std::size_t bucket, unsigned g) noexcept {
    return detail::load_u64(payload + bucket * kBucketBytes + g * kGroupBytes) & Lanes::kAllMask;
  }
  std::uint64_t group(std::size_t bucket, unsigned g) const noexcept {
    return group_in(storage_.data(), bucket, g);
  }
  void set_group(std::size_t bucket, unsigned g, std::uint64_t word) noexcept {
    std::byte* at = storage_.data() + bucket * kBucketBytes + g * kGroupBytes;
    // Bytes past the group belong to the next bucket: write them back unchanged.
    detail::store_u64(at, (detail::load_u64(at) & ~Lanes::kAllMask) | word);
  }

  std::size_t buckets_;
  detail::PageBuffer storage_;
};

}  // namespace ccf
