// StripedCuckooFilter: the filter core (basic_cuckoo_filter.hpp) with fine-grained (striped)
// locking (the "fine" design of the thesis's CCF; docs/concurrency.md), in two read modes:
//
//   ReadMode::kOptimistic  (chtbench: ccf-striped)          lookups write no shared memory
//   ReadMode::kLocking     (chtbench: ccf-striped-locking)  lookups lock their two stripes
//
// Layout
//   table    AtomicPackedTable<F, b>: the sequential filter's exact bits (same memory, same
//            file format), read and written through 64-bit atomic words.
//   stripes  S = min(4096, buckets / 256 rounded up to a power of two) stripes; bucket i
//            belongs to stripe i mod S. Each stripe is one cache line of its own:
//              | seq (u64) | items (i64) | padding ... |   (64 bytes)
//            seq is a seqlock and a spin lock at once: even = free, odd = a writer is inside.
//            items is the stripe's shard of the item count (size() sums them; a path's
//            moves are counted at its end), so counting costs no extra shared cache line.
//
// Operations
//   contains  (optimistic) read both stripes' seq (even), read both buckets, re-read both
//             seq: unchanged => the two bucket reads saw one consistent moment. Stores
//             nothing, so read-only work scales with cores. Retries while a writer is inside
//             one of its stripes (blocking, but never for longer than one bucket update).
//   insert    lock both stripes of i1, i2 (in stripe order: no deadlock), store if there is
//             room. Otherwise release them; the core searches a cuckoo path breadth-first
//             WITHOUT locks (detail/cuckoo_path.hpp); move() executes it back to front: each step
//             locks the two stripes of its source and target, re-validates (the source slot still
//             holds the fingerprint the search saw, the target still has room), moves the
//             fingerprint (target written before source cleared, both inside the odd window)
//             and unlocks. The last step, out of i1 or i2, stores the new fingerprint in the
//             slot it vacates before unlocking (as libcuckoo keeps the root locked), so no
//             other insert takes that slot. A failed validation restarts the insert. No path:
//             kFull, and nothing was changed (moves already made are ordinary cuckoo moves).
//   waiting   a writer waits for a stripe, and a reader for a writer to leave one, through
//             sync::SpinWait: pauses, then yields (a holder may be preempted).
//   erase     lock both stripes, clear one copy.
//
// Why lookups see no false negatives while items move: an item's fingerprint only ever moves
// between ITS two buckets i1, i2, under the locks of both their stripes, and a lookup validates
// exactly those two stripes. A move that overlaps the lookup's reads changes a seq it
// re-checks, so the lookup retries; a lookup that validates saw the item in i1 or i2.
//
// Memory ordering (a seqlock in the fence-free form of Boehm, "Can seqlocks get along with
// programming language memory models?", 2012), numbered for the comments at the points of use:
//   (1) writer: CAS seq even -> odd, acquire (the lock acquisition);
//   (2) writer: bucket updates are release RMWs (AtomicPackedTable::store), so the odd seq (1)
//       happens-before any reader that sees an update; pairs with (4);
//   (3) writer: seq.store(odd + 1, release): publishes the bucket updates; pairs with (5) and
//       with the next writer's (1);
//   (4) reader: bucket loads are acquire (AtomicPackedTable::load): a reader that saw an
//       update of a writer also sees that writer's odd seq at (6), and retries;
//   (5) reader: seq.load(acquire) before the bucket loads;
//   (6) reader: seq.load(relaxed) after the bucket loads (kept after them by (4)).
// No standalone fences: ThreadSanitizer does not model them, and on x86 acquire loads and
// release RMWs are what the plain instructions already do.
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
#include <memory>
#include <string_view>
#include <utility>

