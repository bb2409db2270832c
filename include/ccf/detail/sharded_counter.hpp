// A counter spread over cache-line-padded per-thread slots: increments from different threads
// touch different lines (no shared hot line, no conflicts between hardware transactions);
// value() sums the slots -- exact when no increment is in flight.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "ccf/sync/spin_wait.hpp"

namespace ccf::detail {

class ShardedCounter {
 public:
  void add(std::int64_t delta) noexcept {
    // Relaxed: a count, publishing nothing; readers that need an exact value synchronize with
    // the counting threads by other means (e.g. joining them).
    slots_[sync::thread_slot()].value.fetch_add(delta, std::memory_order_relaxed);
  }
  std::int64_t value() const noexcept {
    std::int64_t total = 0;
    for (const auto& slot : slots_) total += slot.value.load(std::memory_order_relaxed);
    return total;
  }

 private:
  std::array<sync::CacheLinePadded<std::atomic<std::int64_t>>, sync::kThreadSlots> slots_{};
};

}  // namespace ccf::detail
