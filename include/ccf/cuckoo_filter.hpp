// CuckooFilter: the sequential cuckoo filter (Fan et al. 2014; thesis §5.2), the core that
// the concurrent filters share.
//
// Approximate set membership with deletion. Each item is reduced to an F-bit fingerprint that
// may live in one of two buckets (see detail/addressing.hpp); a lookup reads those two buckets
// and nothing else. The storage layout is a policy:
//
//   CuckooFilter<PackedTable<F, b>>      b in {2, 4, 8}, F in {4, 8, 12, 16, 32}: F bits/slot
//   CuckooFilter<SemiSortedTable<F>>     b = 4, F in {8, 12, 16}: F - 1 bits/slot
//
// Guarantees
// - No false negatives: an item inserted (insert returned kOk) and not erased is always found,
//   also once the filter is full, after clear-free erases of other items, and after save/load.
// - False positives: a never-inserted item is reported present with probability at most
//   1 - (1 - 2^-F)^(2b) (about 2b / 2^F), less when the filter is not full.
// - Full: when an insert has kicked `max_kicks` fingerprints without finding room, the item is
//   stored all the same and the last displaced fingerprint parks in a one-entry victim slot that
//   lookups and erases consult. From then on inserts return kFull and change nothing, until an
//   erase frees room (the victim is then put back into the table). No item is ever lost.
// - Load: with the default kick budget (500) a filter fills to >= 95% of its slots with b = 4
//   (about 84-90% with b = 2, 98% with b = 8) before the first kFull.
//
// Contract (as for every cuckoo filter): erase only items that were inserted. Erasing a
// never-inserted item may remove a colliding item's fingerprint, a false negative for that
// item. The same item may be inserted up to 2b times (each erase removes one copy); beyond that
// inserts overflow into the victim slot and then report kFull.
//
// Not thread-safe; see the concurrent filters for that. Operations are O(1) expected, insert
// O(max_kicks) worst case. Batched lookups and inserts (contains_many, insert_many) hash ahead
// and prefetch both buckets of upcoming keys, overlapping the cache misses that dominate the
// cost of probing a large table.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/filter_format.hpp"
#include "ccf/detail/key_api.hpp"
#include "ccf/detail/occupancy_api.hpp"
#include "ccf/hash.hpp"
#include "ccf/packed_table.hpp"
#include "ccf/semi_sorted_table.hpp"
#include "ccf/status.hpp"