#include "ccf/basic_cuckoo_filter.hpp"
#include "ccf/detail/addressing.hpp"
#include "ccf/detail/atomic_packed_table.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/sync/access.hpp"
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
      : stripe_count_(std::clamp<std::size_t>(std::bit_ceil(buckets / 256 + 1), 1, kMaxStripes)),
        stripes_(std::make_unique<Stripe[]>(stripe_count_)) {}

  template <sync::Access, class F>
  decltype(auto) operation(F&& f) const {
    return f();
  }

  template <class Probe>
  bool read(const detail::Location& at, Probe&& probe) const {
    if constexpr (Reads == ReadMode::kLocking) {
      StripeGuard guard(*this, at.primary, at.alternate);
      return probe();
    } else {
      const Stripe& first = stripe_of(at.primary);
      const Stripe& second = stripe_of(at.alternate);
      sync::SpinWait wait;  // a writer holds a stripe: it may be preempted, so back off
      for (;;) {
        // (5) acquire: pairs with the release (3) of the last writer of each stripe.
        const std::uint64_t seq1 = first.seq.load(std::memory_order_acquire);
        const std::uint64_t seq2 = second.seq.load(std::memory_order_acquire);
        if (((seq1 | seq2) & 1) == 0) {
          // (4) acquire loads: if they see a writer's update (2), (6) sees its odd seq.
          const bool found = probe();
          // (6)
          if (first.seq.load(std::memory_order_relaxed) == seq1 &&
              second.seq.load(std::memory_order_relaxed) == seq2) {
            return found;
          }
        }
        wait.wait();
      }
    }
  }

  template <class Plan, class Apply>
  auto update(const detail::Location& at, Plan&& plan, Apply&& apply) {
    StripeGuard guard(*this, at.primary, at.alternate);
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
    for (unsigned step = path.length - 1; step > 0; --step) {
      const detail::CuckooPathStep& from = path.steps[step - 1];
      const std::uint64_t to = path.steps[step].bucket;
      StripeGuard guard(*this, from.bucket, to);
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
    stripe_of(bucket).items.fetch_add(delta, std::memory_order_relaxed);
  }
  std::size_t items() const noexcept {
    std::int64_t total = 0;
    for (std::size_t s = 0; s < stripe_count_; ++s) {
      total += stripes_[s].items.load(std::memory_order_relaxed);
    }
    return static_cast<std::size_t>(total);
  }
  void clear_count() noexcept {
    for (std::size_t s = 0; s < stripe_count_; ++s) stripes_[s].items.store(0);
  }
  std::size_t memory_bytes() const noexcept { return stripe_count_ * sizeof(Stripe); }

  std::size_t stripe_count() const noexcept { return stripe_count_; }
  // Path executions restarted because a step no longer matched (for benchmarks).
  std::uint64_t restarts() const noexcept { return restarts_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Stripe {
    std::atomic<std::uint64_t> seq{0};
    std::atomic<std::int64_t> items{0};
  };

  // Locks the stripes of two buckets (one if they share it) for the guard's lifetime.
  class StripeGuard {
   public:
    StripeGuard(const StripedSync& sync, std::uint64_t a, std::uint64_t b) noexcept
        : first_(&sync.stripe_of(a)), second_(&sync.stripe_of(b)) {
      if (first_ > second_) std::swap(first_, second_);
      lock(*first_);
      if (second_ != first_) lock(*second_);
    }
    ~StripeGuard() {
      unlock(*first_);
      if (second_ != first_) unlock(*second_);
    }
    StripeGuard(const StripeGuard&) = delete;
    StripeGuard& operator=(const StripeGuard&) = delete;

   private:
    static void lock(Stripe& stripe) noexcept {
      sync::SpinWait wait;
      for (;;) {
        std::uint64_t seq = stripe.seq.load(std::memory_order_relaxed);
        // (1) acquire: everything the previous holder wrote before its release (3) is visible.
        if ((seq & 1) == 0 &&
            stripe.seq.compare_exchange_weak(seq, seq + 1, std::memory_order_acquire)) {
          return;  // our bucket updates (2) are release RMWs: ordered after this
        }
        wait.wait();
      }
    }
    static void unlock(Stripe& stripe) noexcept {
      // (3) release: publishes our bucket updates to readers' acquire load (5) and to the
      // next writer's acquire CAS (1).
      stripe.seq.store(stripe.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }

    Stripe* first_;
    Stripe* second_;
  };

  Stripe& stripe_of(std::uint64_t bucket) const noexcept {
    return stripes_[bucket & (stripe_count_ - 1)];
  }

  std::size_t stripe_count_;
  std::unique_ptr<Stripe[]> stripes_;
  // Its own line: restarts are rare, and the stripes' lines are hot.
  alignas(64) std::atomic<std::uint64_t> restarts_{0};
};

template <unsigned FpBits, unsigned Slots = 4, ReadMode Reads = ReadMode::kOptimistic>
using StripedCuckooFilter = BasicCuckooFilter<AtomicPackedTable<FpBits, Slots>, StripedSync<Reads>>;

}  // namespace ccf
