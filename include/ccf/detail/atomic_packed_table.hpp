// AtomicPackedTable: PackedTable's exact bit layout, accessed through aligned 64-bit atomic
// words so that many threads may read and write it at once.
//
// Same memory image as PackedTable<F, b> (bucket i at bit i * F * b, little-endian), so a
// concurrent filter costs exactly the bits of a sequential one and shares its file format.
// A bucket of B = F * b <= 64 bits lies in one aligned word or straddles two:
//
//   word w            word w + 1
//   |....[bucket i low bits]|[high bits]....|
//
// Reads are acquire loads of the one or two words: a read of a straddling bucket is not atomic
// as a whole. Writes are release fetch_xor of the changed bits only, so writers of
// neighbouring buckets sharing a word never lose each other's updates, and a writer needs no
// CAS loop. Callers provide exclusion: the striped filter writes a bucket only while holding
// its stripe, and readers validate what they read against the stripe's version (a seqlock).
// The acquire/release pair is the seqlock's ordering (see striped_cuckoo_filter.hpp): a reader
// that loads a word a writer changed also sees the writer's earlier "locked" version. On x86
// both are plain moves / locked instructions: they cost nothing over relaxed.
#pragma once

#include <atomic>
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
class AtomicPackedTable {
 public:
  static_assert(FpBits * Slots <= 64 && (FpBits * Slots) % 8 == 0,
                "a concurrent bucket must fit one 64-bit word: F * b <= 64");
  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = Slots;
  static constexpr unsigned kBucketBits = FpBits * Slots;
  static constexpr std::uint32_t kFpMask =
      FpBits == 32 ? ~std::uint32_t{0} : (std::uint32_t{1} << FpBits) - 1;
  static constexpr std::string_view kLayout = "packed";

  explicit AtomicPackedTable(std::size_t buckets)
      : buckets_(buckets), storage_(payload_bytes(buckets) + kTailSlack) {}

  static constexpr std::size_t payload_bytes(std::size_t buckets) noexcept {
    return buckets * kBucketBits / 8;
  }

  std::size_t bucket_count() const noexcept { return buckets_; }
  std::size_t memory_bytes() const noexcept { return storage_.size(); }
  bool huge_pages_advised() const noexcept { return storage_.huge_pages_advised(); }

  // Both words load() reads: a bucket that straddles two cache lines (1 in 16 for 48-bit
  // buckets) would otherwise pay an unprefetched miss for its second line, which cost the
  // striped filter a quarter of its batched lookups (25 -> 33 M/s, one thread, 2^25 items).
  // Where both words share a line the second prefetch merges with the first.
  [[gnu::always_inline]] void prefetch(std::size_t bucket) const noexcept {
    prefetch_words<detail::prefetch_line>(bucket);
  }
  // The same for a bucket its caller may write next (an insert): fetched exclusive, so a store
  // needs no second transfer of the line from another core (detail/prefetch.hpp).
  [[gnu::always_inline]] void prefetch_for_write(std::size_t bucket) const noexcept {
    prefetch_words<detail::prefetch_line_for_write>(bucket);
  }

  // The bucket's bits. Acquire pairs with a writer's release store() (see the header).
  // Branch-free: the second load is of the word holding the bucket's LAST bit, which is the
  // first word again unless the bucket straddles two (a branch on that would mispredict a
  // quarter of the time and flush the lookahead that overlaps consecutive lookups' misses).
  [[gnu::always_inline]] std::uint64_t load(std::size_t bucket) const noexcept {
    // One read of the base pointer: after an acquire load the compiler would otherwise reload
    // it from *this before the next load.
    const std::uint64_t* const words = base();
    const std::size_t bit = bucket * kBucketBits;
    const unsigned shift = bit % 64;
    const std::uint64_t low = atomic_word(words, bit / 64).load(std::memory_order_acquire);
    if constexpr (64 % kBucketBits == 0) {
      return (low >> shift) & Lanes::kAllMask;  // buckets never straddle words
    } else {
      const std::uint64_t high =
          atomic_word(words, (bit + kBucketBits - 1) / 64).load(std::memory_order_acquire);
      // (high << 1) << (63 - shift) is high << (64 - shift), defined for shift = 0 too.
      return ((low >> shift) | ((high << 1) << (63 - shift))) & Lanes::kAllMask;
    }
  }

