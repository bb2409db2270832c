// KcasTable: one level of the lock-free filter's fingerprints
// (lockfree/lock_free_cuckoo_filter.hpp) in K-CAS words, read and written through the filter's
// K-CAS (kcas.hpp). It is the table the filter core (basic_cuckoo_filter.hpp) runs over under
// LockFreeSync (lock_free_sync.hpp).
//
//   slot words  | fp fp fp fp fp | fp fp fp fp fp | ...   L = floor(63 / F) slots per K-CAS
//               +----------------+----------------+       word: F = 4: 15, 7: 9, 8: 7,
//               bucket i = slots 4i .. 4i+3, slot s in word s / L, lane s % L    12: 5, 15: 4;
//                                                                       a bucket may straddle
//                                                                       2 words (never at 15)
//
// A fingerprint of 0 marks an empty slot; bit 63 of every word is the K-CAS's. The words lie in
// memory the owner provides (the filter's reserved region) and that reads as zero (empty) until
// written. The table itself only adds fingerprints (try_insert: one CAS into a free slot);
// every removal is the policy's K-CAS, which raises a stripe counter with it (slot() gives it
// the word and lane to name).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "ccf/detail/bit_lanes.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/prefetch.hpp"
#include "ccf/lockfree/kcas.hpp"

namespace ccf {

// Where a lookup calls a test hook that has `void on_lookup(LookupHookPoint)` (tests use it to
// run writes at exact points of a lookup of one level).
enum class LookupHookPoint : std::uint8_t {
  kAfterCounters,  // the two stripes' counters are read; no bucket yet
  kAfterBucket,    // a bucket was probed for a fingerprint (the primary first, then the
                   // alternate), by a lookup or by an erase looking for its copy
  kBeforeRecheck,  // neither bucket held the fingerprint; the counters are read again next
};

namespace lockfree {

// Calls the K-CAS hook's on_lookup(point), if it has one.
template <class Kcas>
void lookup_hook(Kcas& kcas, LookupHookPoint point) {
  if constexpr (requires(Kcas & k, LookupHookPoint p) { k.hook().on_lookup(p); }) {
    kcas.hook().on_lookup(point);
  }
}

template <unsigned FpBits, class Kcas>
class KcasTable {
 public:
  // 4, 8, 12: the widths a filter is made with (level 0); 7, 12, 15: the widths of its later
  // levels (lock_free_cuckoo_filter.hpp: the widest with as many slots per word as F + 3).
  static_assert(FpBits == 4 || FpBits == 7 || FpBits == 8 || FpBits == 12 || FpBits == 15,
                "lock-free fingerprints are 4, 7, 8, 12 or 15 bits (15, 9, 7, 5 or 4 per 63-bit "
                "word)");
  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = 4;
  static constexpr std::uint32_t kFpMask = (std::uint32_t{1} << FpBits) - 1;
  static constexpr unsigned kSlotsPerWord = KcasWord::kPayloadBits / kFpBits;
  using Lanes = ccf::detail::BitLanes<kFpBits, kSlots>;             // a bucket's bits
  using WordLanes = ccf::detail::BitLanes<kFpBits, kSlotsPerWord>;  // a word's payload

  static constexpr std::size_t payload_bytes(std::size_t buckets) noexcept {
    return (buckets * kSlots + kSlotsPerWord - 1) / kSlotsPerWord * 8;
  }

  // `words`: payload_bytes(buckets) of memory that reads as zero, used through `kcas` only.
  KcasTable(Kcas& kcas, KcasWord* words, std::uint64_t buckets) noexcept
      : kcas_(&kcas), words_(words), buckets_(buckets) {}

  std::size_t bucket_count() const noexcept { return buckets_; }
  std::size_t memory_bytes() const noexcept { return payload_bytes(buckets_); }

