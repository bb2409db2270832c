// StripedCuckooFilter: the filter core (basic_cuckoo_filter.hpp) with fine-grained (striped)
// locking (the "fine" design of the thesis's CCF; docs/concurrency.md), in two read modes:
//
//   ReadMode::kOptimistic  (chtbench: ccf-striped)          lookups write no shared memory
//   ReadMode::kLocking     (chtbench: ccf-striped-locking)  lookups lock their two stripes
//
// Layout
//   table    AtomicPackedTable<F, b>: the sequential filter's exact bits (same memory, same
//            file format), read and written through 64-bit atomic words.
//   stripes  sync::SeqStripes (sync/seq_stripes.hpp): S = min(4096, buckets / 256 rounded up
//            to a power of two) cache-line stripes, each a seqlock, a spin lock and a shard of
//            the item count (a path's moves are counted at its end).
//
// Operations
//   contains  (optimistic) SeqStripes::read over the stripes of i1 and i2: stores nothing, so
//             read-only work scales with cores; retries while a writer is inside one of them.
//   insert    lock both stripes of i1, i2, store if there is room. Otherwise release them; the
//             core searches a cuckoo path breadth-first WITHOUT locks (detail/cuckoo_path.hpp);
//             move() executes it back to front: each step locks the two stripes of its source
//             and target, re-validates (the source slot still holds the fingerprint the search
//             saw, the target still has room), moves the fingerprint (target written before
//             source cleared, both inside the odd window) and unlocks. The last step, out of i1
//             or i2, stores the new fingerprint in the slot it vacates before unlocking (as
//             libcuckoo keeps the root locked), so no other insert takes that slot. A failed
//             validation restarts the insert. No path: kFull, and nothing was changed (moves
//             already made are ordinary cuckoo moves).
//   erase     lock both stripes, clear one copy.
//   staging   an insert or erase (and a batch's, 8 keys ahead) fetches both buckets and both
//             stripe lines for writing (prefetch_update; PREFETCHW, detail/prefetch.hpp): at
//             2 threads the lock and the store otherwise wait for lines the other core wrote.
//
// Why lookups see no false negatives while items move: an item's fingerprint only ever moves
// between ITS two buckets i1, i2, under the locks of both their stripes, and a lookup validates
// exactly those two stripes. A move that overlaps the lookup's reads changes a seq it
// re-checks, so the lookup retries; a lookup that validates saw the item in i1 or i2.
//
// Memory ordering: SeqStripes' points (1)-(6). The table meets them as (2): bucket updates are
// release RMWs (AtomicPackedTable::store), and (4): bucket loads are acquire
// (AtomicPackedTable::load).
//
// No victim slot (basic_cuckoo_filter.hpp, "Full"): the path search goes one level deeper than
// the sequential filter's to reach the same load (>= 95% for b = 4, F >= 12; see tests).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "ccf/basic_cuckoo_filter.hpp"
#include "ccf/detail/addressing.hpp"
#include "ccf/detail/atomic_packed_table.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/sync/access.hpp"
#include "ccf/sync/seq_stripes.hpp"
#include "ccf/sync/spin_wait.hpp"

namespace ccf {

enum class ReadMode { kOptimistic, kLocking };

template <ReadMode Reads = ReadMode::kOptimistic>
class StripedSync {
 public:
  static constexpr bool kExclusive = false;
  static constexpr std::size_t kBatchChunk = std::numeric_limits<std::size_t>::max();
  static constexpr std::string_view kName =
      Reads == ReadMode::kOptimistic ? "striped" : "striped locking-reads";
  static constexpr std::size_t kMaxStripes = 4096;

  explicit StripedSync(std::uint64_t buckets)
      : stripes_(std::clamp<std::size_t>(std::bit_ceil(buckets / 256 + 1), 1, kMaxStripes)) {}

  template <sync::Access, class F>
  decltype(auto) operation(F&& f) const {
    return f();
  }

  template <class Probe>
  auto read(const detail::Location& at, Probe&& probe) const {
    if constexpr (Reads == ReadMode::kLocking) {
      const sync::SeqStripes::Guard guard(stripes_, at.primary, at.alternate);
      return probe();
    } else {
      return stripes_.read(at.primary, at.alternate, probe);
    }
  }

  // How an insert or erase stages: its buckets (one of which it writes) and the stripes
  // update() will lock, all fetched for writing, so that no lock or store waits for a line
  // another core holds.
  template <class Table>
  [[gnu::always_inline]] void prefetch_update(const Table& table,
                                              const detail::Location& at) const noexcept {
    table.prefetch_for_write(at.primary);
    table.prefetch_for_write(at.alternate);
    stripes_.prefetch_for_lock(at.primary, at.alternate);
  }

  template <class Plan, class Apply>
  auto update(const detail::Location& at, Plan&& plan, Apply&& apply) {
    const sync::SeqStripes::Guard guard(stripes_, at.primary, at.alternate);
    return apply(plan());
  }

  // Moves the path's fingerprints one step each, from the empty end back to the root, each step
  // under the locks of its two buckets' stripes. The last step frees a slot of the root bucket
  // and stores `fp` there under the same locks (as libcuckoo does), so no other insert can take
  // the slot first. Returns false, with fp not stored, if a step no longer matches the table
  // (another writer got there first); the steps already made stay (each kept every item).
  template <class Table, class Path>
  bool move(Table& table, const Path& path, std::uint32_t fp) {
    assert(path.length >= 2);  // find_cuckoo_path looks for room from depth 1 on: a step exists
    // Every step's stripes at once: their misses overlap instead of coming one lock at a time.
    for (unsigned step = 1; step < path.length; ++step) {
      stripes_.prefetch_for_lock(path.steps[step - 1].bucket, path.steps[step].bucket);
    }
    for (unsigned step = path.length - 1; step > 0; --step) {
      const detail::CuckooPathStep& from = path.steps[step - 1];
      const std::uint64_t to = path.steps[step].bucket;
      const sync::SeqStripes::Guard guard(stripes_, from.bucket, to);
      // Same fingerprint => same alternate bucket, so the move stays within the item's pair.
      if (table.read(from.bucket, from.slot) != from.fp || !table.try_insert(to, from.fp)) {
        restarts_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      // Counted as the core counts a path: the last bucket +1, the others unchanged.
      table.exchange(from.bucket, from.slot, step == 1 ? fp : 0);
    }
    return true;
  }

  void count(std::uint64_t bucket, std::int64_t delta) noexcept {
    stripes_.add_items(bucket, delta);
  }
  std::size_t items() const noexcept { return stripes_.items(); }
  void clear_count() noexcept { stripes_.clear_items(); }
  std::size_t memory_bytes() const noexcept { return stripes_.memory_bytes(); }

  std::size_t stripe_count() const noexcept { return stripes_.count(); }
  // Path executions restarted because a step no longer matched (for benchmarks).
  std::uint64_t restarts() const noexcept { return restarts_.load(std::memory_order_relaxed); }

 private:
  sync::SeqStripes stripes_;
  // Its own line: restarts are rare, and the stripes' lines are hot.
  alignas(sync::kCacheLine) std::atomic<std::uint64_t> restarts_{0};
};

template <unsigned FpBits, unsigned Slots = 4, ReadMode Reads = ReadMode::kOptimistic>
using StripedCuckooFilter = BasicCuckooFilter<AtomicPackedTable<FpBits, Slots>, StripedSync<Reads>>;

}  // namespace ccf
