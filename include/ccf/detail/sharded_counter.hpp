// A counter spread over cache-line-padded per-thread slots: increments from different threads
// touch different lines (no shared hot line, no conflicts between hardware transactions);
// value() sums the slots -- exact when no increment is in flight.
//
// Each thread owns a slot of its own while it runs (CounterSlots: claimed on its first add,
// handed back when it exits), so an add is a load and a store to a line only that thread
// writes: no locked instruction. A locked read-modify-write would cost 20-odd cycles and, on
// x86, fence the memory operations around it; the lock-free filter counts every insert, so it
// would pay that once more per insert. Threads beyond kOwnedSlots at once share one slot,
// updated with fetch_add.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "ccf/status.hpp"
#include "ccf/sync/spin_wait.hpp"

namespace ccf::detail {

class CounterSlots {
 public:
  static constexpr unsigned kOwnedSlots = 64;
  // The slot threads share once every owned slot is taken.
  static constexpr unsigned kSharedSlot = kOwnedSlots;
  static constexpr unsigned kSlots = kOwnedSlots + 1;

  // This thread's slot: owned (only this thread writes it) unless it is kSharedSlot.
  static unsigned mine() noexcept {
    if (slot_ == kUnclaimed) [[unlikely]] {
      claim();
    }
    return slot_;
  }

 private:
  static constexpr unsigned kUnclaimed = ~0u;

  // Hands the slot back at thread exit. Adds made later in the exit (from other thread_local
  // destructors) go to the shared slot: slot_ is trivially destructible and stays readable.
  struct Release {
    ~Release() {
      if (slot_ < kOwnedSlots) {
        // Release: the next owner's acquire claim reads this thread's last stores to the slot
        // of every counter, and continues each from there with plain loads and stores.
        owners()[slot_].value.store(false, std::memory_order_release);
      }
      slot_ = kSharedSlot;
    }
  };

  [[gnu::noinline]] static void claim() noexcept {
    slot_ = kSharedSlot;
    for (unsigned i = 0; i < kOwnedSlots; ++i) {
      bool taken = false;
      // Acquire: pairs with the previous owner's release in ~Release.
      if (owners()[i].value.compare_exchange_strong(taken, true, std::memory_order_acquire,
                                                    std::memory_order_relaxed)) {
        slot_ = i;
        thread_local Release release;  // constructed here, once per thread
        static_cast<void>(release);
        return;
      }
    }
  }

  static std::array<sync::CacheLinePadded<std::atomic<bool>>, kOwnedSlots>& owners() noexcept {
    static std::array<sync::CacheLinePadded<std::atomic<bool>>, kOwnedSlots> flags{};
    return flags;
  }

  static inline thread_local constinit unsigned slot_ = kUnclaimed;
};

class ShardedCounter {
 public:
  void add(std::int64_t delta) noexcept {
    const unsigned slot = CounterSlots::mine();
    std::atomic<std::int64_t>& value = slots_[slot].value;
    // Relaxed: a count, publishing nothing; readers that need an exact value synchronize with
    // the counting threads by other means (e.g. joining them).
    if (slot != CounterSlots::kSharedSlot) [[likely]] {
      value.store(value.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
    } else {
      value.fetch_add(delta, std::memory_order_relaxed);
    }
  }
  std::int64_t value() const noexcept {
    std::int64_t total = 0;
    for (const auto& slot : slots_) total += slot.value.load(std::memory_order_relaxed);
    return total;
  }

 private:
  std::array<sync::CacheLinePadded<std::atomic<std::int64_t>>, CounterSlots::kSlots> slots_{};
};

// An insert counted before it stores its item: `items` gains 1 before insert() runs and loses
// it again unless insert() returns kOk (or throws). A thread that sees the item then never reads
// a count without it. The resizing maps' test for a degenerate hash -- an insert refused in a
// table under half full (tables/cuckoo_map.hpp, tables/hopscotch_map.hpp) -- reads the count:
// one that lagged let a small table full of other threads' items pass for nearly empty.
template <class Insert>
Status count_ahead(ShardedCounter& items, Insert&& insert) {
  items.add(1);
  Status status;
  try {
    status = insert();
  } catch (...) {
    items.add(-1);
    throw;
  }
  if (status != Status::kOk) items.add(-1);
  return status;
}

}  // namespace ccf::detail