  // Slot `slot` of `bucket`: its word and lane.
  struct SlotRef {
    std::uint64_t word;
    unsigned lane;
  };
  static SlotRef slot_ref(std::uint64_t bucket, unsigned slot) noexcept {
    const std::uint64_t index = bucket * kSlots + slot;
    return {index / kSlotsPerWord, static_cast<unsigned>(index % kSlotsPerWord)};
  }
  KcasWord& word(const SlotRef& at) const noexcept { return words_[at.word]; }
  Kcas& kcas() const noexcept { return *kcas_; }

  // A bucket as read: the words its first and last slots lie in (the same word unless the
  // bucket straddles two), and their values. A straddling bucket's two words are read one
  // after the other, not atomically together: lookups' argument is per slot (docs/lockfree.md).
  struct BucketRead {
    SlotRef first;            // slot 0
    std::uint64_t low, high;  // high == low when the bucket lies in one word
    std::uint64_t bits() const noexcept {
      return ((low >> (first.lane * kFpBits)) |
              (high << ((kSlotsPerWord - first.lane) * kFpBits))) &
             Lanes::kAllMask;
    }
    // Slot `slot`'s word, lane, and the value read from that word. (The high part of bits()
    // shifts a one-word bucket's copy of `low` out of the mask.)
    std::pair<SlotRef, std::uint64_t> locate_slot(unsigned slot) const noexcept {
      const unsigned lane = first.lane + slot;
      const bool second = lane >= kSlotsPerWord;  // no branch: which word is unpredictable
      return {{first.word + second, lane - (second ? kSlotsPerWord : 0)}, second ? high : low};
    }
  };
  [[gnu::always_inline]] BucketRead read_bucket(std::uint64_t bucket) const {
    const SlotRef first = slot_ref(bucket, 0);
    const auto [low, high] = kcas_->read_pair(words_[first.word], words_[last_word(first)]);
    return {first, low, high};
  }
  // The bucket's four slots as Lanes.
  [[gnu::always_inline]] std::uint64_t bits(std::uint64_t bucket) const {
    return read_bucket(bucket).bits();
  }

  [[gnu::always_inline]] void prefetch(std::uint64_t bucket) const noexcept {
    const SlotRef first = slot_ref(bucket, 0);
    ccf::detail::prefetch_line(&words_[first.word]);
    ccf::detail::prefetch_line(&words_[last_word(first)]);
  }
  // For an insert's buckets, one of which its K-CAS will write: fetched exclusive.
  [[gnu::always_inline]] void prefetch_for_write(std::uint64_t bucket) const noexcept {
    const SlotRef first = slot_ref(bucket, 0);
    ccf::detail::prefetch_line_for_write(&words_[first.word]);
    ccf::detail::prefetch_line_for_write(&words_[last_word(first)]);
  }

  // ---- the table interface of the core and the path search ------------------------------
  std::uint32_t read(std::uint64_t bucket, unsigned slot) const {
    return Lanes::get(bits(bucket), slot);
  }
  std::array<std::uint32_t, kSlots> fingerprints(std::uint64_t bucket) const {
    const std::uint64_t bucket_bits = bits(bucket);
    std::array<std::uint32_t, kSlots> fps;
    for (unsigned slot = 0; slot < kSlots; ++slot) fps[slot] = Lanes::get(bucket_bits, slot);
    return fps;
  }
  bool has_empty(std::uint64_t bucket) const { return Lanes::zero_lanes(bits(bucket)) != 0; }
  unsigned free_slots(std::uint64_t bucket) const { return Lanes::count_zero_lanes(bits(bucket)); }
  [[gnu::always_inline]] bool contains(std::uint64_t bucket, std::uint32_t fp) const {
    const bool found = Lanes::lanes_equal(bits(bucket), fp) != 0;
    lookup_hook(*kcas_, LookupHookPoint::kAfterBucket);
    return found;
  }
  // One CAS into a free slot of `bucket`; false if it has none. Retries a lost CAS (another
  // thread's write to the word succeeded: lock-free).
  bool try_insert(std::uint64_t bucket, std::uint32_t fp) {
    for (;;) {
      const BucketRead read = read_bucket(bucket);
      const std::uint64_t empty = Lanes::zero_lanes(read.bits());
      if (empty == 0) return false;
      // The CAS expects the value just read: the slot is empty in it.
      const auto [at, value] = read.locate_slot(Lanes::first_flagged_lane(empty));
      if (kcas_->cas(words_[at.word], value, WordLanes::set(value, at.lane, fp))) return true;
    }
  }

