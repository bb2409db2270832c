// CopCuckooFilter: the cuckoo filter of thesis §5.3.2 in consistency-oblivious style
// (Algorithm 5.10; the template is ccf/sync/cop.hpp). chtbench: ccf-cop.
//
// Every operation plans without synchronization, then verifies and completes its plan in one
// short RTM transaction; after retries (or at once where the CPU has no RTM) it runs whole
// under the global lock.
//
//   operation  read-only prefix (plan)             verify (in tx)            complete (in tx)
//   insert     a bucket with room, else the        target still has room /   store, or move
//              shortest cuckoo path (BFS)          every path step intact    the path + store
//   erase      the bucket holding the fingerprint  it still does / neither   clear one copy
//   contains   found in i1 / i2 / neither          the same still holds      report it
//
// The table is AtomicPackedTable (the sequential filter's bits), so the unsynchronized prefix
// reads race with writers only through atomics: defined behaviour, and torn or stale plans are
// caught by verify. Like the striped filter there is no victim slot: a full insert changes
// nothing and returns kFull, and files are the sequential filter's format
// (detail/victimless_format.hpp). Progress: blocking (the fallback lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "ccf/cuckoo_filter.hpp"
#include "ccf/detail/addressing.hpp"
#include "ccf/detail/atomic_packed_table.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/key_api.hpp"
#include "ccf/detail/occupancy_api.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/detail/victimless_format.hpp"
#include "ccf/sync/cop.hpp"
#include "ccf/sync/rw_lock.hpp"

