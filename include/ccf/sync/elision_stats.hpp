// Opt-in statistics of the elision policies (htm.hpp, "Statistics"): per-thread padded counters,
// relaxed, written only outside transactions. NoElisionStats, the default, compiles to nothing.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "ccf/sync/spin_wait.hpp"
#include "ccf/sync/tx_status.hpp"

namespace ccf::sync {

struct ElisionCounters {
  std::uint64_t started = 0;            // transactions begun (XBEGIN executed)
  std::uint64_t committed = 0;          // transactions committed
  std::uint64_t aborts_was_locked = 0;  // explicit WAS_LOCKED: the lock was held (S1/S2)
  std::uint64_t aborts_bad_rop = 0;     // explicit BAD_ROP: a stale COP prefix (cop.hpp)
  std::uint64_t aborts_explicit = 0;    // explicit aborts with another code
  std::uint64_t aborts_capacity = 0;
  std::uint64_t aborts_conflict = 0;
  std::uint64_t aborts_other = 0;       // debug, nested, status 0 (interrupts, system calls)
  std::uint64_t fallbacks = 0;          // critical sections run under the lock
  std::uint64_t aux_acquisitions = 0;   // SCM's aux lock taken (S4)
  std::uint64_t retries_exhausted = 0;  // fallbacks because every attempt of the budget aborted
  std::uint64_t skipped = 0;  // fallbacks with no attempt: an adaptive policy skipped speculation

  std::uint64_t aborted() const noexcept {
    return aborts_was_locked + aborts_bad_rop + aborts_explicit + aborts_capacity +
           aborts_conflict + aborts_other;
  }
  friend bool operator==(const ElisionCounters&, const ElisionCounters&) = default;

  // Critical sections that committed as transactions, of all sections run.
  double speculative_share() const noexcept {
    const std::uint64_t sections = committed + fallbacks;
    return sections == 0 ? 0.0 : static_cast<double>(committed) / static_cast<double>(sections);
  }
};

enum class ElisionEvent : unsigned {
  kStarted,
  kCommitted,
  kWasLockedAbort,  // the abort events follow AbortReason's order (abort_event)
  kBadRopAbort,
  kExplicitAbort,
  kCapacityAbort,
  kConflictAbort,
  kOtherAbort,
  kFallback,
  kAuxAcquired,
  kRetriesExhausted,
  kSkipped,
};

constexpr ElisionEvent abort_event(TxStatus s) noexcept {
  return static_cast<ElisionEvent>(static_cast<unsigned>(ElisionEvent::kWasLockedAbort) +
                                   static_cast<unsigned>(abort_reason(s)));
}

class NoElisionStats {
 public:
  static constexpr bool kCounts = false;
  void record(ElisionEvent) noexcept {}
  ElisionCounters snapshot() const noexcept { return {}; }
  void reset() noexcept {}
};

class ElisionStats {
 public:
  static constexpr bool kCounts = true;
  // Counting on or off for the whole process (on by default): benchmarks measure what counting
  // costs by running with it off. Set it while no counted operation runs.
  static void set_counting(bool on) noexcept { counting_.store(on, std::memory_order_relaxed); }
  static bool counting() noexcept { return counting_.load(std::memory_order_relaxed); }

  void record(ElisionEvent event) noexcept {
    if (!counting()) return;
    // Relaxed: an event counter; snapshots taken after the counting threads are joined are
    // exact (join synchronizes), snapshots taken meanwhile are approximate.
    slots_[thread_slot()].value[static_cast<unsigned>(event)].fetch_add(1,
                                                                        std::memory_order_relaxed);
  }

  ElisionCounters snapshot() const noexcept {
    std::array<std::uint64_t, kEvents> sum{};
    for (const auto& slot : slots_) {
      for (unsigned e = 0; e < kEvents; ++e) {
        sum[e] += slot.value[e].load(std::memory_order_relaxed);  // relaxed: see record()
      }
    }
    auto at = [&](ElisionEvent e) { return sum[static_cast<unsigned>(e)]; };
    return {.started = at(ElisionEvent::kStarted),
            .committed = at(ElisionEvent::kCommitted),
            .aborts_was_locked = at(ElisionEvent::kWasLockedAbort),
            .aborts_bad_rop = at(ElisionEvent::kBadRopAbort),
            .aborts_explicit = at(ElisionEvent::kExplicitAbort),
            .aborts_capacity = at(ElisionEvent::kCapacityAbort),
            .aborts_conflict = at(ElisionEvent::kConflictAbort),
            .aborts_other = at(ElisionEvent::kOtherAbort),
            .fallbacks = at(ElisionEvent::kFallback),
            .aux_acquisitions = at(ElisionEvent::kAuxAcquired),
            .retries_exhausted = at(ElisionEvent::kRetriesExhausted),
            .skipped = at(ElisionEvent::kSkipped)};
  }

  void reset() noexcept {
    for (auto& slot : slots_) {
      for (auto& counter : slot.value) counter.store(0, std::memory_order_relaxed);  // see record()
    }
  }

 private:
  static constexpr unsigned kEvents = static_cast<unsigned>(ElisionEvent::kSkipped) + 1;
  // Relaxed: a switch set before the counted threads start (thread creation orders it).
  static inline std::atomic<bool> counting_{true};
  std::array<CacheLinePadded<std::array<std::atomic<std::uint64_t>, kEvents>>, kThreadSlots>
      slots_{};
};

}  // namespace ccf::sync
