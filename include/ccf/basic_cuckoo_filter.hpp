// BasicCuckooFilter<Table, Policy>: the one cuckoo filter core (Fan et al. 2014; thesis §5.2),
// under a synchronization policy. Every filter with a single table is this class:
//
//   CuckooFilter<Table>               Unsynchronized              cuckoo_filter.hpp
//   CoarseCuckooFilter<Table, Sync>   CoarseSync<Sync> concurrent/coarse_cuckoo_filter.hpp
//   StripedCuckooFilter<F, b, Reads>  StripedSync<Reads> concurrent/striped_cuckoo_filter.hpp
//   CopCuckooFilter<F, b, Executor>   CopSync<Executor>           concurrent/cop_cuckoo_filter.hpp
//   LockFreeCuckooFilter<F>           LockFreeSync, one core a lockfree/lock_free_cuckoo_filter.hpp
//                                     level, levels added as it
//                                     grows
//
// The core owns everything a filter is: the table (the storage layout is a policy of its own:
// PackedTable, SemiSortedTable, AtomicPackedTable), the addressing (detail/addressing.hpp),
// fingerprinting, the breadth-first path search (detail/cuckoo_path.hpp), the victim slot, the
// key and batch API (detail/key_api.hpp), the file format (detail/filter_format.hpp). It writes
// each operation once, in terms of the policy's sections:
//
//   lookup   read(at, probe)                probe reads the pair's two buckets
//   erase    update(at, plan, apply)        plan: which bucket holds the fingerprint; apply
//                                           removes it through remove(table, bucket, fp)
//                                           where the policy has one (else the table's
//                                           try_erase)
//   insert   update(at, plan, apply)        plan: the emptier bucket; if neither has room:
//            find a path without synchronization, then move(table, path, fp); a move that
//            finds the path changed restarts the insert
//
// update's contract: apply(plan()) happens atomically with respect to every other section on
// either bucket of `at` (a lock may simply hold them; COP runs plan outside and re-checks
// plan() == out inside a transaction), or, for a lock-free policy, apply's own writes are
// atomic and an apply that changed nothing (an insert's false, an erase's kNotFound) may run
// again. A policy's sections may also be plain calls: a policy whose operation<A>() runs whole
// operations one at a time (kExclusive) needs nothing else.
//
// A Policy provides (see the four policies for examples):
//   static constexpr bool kExclusive;  operations never overlap (no lock, or one global lock).
//                                      Only then is there a victim slot and a random walk: a
//                                      concurrent filter cannot park an item outside the table
//                                      without hiding it from some reader.
//   static constexpr std::size_t kBatchChunk;  keys per operation<>() section in a batch
//   static constexpr std::string_view kName;   prefix of shape() ("" for none)
//   explicit Policy(std::uint64_t buckets, args...);   args: what a filter built over its own
//                               table passes (the lock-free filter's levels: their shared state)
//   operation<Access>(f)        the whole operation f (hash-level entry points and batches)
//   read(at, probe)             a consistent probe of at's two buckets
//   update(at, plan, apply)     as above
//   move(table, path, fp) -> bool   carry out a cuckoo path, storing fp in the root's freed
//                                   slot; false (nothing of fp stored) if the path changed
//   remove(table, bucket, fp) -> bool (optional)   erase's removal of a copy from bucket;
//                                   false if there was none by then
//   count(bucket, delta), items(), clear_count()   the item count (exact when quiescent)
//   memory_bytes()                                 what the policy's state costs
//   static constexpr bool kPrefetchLookups (optional, default true): whether a single lookup
//                               prefetches its buckets before read(); false where read() loads
//                               them at once and the prefetch would only cost instructions
//   prefetch_update(table, at) (optional)  how an insert or erase stages (default: as a
//                               lookup, both buckets): what update(at, ...) will write, for
//                               writing (detail/prefetch.hpp)
//
// Guarantees
// - No false negatives: an item inserted (insert returned kOk) and not erased is always found,
//   also once the filter is full, after erases of other items, and after save/load.
// - False positives: a never-inserted item is reported present with probability at most
//   1 - (1 - 2^-F)^(2b) (about 2b / 2^F), less when the filter is not full.
// - Full, with a victim slot (kExclusive): when an insert has kicked `max_kicks` fingerprints
//   without finding room, the item is stored all the same and the last displaced fingerprint
//   parks in a one-entry victim slot that lookups and erases consult. From then on inserts
//   return kFull and change nothing, until an erase frees room (the victim is then put back
//   into the table). No item is ever lost. Without (concurrent policies): the search goes one
//   level deeper instead, and a full insert changes nothing and returns kFull.
// - Load: a filter fills to >= 95% of its slots with b = 4 (about 84-90% with b = 2, 98% with
//   b = 8) before the first kFull.
//
// Contract (as for every cuckoo filter): erase only items that were inserted. Erasing a
// never-inserted item may remove a colliding item's fingerprint, a false negative for that
// item. The same item may be inserted up to 2b times (each erase removes one copy).
//
// Operations are O(1) expected. Batched lookups and inserts (contains_many, insert_many) hash
// ahead and prefetch both buckets of upcoming keys, overlapping the cache misses that dominate
// the cost of probing a large table; insert_many also runs the path searches of the inserts
// that find both buckets full in groups, a round of all of them in flight at once
// (detail/key_api.hpp).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <limits>
#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/filter_format.hpp"
#include "ccf/detail/key_api.hpp"
#include "ccf/detail/occupancy_api.hpp"
#include "ccf/filter_options.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"
#include "ccf/sync/access.hpp"

