// LockFreeCuckooFilter: a lock-free concurrent cuckoo filter after "Lock-free concurrent
// cuckoo filter" (J. Software 2025): K-CAS moves, path discovery separated from migration,
// removal counters for lookups, growth by levels. chtbench: lf-cuckoo-filter. The design, the
// space figures and the full argument are in docs/lockfree.md.
//
// Layout of one level (m * 2^k buckets of 4 slots of F bits):
//
//   slot words  | fp fp fp fp fp | fp fp fp fp fp | ...   L = floor(63 / F) slots per K-CAS
//               +----------------+----------------+       word (F = 12: 5, F = 8: 7, F = 4:
//               bucket i = slots 4i .. 4i+3, slot s in word s / L, lane s % L    15); a bucket
//                                                                       may straddle 2 words
//   counters    | c0 | c1 | ... | c(S-1) |    S stripes (a power of two, about one per 128
//                                            buckets); bucket i's stripe is i mod S
//
// A fingerprint of 0 marks an empty slot. Bit 63 of every word is the K-CAS's (kcas.hpp).
// A stripe's counter is raised by every write that REMOVES a fingerprint from one of its
// buckets (an erase, or the source side of a migration), in the same K-CAS as the removal.
// Writes that add a fingerprint (an insert) are one single-word CAS and raise nothing.
//
// Operations (no locks anywhere; a thread stopped at any point never blocks another):
//   contains  for each level, from the newest (largest) to level 0: read the counters of
//             both buckets' stripes, read both buckets, read the counters again. Found in a
//             bucket: present. Not found and both counters unchanged: absent from this level.
//             Else retry the level.
//   insert    into the newest level: a free slot in i1 or i2 takes one CAS; else breadth-
//             first path discovery that writes nothing (detail/cuckoo_path.hpp), then
//             migration from the empty end backwards, one K-CAS per step (source slot
//             cleared + source stripe's counter raised + target slot filled); the last step,
//             out of i1 or i2, fills the slot it vacates with the new fingerprint in the same
//             K-CAS. A step whose target has no room or whose K-CAS loses a race restarts
//             discovery. No path:
//             the filter grows (if allowed) and the insert goes to the new level.
//   erase     for each level from the newest to level 0: the first copy of the fingerprint
//             in the key's two buckets is cleared by a K-CAS that also raises the stripe's
//             counter; a level reports "none here" only after the counter check of contains.
//
// Why no present item is missed (numbered for docs/lockfree.md, which has the whole proof):
//   (1) A scan of one level that finds nothing with unchanged counters proves: no
//       fingerprint left either bucket between the first and the second counter read, so any
//       copy that was in a bucket when the counters were first read was still in its slot
//       when the scan read that slot. Copies never move inside a bucket; a move between
//       buckets is a removal. Counters are 63 bits: an unchanged value means no removal unless
//       exactly a multiple of 2^63 removals hit one stripe during the scan (centuries).
//   (2) Every write that can take a copy away from a reader is a removal: erase and the
//       source of a migration, both K-CAS with the counter. An insert's own fingerprint only
//       adds (the last migration step writes it where the copy it moves out was).
//   (3) Levels nest (detail/nested_addressing.hpp): keys that collide in level k (same
//       fingerprint, same bucket pair) collide in every smaller level.
//   (4) erase removes a copy from the NEWEST level that has one. A copy that belongs to
//       another key z is then in z's pair of that level, so z collides with the erased key x
//       there and in every older level; x's own copy lies in that level or an older one, and
//       z can be charged to it: every live key keeps a copy it can be charged to, and a key's
//       charged level only ever decreases.
//   (5) contains and erase scan levels newest first, so a key whose charged copy moves to an
//       older level during the scan is met again further down.
//
// Precondition of erase, as for every cuckoo filter: the key was inserted (that insert
// returned before erase was called) and not erased since. Erasing anything else removes
// another key's fingerprint.
//
// Progress: contains retries a level only when a removal completed in one of its stripes;
// insert and erase retry only when another operation's CAS or K-CAS succeeded: all lock-free.
// Memory: K-CAS descriptors are recycled through per-thread pools and reclaimed by epochs
// (reclamation.hpp); a stalled thread delays reclamation, never progress. Growth allocates
// nothing: the address space of every level is reserved at construction
// (detail/page_buffer.hpp, ReservedRegion) and growing commits the next level's pages, an
// idempotent call that threads racing to grow all make (no thread waits, no level is built
// twice). A level's pages are zero (empty) until touched.
//
// Space: 64 / L bits per slot (12.8 at F = 12, 9.14 at F = 8) plus 64 bits per stripe
// (0.125 per slot); see docs/lockfree.md for measured bits per item.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <new>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "ccf/detail/bit_lanes.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/filter_format.hpp"
#include "ccf/detail/key_api.hpp"
#include "ccf/detail/nested_addressing.hpp"
#include "ccf/detail/occupancy_api.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/prefetch.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/filter_options.hpp"
#include "ccf/hash.hpp"
#include "ccf/lockfree/kcas.hpp"
#include "ccf/packed_table.hpp"
#include "ccf/status.hpp"

