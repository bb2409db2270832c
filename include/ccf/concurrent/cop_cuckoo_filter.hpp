// CopCuckooFilter: the filter core (basic_cuckoo_filter.hpp) in the consistency-oblivious style
// of thesis §5.3.2 (Algorithm 5.10; the template is ccf/sync/cop.hpp). chtbench: ccf-cop.
//
// Every section plans without synchronization, then verifies and completes its plan in one
// short RTM transaction; after retries (or at once where the CPU has no RTM) it runs whole
// under the fallback lock.
//
//   section          read-only prefix (plan)           verify (in tx)          complete (in tx)
//   read (contains)  probe the two buckets             the probe again         report it
//   update (insert,  the emptier bucket / the one      plan() gives the same   store / clear
//           erase)   holding the fingerprint
//   move (path)      (the core's lock-free search)     every step intact       move + store
//
// The table is AtomicPackedTable (the sequential filter's bits), so the unsynchronized prefix
// reads race with writers only through atomics: defined behaviour, and torn or stale plans are
// caught by verify. No victim slot (basic_cuckoo_filter.hpp, "Full"). Progress: blocking (the
// fallback lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "ccf/basic_cuckoo_filter.hpp"
#include "ccf/detail/addressing.hpp"
#include "ccf/detail/atomic_packed_table.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/sync/cop.hpp"
#include "ccf/sync/rw_lock.hpp"

namespace ccf {

// The default fallback lock is a reader-writer lock, so that lookups that fall back (all of them
// where the CPU has no RTM) still run in parallel.
template <class Executor = sync::CopExecutor<sync::ReaderWriterLock<sync::McsLock>>>
class CopSync {
 public:
  static constexpr bool kExclusive = false;
  static constexpr std::size_t kBatchChunk = std::numeric_limits<std::size_t>::max();
  static constexpr std::string_view kName = "COP";

  explicit CopSync(std::uint64_t /*buckets*/) noexcept {}

  template <sync::Access, class F>
  decltype(auto) operation(F&& f) const {
    return f();
  }

  template <class Probe>
  auto read(const detail::Location& /*at*/, Probe&& probe) const {
    using Result = std::invoke_result_t<Probe&>;
    return executor_.template run<sync::Access::kRead>(
        probe, [&](const Result& seen) { return probe() == seen; },
        [](const Result& seen) { return seen; }, probe);
  }

  template <class Plan, class Apply>
  auto update(const detail::Location& /*at*/, Plan&& plan, Apply&& apply) {
    return executor_.template run<sync::Access::kWrite>(
        plan, [&](const auto& out) { return plan() == out; }, apply, [&] { return apply(plan()); });
  }

  template <class Table, class Path>
  bool move(Table& table, const Path& path, std::uint32_t fp) {
    const auto carry_out = [&] {
      if (!detail::path_intact(table, path)) return false;
      detail::move_along(table, path, fp);
      return true;
    };
    // The plan is the path itself: the prefix has nothing left to compute.
    return executor_.template run<sync::Access::kWrite>(
        [] { return true; }, [&](bool) { return detail::path_intact(table, path); },
        [&](bool) { return carry_out(); }, carry_out);
  }

  // Sharded: no shared line that every transaction would write (and so conflict on).
  void count(std::uint64_t /*bucket*/, std::int64_t delta) noexcept { items_.add(delta); }
  std::size_t items() const noexcept { return static_cast<std::size_t>(items_.value()); }
  void clear_count() noexcept { items_.add(-items_.value()); }
  static constexpr std::size_t memory_bytes() noexcept { return 0; }  // inside the filter object

  bool speculative() const noexcept { return executor_.speculative(); }
  Executor& executor() noexcept { return executor_; }
  // The executor's counters (sync/elision_stats.hpp), when it keeps them.
  sync::ElisionCounters elision_stats() const noexcept requires Executor::kCountsEvents {
    return executor_.stats();
  }

 private:
  mutable Executor executor_;
  detail::ShardedCounter items_;
};

template <unsigned FpBits, unsigned Slots = 4,
          class Executor = sync::CopExecutor<sync::ReaderWriterLock<sync::McsLock>>>
using CopCuckooFilter = BasicCuckooFilter<AtomicPackedTable<FpBits, Slots>, CopSync<Executor>>;

}  // namespace ccf