namespace ccf {

namespace detail {
// The victim slot and the random walk's generator: only filters whose operations never overlap
// have them.
struct Overflow {
  struct Victim {
    bool used = false;
    std::uint64_t bucket = 0;
    std::uint32_t fp = 0;
  } victim;
  std::uint64_t rng;

  std::uint64_t next_random() noexcept {  // xorshift64*
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dULL;
  }
};
struct NoOverflow {};
struct LevelSteps;
}  // namespace detail

// Addr: the bucket addressing, detail::Addressing (any bucket count) unless a filter is one
// level of a family that nests (detail::NestedAddressing: level k has base * 2^k buckets, and
// keys that share a fingerprint and buckets in level k share them in every smaller level).
template <class Table, class Policy, class Addr = detail::Addressing<Table::kFpBits>>
class BasicCuckooFilter : public detail::KeyApi<BasicCuckooFilter<Table, Policy, Addr>>,
                          public detail::OccupancyApi<BasicCuckooFilter<Table, Policy, Addr>> {
  friend class detail::KeyApi<BasicCuckooFilter>;
  friend class detail::OccupancyApi<BasicCuckooFilter>;
  friend struct detail::LevelSteps;
  using Api = detail::KeyApi<BasicCuckooFilter>;
  static constexpr bool kExclusive = Policy::kExclusive;
  static constexpr bool kPrefetchLookups = [] {
    if constexpr (requires { Policy::kPrefetchLookups; }) {
      return Policy::kPrefetchLookups;
    } else {
      return true;
    }
  }();

 public:
  using table_type = Table;
  using policy_type = Policy;
  static constexpr unsigned kFpBits = Table::kFpBits;
  static constexpr unsigned kSlots = Table::kSlots;
  // A filter without the random-walk fallback searches one level deeper to reach the same load.
  static constexpr unsigned kPathDepth =
      kExclusive ? detail::kDefaultPathDepth<kSlots> : detail::kConcurrentPathDepth<kSlots>;
  // insert_many's group searches (detail/key_api.hpp); a filter made of these cores names them.
  using GroupSearch = detail::CuckooPathSearch<Table, Addr, detail::kGroupSearchDepth>;
  using GroupPath = detail::CuckooPath<kSlots, detail::kGroupSearchDepth>;

  // Throws std::invalid_argument for capacity 0 or too large for the 64 TiB table limit, a
  // max_load outside (0, 1], or max_kicks above 2^20.
  explicit BasicCuckooFilter(std::size_t capacity, FilterOptions options = {}) requires
      std::constructible_from<Addr, std::uint64_t>
      : BasicCuckooFilter(Table(detail::checked_bucket_count<Table>(capacity, options)), capacity,
                          options) {}

  // A filter of exactly addressing.buckets() buckets addressed by `addressing` (e.g. level k of
  // a NestedAddressing family). options.max_load is not used.
  explicit BasicCuckooFilter(const Addr& addressing, FilterOptions options = {})
      : BasicCuckooFilter(Table(checked_buckets(addressing.buckets(), options)),
                          addressing.buckets() * kSlots, options, addressing) {}

  // A filter over a table its owner built (e.g. over memory the owner reserved: one level of the
  // lock-free filter), addressed by `addressing` (which must have the table's bucket count);
  // policy_args go to the policy's constructor after the bucket count.
  template <class... PolicyArgs>
  BasicCuckooFilter(Table&& table, const Addr& addressing, const FilterOptions& options,
                    PolicyArgs&&... policy_args)
      : table_(std::move(table)),
        addressing_(addressing),
        policy_(table_.bucket_count(), std::forward<PolicyArgs>(policy_args)...),
        options_(options),
        requested_capacity_(table_.bucket_count() * kSlots) {
    if constexpr (kExclusive) overflow_.rng = options.seed | 1;
  }

  // Movable where the policy is (Unsynchronized); moving is not concurrent with anything.
  // Concurrent filters: clear() and save() are not concurrent with writers.
  BasicCuckooFilter(BasicCuckooFilter&&) noexcept = default;
  BasicCuckooFilter& operator=(BasicCuckooFilter&&) noexcept = default;

  // ---- single-item operations: insert, contains, erase (detail/key_api.hpp) -------------
  using Api::contains;
  using Api::erase;
  using Api::insert;

  // ---- batched operations ----------------------------------------------------------------
  // out[i] = contains(keys[i]); returns the number of hits. Pipelined (detail/key_api.hpp), in
  // sections of Policy::kBatchChunk keys (the coarse filter takes its lock once per chunk;
  // each chunk is atomic, the batch is not). out must be at least as long as keys (else
  // std::invalid_argument).
  template <class Key>
  std::size_t contains_many(std::span<const Key> keys, std::span<bool> out) const {
    if (out.size() < keys.size()) throw std::invalid_argument("contains_many: output too short");
    std::size_t hits = 0;
    for (std::size_t begin = 0; begin < keys.size(); begin += Policy::kBatchChunk) {
      const std::size_t n = std::min(Policy::kBatchChunk, keys.size() - begin);
      hits += policy_.template operation<sync::Access::kRead>(
          [&] { return Api::contains_many(keys.subspan(begin, n), out.subspan(begin, n)); });
    }
    return hits;
  }

  // Inserts keys in order and stops at the first kFull: returns how many leading keys were
  // stored. Pipelined and chunked as contains_many.
  template <class Key>
  std::size_t insert_many(std::span<const Key> keys) {
    std::size_t stored = 0;
    for (std::size_t begin = 0; begin < keys.size(); begin += Policy::kBatchChunk) {
      const std::size_t n = std::min(Policy::kBatchChunk, keys.size() - begin);
      const std::size_t chunk_stored = policy_.template operation<sync::Access::kWrite>(
          [&] { return Api::insert_many(keys.subspan(begin, n)); });
      stored += chunk_stored;
      if (chunk_stored < n) break;
    }
    return stored;
  }

  // ---- merge ----------------------------------------------------------------------------
  // Adds every fingerprint `other` holds (its victim's too) to this filter, as if its items had
  // been inserted here: afterwards every item either filter held is found. Both must have the
  // same bucket count and seed (else std::invalid_argument, and nothing changed). kFull when
  // this filter ran out of room: it then holds its own items and part of other's. Not
  // concurrent with writers of `other`.
  Status merge(const BasicCuckooFilter& other) {
    if (other.bucket_count() != bucket_count() || other.seed() != seed()) {
      throw std::invalid_argument("merge: the filters differ in bucket count (" +
                                  std::to_string(bucket_count()) + " and " +
                                  std::to_string(other.bucket_count()) +
                                  ") or seed; only filters built with "
                                  "the same capacity and options can be merged");
    }
    const auto add = [&](std::uint64_t bucket, std::uint32_t fp) {
      const Location at{bucket, addressing_.alternate(bucket, fp), fp};
      return policy_.template operation<sync::Access::kWrite>([&] { return insert_at(at); });
    };
    for (std::uint64_t bucket = 0; bucket < bucket_count(); ++bucket) {
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        const std::uint32_t fp = other.table_.read(bucket, slot);
        if (fp != 0 && add(bucket, fp) != Status::kOk) return Status::kFull;
      }
    }
    if constexpr (kExclusive) {
      const auto& victim = other.overflow_.victim;
      if (victim.used && add(victim.bucket, victim.fp) != Status::kOk) return Status::kFull;
    }
    return Status::kOk;
  }