namespace ccf {

// Where a lookup calls a test hook that has `void on_lookup(LookupHookPoint)` (tests use it
// to run writes at exact points of a lookup of one level).
enum class LookupHookPoint : std::uint8_t {
  kAfterCounters,   // the two stripes' counters are read; no bucket yet
  kBetweenBuckets,  // the primary bucket is read, the alternate not yet
  kBeforeRecheck,   // neither bucket held the fingerprint; the counters are read again next
};

template <unsigned FpBits = 12, class Stats = lockfree::NoKcasStats,
          class Hook = lockfree::NoKcasHook>
class LockFreeCuckooFilter
    : public detail::KeyApi<LockFreeCuckooFilter<FpBits, Stats, Hook>>,
      public detail::OccupancyApi<LockFreeCuckooFilter<FpBits, Stats, Hook>> {
  friend class detail::KeyApi<LockFreeCuckooFilter>;
  friend class detail::OccupancyApi<LockFreeCuckooFilter>;

 public:
  static_assert(FpBits == 4 || FpBits == 8 || FpBits == 12,
                "lock-free fingerprints are 4, 8 or 12 bits (15, 7 or 5 per 63-bit word)");
  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = 4;
  static constexpr unsigned kSlotsPerWord = lockfree::KcasWord::kPayloadBits / kFpBits;
  static constexpr unsigned kPathDepth = detail::kConcurrentPathDepth<kSlots>;
  // A grown filter has at most this many levels: m, 2m, ..., 128m buckets (255 m in all).
  static constexpr unsigned kMaxLevels = 8;
  // Source word, target word, source stripe's counter.
  using kcas_type = lockfree::Kcas<3, Stats, Hook>;

  struct Options {
    FilterOptions filter{};
    bool grow = true;  // add a level twice as large when full (else: kFull)
  };

  // Throws std::invalid_argument for capacity 0, a max_load outside (0, 1] or a size beyond
  // the 64 TiB table limit; std::bad_alloc if the memory cannot be had.
  explicit LockFreeCuckooFilter(std::size_t capacity, Options options = {}, Hook hook = {})
      : LockFreeCuckooFilter(detail::checked_bucket_count<LevelShape>(capacity, options.filter),
                             capacity, options, std::move(hook)) {}
  // The constructor every filter has (basic_cuckoo_filter.hpp), growth on.
  LockFreeCuckooFilter(std::size_t capacity, const FilterOptions& options)
      : LockFreeCuckooFilter(capacity, Options{options, true}) {}

  ~LockFreeCuckooFilter() {
    kcas_.drain();  // descriptors still refer to words: settle them while the words exist
  }
  LockFreeCuckooFilter(const LockFreeCuckooFilter&) = delete;
  LockFreeCuckooFilter& operator=(const LockFreeCuckooFilter&) = delete;

  // insert, contains, erase, contains_many, insert_many: detail/key_api.hpp.

  std::size_t size() const noexcept { return static_cast<std::size_t>(items_.value()); }
  // Slots in the levels grown so far.
  std::size_t capacity() const noexcept {
    std::size_t slots = 0;
    for (unsigned k = 0; k < levels(); ++k) slots += levels_[k].buckets * kSlots;
    return slots;
  }
  std::size_t requested_capacity() const noexcept { return requested_capacity_; }
  // Slots of level k and how many hold a fingerprint (a scan: exact when no writer runs). Each
  // level's share of the false-positive rate follows its own load. std::out_of_range unless
  // k < levels().
  std::size_t level_capacity(unsigned k) const { return grown_level(k).buckets * kSlots; }
  std::size_t level_occupied(unsigned k) const {
    grown_level(k);
    std::size_t occupied = 0;
    for (std::uint64_t bucket = 0; bucket < levels_[k].buckets; ++bucket) {
      const std::uint64_t bits = bucket_bits(levels_[k], bucket);
      for (unsigned slot = 0; slot < kSlots; ++slot) occupied += BucketLanes::get(bits, slot) != 0;
    }
    return occupied;
  }
  std::size_t levels() const noexcept { return published_.load(std::memory_order_acquire); }
  // The levels this filter may grow to (1 when growth is off).
  std::size_t max_levels() const noexcept { return reserved_levels_; }
  std::uint64_t seed() const noexcept { return options_.seed; }
  const FilterOptions& options() const noexcept { return options_; }
  // No hardware transactions: K-CAS is built from single-word CAS.
  static constexpr bool speculative() noexcept { return false; }
  // load_factor(), bits_per_item(): detail/occupancy_api.hpp (slot words and counters).
  std::size_t memory_bytes() const noexcept { return table_bits() / 8 + sizeof(*this); }
  std::string shape() const {
    return "lock-free " + std::to_string(kFpBits) + "-bit fingerprints, 4 slots/bucket, " +
           std::to_string(levels()) + " level(s)";
  }

  // ---- persistence: the sequential filter's format (detail/filter_format.hpp) -----------
  // The file holds level 0's fingerprints exactly as CuckooFilter<PackedTable<F, 4>> does
  // (counters are not saved: they matter only to operations in flight), so files move freely
  // between the sequential, striped and lock-free filters.

  using FileTable = PackedTable<kFpBits, kSlots>;

  // Not concurrent with writers. A grown filter (several levels) has no single-table form in
  // format version 1: std::logic_error, and nothing is written.
  void save(std::ostream& out) const {
    if (levels() != 1) {
      throw std::logic_error("a lock-free filter that has grown to " + std::to_string(levels()) +
                             " levels cannot be saved in cuckoo filter format version 1");
    }
    const Level& level = levels_[0];
    FileTable staging(level.buckets);
    for (std::uint64_t bucket = 0; bucket < level.buckets; ++bucket) {
      const std::uint64_t bits = bucket_bits(level, bucket);
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        if (const std::uint32_t fp = BucketLanes::get(bits, slot)) staging.try_insert(bucket, fp);
      }
    }
    detail::FilterHeader h = detail::shape_of<FileTable>();
    h.buckets = level.buckets;
    h.capacity = requested_capacity_;
    h.items = size();
    h.seed = options_.seed;
    h.max_kicks = options_.max_kicks;
    h.payload_bytes = staging.payload().size();
    detail::write_filter(out, h, staging.payload());
  }