 private:
  // The word of the bucket's last slot, chosen without a branch (which word it is, is
  // unpredictable): a one-word bucket reads its word twice rather than the next word, which
  // lies in another cache line one time in eight and which it does not need.
  static std::uint64_t last_word(const SlotRef& first) noexcept {
    return first.word + (first.lane + kSlots > kSlotsPerWord);
  }

  Kcas* kcas_;
  KcasWord* words_;
  std::uint64_t buckets_;
};

// A level's slot words as a version-2 file holds them (detail/filter_format.hpp): the words'
// payloads, 64-bit little-endian, in KcasTable's layout; outside memory shared through a K-CAS,
// so plain bytes. Saving copies a level's words into one; loading reads a file's into one, whose
// count_occupied() validates every word (bit 63 and the bits above the last lane zero, no
// fingerprint in the lanes past the level's last slot) before the level takes its fingerprints.
// The table interface read_table needs (detail/filter_format.hpp): kLayout, kFpBits, kSlots,
// kFpMask, payload_bytes, a constructor from the bucket count, payload(), count_occupied().
template <unsigned FpBits>
class KcasTableImage {
 public:
  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = 4;
  static constexpr std::uint32_t kFpMask = (std::uint32_t{1} << FpBits) - 1;
  static constexpr unsigned kSlotsPerWord = KcasWord::kPayloadBits / kFpBits;
  static constexpr std::string_view kLayout = "K-CAS words";
  using WordLanes = ccf::detail::BitLanes<kFpBits, kSlotsPerWord>;

  static constexpr std::size_t payload_bytes(std::size_t buckets) noexcept {
    return (buckets * kSlots + kSlotsPerWord - 1) / kSlotsPerWord * 8;
  }

  explicit KcasTableImage(std::uint64_t buckets)
      : buckets_(buckets), bytes_(payload_bytes(buckets)) {}

  std::size_t bucket_count() const noexcept { return buckets_; }
  std::span<const std::byte> payload() const noexcept { return {bytes_.data(), bytes_.size()}; }
  std::span<std::byte> payload() noexcept { return {bytes_.data(), bytes_.size()}; }

  std::uint64_t word(std::size_t index) const noexcept {
    return ccf::detail::load_u64(bytes_.data() + index * 8);
  }
  void set_word(std::size_t index, std::uint64_t value) noexcept {
    ccf::detail::store_u64(bytes_.data() + index * 8, value);
  }
  std::size_t words() const noexcept { return bytes_.size() / 8; }

  std::uint32_t read(std::uint64_t bucket, unsigned slot) const noexcept {
    const std::uint64_t index = bucket * kSlots + slot;
    return WordLanes::get(word(index / kSlotsPerWord),
                          static_cast<unsigned>(index % kSlotsPerWord));
  }

  // Occupied slots; nothing if a word has a bit set outside its lanes, or a lane past the
  // level's last slot holds a fingerprint.
  std::optional<std::uint64_t> count_occupied() const noexcept {
    const std::uint64_t slots = buckets_ * kSlots;
    std::uint64_t occupied = 0;
    for (std::size_t w = 0; w < words(); ++w) {
      const std::uint64_t value = word(w);
      if ((value & ~WordLanes::kAllMask) != 0) return std::nullopt;
      for (unsigned lane = 0; lane < kSlotsPerWord; ++lane) {
        if (WordLanes::get(value, lane) == 0) continue;
        if (w * kSlotsPerWord + lane >= slots) return std::nullopt;
        ++occupied;
      }
    }
    return occupied;
  }

 private:
  std::uint64_t buckets_;
  ccf::detail::PageBuffer bytes_;
};

}  // namespace lockfree
}  // namespace ccf
