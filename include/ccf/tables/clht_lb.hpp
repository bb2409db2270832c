// ClhtLb: CLHT-lb, the cache-line hash table (tables/basic_clht.hpp, where the design and its
// argument are) with a lock per head bucket, in the head's first word: an update locks its
// chain's head; a migration locks each old head while it copies the chain, then leaves it
// kMigrated for good.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "ccf/sync/spin_wait.hpp"
#include "ccf/tables/basic_clht.hpp"

namespace ccf {

namespace clht {

class BucketLocks {
 public:
  static constexpr std::string_view kName = "ClhtLb";

  // f(head, table) with h's head locked in the table that holds h's chain (basic_clht.hpp, M2):
  // from tables.current(), kMigrated heads are followed to the successor. Waits only for the
  // head's lock (an update, or one head's copy).
  template <class Tables, class F>
  auto update(const Tables& tables, std::uint64_t h, F&& f) {
    sync::SpinWait wait;
    for (auto* table = tables.current();;) {
      auto& head = table->head(h);
      // Acquire: a kMigrated read makes the successor, and the chain copied into it, visible
      // (pairs with the release store in migrate()).
      std::uint64_t state = head.lock.load(std::memory_order_acquire);
      if (state == kMigrated) {
        table = table->successor();
        continue;
      }
      if (state == kFree &&
          head.lock.compare_exchange_weak(state, kLocked, std::memory_order_acquire)) {
        auto result = f(head, *table);
        head.lock.store(kFree, std::memory_order_release);
        return result;
      }
      wait.wait();  // held: by an update, or by a copy, after which it is kMigrated
    }
  }

  // Each head is taken on its own (migrate()).
  template <class F>
  static void migrating(F&& f) {
    f();
  }

  // One try: a head held by an update is left for a later claim (kBusy), so a migrating thread
  // never waits on a chain. The CAS is acquire (the chain's last update is copied); the
  // kMigrated store release (M2: publishes the copy to whoever follows the head). A load comes
  // first: a CAS writes its line even when it fails, and a helper resuming into a retired
  // table (M6) must not take its pages back from the system.
  template <class Bucket, class Copy>
  static clht::Migrate migrate(Bucket& head, Copy&& copy) {
    std::uint64_t state = head.lock.load(std::memory_order_relaxed);
    if (state != kFree ||
        !head.lock.compare_exchange_strong(state, kLocked, std::memory_order_acquire)) {
      return state == kMigrated ? clht::Migrate::kAlready : clht::Migrate::kBusy;
    }
    if (!copy(head)) {
      head.lock.store(kFree, std::memory_order_release);
      return clht::Migrate::kNeedsMemory;
    }
    head.lock.store(kMigrated, std::memory_order_release);
    return clht::Migrate::kNow;
  }

  static constexpr bool speculative() noexcept { return false; }
};

}  // namespace clht

using ClhtLb = BasicClht<clht::BucketLocks>;

}  // namespace ccf
