// LockFreeCuckooFilter: a lock-free concurrent cuckoo filter (seeds 000/001, "Lock-free
// concurrent cuckoo filter", J. Software 2025): K-CAS moves, path discovery separated from
// migration, migration counters for lookups. chtbench: lf-cuckoo-filter.
//
// Bucket words. Each bucket is one KcasWord (kcas.hpp) of 63 payload bits:
//
//   bit: 62            4F  4F-1                 0
//        | migration counter | fp3 | fp2 | fp1 | fp0 |      F = 12: 48 bits + 15-bit counter
//
// A fingerprint of 0 marks an empty slot. The counter is raised on BOTH buckets by every
// migration, Lamport style: both become max(source, target) + 1.
//
// Operations (no locks anywhere; a thread stopped at any point never blocks another):
//   contains  read i1, i2, then i1, i2 again (Kcas::read: sees through in-flight K-CAS
//             descriptors, writes nothing). Found in any read: present. Else, if either
//             bucket's counter changed between its two reads, a migration may have carried
//             the fingerprint past us: retry. Else absent. Why that suffices: let reads be
//             r1(A) < r1(B) < r2(A) < r2(B). A present item missed by all four was in B at
//             r1(A) and in A at r2(B), so it moved at least once in between; if no move fell
//             in (r1(A), r2(A)) it was still in B at r1(B) and was seen. So a miss needs a
//             move, which raises A's counter, between the two reads of A.
//   insert    1. a free slot in i1 or i2: one single-word CAS (counter unchanged).
//             2. both full: path DISCOVERY, breadth-first from both buckets without writing
//                (detail/cuckoo_path.hpp); the path is kept as ONE integer: a start bit
//                (i1 or i2) and 2 bits per slot index (CuckooPath::code).
//             3. MIGRATION (Algorithm 3): decode the integer against the current table to get
//                each step's source bucket, slot and target bucket; walk it BACKWARDS from the
//                empty end: skip a step whose source is its target; re-read the target, and if
//                it has no empty slot restart discovery; else one K-CAS moves the fingerprint
//                (clear the source slot AND fill a target slot, both counters raised). A K-CAS
//                that fails (someone changed either word) restarts discovery.
//             4. back to 1: the root bucket now has room.
//   erase     clear one copy with a single CAS; before reporting kNotFound, the same
//             two-round counter check as contains.
//
// Why a K-CAS and not "copy to the target, then clear the source": between the two writes the
// fingerprint would be in both buckets, and a concurrent erase of the item would clear one
// copy and leave the other: the item would stay "present" after its erase.
//
// Growth. When discovery finds no path, the filter appends a sub-filter of twice the buckets
// (one CAS on the last level's `next` pointer; a loser frees its level and uses the winner's)
// and inserts there. Lookups and erases consult every level in turn, so the false-positive
// rate is the sum of the levels' (about 2b / 2^F per full level). With growth disabled an
// insert that finds no path returns kFull and changes nothing. Levels are freed only with the
// filter.
//
// Progress: contains is lock-free (it retries only when a migration completed in between);
// insert and erase are lock-free (they retry only when another operation's CAS or K-CAS
// succeeded). Memory: descriptors are reclaimed by epochs (reclamation.hpp); a stalled thread
// delays reclamation, never progress.
//
// Space: a bucket costs 64 bits for 4 x 12-bit fingerprints (16 bits per slot, against 12 for
// the sequential filter): the counter has to live in the word the K-CAS changes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ccf/cuckoo_filter.hpp"
#include "ccf/detail/addressing.hpp"
#include "ccf/detail/bit_lanes.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/filter_format.hpp"
#include "ccf/detail/key_api.hpp"
#include "ccf/detail/occupancy_api.hpp"
#include "ccf/detail/packed_table.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/hash.hpp"
#include "ccf/lockfree/kcas.hpp"
#include "ccf/status.hpp"