  // ---- size and space --------------------------------------------------------------------

  // ---- fingerprints by bucket: moving a filter's contents (e.g. compacting nested levels) ----
  // Each is one operation, concurrent like insert and erase; std::invalid_argument for a bucket,
  // slot or fingerprint out of range.

  // The fingerprint in `slot` of `bucket`; 0 for an empty slot.
  std::uint32_t fingerprint_at(std::uint64_t bucket, unsigned slot) const {
    check_fingerprint_place(bucket, slot, 1);
    const Location at{bucket, bucket, 0};
    return policy_.template operation<sync::Access::kRead>(
        [&] { return policy_.read(at, [&] { return table_.read(bucket, slot); }); });
  }
  // Stores `fp` in the pair {bucket, its alternate}, as insert does for a key located there;
  // with make_room = false only into a free slot of the pair (no path search: kFull at once).
  Status insert_fingerprint(std::uint64_t bucket, std::uint32_t fp, bool make_room = true) {
    check_fingerprint_place(bucket, 0, fp);
    const Location at = stage_update_at({bucket, addressing_.alternate(bucket, fp), fp});
    return policy_.template operation<sync::Access::kWrite>(
        [&] { return make_room ? insert_at(at) : store_in_free_slot(at); });
  }
  // Stores `fp` in a free slot of `bucket` itself, not of its alternate: where a file's table
  // had it (a table rebuilt slot by slot then holds exactly the file's buckets). kFull if the
  // bucket has no free slot, or (as for any insert) while a victim is parked.
  Status restore_fingerprint(std::uint64_t bucket, std::uint32_t fp) {
    check_fingerprint_place(bucket, 0, fp);
    return policy_.template operation<sync::Access::kWrite>([&] {
      return store_in_free_slot({bucket, bucket, fp});
    });
  }
  // Removes one copy of `fp` from the pair {bucket, its alternate}, as erase does.
  Status erase_fingerprint(std::uint64_t bucket, std::uint32_t fp) {
    check_fingerprint_place(bucket, 0, fp);
    const Location at = stage_update_at({bucket, addressing_.alternate(bucket, fp), fp});
    return policy_.template operation<sync::Access::kWrite>([&] { return erase_at(at); });
  }