namespace ccf {

// The default fallback lock is a reader-writer lock, so that lookups that fall back (all of them
// where the CPU has no RTM) still run in parallel.
template <unsigned FpBits, unsigned Slots = 4,
          class Executor = sync::CopExecutor<sync::ReaderWriterLock<sync::McsLock>>>
class CopCuckooFilter : public detail::KeyApi<CopCuckooFilter<FpBits, Slots, Executor>>,
                        public detail::OccupancyApi<CopCuckooFilter<FpBits, Slots, Executor>> {
  friend class detail::KeyApi<CopCuckooFilter>;
  friend class detail::OccupancyApi<CopCuckooFilter>;

 public:
  using table_type = AtomicPackedTable<FpBits, Slots>;
  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = Slots;
  static constexpr unsigned kPathDepth = detail::kConcurrentPathDepth<Slots>;

  // Throws std::invalid_argument as CuckooFilter does (max_kicks is unused -- the search is
  // breadth-first -- but kept and saved, so that a file says what was asked).
  explicit CopCuckooFilter(std::size_t capacity, FilterOptions options = {})
      : CopCuckooFilter(table_type(detail::checked_bucket_count<table_type>(capacity, options)),
                        {capacity, options.seed, options.max_kicks}) {}
  CopCuckooFilter(const CopCuckooFilter&) = delete;
  CopCuckooFilter& operator=(const CopCuckooFilter&) = delete;

  // insert, contains, erase of integer and byte-string keys: detail/key_api.hpp.

  std::size_t size() const noexcept { return static_cast<std::size_t>(items_.value()); }
  std::size_t capacity() const noexcept { return table_.bucket_count() * kSlots; }
  std::size_t requested_capacity() const noexcept { return fields_.capacity; }
  // load_factor(), bits_per_item(): detail/occupancy_api.hpp.
  std::size_t memory_bytes() const noexcept { return table_.memory_bytes() + sizeof(*this); }
  std::string shape() const {
    return "COP " + std::to_string(kFpBits) + "-bit fingerprints, " + std::to_string(kSlots) +
           " slots/bucket";
  }
  bool speculative() const noexcept { return executor_.speculative(); }
  Executor& executor() noexcept { return executor_; }

  // Not concurrent with writers: quiesce the filter first (lookups may go on).
  void save(std::ostream& out) const { detail::write_victimless(out, table_, size(), fields_); }

  // Reads a filter saved by any filter of this shape (sequential, striped, COP). Throws
  // FormatError, also for a sequential filter's victim entry that has no room.
  static std::unique_ptr<CopCuckooFilter> load(std::istream& in) {
    auto file = detail::read_victimless<table_type>(in, "COP filter");
    std::unique_ptr<CopCuckooFilter> filter(
        new CopCuckooFilter(std::move(file.table), file.fields));
    filter->items_.add(static_cast<std::int64_t>(*filter->table_.count_occupied()));
    return filter;
  }

 private:
  CopCuckooFilter(table_type&& table, const detail::VictimlessFields& fields)
      : table_(std::move(table)), addressing_(table_.bucket_count()), fields_(fields) {}

  std::size_t table_bits() const noexcept { return 8 * table_.payload().size(); }

  using Location = detail::Location;
  // Where an erase or lookup found the fingerprint: primary, alternate, or neither.
  enum class Where : std::uint8_t { kPrimary, kAlternate, kNeither };
  struct InsertPlan {
    enum class Kind : std::uint8_t { kDirect, kPath, kFull } kind;
    std::uint64_t bucket;  // kDirect
    detail::CuckooPath<Slots, kPathDepth> path;
  };

  std::uint64_t seed() const noexcept { return fields_.seed; }

  Location locate(std::uint64_t hash) const noexcept { return detail::locate(addressing_, hash); }

  Where where(const Location& at) const noexcept {
    if (table_.contains(at.primary, at.fp)) return Where::kPrimary;
    if (table_.contains(at.alternate, at.fp)) return Where::kAlternate;
    return Where::kNeither;
  }
  std::uint64_t bucket_of(const Location& at, Where w) const noexcept {
    return w == Where::kPrimary ? at.primary : at.alternate;
  }

  bool contains_hash(std::uint64_t hash) const { return finish_lookup(locate(hash)); }

  // KeyApi's batched operations: locate and prefetch both buckets; later the COP lookup (or
  // insert: finish_insert).
  Location stage_lookup(std::uint64_t hash) const noexcept {
    return detail::prefetch_both(table_, locate(hash));
  }
  bool finish_lookup(const Location& at) const {
    const auto prefix = [&] { return where(at); };
    const auto verify = [&](Where w) { return where(at) == w; };
    const auto complete = [](Where w) { return w != Where::kNeither; };
    const auto whole = [&] { return where(at) != Where::kNeither; };
    return executor_.template run<sync::Access::kRead>(prefix, verify, complete, whole);
  }

  Status erase_hash(std::uint64_t hash) {
    const Location at = locate(hash);
    const auto prefix = [&] { return where(at); };
    const auto verify = [&](Where w) { return where(at) == w; };
    const auto complete = [&](Where w) {
      if (w == Where::kNeither) return Status::kNotFound;
      table_.try_erase(bucket_of(at, w), at.fp);
      count(-1);
      return Status::kOk;
    };
    const auto whole = [&] { return complete(where(at)); };
    return executor_.template run<sync::Access::kWrite>(prefix, verify, complete, whole);
  }

  Status insert_hash(std::uint64_t hash) { return finish_insert(locate(hash)); }

  // Also KeyApi's batched inserts (after stage_lookup).
  Status finish_insert(const Location& at) {
    const auto prefix = [&] { return plan_insert(at); };
    const auto verify = [&](const InsertPlan& plan) { return plan_holds(at, plan); };
    const auto complete = [&](const InsertPlan& plan) { return carry_out(at, plan); };
    const auto whole = [&] { return carry_out(at, plan_insert(at)); };
    return executor_.template run<sync::Access::kWrite>(prefix, verify, complete, whole);
  }

  InsertPlan plan_insert(const Location& at) const {
    InsertPlan plan{InsertPlan::Kind::kFull, 0, {}};
    if (table_.has_empty(at.primary) || table_.has_empty(at.alternate)) {
      plan.kind = InsertPlan::Kind::kDirect;
      plan.bucket = table_.has_empty(at.primary) ? at.primary : at.alternate;
    } else if (detail::find_cuckoo_path(table_, addressing_, at.primary, at.alternate, plan.path)) {
      plan.kind = InsertPlan::Kind::kPath;
    }
    return plan;
  }

  bool plan_holds(const Location& at, const InsertPlan& plan) const {
    switch (plan.kind) {
      case InsertPlan::Kind::kDirect:
        return table_.has_empty(plan.bucket);
      case InsertPlan::Kind::kFull:
        return !table_.has_empty(at.primary) && !table_.has_empty(at.alternate);
      case InsertPlan::Kind::kPath:
        break;
    }
    for (unsigned step = 0; step + 1 < plan.path.length; ++step) {
      const auto& from = plan.path.steps[step];
      if (table_.read(from.bucket, from.slot) != from.fp) return false;
    }
    return table_.has_empty(plan.path.steps[plan.path.length - 1].bucket);
  }

  // Runs a plan that holds (inside the transaction, or under the lock where the prefix was
  // computed with the lock held).
  Status carry_out(const Location& at, const InsertPlan& plan) {
    switch (plan.kind) {
      case InsertPlan::Kind::kFull:
        return Status::kFull;
      case InsertPlan::Kind::kDirect:
        table_.try_insert(plan.bucket, at.fp);
        break;
      case InsertPlan::Kind::kPath:
        for (unsigned step = plan.path.length - 1; step > 0; --step) {
          const auto& from = plan.path.steps[step - 1];
          table_.try_insert(plan.path.steps[step].bucket,
                            table_.exchange(from.bucket, from.slot, 0));
        }
        table_.try_insert(plan.path.steps[0].bucket, at.fp);
        break;
    }
    count(+1);
    return Status::kOk;
  }

  // Sharded: no shared line that every transaction would write (and so conflict on).
  void count(std::int64_t delta) noexcept { items_.add(delta); }

  table_type table_;
  detail::Addressing<kFpBits> addressing_;
  detail::VictimlessFields fields_;
  mutable Executor executor_;
  detail::ShardedCounter items_;
};

}  // namespace ccf