namespace ccf {

template <unsigned FpBits = 12, class Stats = lockfree::NoKcasStats,
          class Hook = lockfree::NoKcasHook>
class LockFreeCuckooFilter
    : public detail::KeyApi<LockFreeCuckooFilter<FpBits, Stats, Hook>>,
      public detail::OccupancyApi<LockFreeCuckooFilter<FpBits, Stats, Hook>> {
  friend class detail::KeyApi<LockFreeCuckooFilter>;
  friend class detail::OccupancyApi<LockFreeCuckooFilter>;

 public:
  static_assert(FpBits == 8 || FpBits == 12,
                "a bucket word holds 4 fingerprints and a >= 15-bit counter: F = 8 or 12");
  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = 4;
  static constexpr unsigned kPathDepth = detail::kDefaultPathDepth<kSlots> + 1;
  using Fingerprints = lockfree::KcasField<0, kFpBits * kSlots>;
  using Counter = lockfree::KcasField<kFpBits * kSlots, 63 - kFpBits * kSlots>;
  using kcas_type = lockfree::Kcas<2, Stats, Hook>;

  struct Options {
    FilterOptions filter{};
    bool grow = true;  // append a larger sub-filter when full (else: kFull)
  };

  explicit LockFreeCuckooFilter(std::size_t capacity, Options options = {}, Hook hook = {})
      : first_(
            std::make_unique<Level>(detail::checked_bucket_count<Level>(capacity, options.filter))),
        last_(first_.get()),
        seed_(options.filter.seed),
        grow_(options.grow),
        kcas_(std::move(hook)) {}

  ~LockFreeCuckooFilter() {
    kcas_.drain();  // descriptors still refer to bucket words: settle them first
    Level* level = first_->next.exchange(nullptr);
    while (level != nullptr) {
      std::unique_ptr<Level> owned(level);
      level = owned->next.exchange(nullptr);
    }
  }
  LockFreeCuckooFilter(const LockFreeCuckooFilter&) = delete;
  LockFreeCuckooFilter& operator=(const LockFreeCuckooFilter&) = delete;

  // insert, contains, erase of integer and byte-string keys: detail/key_api.hpp.

  std::size_t size() const noexcept { return static_cast<std::size_t>(items_.value()); }
  std::size_t capacity() const noexcept {
    std::size_t slots = 0;
    for (const Level* level = first_.get(); level != nullptr; level = level->next_level()) {
      slots += level->buckets * kSlots;
    }
    return slots;
  }
  std::size_t levels() const noexcept {
    std::size_t count = 0;
    for (const Level* level = first_.get(); level != nullptr; level = level->next_level()) {
      ++count;
    }
    return count;
  }
  // load_factor(), bits_per_item(): detail/occupancy_api.hpp.
  std::size_t memory_bytes() const noexcept { return capacity() / kSlots * 8 + sizeof(*this); }
  std::string shape() const {
    return "lock-free " + std::to_string(kFpBits) + "-bit fingerprints, 4 slots/bucket, " +
           std::to_string(levels()) + " level(s)";
  }

  // ---- persistence: the sequential filter's format (detail/filter_format.hpp) -----------
  // The file holds the fingerprints exactly as CuckooFilter<PackedTable<F, 4>> does (counters
  // are not saved: they only matter to operations in flight), so files move freely between
  // the sequential, striped and lock-free filters.

  using FileTable = PackedTable<kFpBits, kSlots>;

  // Not concurrent with writers. A grown filter (several levels) has no single-table form in
  // format version 1: std::logic_error.
  void save(std::ostream& out) const {
    if (levels() != 1) {
      throw std::logic_error("a lock-free filter that has grown to " + std::to_string(levels()) +
                             " levels cannot be saved in cuckoo filter format version 1");
    }
    FileTable staging(first_->buckets);
    for (std::uint64_t bucket = 0; bucket < first_->buckets; ++bucket) {
      const std::uint64_t word = read(*first_, bucket);
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        if (const std::uint32_t fp = Lanes::get(word, slot)) staging.try_insert(bucket, fp);
      }
    }
    detail::FilterHeader h = detail::shape_of<FileTable>();
    h.buckets = first_->buckets;
    h.capacity = requested_capacity_;
    h.items = size();
    h.seed = seed_;
    h.max_kicks = FilterOptions{}.max_kicks;
    h.payload_bytes = staging.payload().size();
    detail::write_filter(out, h, staging.payload());
  }