  // Exact when no operation is in flight; otherwise a value the count had recently.
  std::size_t size() const {
    return policy_.template operation<sync::Access::kRead>([&] { return policy_.items(); });
  }
  bool empty() const { return size() == 0; }
  // Slots in the table (the number of fingerprints it can hold, victim aside).
  std::size_t capacity() const noexcept { return table_.bucket_count() * kSlots; }
  // The capacity asked for at construction.
  std::size_t requested_capacity() const noexcept { return requested_capacity_; }
  std::size_t bucket_count() const noexcept { return table_.bucket_count(); }
  // load_factor(), bits_per_item(): detail/occupancy_api.hpp.
  // Table, policy state (locks, stripes, counters) and the filter object: what the filter costs.
  std::size_t memory_bytes() const noexcept {
    return table_.memory_bytes() + policy_.memory_bytes() + sizeof(*this);
  }
  bool huge_pages_advised() const noexcept { return table_.huge_pages_advised(); }
  bool victim_used() const {
    if constexpr (kExclusive) {
      return policy_.template operation<sync::Access::kRead>([&] { return overflow_.victim.used; });
    } else {
      return false;
    }
  }
  const FilterOptions& options() const noexcept { return options_; }
  std::uint64_t seed() const noexcept { return options_.seed; }
  std::string shape() const {
    const std::string table = detail::shape_of<Table>().shape();
    return Policy::kName.empty() ? table : std::string(Policy::kName) + " " + table;
  }

  // True when operations run as hardware transactions (RTM present and the policy elides).
  bool speculative() const noexcept {
    if constexpr (requires { policy_.speculative(); }) {
      return policy_.speculative();
    } else {
      return false;
    }
  }
  // The policy's own state and statistics (its lock, executor, stripes).
  Policy& policy() noexcept { return policy_; }
  const Policy& policy() const noexcept { return policy_; }

  void clear() {
    policy_.template operation<sync::Access::kWrite>([&] {
      table_.clear();
      policy_.clear_count();
      if constexpr (kExclusive) overflow_.victim = {};
    });
  }

  // ---- persistence (format: detail/filter_format.hpp) -------------------------------------
  // Files move freely between every filter of the same table shape.

  // Concurrent filters: not concurrent with writers (lookups may go on). Throws
  // std::ios_base::failure if the stream fails.
  void save(std::ostream& out) const {
    policy_.template operation<sync::Access::kRead>(
        [&] { detail::write_filter(out, header(), table_.payload()); });
  }

