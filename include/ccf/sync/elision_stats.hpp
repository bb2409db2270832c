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
  std::uint64_t started = 0;    // transactions begun (XBEGIN executed)
  std::uint64_t committed = 0;  // transactions committed
  std::uint64_t aborts_was_locked = 0;
  std::uint64_t aborts_explicit = 0;  // explicit aborts with another code
  std::uint64_t aborts_capacity = 0;
  std::uint64_t aborts_conflict = 0;
  std::uint64_t aborts_other = 0;  // debug, nested, status 0
  std::uint64_t fallbacks = 0;     // critical sections run under the lock
  std::uint64_t aux_acquisitions = 0;

  std::uint64_t aborted() const noexcept {
    return aborts_was_locked + aborts_explicit + aborts_capacity + aborts_conflict + aborts_other;
  }
};

enum class ElisionEvent : unsigned {
  kStarted,
  kCommitted,
  kWasLockedAbort,  // the abort events follow AbortReason's order (abort_event)
  kExplicitAbort,
  kCapacityAbort,
  kConflictAbort,
  kOtherAbort,
  kFallback,
  kAuxAcquired,
};

constexpr ElisionEvent abort_event(TxStatus s) noexcept {
  return static_cast<ElisionEvent>(static_cast<unsigned>(ElisionEvent::kWasLockedAbort) +
                                   static_cast<unsigned>(abort_reason(s)));
}

class NoElisionStats {
 public:
  void record(ElisionEvent) noexcept {}
  ElisionCounters snapshot() const noexcept { return {}; }
  void reset() noexcept {}
};

class ElisionStats {
 public:
  void record(ElisionEvent event) noexcept {
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
    return {at(ElisionEvent::kStarted),        at(ElisionEvent::kCommitted),
            at(ElisionEvent::kWasLockedAbort), at(ElisionEvent::kExplicitAbort),
            at(ElisionEvent::kCapacityAbort),  at(ElisionEvent::kConflictAbort),
            at(ElisionEvent::kOtherAbort),     at(ElisionEvent::kFallback),
            at(ElisionEvent::kAuxAcquired)};
  }

  void reset() noexcept {
    for (auto& slot : slots_) {
      for (auto& counter : slot.value) counter.store(0, std::memory_order_relaxed);  // see record()
    }
  }

 private:
  static constexpr unsigned kEvents = static_cast<unsigned>(ElisionEvent::kAuxAcquired) + 1;
  std::array<CacheLinePadded<std::array<std::atomic<std::uint64_t>, kEvents>>, kThreadSlots>
      slots_{};
};

}  // namespace ccf::sync