  // Reads a filter saved by any ccf cuckoo filter of this shape (packed, F bits, 4 slots).
  // Throws FormatError, also for a sequential filter's victim entry that has no room.
  static std::unique_ptr<LockFreeCuckooFilter> load(std::istream& in, Options options = {},
                                                    Hook hook = {}) {
    const detail::FilterHeader h = detail::HeaderCodec::read(in);
    const FileTable staging = detail::read_table<FileTable>(h, in);
    options.filter.seed = h.seed;
    std::unique_ptr<LockFreeCuckooFilter> filter(
        new LockFreeCuckooFilter(h.buckets, h.capacity, options, std::move(hook)));
    Level& level = *filter->first_;
    for (std::uint64_t bucket = 0; bucket < h.buckets; ++bucket) {
      std::uint64_t fps = 0;
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        fps = Lanes::set(fps, slot, staging.read(bucket, slot));
      }
      if (fps != 0) filter->kcas_.cas(level.words[bucket], 0, fps);  // not yet shared
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
  // One 64-bit word per bucket.
  std::size_t table_bits() const noexcept { return 64 * (capacity() / kSlots); }

  using Lanes = detail::BitLanes<kFpBits, kSlots>;

  // One sub-filter: a table of bucket words (on huge pages where the kernel allows, as the
  // other filters' tables: a lookup then costs cache misses but no page walks) and its
  // addressing.
  struct Level {
    static constexpr unsigned kSlots = LockFreeCuckooFilter::kSlots;
    static constexpr std::size_t payload_bytes(std::size_t buckets) noexcept { return buckets * 8; }
    explicit Level(std::uint64_t bucket_count)
        : buckets(bucket_count),
          storage(payload_bytes(bucket_count)),
          words(reinterpret_cast<lockfree::KcasWord*>(storage.data())),
          addressing(bucket_count) {
      std::uninitialized_default_construct_n(words, bucket_count);  // empty buckets
    }
    Level* next_level() const noexcept { return next.load(std::memory_order_acquire); }

    const std::uint64_t buckets;
    detail::PageBuffer storage;
    lockfree::KcasWord* const words;  // in storage; trivially destructible
    const detail::Addressing<kFpBits> addressing;
    // Set once, by CAS, when the filter grows; release/acquire publish the new level's
    // construction to the threads that follow the pointer.
    std::atomic<Level*> next{nullptr};
  };

  // The table interface find_cuckoo_path reads through (never writes).
  struct LevelView {
    static constexpr unsigned kSlots = LockFreeCuckooFilter::kSlots;
    const LockFreeCuckooFilter& filter;
    const Level& level;
    std::uint32_t read(std::uint64_t bucket, unsigned slot) const {
      return Lanes::get(filter.kcas_.read(level.words[bucket]), slot);
    }
    bool has_empty(std::uint64_t bucket) const {
      return Lanes::zero_lanes(Fingerprints::get(filter.kcas_.read(level.words[bucket]))) != 0;
    }
    void prefetch(std::uint64_t bucket) const { __builtin_prefetch(&level.words[bucket]); }
  };

  struct Location {
    std::uint64_t primary;
    std::uint64_t alternate;
    std::uint32_t fp;
  };

  std::uint64_t seed() const noexcept { return seed_; }

  static Location locate(const Level& level, std::uint64_t hash) noexcept {
    const std::uint64_t primary = level.addressing.index(hash);
    const std::uint32_t fp = level.addressing.fingerprint(hash);
    return {primary, level.addressing.alternate(primary, fp), fp};
  }

  Location prefetch_both(const Level& level, const Location& at) const noexcept {
    return detail::prefetch_both(LevelView{*this, level}, at);
  }

  static bool holds(std::uint64_t word, std::uint32_t fp) noexcept {
    return Lanes::lanes_equal(Fingerprints::get(word), fp) != 0;
  }

  std::uint64_t read(const Level& level, std::uint64_t bucket) const {
    return kcas_.read(level.words[bucket]);
  }

  LockFreeCuckooFilter(std::uint64_t buckets, std::size_t capacity, const Options& options,
                       Hook hook)
      : first_(std::make_unique<Level>(buckets)),
        last_(first_.get()),
        requested_capacity_(capacity),
        seed_(options.filter.seed),
        grow_(options.grow),
        kcas_(std::move(hook)) {}

  // ---- lookups -------------------------------------------------------------------------

  bool contains_hash(std::uint64_t hash) const { return in_levels(first_.get(), hash); }

  // Whether `level` or a level after it holds the hash's fingerprint.
  bool in_levels(const Level* level, std::uint64_t hash) const {
    for (; level != nullptr; level = level->next_level()) {
      if (in_level(*level, locate(*level, hash))) return true;
    }
    return false;
  }

  // KeyApi's batched lookups (and inserts: finish_insert): the first level's two bucket words
  // are prefetched; the levels a grown filter added are probed when the first misses.
  struct StagedLookup {
    std::uint64_t hash;
    Location at;  // in the first level
  };
  StagedLookup stage_lookup(std::uint64_t hash) const noexcept {
    return {hash, prefetch_both(*first_, locate(*first_, hash))};
  }
  bool finish_lookup(const StagedLookup& s) const {
    return in_level(*first_, s.at) || in_levels(first_->next_level(), s.hash);
  }

  // The two-round scan of the header comment.
  bool in_level(const Level& level, const Location& at) const {
    for (;;) {
      const std::uint64_t a1 = read(level, at.primary), b1 = read(level, at.alternate);
      if (holds(a1, at.fp) || holds(b1, at.fp)) return true;
      const std::uint64_t a2 = read(level, at.primary), b2 = read(level, at.alternate);
      if (holds(a2, at.fp) || holds(b2, at.fp)) return true;
      if (Counter::get(a1) == Counter::get(a2) && Counter::get(b1) == Counter::get(b2)) {
        return false;
      }
    }
  }

  // ---- erase ---------------------------------------------------------------------------

  Status erase_hash(std::uint64_t hash) {
    for (Level* level = first_.get(); level != nullptr; level = level->next_level()) {
      if (erase_in_level(*level, prefetch_both(*level, locate(*level, hash)))) return Status::kOk;
    }
    return Status::kNotFound;
  }

  // Clears one copy with one CAS. Reports absence only after the two-round scan of contains
  // saw no fingerprint and no migration in between.
  bool erase_in_level(Level& level, const Location& at) {
    const std::uint64_t buckets[2] = {at.primary, at.alternate};
    for (;;) {
      std::uint64_t first_round[2] = {0, 0};
      bool raced = false;
      for (int round = 0; round < 2 && !raced; ++round) {
        for (int k = 0; k < 2 && !raced; ++k) {
          const std::uint64_t word = read(level, buckets[k]);
          const std::uint64_t fps = Fingerprints::get(word);
          if (const std::uint64_t match = Lanes::lanes_equal(fps, at.fp)) {
            const std::uint64_t cleared = Lanes::set(fps, Lanes::first_flagged_lane(match), 0);
            if (kcas_.cas(level.words[buckets[k]], word, Fingerprints::set(word, cleared))) {
              items_.add(-1);
              return true;
            }
            raced = true;  // the word changed under us
          } else if (round == 0) {
            first_round[k] = Counter::get(word);
          } else {
            raced = Counter::get(word) != first_round[k];
          }
        }
      }
      if (!raced) return false;
    }
  }

  // ---- insert --------------------------------------------------------------------------

  // The alternate bucket is prefetched: its miss overlaps the primary's, as in a lookup (whose
  // two reads are independent loads anyway; an insert reads the alternate only after the
  // primary's CAS, a locked instruction, so without the prefetch the misses come one by one).
  Status insert_hash(std::uint64_t hash) {
    Level* const level = last_.load(std::memory_order_acquire);
    return insert_from(level, hash, prefetch_both(*level, locate(*level, hash)));
  }

  // KeyApi's batched inserts: the staged location is the first level's, so a grown filter
  // locates the key again in its last level.
  Status finish_insert(const StagedLookup& s) {
    Level* const level = last_.load(std::memory_order_acquire);
    return insert_from(level, s.hash, level == first_.get() ? s.at : locate(*level, s.hash));
  }

  // Inserts into `level` (at its location `at`), growing the filter when it is full.
  Status insert_from(Level* level, std::uint64_t hash, Location at) {
    for (;;) {
      if (insert_in_level(*level, at)) {
        items_.add(1);
        return Status::kOk;
      }
      if (!grow_) return Status::kFull;
      level = grow(*level);
      if (level == nullptr) return Status::kFull;
      at = locate(*level, hash);
    }
  }

  // False when no cuckoo path exists within the search depth: the level is full for this item.
  bool insert_in_level(Level& level, const Location& at) {
    for (;;) {
      for (const std::uint64_t bucket : {at.primary, at.alternate}) {
        const std::uint64_t word = read(level, bucket);
        const std::uint64_t empty = Lanes::zero_lanes(Fingerprints::get(word));
        if (empty == 0) continue;
        const std::uint64_t filled =
            Lanes::set(Fingerprints::get(word), Lanes::first_flagged_lane(empty), at.fp);
        if (kcas_.cas(level.words[bucket], word, Fingerprints::set(word, filled))) return true;
      }
      if (read_has_room(level, at)) continue;  // a slot opened meanwhile: try the CAS again
      detail::CuckooPath<kSlots, kPathDepth> path;
      if (!detail::find_cuckoo_path(LevelView{*this, level}, level.addressing, at.primary,
                                    at.alternate, path)) {
        return false;
      }
      if (!migrate(level, at, path.code, path.length)) restarts_.add(1);
    }
  }

  bool read_has_room(const Level& level, const Location& at) const {
    return Lanes::zero_lanes(Fingerprints::get(read(level, at.primary))) != 0 ||
           Lanes::zero_lanes(Fingerprints::get(read(level, at.alternate))) != 0;
  }

  // Algorithm 3: decode the compressed path against the current table, then move fingerprints
  // from the empty end back to the root, one K-CAS per step. False: restart discovery.
  bool migrate(Level& level, const Location& at, std::uint32_t code, unsigned length) {
    using Path = detail::CuckooPath<kSlots, kPathDepth>;
    std::uint64_t buckets[kPathDepth + 1];
    buckets[0] = (code & 1) ? at.alternate : at.primary;
    for (unsigned step = 0; step + 1 < length; ++step) {
      const std::uint32_t fp = Lanes::get(read(level, buckets[step]), Path::slot_in(code, step));
      if (fp == 0) return false;  // the path changed under us
      buckets[step + 1] = level.addressing.alternate(buckets[step], fp);
    }
    for (unsigned step = length - 1; step > 0; --step) {
      const std::uint64_t source = buckets[step - 1], target = buckets[step];
      if (source == target) continue;
      const unsigned slot = Path::slot_in(code, step - 1);
      const std::uint64_t from = read(level, source), to = read(level, target);
      const std::uint32_t fp = Lanes::get(Fingerprints::get(from), slot);
      const std::uint64_t room = Lanes::zero_lanes(Fingerprints::get(to));
      // The fingerprint must still lead to the target (same fingerprint, same alternate).
      if (fp == 0 || room == 0 || level.addressing.alternate(source, fp) != target) return false;
      const std::uint64_t clock = std::max(Counter::get(from), Counter::get(to)) + 1;
      const std::uint64_t new_from = Counter::set(
          Fingerprints::set(from, Lanes::set(Fingerprints::get(from), slot, 0)), clock);
      const std::uint64_t new_to = Counter::set(
          Fingerprints::set(to,
                            Lanes::set(Fingerprints::get(to), Lanes::first_flagged_lane(room), fp)),
          clock);
      kcas_operations_.add(1);
      if (!kcas_.compare_exchange(
              {{&level.words[source], from, new_from}, {&level.words[target], to, new_to}})) {
        return false;
      }
      migrations_.add(1);
    }
    return true;
  }

  // Appends (or finds) the level after `full`; nullptr if it cannot be allocated.
  Level* grow(Level& full) {
    Level* next = full.next_level();
    if (next == nullptr) {
      std::unique_ptr<Level> fresh;
      try {
        fresh = std::make_unique<Level>(full.buckets * 2);
      } catch (const std::bad_alloc&) {
        return nullptr;
      }
      // Release: the new level's words and addressing are visible to whoever follows `next`.
      if (full.next.compare_exchange_strong(next, fresh.get(), std::memory_order_release,
                                            std::memory_order_acquire)) {
        next = fresh.release();
      }
    }
    Level* expected = &full;
    // Only advances: a thread that loads an older last_ walks forward through next pointers.
    last_.compare_exchange_strong(expected, next, std::memory_order_release,
                                  std::memory_order_relaxed);
    return next;
  }

  std::unique_ptr<Level> first_;  // levels live until the filter dies (declared before kcas_:
  std::atomic<Level*> last_;      // the K-CAS drains into their words when destroyed)
  std::size_t requested_capacity_;
  std::uint64_t seed_;
  bool grow_;
  mutable kcas_type kcas_;
  detail::ShardedCounter items_;
  detail::ShardedCounter migrations_;
  detail::ShardedCounter kcas_operations_;
  detail::ShardedCounter restarts_;
};

}  // namespace ccf