  // Reads a filter saved by any filter of this table shape. Throws FormatError (truncated,
  // corrupted, foreign or mismatched data, an item count the table does not hold, or, for a
  // filter without a victim slot, a victim entry with no room in its buckets).
  [[nodiscard]] static std::unique_ptr<BasicCuckooFilter> load(
      std::istream& in) requires std::constructible_from<Addr, std::uint64_t> {
    const detail::FilterHeader h = detail::HeaderCodec::read(in);
    return read_after_header(h, in, Addr(h.buckets));
  }
  // The same for a filter saved with the given addressing: the file must have its bucket count.
  [[nodiscard]] static std::unique_ptr<BasicCuckooFilter> load(std::istream& in,
                                                               const Addr& addressing) {
    const detail::FilterHeader h = detail::HeaderCodec::read(in);
    if (h.buckets != addressing.buckets()) {
      throw FormatError("the file has " + std::to_string(h.buckets) +
                        " buckets where its addressing has " +
                        std::to_string(addressing.buckets()));
    }
    return read_after_header(h, in, addressing);
  }

  // The rest of load, for a header already read (AnyCuckooFilter reads it to pick the shape).
  static std::unique_ptr<BasicCuckooFilter> read_after_header(
      const detail::FilterHeader& h,
      std::istream& in) requires std::constructible_from<Addr, std::uint64_t> {
    return read_after_header(h, in, Addr(h.buckets));
  }

 private:
  static std::unique_ptr<BasicCuckooFilter> read_after_header(const detail::FilterHeader& h,
                                                              std::istream& in,
                                                              const Addr& addressing) {
    FilterOptions options;
    options.seed = h.seed;
    options.max_kicks = h.max_kicks;
    std::unique_ptr<BasicCuckooFilter> filter(
        new BasicCuckooFilter(detail::read_table<Table>(h, in), h.capacity, options, addressing));
    filter->adopt_victim(h);
    filter->recount();  // read_table checked the header's count against the table
    return filter;
  }

  using Location = detail::Location;
  using Path = detail::CuckooPath<kSlots, kPathDepth>;
  // Where an erase found the fingerprint.
  enum class Where : std::uint8_t { kPrimary, kAlternate, kNeither };

  void check_fingerprint_place(std::uint64_t bucket, unsigned slot, std::uint32_t fp) const {
    if (bucket >= bucket_count() || slot >= kSlots || fp == 0 || fp > Table::kFpMask) {
      throw std::invalid_argument("no fingerprint " + std::to_string(fp) + " at bucket " +
                                  std::to_string(bucket) + ", slot " + std::to_string(slot) +
                                  " of a filter of " + std::to_string(bucket_count()) +
                                  " buckets of " + std::to_string(kSlots) + " slots");
    }
  }

  // The bucket count of an addressing-made filter, checked as a capacity would be.
  static std::uint64_t checked_buckets(std::uint64_t buckets, FilterOptions options) {
    if (buckets == 0 || buckets > detail::kMaxTableBytes) {
      throw std::invalid_argument("cuckoo filter bucket count " + std::to_string(buckets) +
                                  " is out of range");
    }
    options.max_load = 1.0;
    return detail::checked_bucket_count<Table>(buckets * kSlots, options);
  }

  BasicCuckooFilter(Table&& table, std::size_t capacity, const FilterOptions& options) requires
      std::constructible_from<Addr, std::uint64_t>
      : BasicCuckooFilter(std::move(table), capacity, options, Addr(table.bucket_count())) {}

  BasicCuckooFilter(Table&& table, std::size_t capacity, const FilterOptions& options,
                    const Addr& addressing)
      : BasicCuckooFilter(std::move(table), addressing, options) {
    requested_capacity_ = capacity;
  }

  std::size_t table_bits() const noexcept { return 8 * table_.payload().size(); }

  // The hot steps are always inlined: GCC's inliner otherwise left stage_lookup and insert_at
  // as calls in chtbench's striped filter, which cost its batched lookups and inserts 10-20%.
  [[gnu::always_inline]] Location locate(std::uint64_t hash) const noexcept {
    return detail::locate(addressing_, hash);
  }

  // ---- KeyApi's entry points: a whole operation each, or a step of a batch ----------------

