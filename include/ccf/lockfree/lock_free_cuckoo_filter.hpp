// LockFreeCuckooFilter: a lock-free concurrent cuckoo filter after "Lock-free concurrent
// cuckoo filter" (J. Software 2025): K-CAS moves, path discovery separated from migration,
// removal counters for lookups, growth by levels. chtbench: lf-cuckoo-filter. The design, the
// space figures and the full argument are in docs/lockfree.md.
//
// Each level is the filter core (basic_cuckoo_filter.hpp) under the lock-free policy:
// BasicCuckooFilter<KcasTable<W>, LockFreeSync, NestedAddressing<W, F>> (kcas_table.hpp: the slot
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
// Fingerprint widths. Level 0 stores W = F bits (so an ungrown filter, and its file, are the
// sequential filter's). Every later level stores W = F' = floor(63 / floor(63 / (F + 3))) bits:
// the widest width that packs as many slots per word as F + 3 does (F = 4: 7, 9 per word;
// F = 8: 12, 5 per word; F = 12: 15, 4 per word). A lookup compares all W bits, so each later
// level adds at most 2^-3 of level 0's false-positive rate at equal load: 8 levels answer
// "maybe" at most (1 + 7/8)x as often as one (a level's rate is about 2b load / 2^W, Fan et
// al., CoNEXT 2014; b = 4; basic_cuckoo_filter.hpp, "Guarantees"). Every level computes its buckets
// from the F-bit fingerprint, the projection of the stored one (nested_addressing.hpp), so a key
// has the same bucket pair in a level whatever its width, and the levels nest as (3) needs.
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
//   (3) Levels nest (detail/nested_addressing.hpp): keys that collide in level k (same stored
//       fingerprint, same bucket pair) collide in every smaller level. Equal F'-bit
//       fingerprints project to equal F-bit ones, the pair of every level is computed from
//       that F-bit fingerprint, and the pairs map onto one parent pair; levels 1..k-1 store the
//       same F' bits, level 0 the F-bit projection.
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
// Space: 64 / L bits per slot (L = floor(63 / W) slots per word: 12.8 at W = 12, 9.14 at
// W = 8, 16 at W = 15) plus 64 bits per stripe counter (0.125 per slot); see docs/lockfree.md
// for measured bits per item.
//
// Files (detail/filter_format.hpp, docs/file-format.md): an ungrown filter writes format
// version 1, the sequential filter's; a grown one writes version 2, every level with its width,
// which only a LockFreeCuckooFilter of the same F (growth on) loads.
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
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
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