namespace ccf {

struct FilterOptions {
  std::uint64_t seed = kDefaultSeed;
  // Fingerprints one insert may displace before the filter declares itself full (§1: 500).
  unsigned max_kicks = 500;
  // Sizing target: the table gets ceil(capacity / max_load) slots. 0 picks the bucket size's
  // default (0.85 / 0.94 / 0.97 for b = 2 / 4 / 8), a load every insert reaches with room to
  // spare, so that `capacity` items fit.
  double max_load = 0;
};

namespace detail {
constexpr double default_max_load(unsigned slots) {
  return slots == 2 ? 0.85 : slots == 4 ? 0.94 : 0.97;
}

// Buckets for `capacity` items at the options' sizing load; throws std::invalid_argument for
// bad parameters (shared by every filter over a table of this kind).
template <class Table>
std::uint64_t checked_bucket_count(std::size_t capacity, const FilterOptions& options) {
  if (capacity == 0) throw std::invalid_argument("cuckoo filter capacity must be at least 1");
  const double max_load =
      options.max_load == 0 ? default_max_load(Table::kSlots) : options.max_load;
  if (!(max_load > 0 && max_load <= 1)) {
    throw std::invalid_argument("max_load must be in (0, 1]");
  }
  if (options.max_kicks > kMaxKicksLimit) {
    throw std::invalid_argument("max_kicks must be at most " + std::to_string(kMaxKicksLimit));
  }
  const double buckets = std::ceil(static_cast<double>(capacity) / (max_load * Table::kSlots));
  if (buckets * static_cast<double>(Table::payload_bytes(1)) >
      static_cast<double>(kMaxTableBytes)) {
    throw std::invalid_argument("cuckoo filter capacity " + std::to_string(capacity) +
                                " needs more than the 64 TiB table limit");
  }
  return static_cast<std::uint64_t>(buckets);
}
}  // namespace detail

template <class Table>
class CuckooFilter : public detail::KeyApi<CuckooFilter<Table>>,
                     public detail::OccupancyApi<CuckooFilter<Table>> {
  friend class detail::KeyApi<CuckooFilter>;
  friend class detail::OccupancyApi<CuckooFilter>;

 public:
  using table_type = Table;
  static constexpr unsigned kFpBits = Table::kFpBits;
  static constexpr unsigned kSlots = Table::kSlots;

  // Throws std::invalid_argument for capacity 0 or too large for the 64 TiB table limit, a
  // max_load outside (0, 1], or max_kicks above 2^20.
  explicit CuckooFilter(std::size_t capacity, FilterOptions options = {})
      : CuckooFilter(detail::checked_bucket_count<Table>(capacity, options), capacity, options) {}

  CuckooFilter(CuckooFilter&&) noexcept = default;
  CuckooFilter& operator=(CuckooFilter&&) noexcept = default;

  // ---- single-item operations: insert, contains, erase (detail/key_api.hpp) -------------
  using detail::KeyApi<CuckooFilter>::insert;
  using detail::KeyApi<CuckooFilter>::contains;
  using detail::KeyApi<CuckooFilter>::erase;

  // ---- batched operations: contains_many, insert_many (detail/key_api.hpp) ---------------

  // ---- size and space --------------------------------------------------------------------

  std::size_t size() const noexcept { return items_; }
  bool empty() const noexcept { return items_ == 0; }
  // Slots in the table (the number of fingerprints it can hold, victim aside).
  std::size_t capacity() const noexcept { return table_.bucket_count() * kSlots; }
  // The capacity asked for at construction.
  std::size_t requested_capacity() const noexcept { return requested_capacity_; }
  std::size_t bucket_count() const noexcept { return table_.bucket_count(); }
  // load_factor(), bits_per_item(): detail/occupancy_api.hpp.
  std::size_t memory_bytes() const noexcept { return table_.memory_bytes() + sizeof(*this); }
  bool huge_pages_advised() const noexcept { return table_.huge_pages_advised(); }
  bool victim_used() const noexcept { return victim_.used; }
  const FilterOptions& options() const noexcept { return options_; }
  std::string shape() const { return header().shape(); }

  void clear() noexcept {
    table_.clear();
    items_ = 0;
    victim_ = {};
  }

  // ---- persistence (format: detail/filter_format.hpp) -------------------------------------

  // Throws std::ios_base::failure if the stream fails.
  void save(std::ostream& out) const { detail::write_filter(out, header(), table_.payload()); }

  // Replaces this filter with the one in `in`, which must have the same table layout,
  // fingerprint width and bucket size. Throws FormatError (truncated, corrupted, foreign or
  // mismatched data) and leaves this filter unchanged.
  void load(std::istream& in) {
    const detail::FilterHeader h = detail::HeaderCodec::read(in);
    *this = from_stream(h, in);
  }

  // Reads the rest of a filter whose header was already read (used by AnyCuckooFilter).
  static CuckooFilter from_stream(const detail::FilterHeader& h, std::istream& in) {
    FilterOptions options;
    options.seed = h.seed;
    options.max_kicks = h.max_kicks;
    CuckooFilter filter(detail::read_table<Table>(h, in), h.capacity, options);
    filter.items_ = h.items;
    filter.victim_ = {h.victim_used, h.victim_bucket, h.victim_fp};
    return filter;
  }

 private:
  std::size_t table_bits() const noexcept { return 8 * table_.payload().size(); }

  // Where an item lives: its two candidate buckets and its fingerprint.
  using Location = detail::Location;
  struct Victim {
    bool used = false;
    std::uint64_t bucket = 0;
    std::uint32_t fp = 0;
  };

  CuckooFilter(std::uint64_t buckets, std::size_t capacity, const FilterOptions& options)
      : CuckooFilter(Table(buckets), capacity, options) {}
  CuckooFilter(Table&& table, std::size_t capacity, const FilterOptions& options)
      : table_(std::move(table)),
        addressing_(table_.bucket_count()),
        options_(options),
        requested_capacity_(capacity),
        rng_(options.seed | 1) {}

  std::uint64_t seed() const noexcept { return options_.seed; }

  Location locate(std::uint64_t hash) const noexcept { return detail::locate(addressing_, hash); }

  bool probe(const Location& at) const noexcept {
    // Both buckets are read unconditionally: their cache misses overlap, and a lookup has no
    // data-dependent branch to mispredict. The victim branch is almost never taken.
    const bool in_table = detail::found_in_either(table_.contains(at.primary, at.fp),
                                                  table_.contains(at.alternate, at.fp));
    if (victim_.used) [[unlikely]] {
      return in_table | (victim_.fp == at.fp &&
                         (victim_.bucket == at.primary || victim_.bucket == at.alternate));
    }
    return in_table;
  }

  bool contains_hash(std::uint64_t hash) const noexcept { return probe(locate(hash)); }
  Status insert_hash(std::uint64_t hash) noexcept { return finish_insert(locate(hash)); }

  Status finish_insert(const Location& at) noexcept {
    if (victim_.used) return Status::kFull;
    place(at.primary, at.alternate, at.fp);
    ++items_;
    return Status::kOk;
  }

  Status erase_hash(std::uint64_t hash) noexcept {
    const Location at = locate(hash);
    table_.prefetch(at.alternate);  // overlap the second miss with the first
    // A plain short-circuit: measured faster here than choosing the bucket branch-free first
    // (51 vs 57 ns per erase at 2^26 items; the prefetch above already overlaps the misses).
    if (table_.try_erase(at.primary, at.fp) || table_.try_erase(at.alternate, at.fp)) {
      --items_;
      rehome_victim();
      return Status::kOk;
    }
    if (victim_.used && victim_.fp == at.fp &&
        (victim_.bucket == at.primary || victim_.bucket == at.alternate)) {
      victim_.used = false;
      --items_;
      return Status::kOk;
    }
    return Status::kNotFound;
  }

  // Stores fp in bucket i1 or i2 (its two candidates), making room if both are full: first by
  // the shortest cuckoo path found breadth-first, else by a random walk of up to max_kicks
  // displacements. Never fails: when the walk runs out, the fingerprint still in hand becomes
  // the victim. Precondition: no victim.
  void place(std::uint64_t i1, std::uint64_t i2, std::uint32_t fp) noexcept {
    table_.prefetch(i2);  // overlap the second miss with the first
    // As in erase: choose the bucket branch-free, so the common case is a predictable branch.
    if (table_.try_insert(table_.has_empty(i1) ? i1 : i2, fp)) return;
    detail::CuckooPath<kSlots> path;
    if (detail::find_cuckoo_path(table_, addressing_, i1, i2, path)) {
      for (unsigned step = path.length - 1; step > 0; --step) {
        const detail::CuckooPathStep& from = path.steps[step - 1];
        table_.try_insert(path.steps[step].bucket, table_.exchange(from.bucket, from.slot, 0));
      }
      table_.try_insert(path.steps[0].bucket, fp);
      return;
    }
    std::uint64_t bucket = next_random() & 1 ? i1 : i2;
    for (unsigned kick = 0; kick < options_.max_kicks; ++kick) {
      fp = table_.exchange(bucket, static_cast<unsigned>(next_random() % kSlots), fp);
      bucket = addressing_.alternate(bucket, fp);
      if (table_.try_insert(bucket, fp)) return;
    }
    victim_ = {true, bucket, fp};
  }

  // After an erase made room, move the victim back into the table.
  void rehome_victim() noexcept {
    if (!victim_.used) return;
    const Victim parked = victim_;
    victim_.used = false;
    place(parked.bucket, addressing_.alternate(parked.bucket, parked.fp), parked.fp);
  }

  // KeyApi's batched operations: locate and prefetch both buckets, later probe (or insert:
  // finish_insert above).
  Location stage_lookup(std::uint64_t hash) const noexcept {
    return detail::prefetch_both(table_, locate(hash));
  }
  bool finish_lookup(const Location& at) const noexcept { return probe(at); }

  std::uint64_t next_random() noexcept {  // xorshift64*
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return rng_ * 0x2545f4914f6cdd1dULL;
  }

  detail::FilterHeader header() const {
    detail::FilterHeader h = detail::shape_of<Table>();
    h.buckets = table_.bucket_count();
    h.capacity = requested_capacity_;
    h.items = items_;
    h.seed = options_.seed;
    h.max_kicks = options_.max_kicks;
    h.victim_used = victim_.used;
    h.victim_bucket = victim_.bucket;
    h.victim_fp = victim_.fp;
    h.payload_bytes = table_.payload().size();
    return h;
  }

  Table table_;
  detail::Addressing<kFpBits> addressing_;
  FilterOptions options_;
  std::size_t requested_capacity_;
  std::size_t items_ = 0;
  Victim victim_;
  std::uint64_t rng_;
};

}  // namespace ccf