  // Every operation is staged the same way: locate, and prefetch both buckets, so that their
  // misses overlap with each other (and, in a batch, with the keys ahead) whatever the policy
  // reads first (the striped policy reads its stripes' sequence numbers before the buckets).
  [[gnu::always_inline]] Location stage_lookup(std::uint64_t hash) const noexcept {
    return detail::prefetch_both(table_, locate(hash));
  }
  // Inserts and erases stage as the policy says, where it says (prefetch_update: the
  // concurrent policies fetch what they will write for writing). The by-bucket writes
  // (insert_fingerprint, erase_fingerprint) stage alike: unstaged, a striped policy's stripe
  // and the two buckets would miss one after another.
  [[gnu::always_inline]] Location stage_update(std::uint64_t hash) const noexcept {
    return stage_update_at(locate(hash));
  }
  [[gnu::always_inline]] Location stage_update_at(const Location& at) const noexcept {
    if constexpr (requires { policy_.prefetch_update(table_, Location{}); }) {
      policy_.prefetch_update(table_, at);
      return at;
    } else {
      return detail::prefetch_both(table_, at);
    }
  }
  bool contains_hash(std::uint64_t hash) const {
    const Location at = kPrefetchLookups ? stage_lookup(hash) : locate(hash);
    return policy_.template operation<sync::Access::kRead>([&] { return lookup(at); });
  }
  std::size_t count_hash(std::uint64_t hash) const {
    const Location at = stage_lookup(hash);
    return policy_.template operation<sync::Access::kRead>([&] {
      return policy_.read(at, [&] {
        std::size_t copies = copies_in(at.primary, at.fp);
        if (at.alternate != at.primary) copies += copies_in(at.alternate, at.fp);
        if constexpr (kExclusive) {
          copies += static_cast<std::size_t>(overflow_.victim.used && victim_matches(at));
        }
        return copies;
      });
    });
  }
  std::size_t copies_in(std::uint64_t bucket, std::uint32_t fp) const {
    std::size_t copies = 0;
    for (unsigned slot = 0; slot < kSlots; ++slot) copies += table_.read(bucket, slot) == fp;
    return copies;
  }
  Status insert_hash(std::uint64_t hash) {
    const Location at = stage_update(hash);
    return policy_.template operation<sync::Access::kWrite>([&] { return insert_at(at); });
  }
  Status erase_hash(std::uint64_t hash) {
    const Location at = stage_update(hash);
    return policy_.template operation<sync::Access::kWrite>([&] { return erase_at(at); });
  }
  bool finish_lookup(const Location& at) const { return lookup(at); }
  Status finish_insert(const Location& at) { return insert_at(at); }
  Status finish_erase(const Location& at) { return erase_at(at); }

  // insert_many's overlapped path searches (detail/key_api.hpp), inside the batch's section.
  // insert_at without the path search: false when neither bucket has room (or the victim slot
  // is in use: insert_at then answers kFull). Both buckets are looked at first outside the
  // policy's section: near full most inserts find no room, and then take no lock.
  bool try_place(const Location& at) {
    if constexpr (kExclusive) {
      if (overflow_.victim.used) return false;
    }
    if (!table_.has_empty(at.primary) && !table_.has_empty(at.alternate)) return false;
    return store_in_either(at);
  }
  void start_search(const Location& at, GroupSearch& search) const {
    search.start(table_, addressing_, at.primary, at.alternate);
  }
  // Carries out a path the group search found, or inserts afresh if it no longer holds.
  Status finish_along(const Location& at, const GroupPath& path) {
    if constexpr (kExclusive) {
      if (overflow_.victim.used) return Status::kFull;
    }
    if (detail::path_intact(table_, path) && policy_.move(table_, path, at.fp)) {
      policy_.count(path.steps[path.length - 1].bucket, +1);
      return Status::kOk;
    }
    return insert_at(at);
  }

  // ---- the operations, once for every policy ----------------------------------------------

  bool lookup(const Location& at) const {
    // Both buckets are read unconditionally: their cache misses overlap, and a lookup has no
    // data-dependent branch to mispredict.
    const bool in_table = policy_.read(at, [&] {
      const bool in_primary = table_.contains(at.primary, at.fp);      // (the primary first: the
      const bool in_alternate = table_.contains(at.alternate, at.fp);  // lock-free tests' order)
      return detail::found_in_either(in_primary, in_alternate);
    });
    if constexpr (kExclusive) {
      if (overflow_.victim.used) [[unlikely]]
        return in_table | victim_matches(at);
    }
    return in_table;
  }

  // The common case (a free slot in either bucket) inline; the path search out of line.
  [[gnu::always_inline]] Status insert_at(const Location& at) {
    if constexpr (kExclusive) {
      if (overflow_.victim.used) return Status::kFull;
    }
    if (store_in_either(at)) [[likely]] {
      return Status::kOk;
    }
    return insert_making_room(at);
  }

