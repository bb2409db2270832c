// LockFreeCuckooFilter: a lock-free concurrent cuckoo filter after "Lock-free concurrent
// cuckoo filter" (J. Software 2025): K-CAS moves, path discovery separated from migration,
// removal counters for lookups, growth by levels. chtbench: lf-cuckoo-filter. The design, the
// space figures and the full argument are in docs/lockfree.md.
//
// Each level is the filter core (basic_cuckoo_filter.hpp) under the lock-free policy:
// BasicCuckooFilter<KcasTable<F>, LockFreeSync, NestedAddressing> (kcas_table.hpp: the slot
// words; lock_free_sync.hpp: the removal counters and the K-CAS moves and removals). Level k has
// m * 2^k buckets of 4 slots; all levels' words lie in one address range reserved at
// construction. This file adds what a family of levels needs:
//
//   contains  for each level, from the newest (largest) to level 0, the core's lookup (the
//             policy's counter-validated scan).
//   insert    into the newest level (the core's insert: a free slot, else a path search and
//             K-CAS moves). No room within the search's reach: the filter grows (if allowed)
//             and the insert goes to the new level.
//   erase     for each level from the newest to level 0, the core's erase; the first level
//             that gives up a copy ends it.
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
// Progress: lock-free (lock_free_sync.hpp). Memory: K-CAS descriptors are recycled through
// per-thread pools and reclaimed by epochs (reclamation.hpp); a stalled thread delays
// reclamation, never progress. Growth allocates nothing: the address space of every level is
// reserved at construction (detail/page_buffer.hpp, ReservedRegion) and growing commits the
// next level's pages, an idempotent call that threads racing to grow all make (no thread waits,
// no level is built twice). A level's pages are zero (empty) until touched.
//
// Space: 64 / L bits per slot (L = floor(63 / F) slots per word: 12.8 at F = 12, 9.14 at
// F = 8) plus 64 bits per stripe counter (0.125 per slot); see docs/lockfree.md for measured
// bits per item.
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
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "ccf/basic_cuckoo_filter.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/filter_format.hpp"
#include "ccf/detail/key_api.hpp"
#include "ccf/detail/nested_addressing.hpp"
#include "ccf/detail/occupancy_api.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/filter_options.hpp"
#include "ccf/lockfree/kcas.hpp"
#include "ccf/lockfree/kcas_table.hpp"
#include "ccf/lockfree/lock_free_sync.hpp"
#include "ccf/packed_table.hpp"
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
  // Source word, target word, source stripe's counter.
  using kcas_type = lockfree::Kcas<3, Stats, Hook>;

 private:
  using Table = lockfree::KcasTable<FpBits, kcas_type>;
  using Addressing = detail::NestedAddressing<FpBits>;
  // One level: the core under the lock-free policy.
  using Level = BasicCuckooFilter<Table, lockfree::LockFreeSync<kcas_type>, Addressing>;
  using Steps = detail::LevelSteps;
  using Location = detail::Location;

 public:
  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = Table::kSlots;
  static constexpr unsigned kSlotsPerWord = Table::kSlotsPerWord;
  static constexpr unsigned kPathDepth = Level::kPathDepth;
  // A grown filter has at most this many levels: m, 2m, ..., 128m buckets (255 m in all).
  static constexpr unsigned kMaxLevels = 8;

  struct Options {
    FilterOptions filter{};
    bool grow = true;  // add a level twice as large when full (else: kFull)
  };

  // Throws std::invalid_argument for capacity 0, a max_load outside (0, 1] or a size beyond
  // the 64 TiB table limit; std::bad_alloc if the memory cannot be had.
  explicit LockFreeCuckooFilter(std::size_t capacity, Options options = {}, Hook hook = {})
      : LockFreeCuckooFilter(detail::checked_bucket_count<Table>(capacity, options.filter),
                             capacity, options, std::move(hook)) {}
  // The constructor every filter has (basic_cuckoo_filter.hpp), growth on.
  LockFreeCuckooFilter(std::size_t capacity, const FilterOptions& options)
      : LockFreeCuckooFilter(capacity, Options{options, true}) {}

  ~LockFreeCuckooFilter() {
    shared_.kcas.drain();  // descriptors still refer to words: settle them while the words exist
  }
  LockFreeCuckooFilter(const LockFreeCuckooFilter&) = delete;
  LockFreeCuckooFilter& operator=(const LockFreeCuckooFilter&) = delete;

  // insert, contains, erase, contains_many, insert_many: detail/key_api.hpp.

  std::size_t size() const noexcept { return level(0).policy().items(); }  // (levels share it)
  // Slots in the levels grown so far.
  std::size_t capacity() const noexcept {
    std::size_t slots = 0;
    for (unsigned k = 0; k < levels(); ++k) slots += level(k).capacity();
    return slots;
  }
  std::size_t requested_capacity() const noexcept { return requested_capacity_; }
  // Slots of level k and how many hold a fingerprint (a scan: exact when no writer runs). Each
  // level's share of the false-positive rate follows its own load. std::out_of_range unless
  // k < levels().
  std::size_t level_capacity(unsigned k) const { return grown_level(k).capacity(); }
  std::size_t level_occupied(unsigned k) const {
    const Table& table = Steps::table(grown_level(k));
    std::size_t occupied = 0;
    for (std::uint64_t bucket = 0; bucket < table.bucket_count(); ++bucket) {
      occupied += kSlots - table.free_slots(bucket);
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
    const Table& table = Steps::table(level(0));
    FileTable staging(table.bucket_count());
    for (std::uint64_t bucket = 0; bucket < table.bucket_count(); ++bucket) {
      const std::uint64_t bits = table.bits(bucket);
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        if (const std::uint32_t fp = Table::Lanes::get(bits, slot)) staging.try_insert(bucket, fp);
      }
    }
    detail::FilterHeader h = detail::shape_of<FileTable>();
    h.buckets = table.bucket_count();
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
    Level& level = filter->level(0);
    for (std::uint64_t bucket = 0; bucket < h.buckets; ++bucket) {
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        // The bucket holds no more than the file's: each finds room in it.
        const std::uint32_t fp = staging.read(bucket, slot);
        if (fp != 0 && level.restore_fingerprint(bucket, fp) != Status::kOk) {
          throw std::logic_error("a loaded bucket has fewer slots than the file's");
        }
      }
    }
    if (h.victim_used && level.insert_fingerprint(h.victim_bucket, h.victim_fp) != Status::kOk) {
      throw FormatError("the file's victim entry has no room in its buckets");
    }
    return filter;
  }

  // For benchmarks: migration steps carried out, K-CAS operations attempted (one per step that
  // got as far as its K-CAS; the ones that lost a race are attempts minus migrations), and
  // cuckoo paths abandoned (a target filled up, the path changed, or a K-CAS lost a race).
  std::uint64_t migrations() const noexcept { return shared_.migrations.value(); }
  std::uint64_t kcas_operations() const noexcept { return shared_.kcas_operations.value(); }
  std::uint64_t restarts() const noexcept { return shared_.restarts.value(); }
  const kcas_type& kcas() const noexcept { return shared_.kcas; }

 private:
  static_assert(kMaxLevels - 1 <= Addressing::kMaxLevel, "levels beyond the addressing's bits");

  // Where level k's slot words lie in the reserved region.
  struct Placement {
    std::size_t offset = 0;
    std::size_t range_bytes = 0;  // the committed range: the words, page rounded
  };

  LockFreeCuckooFilter(std::uint64_t buckets, std::size_t capacity, const Options& options,
                       Hook hook)
      : requested_capacity_(capacity),
        options_(options.filter),
        grow_(options.grow),
        shared_(std::move(hook)) {
    lay_out(buckets);
    if (!region_.commit(placements_[0].offset, placements_[0].range_bytes)) {
      throw std::bad_alloc();
    }
  }

  // Places every level this filter may grow to in one reserved range, as many levels as growth
  // allows and the 64 TiB table limit admits, and makes their cores (nothing is touched until
  // a level is committed and published).
  void lay_out(std::uint64_t base_buckets) {
    const unsigned wanted = grow_ ? kMaxLevels : 1;
    std::size_t offset = 0;
    for (unsigned k = 0; k < wanted; ++k) {
      const std::size_t bytes = Table::payload_bytes(base_buckets << k);
      const std::size_t alignment =
          bytes >= detail::PageBuffer::kHugePage ? detail::PageBuffer::kHugePage : 4096;
      const std::size_t range_bytes = (bytes + alignment - 1) / alignment * alignment;
      offset = (offset + alignment - 1) / alignment * alignment;
      if (k > 0 && offset + range_bytes > detail::kMaxTableBytes) break;
      placements_[k] = {offset, range_bytes};
      offset += range_bytes;
      reserved_levels_ = k + 1;
    }
    region_ = detail::ReservedRegion(offset);
    for (unsigned k = 0; k < reserved_levels_; ++k) {
      // The pages read as zero: every word is an empty payload.
      auto* const words =
          reinterpret_cast<lockfree::KcasWord*>(region_.base() + placements_[k].offset);
      levels_[k].emplace(Table(shared_.kcas, words, base_buckets << k), Addressing(base_buckets, k),
                         options_, shared_);
    }
  }

  Level& level(unsigned k) noexcept { return *levels_[k]; }
  const Level& level(unsigned k) const noexcept { return *levels_[k]; }
  const Level& grown_level(unsigned k) const {
    if (k >= levels()) {
      throw std::out_of_range("level " + std::to_string(k) + " of a filter with " +
                              std::to_string(levels()) + " level(s)");
    }
    return level(k);
  }

  // Bits of slot words and counters in the levels grown so far.
  std::size_t table_bits() const noexcept {
    std::size_t bytes = 0;
    for (unsigned k = 0; k < levels(); ++k) {
      bytes += Steps::table(level(k)).memory_bytes() + level(k).policy().memory_bytes();
    }
    return bytes * 8;
  }

  // The newest level (the one inserts go to, and scans start from).
  unsigned top() const noexcept { return published_.load(std::memory_order_acquire) - 1; }

  // ---- lookups -------------------------------------------------------------------------

  bool contains_hash(std::uint64_t hash) const { return in_levels_below(top() + 1, hash); }

  // Whether one of the levels below `end` holds the hash's fingerprint, newest first (5).
  bool in_levels_below(unsigned end, std::uint64_t hash) const {
    for (unsigned k = end; k-- > 0;) {
      if (Steps::contains(level(k), Steps::stage(level(k), hash))) return true;
    }
    return false;
  }

  // KeyApi's batched lookups and inserts: the newest level's buckets are prefetched (for
  // writing, by an insert); the older levels of a grown filter are probed when it misses.
  struct StagedLookup {
    std::uint64_t hash;
    unsigned level;
    Location at;  // in that level
  };
  [[gnu::always_inline]] StagedLookup stage_lookup(std::uint64_t hash) const noexcept {
    const unsigned k = top();
    return {hash, k, Steps::stage(level(k), hash)};
  }
  [[gnu::always_inline]] StagedLookup stage_update(std::uint64_t hash) const noexcept {
    const unsigned k = top();
    return {hash, k, Steps::stage_update(level(k), hash)};
  }
  bool finish_lookup(const StagedLookup& s) const {
    return Steps::contains(level(s.level), s.at) || in_levels_below(s.level, s.hash);
  }

  // ---- erase ---------------------------------------------------------------------------

  // (4): the newest level that holds the fingerprint gives up one copy.
  Status erase_hash(std::uint64_t hash) {
    for (unsigned k = top() + 1; k-- > 0;) {
      if (Steps::erase(level(k), Steps::stage_update(level(k), hash)) == Status::kOk) {
        return Status::kOk;
      }
    }
    return Status::kNotFound;
  }
  Status finish_erase(const StagedLookup& s) { return erase_hash(s.hash); }

  // ---- insert --------------------------------------------------------------------------

  Status insert_hash(std::uint64_t hash) {
    const unsigned k = top();
    return insert_from(k, hash, Steps::stage_update(level(k), hash));
  }

  // KeyApi's batched inserts: a filter that grew since staging locates the key again.
  Status finish_insert(const StagedLookup& s) {
    const unsigned k = top();
    return insert_from(k, s.hash, k == s.level ? s.at : Steps::stage_update(level(k), s.hash));
  }

  // insert_many's overlapped path searches (detail/key_api.hpp), in the newest level.
  using GroupSearch = typename Level::GroupSearch;
  using GroupPath = typename Level::GroupPath;
  // The insert without a path search: false when neither bucket has room, or the filter grew
  // since staging (finish_insert then locates the key in the new level).
  bool try_place(const StagedLookup& s) {
    return top() == s.level && Steps::try_place(level(s.level), s.at);
  }
  void start_search(const StagedLookup& s, GroupSearch& search) const {
    Steps::start_search(level(s.level), s.at, search);
  }
  // Moves along a path the group search found (re-validated step by step), or inserts afresh
  // if it no longer holds.
  Status finish_along(const StagedLookup& s, const GroupPath& path) {
    if (top() != s.level) return finish_insert(s);
    if (Steps::finish_along(level(s.level), s.at, path) == Status::kOk) return Status::kOk;
    return insert_after_full(s.level, s.hash);
  }

  // Inserts into level k (at its location `at`), growing the filter when it is full.
  Status insert_from(unsigned k, std::uint64_t hash, const Location& at) {
    if (Steps::insert(level(k), at) == Status::kOk) [[likely]] {
      return Status::kOk;
    }
    return insert_after_full(k, hash);
  }

  // Level k had no room: the insert goes to the level after it, grown now if need be.
  [[gnu::noinline]] Status insert_after_full(unsigned k, std::uint64_t hash) {
    if (!grow_ || !grow_past(k)) return Status::kFull;
    const unsigned next = top();
    return insert_from(next, hash, Steps::stage_update(level(next), hash));
  }

  // ---- growth --------------------------------------------------------------------------

  // Level k had no room: makes sure a level after k exists. False if the filter has all the
  // levels it may have or the system refuses the memory. Threads that race here all commit
  // the same range (idempotent) and one CAS publishes it: nothing is allocated or discarded.
  bool grow_past(unsigned k) {
    unsigned published = published_.load(std::memory_order_acquire);
    if (published > k + 1) return true;
    if (k + 1 >= reserved_levels_) return false;
    const Placement& next = placements_[k + 1];
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
  std::array<Placement, kMaxLevels> placements_{};
  // The K-CAS (in shared_) drains into the words (region_) and the counters (the levels'
  // policies) when it is destroyed: both are declared before it.
  detail::ReservedRegion region_;
  // Every level this filter may grow to, made at construction (fixed since) over its part of
  // the region; levels_[k] is in use once k < published_.
  std::array<std::optional<Level>, kMaxLevels> levels_{};
  lockfree::LockFreeShared<kcas_type> shared_;
  std::atomic<unsigned> published_{1};  // levels usable; only grows
};

}  // namespace ccf