  // Replaces the bucket's bits `from` (as loaded, unchanged since: the caller holds the
  // bucket) by `to`.
  void store(std::size_t bucket, std::uint64_t from, std::uint64_t to) noexcept {
    const std::uint64_t flip = from ^ to;
    const std::size_t bit = bucket * kBucketBits;
    const unsigned shift = bit % 64;
    std::uint64_t* const words = base();
    atomic_word(words, bit / 64).fetch_xor(flip << shift, std::memory_order_release);
    if (shift + kBucketBits > 64) {
      atomic_word(words, bit / 64 + 1).fetch_xor(flip >> (64 - shift), std::memory_order_release);
    }
  }

  static bool holds(std::uint64_t bucket_bits, std::uint32_t fp) noexcept {
    return Lanes::lanes_equal(bucket_bits, fp) != 0;
  }

  [[gnu::always_inline]] bool contains(std::size_t bucket, std::uint32_t fp) const noexcept {
    return holds(load(bucket), fp);
  }
  bool has_empty(std::size_t bucket) const noexcept { return contains(bucket, 0); }
  unsigned free_slots(std::size_t bucket) const noexcept {
    return Lanes::count_zero_lanes(load(bucket));
  }
  std::uint32_t read(std::size_t bucket, unsigned slot) const noexcept {
    return Lanes::get(load(bucket), slot);
  }

  // Writers: the caller holds the bucket.
  bool try_insert(std::size_t bucket, std::uint32_t fp) noexcept {
    return replace_first(bucket, 0, fp);
  }
  bool try_erase(std::size_t bucket, std::uint32_t fp) noexcept {
    return replace_first(bucket, fp, 0);
  }
  std::uint32_t exchange(std::size_t bucket, unsigned slot, std::uint32_t fp) noexcept {
    const std::uint64_t bits = load(bucket);
    store(bucket, bits, Lanes::set(bits, slot, fp));
    return Lanes::get(bits, slot);
  }

  // Empties every bucket; only while no thread uses the table.
  void clear() noexcept { storage_.clear(); }

  // Raw access for save/load; only while no thread uses the table.
  std::span<const std::byte> payload() const noexcept {
    return {storage_.data(), payload_bytes(buckets_)};
  }
  std::span<std::byte> payload() noexcept { return {storage_.data(), payload_bytes(buckets_)}; }

  std::optional<std::uint64_t> count_occupied() const noexcept {
    std::uint64_t occupied = 0;
    for (std::size_t bucket = 0; bucket < buckets_; ++bucket) {
      const std::uint64_t bits = load(bucket);
      for (unsigned slot = 0; slot < Slots; ++slot) occupied += Lanes::get(bits, slot) != 0;
    }
    return occupied;
  }

 private:
  // Fetches the word holding the bucket's first bit and, where it may differ, its last bit's.
  template <void (*Fetch)(const void*) noexcept>
  [[gnu::always_inline]] void prefetch_words(std::size_t bucket) const noexcept {
    const std::size_t bit = bucket * kBucketBits;
    Fetch(base() + bit / 64);
    if constexpr (64 % kBucketBits != 0) Fetch(base() + (bit + kBucketBits - 1) / 64);
  }

  using Lanes = detail::BitLanes<FpBits, Slots>;
  static constexpr std::size_t kTailSlack = 8;  // the word a straddling last bucket reaches

  bool replace_first(std::size_t bucket, std::uint32_t from, std::uint32_t to) noexcept {
    const std::uint64_t bits = load(bucket);
    const std::uint64_t match = Lanes::lanes_equal(bits, from);
    if (match == 0) return false;
    store(bucket, bits, Lanes::set(bits, Lanes::first_flagged_lane(match), to));
    return true;
  }

  // The storage is 2 MiB or page aligned: every 8-byte word is aligned for atomic_ref. (An
  // atomic_ref cannot refer to const, hence the const_cast; loads never write.)
  std::uint64_t* base() const noexcept {
    return reinterpret_cast<std::uint64_t*>(const_cast<std::byte*>(storage_.data()));
  }
  static std::atomic_ref<std::uint64_t> atomic_word(const std::uint64_t* words,
                                                    std::size_t index) noexcept {
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t*>(words)[index]);
  }

  std::size_t buckets_;
  detail::PageBuffer storage_;
};

}  // namespace ccf