  // Both buckets were full: a cuckoo path, or (kExclusive) the random walk.
  [[gnu::noinline]] Status insert_making_room(const Location& at) {
    for (;;) {
      Path path;
      if (!detail::find_cuckoo_path(table_, addressing_, at.primary, at.alternate, path)) {
        if constexpr (kExclusive) {
          random_walk(at);
          return Status::kOk;
        } else {
          return Status::kFull;
        }
      }
      if (policy_.move(table_, path, at.fp)) {
        // The path's buckets each gave one fingerprint and took one, but its last took one more.
        policy_.count(path.steps[path.length - 1].bucket, +1);
        return Status::kOk;
      }
      if (store_in_either(at)) return Status::kOk;  // the path changed: room may have appeared
    }
  }

  Status store_in_free_slot(const Location& at) {
    if constexpr (kExclusive) {
      if (overflow_.victim.used) return Status::kFull;
    }
    return store_in_either(at) ? Status::kOk : Status::kFull;
  }

  // Stores at.fp in the emptier of its buckets (the primary on a tie); false if neither has
  // room. The emptier bucket, not the first with room: two choices keep the buckets' loads
  // even (Azar et al., "Balanced allocations", 1994), so near full far more of the buckets a
  // path search reaches still have a free slot, and it ends sooner (docs/design.md, "Placement:
  // the emptier bucket").
  // Under a lock the plan holds and its bucket takes the fingerprint; a lock-free plan may be
  // stale, so a planned bucket that filled up since is followed by the other.
  bool store_in_either(const Location& at) {
    return policy_.update(
        at,
        [&] {
          return table_.free_slots(at.primary) >= table_.free_slots(at.alternate) ? at.primary
                                                                                  : at.alternate;
        },
        [&](std::uint64_t bucket) {
          if (!table_.try_insert(bucket, at.fp)) {
            bucket = bucket == at.primary ? at.alternate : at.primary;
            if (!table_.try_insert(bucket, at.fp)) return false;
          }
          policy_.count(bucket, +1);
          return true;
        });
  }

  Status erase_at(const Location& at) {
    const Status status = policy_.update(
        at,
        [&] {
          return table_.contains(at.primary, at.fp)     ? Where::kPrimary
                 : table_.contains(at.alternate, at.fp) ? Where::kAlternate
                                                        : Where::kNeither;
        },
        [&](Where where) {
          if (where == Where::kNeither) return Status::kNotFound;
          const std::uint64_t bucket = where == Where::kPrimary ? at.primary : at.alternate;
          if constexpr (requires { policy_.remove(table_, bucket, at.fp); }) {
            if (!policy_.remove(table_, bucket, at.fp)) return Status::kNotFound;
          } else {
            table_.try_erase(bucket, at.fp);
          }
          policy_.count(bucket, -1);
          return Status::kOk;
        });
    if constexpr (kExclusive) {
      if (status == Status::kOk) {
        rehome_victim();
      } else if (overflow_.victim.used && victim_matches(at)) {
        overflow_.victim.used = false;
        policy_.count(overflow_.victim.bucket, -1);
        return Status::kOk;
      }
    }
    return status;
  }

  // ---- the victim slot (kExclusive only) --------------------------------------------------

  bool victim_matches(const Location& at) const noexcept {
    const auto& victim = overflow_.victim;
    return victim.fp == at.fp && (victim.bucket == at.primary || victim.bucket == at.alternate);
  }

  // No path within reach: a random walk of up to max_kicks displacements; when it runs out, the
  // fingerprint still in hand becomes the victim. Either way the item is stored.
  void random_walk(const Location& at) {
    std::uint32_t fp = at.fp;
    std::uint64_t bucket = overflow_.next_random() & 1 ? at.primary : at.alternate;
    policy_.count(bucket, +1);
    for (unsigned kick = 0; kick < options_.max_kicks; ++kick) {
      const auto slot = static_cast<unsigned>(overflow_.next_random() % kSlots);
      fp = table_.exchange(bucket, slot, fp);
      bucket = addressing_.alternate(bucket, fp);
      if (table_.try_insert(bucket, fp)) return;
    }
    overflow_.victim = {true, bucket, fp};
  }

  // After an erase made room, move the victim back into the table.
  void rehome_victim() {
    if (!overflow_.victim.used) return;
    const auto parked = overflow_.victim;
    overflow_.victim.used = false;
    policy_.count(parked.bucket, -1);
    insert_at({parked.bucket, addressing_.alternate(parked.bucket, parked.fp), parked.fp});
  }

  // ---- persistence ------------------------------------------------------------------------

  detail::FilterHeader header() const {
    detail::FilterHeader h = detail::shape_of<Table>();
    h.buckets = table_.bucket_count();
    h.capacity = requested_capacity_;
    h.items = policy_.items();
    h.seed = options_.seed;
    h.max_kicks = options_.max_kicks;
    if constexpr (kExclusive) {
      h.victim_used = overflow_.victim.used;
      h.victim_bucket = overflow_.victim.bucket;
      h.victim_fp = overflow_.victim.fp;
    }
    h.payload_bytes = table_.payload().size();
    return h;
  }