  // Reads a filter saved by any ccf cuckoo filter of this shape (packed, F bits, 4 slots).
  // Throws FormatError, also for a sequential filter's victim entry that has no room.
  [[nodiscard]] static std::unique_ptr<LockFreeCuckooFilter> load(std::istream& in,
                                                                  Options options = {},
                                                                  Hook hook = {}) {
    const detail::FilterHeader h = detail::HeaderCodec::read(in);
    const FileTable staging = detail::read_table<FileTable>(h, in);
    options.filter.seed = h.seed;
    options.filter.max_kicks = h.max_kicks;
    std::unique_ptr<LockFreeCuckooFilter> filter(
        new LockFreeCuckooFilter(h.buckets, h.capacity, options, std::move(hook)));
    Level& level = filter->levels_[0];
    for (std::uint64_t bucket = 0; bucket < h.buckets; ++bucket) {
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        const std::uint32_t fp = staging.read(bucket, slot);
        if (fp == 0) continue;
        const SlotRef at = slot_ref(bucket, slot);
        lockfree::KcasWord& word = level.words[at.word];
        const std::uint64_t value = filter->kcas_.read(word);  // not yet shared
        filter->kcas_.cas(word, value, WordLanes::set(value, at.lane, fp));
      }
    }
    filter->items_.add(static_cast<std::int64_t>(h.items - (h.victim_used ? 1 : 0)));
    if (h.victim_used) {
      const Location at{h.victim_bucket, level.addressing.alternate(h.victim_bucket, h.victim_fp),
                        h.victim_fp};
      if (!filter->insert_in_level(level, at)) {
        throw FormatError("the file's victim entry has no room in its buckets");
      }
      filter->items_.add(1);
    }
    return filter;
  }

  // For benchmarks: migration steps carried out, K-CAS operations attempted (one per step that
  // got as far as its K-CAS; the ones that lost a race are attempts minus migrations), and
  // discoveries restarted (a target filled up, the path changed, or a K-CAS lost a race).
  std::uint64_t migrations() const noexcept { return migrations_.value(); }
  std::uint64_t kcas_operations() const noexcept { return kcas_operations_.value(); }
  std::uint64_t restarts() const noexcept { return restarts_.value(); }
  const kcas_type& kcas() const noexcept { return kcas_; }

 private:
  using WordLanes = detail::BitLanes<kFpBits, kSlotsPerWord>;
  using BucketLanes = detail::BitLanes<kFpBits, kSlots>;
  using Addressing = detail::NestedAddressing<kFpBits>;
  static_assert(kMaxLevels - 1 <= Addressing::kMaxLevel, "levels beyond the addressing's bits");
  static constexpr unsigned kBucketsPerStripe = 128;
  static constexpr std::uint64_t kMaxStripes = 16384;

  // What checked_bucket_count needs to size level 0.
  struct LevelShape {
    static constexpr unsigned kSlots = LockFreeCuckooFilter::kSlots;
    static constexpr std::size_t payload_bytes(std::size_t buckets) noexcept {
      return (buckets * kSlots + kSlotsPerWord - 1) / kSlotsPerWord * 8;
    }
  };

  // One level: slot words and stripe counters, both in the filter's reserved region.
  struct Level {
    std::uint64_t buckets = 0;
    std::size_t offset = 0;  // of the level's range in the region
    std::size_t words_bytes = 0;
    std::size_t counters_bytes = 0;
    std::size_t range_bytes = 0;  // the committed range: the above, page rounded
    std::uint64_t stripe_mask = 0;
    lockfree::KcasWord* words = nullptr;
    lockfree::KcasWord* counters = nullptr;
    Addressing addressing{1, 0};

    std::size_t used_bytes() const noexcept { return words_bytes + counters_bytes; }
  };

  const Level& grown_level(unsigned k) const {
    if (k >= levels()) {
      throw std::out_of_range("level " + std::to_string(k) + " of a filter with " +
                              std::to_string(levels()) + " level(s)");
    }
    return levels_[k];
  }

  // Slot `slot` of `bucket`: its word and lane.
  struct SlotRef {
    std::uint64_t word;
    unsigned lane;
  };
  static SlotRef slot_ref(std::uint64_t bucket, unsigned slot) noexcept {
    const std::uint64_t index = bucket * kSlots + slot;
    return {index / kSlotsPerWord, static_cast<unsigned>(index % kSlotsPerWord)};
  }

  using Location = detail::Location;

  // The table interface find_cuckoo_path reads through (never writes).
  // A handle (two pointers): the group searches of insert_many keep it by value.
  struct LevelView {
    static constexpr bool kIsView = true;  // detail::CuckooPathSearch keeps it by value
    static constexpr unsigned kSlots = LockFreeCuckooFilter::kSlots;
    const LockFreeCuckooFilter* filter = nullptr;
    const Level* level = nullptr;
    std::uint32_t read(std::uint64_t bucket, unsigned slot) const {
      return BucketLanes::get(filter->bucket_bits(*level, bucket), slot);
    }
    std::array<std::uint32_t, kSlots> fingerprints(std::uint64_t bucket) const {
      const std::uint64_t bits = filter->bucket_bits(*level, bucket);
      std::array<std::uint32_t, kSlots> fps;
      for (unsigned slot = 0; slot < kSlots; ++slot) fps[slot] = BucketLanes::get(bits, slot);
      return fps;
    }
    bool has_empty(std::uint64_t bucket) const {
      return BucketLanes::zero_lanes(filter->bucket_bits(*level, bucket)) != 0;
    }
    void prefetch(std::uint64_t bucket) const { filter->prefetch(*level, bucket); }
  };

  LockFreeCuckooFilter(std::uint64_t buckets, std::size_t capacity, const Options& options,
                       Hook hook)
      : requested_capacity_(capacity),
        options_(options.filter),
        grow_(options.grow),
        kcas_(std::move(hook)) {
    lay_out(buckets);
    if (!region_.commit(levels_[0].offset, levels_[0].range_bytes)) throw std::bad_alloc();
  }

  // Places every level this filter may grow to in one reserved range: as many levels as
  // growth allows and the 64 TiB table limit admits.
  void lay_out(std::uint64_t base_buckets) {
    const unsigned wanted = grow_ ? kMaxLevels : 1;
    std::size_t offset = 0;
    for (unsigned k = 0; k < wanted; ++k) {
      Level& level = levels_[k];
      level.buckets = base_buckets << k;
      const std::uint64_t words = (level.buckets * kSlots + kSlotsPerWord - 1) / kSlotsPerWord;
      level.words_bytes = words * 8;
      const std::uint64_t stripes =
          std::min(kMaxStripes,
                   std::bit_floor(std::max<std::uint64_t>(1, level.buckets / kBucketsPerStripe)));
      level.stripe_mask = stripes - 1;
      level.counters_bytes = stripes * 8;
      const std::size_t alignment = level.used_bytes() >= detail::PageBuffer::kHugePage
                                        ? detail::PageBuffer::kHugePage
                                        : 4096;
      level.range_bytes = (level.used_bytes() + alignment - 1) / alignment * alignment;
      offset = (offset + alignment - 1) / alignment * alignment;
      if (k > 0 && offset + level.range_bytes > detail::kMaxTableBytes) break;
      level.offset = offset;
      level.addressing = Addressing(base_buckets, k);
      offset += level.range_bytes;
      reserved_levels_ = k + 1;
    }
    region_ = detail::ReservedRegion(offset);
    for (unsigned k = 0; k < reserved_levels_; ++k) {
      Level& level = levels_[k];
      // The pages read as zero: every word is an empty payload, every counter 0.
      level.words = reinterpret_cast<lockfree::KcasWord*>(region_.base() + level.offset);
      level.counters =
          reinterpret_cast<lockfree::KcasWord*>(region_.base() + level.offset + level.words_bytes);
    }
  }

  // Bits of slot words and counters in the levels grown so far.
  std::size_t table_bits() const noexcept {
    std::size_t bytes = 0;
    for (unsigned k = 0; k < levels(); ++k) bytes += levels_[k].used_bytes();
    return bytes * 8;
  }

  // ---- reading -------------------------------------------------------------------------

  // The four slots of `bucket` as BucketLanes. A bucket that straddles two words is read one
  // word after the other (not atomically together): the scan's argument (1) is per slot.
  [[gnu::always_inline]] std::uint64_t bucket_bits(const Level& level, std::uint64_t bucket) const {
    return bucket_bits(level.words, bucket);
  }
  // `words` as a parameter: a caller that reads several buckets loads the level's pointer
  // once (after an atomic load the compiler would reload it from the level).
  [[gnu::always_inline]] std::uint64_t bucket_bits(const lockfree::KcasWord* words,
                                                   std::uint64_t bucket) const {
    return read_bucket(words, bucket).bits();
  }

  // A bucket as read: the words its first and last slots lie in (the same word unless the
  // bucket straddles two), and their values.
  struct BucketRead {
    SlotRef first;            // slot 0
    std::uint64_t low, high;  // high == low when the bucket lies in one word
    std::uint64_t bits() const noexcept {
      return ((low >> (first.lane * kFpBits)) |
              (high << ((kSlotsPerWord - first.lane) * kFpBits))) &
             BucketLanes::kAllMask;
    }
    // Slot `slot`'s word, lane, and the value read from that word. (The high part of bits()
    // shifts a one-word bucket's copy of `low` out of the mask.)
    std::pair<SlotRef, std::uint64_t> locate_slot(unsigned slot) const noexcept {
      const unsigned lane = first.lane + slot;
      const bool second = lane >= kSlotsPerWord;  // no branch: which word is unpredictable
      return {{first.word + second, lane - (second ? kSlotsPerWord : 0)}, second ? high : low};
    }
  };
  [[gnu::always_inline]] BucketRead read_bucket(const lockfree::KcasWord* words,
                                                std::uint64_t bucket) const {
    const SlotRef first = slot_ref(bucket, 0);
    const auto [low, high] = kcas_.read_pair(words[first.word], words[last_word(first)]);
    return {first, low, high};
  }
  // The word of the bucket's last slot, chosen without a branch (which word it is, is
  // unpredictable): a one-word bucket reads its word twice rather than the next word, which
  // lies in another cache line one time in eight and which it does not need.
  static std::uint64_t last_word(const SlotRef& first) noexcept {
    return first.word + (first.lane + kSlots > kSlotsPerWord);
  }

  void prefetch(const Level& level, std::uint64_t bucket) const noexcept {
    const SlotRef first = slot_ref(bucket, 0);
    detail::prefetch_line(&level.words[first.word]);
    detail::prefetch_line(&level.words[last_word(first)]);
  }

  std::uint64_t counter(const Level& level, std::uint64_t bucket) const {
    return kcas_.read(level.counters[bucket & level.stripe_mask]);
  }

  void lookup_hook(LookupHookPoint point) const {
    if constexpr (requires(Hook & h, LookupHookPoint p) { h.on_lookup(p); }) {
      kcas_.hook().on_lookup(point);
    }
  }

  static Location locate(const Level& level, std::uint64_t hash) noexcept {
    return detail::locate(level.addressing, hash);
  }

  Location prefetch_both(const Level& level, const Location& at) const noexcept {
    return detail::prefetch_both(LevelView{this, &level}, at);
  }

  // The newest level (the one inserts go to, and scans start from).
  unsigned top() const noexcept { return published_.load(std::memory_order_acquire) - 1; }

  // ---- lookups -------------------------------------------------------------------------

  bool contains_hash(std::uint64_t hash) const { return in_levels_below(top() + 1, hash); }

  // Whether one of the levels below `end` holds the hash's fingerprint, newest first (5).
  bool in_levels_below(unsigned end, std::uint64_t hash) const {
    for (unsigned k = end; k-- > 0;) {
      // Prefetched: the bucket misses start before the counters are read.
      if (in_level(levels_[k], prefetch_both(levels_[k], locate(levels_[k], hash)))) return true;
    }
    return false;
  }

  // KeyApi's batched lookups and inserts: the newest level's buckets are prefetched; the
  // older levels of a grown filter are probed when it misses.
  struct StagedLookup {
    std::uint64_t hash;
    unsigned level;
    Location at;  // in that level
  };
  StagedLookup stage_lookup(std::uint64_t hash) const noexcept {
    const unsigned k = top();
    return {hash, k, prefetch_both(levels_[k], locate(levels_[k], hash))};
  }
  bool finish_lookup(const StagedLookup& s) const {
    return in_level(levels_[s.level], s.at) || in_levels_below(s.level, s.hash);
  }

  // The scan of one level: (1) of the header. The counters' loads hit the cache (their
  // array is small) and issue beside the buckets' misses; a hit returns without the second
  // counter read.
  bool in_level(const Level& level, const Location& at) const {
    for (;;) {
      const std::uint64_t before_primary = counter(level, at.primary);
      const std::uint64_t before_alternate = counter(level, at.alternate);
      lookup_hook(LookupHookPoint::kAfterCounters);
      if (holds_either(level, at)) return true;
      lookup_hook(LookupHookPoint::kBeforeRecheck);
      if (counter(level, at.primary) == before_primary &&
          counter(level, at.alternate) == before_alternate) {
        return false;
      }
    }
  }

  // Both buckets are loaded before either is tested, so that their cache misses overlap (a
  // branch on the first would often mispredict and delay the second load by a whole miss).
  [[gnu::always_inline]] bool holds_either(const Level& level, const Location& at) const {
    const lockfree::KcasWord* const words = level.words;
    const std::uint64_t primary = bucket_bits(words, at.primary);
    lookup_hook(LookupHookPoint::kBetweenBuckets);
    const std::uint64_t alternate = bucket_bits(words, at.alternate);
    return (BucketLanes::lanes_equal(primary, at.fp) |
            BucketLanes::lanes_equal(alternate, at.fp)) != 0;
  }

  // ---- erase ---------------------------------------------------------------------------

  // (4): the newest level that holds the fingerprint gives up one copy.
  Status erase_hash(std::uint64_t hash) {
    for (unsigned k = top() + 1; k-- > 0;) {
      Level& level = levels_[k];
      if (erase_in_level(level, prefetch_both(level, locate(level, hash)))) return Status::kOk;
    }
    return Status::kNotFound;
  }

  // Clears the first copy in the primary, else the alternate bucket, raising the stripe's
  // counter in the same K-CAS. Reports absence only after the counter check of in_level.
  bool erase_in_level(Level& level, const Location& at) {
    for (;;) {
      const std::uint64_t before_primary = counter(level, at.primary);
      const std::uint64_t before_alternate = counter(level, at.alternate);
      bool raced = false;
      for (const std::uint64_t bucket : {at.primary, at.alternate}) {
        const std::uint64_t match = BucketLanes::lanes_equal(bucket_bits(level, bucket), at.fp);
        if (match == 0) continue;
        if (remove(level, bucket, BucketLanes::first_flagged_lane(match), at.fp)) {
          items_.add(-1);
          return true;
        }
        raced = true;  // the slot or the stripe changed under us
        break;
      }
      if (!raced && counter(level, at.primary) == before_primary &&
          counter(level, at.alternate) == before_alternate) {
        return false;
      }
    }
  }

  // One K-CAS: slot `slot` of `bucket` holds fp -> 0, and its stripe's counter + 1.
  bool remove(Level& level, std::uint64_t bucket, unsigned slot, std::uint32_t fp) {
    const SlotRef at = slot_ref(bucket, slot);
    lockfree::KcasWord& word = level.words[at.word];
    lockfree::KcasWord& stripe = level.counters[bucket & level.stripe_mask];
    const std::uint64_t value = kcas_.read(word);
    const std::uint64_t count = kcas_.read(stripe);
    if (WordLanes::get(value, at.lane) != fp) return false;
    return kcas_.compare_exchange(
        {{&word, value, WordLanes::set(value, at.lane, 0)}, {&stripe, count, next_count(count)}});
  }

  static std::uint64_t next_count(std::uint64_t count) noexcept {
    return (count + 1) & lockfree::KcasWord::kPayloadMask;
  }

  // ---- insert --------------------------------------------------------------------------

  Status insert_hash(std::uint64_t hash) {
    const unsigned k = top();
    return insert_from(k, hash, prefetch_both(levels_[k], locate(levels_[k], hash)));
  }

  // KeyApi's batched inserts: a filter that grew since staging locates the key again.
  Status finish_insert(const StagedLookup& s) {
    const unsigned k = top();
    return insert_from(k, s.hash, k == s.level ? s.at : locate(levels_[k], s.hash));
  }

  // insert_many's overlapped path searches (detail/key_api.hpp).
  using GroupSearch = detail::CuckooPathSearch<LevelView, Addressing, detail::kGroupSearchDepth>;
  using GroupPath = detail::CuckooPath<kSlots, detail::kGroupSearchDepth>;
  // The insert without a path search: false when neither bucket has room, or the filter grew
  // since staging (finish_insert then locates the key in the new level).
  bool try_place(const StagedLookup& s) {
    if (top() != s.level) return false;
    Level& level = levels_[s.level];
    if (!place(level, s.at.primary, s.at.fp) && !place(level, s.at.alternate, s.at.fp)) {
      return false;
    }
    items_.add(1);
    return true;
  }
  void start_search(const StagedLookup& s, GroupSearch& search) const {
    const Level& level = levels_[s.level];
    search.start(LevelView{this, &level}, level.addressing, s.at.primary, s.at.alternate);
  }
  // Migrates along a path the group search found (re-validated step by step), or inserts
  // afresh if it no longer holds.
  Status finish_along(const StagedLookup& s, const GroupPath& path) {
    if (top() == s.level) {
      if (migrate(levels_[s.level], s.at, path.code, path.length)) {
        items_.add(1);
        return Status::kOk;
      }
      restarts_.add(1);
    }
    return finish_insert(s);
  }
  Status finish_erase(const StagedLookup& s) { return erase_hash(s.hash); }

  // Inserts into level k (at its location `at`), growing the filter when it is full.
  // The common case (a free slot in either bucket) is inline; the rest -- path search,
  // migration, growth -- is out of line, so that an insert's hot path stays a few dozen
  // instructions and consecutive inserts' cache misses can overlap.
  Status insert_from(unsigned k, std::uint64_t hash, const Location& at) {
    Level& level = levels_[k];
    if (place(level, at.primary, at.fp) || place(level, at.alternate, at.fp)) [[likely]] {
      items_.add(1);
      return Status::kOk;
    }
    return insert_making_room(k, hash, at);
  }

  [[gnu::noinline]] Status insert_making_room(unsigned k, std::uint64_t hash, Location at) {
    for (;;) {
      if (insert_in_level(levels_[k], at)) {
        items_.add(1);
        return Status::kOk;
      }
      if (!grow_ || !grow_past(k)) return Status::kFull;
      k = top();
      at = locate(levels_[k], hash);
    }
  }

  // False when no cuckoo path exists within the search depth: the level is full for this item.
  bool insert_in_level(Level& level, const Location& at) {
    for (;;) {
      if (place(level, at.primary, at.fp) || place(level, at.alternate, at.fp)) return true;
      const LevelView view{this, &level};
      if (view.has_empty(at.primary) || view.has_empty(at.alternate)) continue;
      detail::CuckooPath<kSlots, kPathDepth> path;
      if (!detail::find_cuckoo_path(view, level.addressing, at.primary, at.alternate, path)) {
        return false;
      }
      if (migrate(level, at, path.code, path.length)) return true;
      restarts_.add(1);
    }
  }

  // One CAS into a free slot of `bucket`; false if it has none. Retries a lost CAS.
  bool place(Level& level, std::uint64_t bucket, std::uint32_t fp) {
    for (;;) {
      const BucketRead read = read_bucket(level.words, bucket);
      const std::uint64_t empty = BucketLanes::zero_lanes(read.bits());
      if (empty == 0) return false;
      // The CAS expects the value just read: the slot is empty in it.
      const auto [at, value] = read.locate_slot(BucketLanes::first_flagged_lane(empty));
      if (kcas_.cas(level.words[at.word], value, WordLanes::set(value, at.lane, fp))) return true;
    }
  }

  // Decodes the compressed path against the current table, then moves fingerprints from the
  // empty end back to the root, one K-CAS per step; the last step, out of the root bucket,
  // stores at.fp in the slot it vacates (as the striped filter does under its root locks), so
  // no other insert takes that slot and the item is in when migrate returns true. False:
  // restart discovery (the item is not in; the moves already made each kept every item).
  bool migrate(Level& level, const Location& at, std::uint32_t code, unsigned length) {
    using Path = detail::CuckooPath<kSlots, kPathDepth>;
    std::uint64_t buckets[kPathDepth + 1];
    buckets[0] = (code & 1) ? at.alternate : at.primary;
    for (unsigned step = 0; step + 1 < length; ++step) {
      const std::uint32_t fp =
          BucketLanes::get(bucket_bits(level, buckets[step]), Path::slot_in(code, step));
      if (fp == 0) return false;  // the path changed under us
      buckets[step + 1] = level.addressing.alternate(buckets[step], fp);
    }
    for (unsigned step = length - 1; step > 0; --step) {
      const std::uint64_t source = buckets[step - 1], target = buckets[step];
      const bool root = step == 1;
      if (source == target) {
        if (root) return false;  // the root slot would not be freed
        continue;
      }
      if (!move(level, source, Path::slot_in(code, step - 1), target, root ? at.fp : 0)) {
        return false;
      }
      migrations_.add(1);
    }
    return true;
  }

  // One K-CAS: the fingerprint in `slot` of `source` goes to a free slot of `target` (its
  // alternate), `slot` takes `refill` (0, or the inserted item's fingerprint on a path's last
  // step), and the source stripe's counter is raised (2): a fingerprint left `source`.
  bool move(Level& level, std::uint64_t source, unsigned slot, std::uint64_t target,
            std::uint32_t refill) {
    const std::uint64_t room = BucketLanes::zero_lanes(bucket_bits(level, target));
    if (room == 0) return false;
    const SlotRef from = slot_ref(source, slot);
    const SlotRef to = slot_ref(target, BucketLanes::first_flagged_lane(room));
    lockfree::KcasWord& from_word = level.words[from.word];
    lockfree::KcasWord& to_word = level.words[to.word];
    lockfree::KcasWord& stripe = level.counters[source & level.stripe_mask];
    const std::uint64_t from_value = kcas_.read(from_word);
    const std::uint64_t count = kcas_.read(stripe);
    const std::uint32_t fp = WordLanes::get(from_value, from.lane);
    // The fingerprint must still lead to the target (same fingerprint, same alternate).
    if (fp == 0 || level.addressing.alternate(source, fp) != target) return false;
    const std::uint64_t source_after = WordLanes::set(from_value, from.lane, refill);
    const lockfree::KcasEntry counted{&stripe, count, next_count(count)};
    kcas_operations_.add(1);
    if (from.word == to.word) {  // neighbouring buckets sharing a word: one word changes
      if (WordLanes::get(source_after, to.lane) != 0) return false;
      return kcas_.compare_exchange(
          {{&from_word, from_value, WordLanes::set(source_after, to.lane, fp)}, counted});
    }
    const std::uint64_t to_value = kcas_.read(to_word);
    if (WordLanes::get(to_value, to.lane) != 0) return false;
    return kcas_.compare_exchange({{&from_word, from_value, source_after},
                                   {&to_word, to_value, WordLanes::set(to_value, to.lane, fp)},
                                   counted});
  }

  // ---- growth --------------------------------------------------------------------------

  // Level k had no room: makes sure a level after k exists. False if the filter has all the
  // levels it may have or the system refuses the memory. Threads that race here all commit
  // the same range (idempotent) and one CAS publishes it: nothing is allocated or discarded.
  bool grow_past(unsigned k) {
    unsigned published = published_.load(std::memory_order_acquire);
    if (published > k + 1) return true;
    if (k + 1 >= reserved_levels_) return false;
    const Level& next = levels_[k + 1];
    if (!region_.commit(next.offset, next.range_bytes)) return false;
    // Release: the committed range is usable by whoever reads the new count (the pages
    // themselves are zero: nothing else to publish).
    published_.compare_exchange_strong(published, k + 2, std::memory_order_release,
                                       std::memory_order_acquire);
    return true;
  }

  std::size_t requested_capacity_;
  FilterOptions options_;
  bool grow_;
  unsigned reserved_levels_ = 0;
  std::array<Level, kMaxLevels> levels_{};  // fixed at construction
  detail::ReservedRegion region_;           // declared before kcas_: the K-CAS drains into it
  std::atomic<unsigned> published_{1};      // levels usable; only grows
  mutable kcas_type kcas_;
  detail::ShardedCounter items_;
  detail::ShardedCounter migrations_;
  detail::ShardedCounter kcas_operations_;
  detail::ShardedCounter restarts_;
};

}  // namespace ccf