namespace lockfree {
// The fingerprint width of a lock-free filter's levels after the first: the widest width that
// packs as many slots into a K-CAS word's 63 bits as F + 3 does (F = 4: 7, F = 8: 12,
// F = 12: 15), so that each such level's false-positive rate is at most 2^-3 of level 0's at
// the same load, for the space of F + 3 bits.
constexpr unsigned upper_fp_bits(unsigned fp_bits) noexcept {
  return KcasWord::kPayloadBits / (KcasWord::kPayloadBits / (fp_bits + 3));
}
}  // namespace lockfree

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
  static constexpr unsigned kFpBits = FpBits;
  // The width of every level after the first (level 0's is kFpBits).
  static constexpr unsigned kUpperFpBits = lockfree::upper_fp_bits(FpBits);

 private:
  using Sync = lockfree::LockFreeSync<kcas_type>;
  // Level 0: F-bit fingerprints, the sequential filter's addressing.
  using Table = lockfree::KcasTable<FpBits, kcas_type>;
  using Addressing = detail::NestedAddressing<FpBits>;
  using Level = BasicCuckooFilter<Table, Sync, Addressing>;
  // Levels 1..: F'-bit fingerprints, addressed by their F-bit projection (3).
  using UpperTable = lockfree::KcasTable<kUpperFpBits, kcas_type>;
  using UpperAddressing = detail::NestedAddressing<kUpperFpBits, FpBits>;
  using UpperLevel = BasicCuckooFilter<UpperTable, Sync, UpperAddressing>;
  using Steps = detail::LevelSteps;
  using Location = detail::Location;

  static_assert(kUpperFpBits >= FpBits + 3 &&
                    UpperTable::kSlotsPerWord == lockfree::KcasWord::kPayloadBits / (FpBits + 3),
                "a later level's fingerprints are the widest with the slots per word of F + 3");

 public:
  static constexpr unsigned kSlots = Table::kSlots;
  static constexpr unsigned kSlotsPerWord = Table::kSlotsPerWord;  // level 0's
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

  std::size_t size() const noexcept { return base().policy().items(); }  // (levels share it)
  // Slots in the levels grown so far.
  std::size_t capacity() const noexcept {
    std::size_t slots = 0;
    for (unsigned k = 0; k < levels(); ++k) {
      slots += with_level(k, [](const auto& level) { return level.capacity(); });
    }
    return slots;
  }
  std::size_t requested_capacity() const noexcept { return requested_capacity_; }
  // Slots of level k and how many hold a fingerprint (a scan: exact when no writer runs), and
  // the width of its fingerprints (kFpBits for level 0, kUpperFpBits after). Each level's share
  // of the false-positive rate follows its own load and width. std::out_of_range unless
  // k < levels().
  std::size_t level_capacity(unsigned k) const {
    return with_grown_level(k, [](const auto& level) { return level.capacity(); });
  }
  std::size_t level_occupied(unsigned k) const {
    return with_grown_level(k, [](const auto& level) {
      const auto& table = Steps::table(level);
      std::size_t occupied = 0;
      for (std::uint64_t bucket = 0; bucket < table.bucket_count(); ++bucket) {
        occupied += kSlots - table.free_slots(bucket);
      }
      return occupied;
    });
  }
  unsigned level_fp_bits(unsigned k) const {
    return with_grown_level(
        k, [](const auto& level) { return std::remove_cvref_t<decltype(level)>::kFpBits; });
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
    const std::size_t n = levels();
    std::string widths = std::to_string(kFpBits) + "-bit fingerprints";
    if (n > 1)
      widths +=
          " (" + std::to_string(kUpperFpBits) + "-bit in levels 1.." + std::to_string(n - 1) + ")";
    return "lock-free " + widths + ", 4 slots/bucket, " + std::to_string(n) + " level(s)";
  }

  // ---- persistence (detail/filter_format.hpp, docs/file-format.md) ----------------------
  // An ungrown filter writes format version 1, the sequential filter's: level 0's
  // fingerprints exactly as CuckooFilter<PackedTable<F, 4>> lays them out (counters are not
  // saved: they matter only to operations in flight), so its files move freely between the
  // sequential, striped and lock-free filters. A grown filter writes version 2: every level's
  // slot words with its width, which only a LockFreeCuckooFilter<F> that may grow loads.

  using FileTable = PackedTable<kFpBits, kSlots>;

  // Not concurrent with writers. Throws std::ios_base::failure if the stream fails.
  void save(std::ostream& out) const {
    if (levels() != 1) {
      save_levels(out);
      return;
    }
    const Table& table = Steps::table(base());
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

  // Reads a filter saved by any ccf cuckoo filter of this shape (packed, F bits, 4 slots:
  // version 1), or by a LockFreeCuckooFilter<F> grown to several levels (version 2; not into
  // a filter whose options turn growth off). Throws FormatError, also for a sequential filter's
  // victim entry that has no room, and builds nothing unless every check holds.
  [[nodiscard]] static std::unique_ptr<LockFreeCuckooFilter> load(std::istream& in,
                                                                  Options options = {},
                                                                  Hook hook = {}) {
    const detail::FilterHeader h =
        detail::HeaderCodec::read(in, detail::FileVersions::kOneTableOrLevels);
    if (h.version == detail::kLevelsFormatVersion) {
      return load_levels(h, in, options, std::move(hook));
    }
    const FileTable staging = detail::read_table<FileTable>(h, in);
    options.filter.seed = h.seed;
    options.filter.max_kicks = h.max_kicks;
    std::unique_ptr<LockFreeCuckooFilter> filter(
        new LockFreeCuckooFilter(h.buckets, h.capacity, options, std::move(hook)));
    filter->restore(filter->base(), staging);
    if (h.victim_used &&
        filter->base().insert_fingerprint(h.victim_bucket, h.victim_fp) != Status::kOk) {
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
  static_assert(kMaxLevels <= detail::kMaxFileLevels, "levels a version-2 file cannot hold");

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

  // The payload bytes of level k's slot words (level 0: F bits, later levels: F').
  static std::size_t level_payload_bytes(std::uint64_t base_buckets, unsigned k) noexcept {
    return k == 0 ? Table::payload_bytes(base_buckets)
                  : UpperTable::payload_bytes(base_buckets << k);
  }

  // Places every level this filter may grow to in one reserved range, as many levels as growth
  // allows and the 64 TiB table limit admits, and makes their cores (nothing is touched until
  // a level is committed and published).
  void lay_out(std::uint64_t base_buckets) {
    const unsigned wanted = grow_ ? kMaxLevels : 1;
    std::size_t offset = 0;
    for (unsigned k = 0; k < wanted; ++k) {
      const std::size_t bytes = level_payload_bytes(base_buckets, k);
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
    // The pages read as zero: every word is an empty payload.
    const auto words = [&](unsigned k) {
      return reinterpret_cast<lockfree::KcasWord*>(region_.base() + placements_[k].offset);
    };
    base_.emplace(Table(shared_.kcas, words(0), base_buckets), Addressing(base_buckets, 0),
                  options_, shared_);
    for (unsigned k = 1; k < reserved_levels_; ++k) {
      upper_[k - 1].emplace(UpperTable(shared_.kcas, words(k), base_buckets << k),
                            UpperAddressing(base_buckets, k), options_, shared_);
    }
  }

  Level& base() noexcept { return *base_; }
  const Level& base() const noexcept { return *base_; }
  UpperLevel& upper(unsigned k) noexcept { return *upper_[k - 1]; }  // k >= 1
  const UpperLevel& upper(unsigned k) const noexcept { return *upper_[k - 1]; }

  // f(level k): level 0 and the later levels are cores of two types (their widths differ).
  template <class F>
  decltype(auto) with_level(unsigned k, F&& f) {
    return k == 0 ? f(base()) : f(upper(k));
  }
  template <class F>
  decltype(auto) with_level(unsigned k, F&& f) const {
    return k == 0 ? f(base()) : f(upper(k));
  }
  template <class F>
  decltype(auto) with_grown_level(unsigned k, F&& f) const {
    if (k >= levels()) {
      throw std::out_of_range("level " + std::to_string(k) + " of a filter with " +
                              std::to_string(levels()) + " level(s)");
    }
    return with_level(k, std::forward<F>(f));
  }

  // Bits of slot words and counters in the levels grown so far.
  std::size_t table_bits() const noexcept {
    std::size_t bytes = 0;
    for (unsigned k = 0; k < levels(); ++k) {
      bytes += with_level(k, [](const auto& level) {
        return Steps::table(level).memory_bytes() + level.policy().memory_bytes();
      });
    }
    return bytes * 8;
  }

  // The newest level (the one inserts go to, and scans start from).
  unsigned top() const noexcept { return published_.load(std::memory_order_acquire) - 1; }

  // ---- lookups -------------------------------------------------------------------------

  bool contains_hash(std::uint64_t hash) const { return in_levels_below(top() + 1, hash); }

  // Whether one of the levels below `end` holds the hash's fingerprint, newest first (5).
  bool in_levels_below(unsigned end, std::uint64_t hash) const {
    for (unsigned k = end; k-- > 1;) {
      if (Steps::contains(upper(k), Steps::stage(upper(k), hash))) return true;
    }
    return end > 0 && Steps::contains(base(), Steps::stage(base(), hash));
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
    return {hash, k, k == 0 ? Steps::stage(base(), hash) : Steps::stage(upper(k), hash)};
  }
  [[gnu::always_inline]] StagedLookup stage_update(std::uint64_t hash) const noexcept {
    const unsigned k = top();
    return {hash, k, staged_update(k, hash)};
  }
  [[gnu::always_inline]] Location staged_update(unsigned k, std::uint64_t hash) const noexcept {
    return k == 0 ? Steps::stage_update(base(), hash) : Steps::stage_update(upper(k), hash);
  }
  bool finish_lookup(const StagedLookup& s) const {
    if (s.level == 0) return Steps::contains(base(), s.at);
    return Steps::contains(upper(s.level), s.at) || in_levels_below(s.level, s.hash);
  }

  // ---- erase ---------------------------------------------------------------------------

  // (4): the newest level that holds the fingerprint gives up one copy.
  Status erase_hash(std::uint64_t hash) {
    for (unsigned k = top() + 1; k-- > 1;) {
      if (Steps::erase(upper(k), Steps::stage_update(upper(k), hash)) == Status::kOk) {
        return Status::kOk;
      }
    }
    return Steps::erase(base(), Steps::stage_update(base(), hash));
  }
  Status finish_erase(const StagedLookup& s) { return erase_hash(s.hash); }

  // ---- insert --------------------------------------------------------------------------

  Status insert_hash(std::uint64_t hash) {
    const unsigned k = top();
    return insert_from(k, hash, staged_update(k, hash));
  }

  // KeyApi's batched inserts: a filter that grew since staging locates the key again.
  Status finish_insert(const StagedLookup& s) {
    const unsigned k = top();
    return insert_from(k, s.hash, k == s.level ? s.at : staged_update(k, s.hash));
  }

  // insert_many's overlapped path searches (detail/key_api.hpp), in the newest level: a search
  // of level 0's kind or of a later level's, as the level the key was staged in.
  class GroupSearch {
   public:
    bool expand(std::size_t parents) {
      return upper_ ? upper_search_.expand(parents) : base_search_.expand(parents);
    }
    template <unsigned PathDepth>
    bool scan(detail::CuckooPath<kSlots, PathDepth>& path) {
      return upper_ ? upper_search_.scan(path) : base_search_.scan(path);
    }

   private:
    friend class LockFreeCuckooFilter;
    bool upper_ = false;
    typename Level::GroupSearch base_search_;
    typename UpperLevel::GroupSearch upper_search_;
  };
  using GroupPath = typename Level::GroupPath;
  static_assert(std::is_same_v<GroupPath, typename UpperLevel::GroupPath>);

  // The insert without a path search: false when neither bucket has room, or the filter grew
  // since staging (finish_insert then locates the key in the new level).
  bool try_place(const StagedLookup& s) {
    return top() == s.level &&
           with_level(s.level, [&](auto& level) { return Steps::try_place(level, s.at); });
  }
  void start_search(const StagedLookup& s, GroupSearch& search) const {
    search.upper_ = s.level != 0;
    if (s.level == 0) {
      Steps::start_search(base(), s.at, search.base_search_);
    } else {
      Steps::start_search(upper(s.level), s.at, search.upper_search_);
    }
  }
  // Moves along a path the group search found (re-validated step by step), or inserts afresh
  // if it no longer holds.
  Status finish_along(const StagedLookup& s, const GroupPath& path) {
    if (top() != s.level) return finish_insert(s);
    if (with_level(s.level, [&](auto& level) { return Steps::finish_along(level, s.at, path); }) ==
        Status::kOk) {
      return Status::kOk;
    }
    return insert_after_full(s.level, s.hash);
  }

  // Inserts into level k (at its location `at`), growing the filter when it is full.
  Status insert_from(unsigned k, std::uint64_t hash, const Location& at) {
    if (with_level(k, [&](auto& level) { return Steps::insert(level, at); }) == Status::kOk)
        [[likely]] {
      return Status::kOk;
    }
    return insert_after_full(k, hash);
  }

  // Level k had no room: the insert goes to the level after it, grown now if need be.
  [[gnu::noinline]] Status insert_after_full(unsigned k, std::uint64_t hash) {
    if (!grow_ || !grow_past(k)) return Status::kFull;
    const unsigned next = top();
    return insert_from(next, hash, staged_update(next, hash));
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

  // ---- persistence of a grown filter (format version 2) --------------------------------

  using FileImage = lockfree::KcasTableImage<kFpBits>;
  using UpperFileImage = lockfree::KcasTableImage<kUpperFpBits>;
  static_assert(FileImage::payload_bytes(1000) == Table::payload_bytes(1000) &&
                UpperFileImage::payload_bytes(1000) == UpperTable::payload_bytes(1000));

  // The record level k of a filter of `base_buckets` has in a file, items aside.
  static detail::LevelRecord level_record(std::uint64_t base_buckets, unsigned k) noexcept {
    return {k == 0 ? kFpBits : kUpperFpBits, kSlots, base_buckets << k, 0,
            level_payload_bytes(base_buckets, k)};
  }

  // Header, then each level's record, slot words and checksum (docs/file-format.md).
  void save_levels(std::ostream& out) const {
    const unsigned n = static_cast<unsigned>(levels());
    const std::uint64_t base_buckets = Steps::table(base()).bucket_count();
    detail::FilterHeader h;
    h.version = detail::kLevelsFormatVersion;
    h.layout = detail::TableLayout::kKcasWords;
    h.fp_bits = kFpBits;
    h.slots = kSlots;
    h.buckets = base_buckets;
    h.capacity = requested_capacity_;
    h.seed = options_.seed;
    h.max_kicks = options_.max_kicks;
    h.levels = n;
    h.upper_fp_bits = kUpperFpBits;
    for (unsigned k = 0; k < n; ++k) {
      h.items += level_occupied(k);
      h.payload_bytes += level_payload_bytes(base_buckets, k);
    }
    const auto header = detail::HeaderCodec::encode(h);
    out.write(reinterpret_cast<const char*>(header.data()), header.size());
    for (unsigned k = 0; k < n; ++k) {
      with_level(k, [&](const auto& level) {
        const auto& table = Steps::table(level);
        using Image = lockfree::KcasTableImage<std::remove_cvref_t<decltype(table)>::kFpBits>;
        Image image(table.bucket_count());
        for (std::size_t w = 0; w < image.words(); ++w) {
          image.set_word(w, table.kcas().read(table.word({w, 0})));
        }
        detail::LevelRecord record = level_record(base_buckets, k);
        record.items = level_occupied(k);
        const auto encoded = record.encode();
        out.write(reinterpret_cast<const char*>(encoded.data()), encoded.size());
        const std::span<const std::byte> payload = image.payload();
        const std::uint64_t checksum = XXH3_64bits(payload.data(), payload.size());
        out.write(reinterpret_cast<const char*>(payload.data()),
                  static_cast<std::streamsize>(payload.size()));
        out.write(reinterpret_cast<const char*>(&checksum), sizeof checksum);
      });
    }
    if (!out) throw std::ios_base::failure("writing the cuckoo filter failed");
  }

  // The rest of a version-2 load: every level read and validated into an image first (memory
  // follows the bytes present: detail/filter_format.hpp), then the filter made and filled.
  static std::unique_ptr<LockFreeCuckooFilter> load_levels(const detail::FilterHeader& h,
                                                           std::istream& in, Options options,
                                                           Hook hook) {
    const std::string grown = "the file holds a lock-free filter with " +
                              std::to_string(h.fp_bits) + "-bit fingerprints grown to " +
                              std::to_string(h.levels) + " levels";
    if (h.fp_bits != kFpBits) {
      throw FormatError(grown + "; load it with LockFreeCuckooFilter<" + std::to_string(h.fp_bits) +
                        ">, not LockFreeCuckooFilter<" + std::to_string(kFpBits) + ">");
    }
    if (h.slots != kSlots || h.upper_fp_bits != kUpperFpBits) {
      throw FormatError(grown + " with " + std::to_string(h.slots) + " slots per bucket and " +
                        std::to_string(h.upper_fp_bits) + "-bit fingerprints after level 0; " +
                        "this filter has " + std::to_string(kSlots) + " and " +
                        std::to_string(kUpperFpBits) + "-bit");
    }
    if (!options.grow) {
      throw FormatError(grown + "; this filter's options turn growth off (Options::grow)");
    }
    if (h.levels > kMaxLevels) {
      throw FormatError(grown + "; this filter holds at most " + std::to_string(kMaxLevels));
    }
    std::uint64_t payload = 0;
    for (unsigned k = 0; k < h.levels; ++k) payload += level_payload_bytes(h.buckets, k);
    if (h.payload_bytes != payload) {
      throw FormatError("payload size does not match the bucket count and levels");
    }
    // On a seekable stream: every level is there before the first is read.
    detail::require_available(in, detail::levels_tail_bytes(h));
    const FileImage base_image = detail::read_level<FileImage>(in, 0, level_record(h.buckets, 0));
    std::uint64_t items = *base_image.count_occupied();
    std::array<std::optional<UpperFileImage>, kMaxLevels - 1> upper_images;
    for (unsigned k = 1; k < h.levels; ++k) {
      upper_images[k - 1].emplace(
          detail::read_level<UpperFileImage>(in, k, level_record(h.buckets, k)));
      items += *upper_images[k - 1]->count_occupied();
    }
    if (items != h.items) throw FormatError("item count does not match the levels' contents");

    options.filter.seed = h.seed;
    options.filter.max_kicks = h.max_kicks;
    std::unique_ptr<LockFreeCuckooFilter> filter(
        new LockFreeCuckooFilter(h.buckets, h.capacity, options, std::move(hook)));
    if (filter->reserved_levels_ < h.levels) {
      throw FormatError(grown + "; this filter can reserve only " +
                        std::to_string(filter->reserved_levels_) + " at its size");
    }
    for (unsigned k = 1; k < h.levels; ++k) {
      if (!filter->grow_past(k - 1)) throw std::bad_alloc();
    }
    filter->restore(filter->base(), base_image);
    for (unsigned k = 1; k < h.levels; ++k) filter->restore(filter->upper(k), *upper_images[k - 1]);
    return filter;
  }

  // Puts every fingerprint of a file's table into the same bucket of `level` (which is empty,
  // and whose buckets have as many slots as the file's: each finds room).
  template <class LevelType, class Image>
  static void restore(LevelType& level, const Image& image) {
    for (std::uint64_t bucket = 0; bucket < image.bucket_count(); ++bucket) {
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        const std::uint32_t fp = image.read(bucket, slot);
        if (fp != 0 && level.restore_fingerprint(bucket, fp) != Status::kOk) {
          throw std::logic_error("a loaded bucket has fewer slots than the file's");
        }
      }
    }
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
  // the region: level 0 in base_, level k >= 1 in upper_[k - 1]; level k is in use once
  // k < published_.
  std::optional<Level> base_;
  std::array<std::optional<UpperLevel>, kMaxLevels - 1> upper_{};
  lockfree::LockFreeShared<kcas_type> shared_;
  std::atomic<unsigned> published_{1};  // levels usable; only grows
};

}  // namespace ccf