  // A file's victim entry: kept as the victim, or, without a victim slot, put into its bucket
  // or else its alternate.
  void adopt_victim(const detail::FilterHeader& h) {
    if (!h.victim_used) return;
    if constexpr (kExclusive) {
      overflow_.victim = {true, h.victim_bucket, h.victim_fp};
    } else if (!table_.try_insert(h.victim_bucket, h.victim_fp) &&
               !table_.try_insert(addressing_.alternate(h.victim_bucket, h.victim_fp),
                                  h.victim_fp)) {
      throw FormatError(
          "the file's victim entry has no room in its buckets, and this filter has no victim "
          "slot; load it into a sequential CuckooFilter");
    }
  }

  // Counts what the table (and victim) holds into the policy's item count.
  void recount() {
    for (std::uint64_t bucket = 0; bucket < table_.bucket_count(); ++bucket) {
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        if (table_.read(bucket, slot) != 0) policy_.count(bucket, +1);
      }
    }
    if constexpr (kExclusive) {
      if (overflow_.victim.used) policy_.count(overflow_.victim.bucket, +1);
    }
  }

  Table table_;
  Addr addressing_;
  mutable Policy policy_;
  FilterOptions options_;
  std::size_t requested_capacity_;
  [[no_unique_address]] std::conditional_t<kExclusive, detail::Overflow, detail::NoOverflow>
      overflow_;
};

namespace detail {
// A core as one level of a filter made of levels (lockfree/lock_free_cuckoo_filter.hpp): its
// steps at a location (forwarders, always inlined). Each is a whole operation only where the
// policy's operation<>() is a plain call, as LockFreeSync's is.
struct LevelSteps {
  template <class Level>  // located, both buckets prefetched
  [[gnu::always_inline]] static Location stage(const Level& level, std::uint64_t hash) noexcept {
    return level.stage_lookup(hash);
  }
  template <class Level>  // the same for an insert or erase
  [[gnu::always_inline]] static Location stage_update(const Level& level,
                                                      std::uint64_t hash) noexcept {
    return level.stage_update(hash);
  }
  template <class Level>
  [[gnu::always_inline]] static bool contains(const Level& level, const Location& at) {
    return level.lookup(at);
  }
  template <class Level>  // kFull: no room within the path search's reach
  [[gnu::always_inline]] static Status insert(Level& level, const Location& at) {
    return level.insert_at(at);
  }
  template <class Level>
  [[gnu::always_inline]] static Status erase(Level& level, const Location& at) {
    return level.erase_at(at);
  }
  template <class Level>
  [[gnu::always_inline]] static bool try_place(Level& level, const Location& at) {
    return level.try_place(at);
  }
  template <class Level, class Search>
  [[gnu::always_inline]] static void start_search(const Level& level, const Location& at,
                                                  Search& search) {
    level.start_search(at, search);
  }
  template <class Level, class Path>
  [[gnu::always_inline]] static Status finish_along(Level& level, const Location& at,
                                                    const Path& path) {
    return level.finish_along(at, path);
  }
  template <class Level>
  [[gnu::always_inline]] static const typename Level::table_type& table(
      const Level& level) noexcept {
    return level.table_;
  }
};
}  // namespace detail

// The policy half that every policy running whole operations one at a time shares: its
// sections are plain calls, and it counts items in a plain integer.
namespace detail {
class ExclusiveSections {
 public:
  static constexpr bool kExclusive = true;

  explicit ExclusiveSections(std::uint64_t /*buckets*/) noexcept {}

  template <class Probe>
  auto read(const Location& /*at*/, Probe&& probe) const {
    return probe();
  }
  template <class Plan, class Apply>
  auto update(const Location& /*at*/, Plan&& plan, Apply&& apply) {
    return apply(plan());
  }
  template <class Table, class Path>
  bool move(Table& table, const Path& path, std::uint32_t fp) {
    move_along(table, path, fp);
    return true;
  }

  void count(std::uint64_t /*bucket*/, std::int64_t delta) noexcept {
    items_ = static_cast<std::size_t>(static_cast<std::int64_t>(items_) + delta);
  }
  std::size_t items() const noexcept { return items_; }
  void clear_count() noexcept { items_ = 0; }

 private:
  std::size_t items_ = 0;
};
}  // namespace detail

}  // namespace ccf
