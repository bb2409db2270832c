// CoarseCuckooFilter: the filter core behind one synchronization policy for the whole table
// (the "coarse" design of the thesis's CCF; docs/concurrency.md).
//
//   lookups, size, save     sync.read(...)    -- shared / speculative read
//   inserts, erases, clear  sync.write(...)   -- exclusive / speculative write
//   batches                 one section per kBatchChunk keys: the lock is taken once per chunk
//                           rather than per key, and a writer waits for at most one chunk
//
// Sync is any of ccf/sync/htm.hpp: LockOnly<Lock> with a spin or reader-writer lock (TAS,
// TTAS, MCS, CLH; ccf-global-*), or an elision policy over a lock (RetryElision, SlrElision,
// ScmElision, MixElision; ccf-rtm-*), which runs each operation as an Intel RTM transaction
// where the CPU has RTM and falls back to the lock where it has not (then speculative() is
// false, and benchmarks say so).
//
// The default is the phase-fair reader-writer lock (sync/phase_fair_lock.hpp): neither lookups
// nor updates starve when both run at once (tests/rw_fairness_test.cpp). With more threads than
// cores it costs more than the writer-preferring ReaderWriterLock (a phase change waits for
// every reader of the phase to be scheduled; docs/concurrency.md has the figures).
//
// Operations run one at a time, so the coarse filter is exactly the sequential one inside the
// lock: same memory (plus the lock), same load (>= 95% at b = 4), the victim slot, the same
// file format. Progress: blocking (the lock); with RTM, operations that do not conflict run in
// parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ccf/basic_cuckoo_filter.hpp"
#include "ccf/packed_table.hpp"
#include "ccf/semi_sorted_table.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/phase_fair_lock.hpp"

namespace ccf {

template <class Sync>
class CoarseSync : public detail::ExclusiveSections {
 public:
  static constexpr std::size_t kBatchChunk = 64;
  static constexpr std::string_view kName = "coarse";

  using ExclusiveSections::ExclusiveSections;

  template <sync::Access A, class F>
  decltype(auto) operation(F&& f) const {
    if constexpr (A == sync::Access::kRead) {
      return sync_.read(f);
    } else {
      return sync_.write(f);
    }
  }
  static constexpr std::size_t memory_bytes() noexcept { return 0; }  // inside the filter object

  bool speculative() const noexcept { return sync_.speculative(); }
  Sync& sync() noexcept { return sync_; }
  // The elision policy's counters (sync/elision_stats.hpp), when it keeps them.
  sync::ElisionCounters elision_stats() const noexcept requires Sync::kCountsEvents {
    return sync_.stats();
  }

 private:
  mutable Sync sync_;
};

template <class Table, class Sync = sync::LockOnly<sync::PhaseFairLock>>
using CoarseCuckooFilter = BasicCuckooFilter<Table, CoarseSync<Sync>>;

}  // namespace ccf
