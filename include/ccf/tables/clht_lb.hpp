// ClhtLb: CLHT-lb, the cache-line hash table (tables/basic_clht.hpp, where the design and its
// argument are) with a lock per head bucket, in the head's first word: an update locks its
// chain's head; a resize locks each old head for good (kMigrated) while it copies the chain.
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

  // f(head, table) with h's head locked in tables.current() (which stays current while one of
  // its heads is held: a migration takes every head first); waits out a migration.
  template <class Tables, class F>
  auto update(const Tables& tables, std::uint64_t h, F&& f) {
    sync::SpinWait wait;
    for (;;) {
      auto* table = tables.current();
      auto& head = table->head(h);
      std::uint64_t state = head.lock.load(std::memory_order_relaxed);
      if (state == kFree &&
          head.lock.compare_exchange_weak(state, kLocked, std::memory_order_acquire)) {
        auto result = f(head, *table);
        head.lock.store(kFree, std::memory_order_release);
        return result;
      }
      wait.wait();  // held, or migrated: then the next load of current finds the new table
    }
  }

  // Each head locked for good (kMigrated), then copied; then publish(). If a copy or the
  // publication throws (std::bad_alloc), the heads taken so far are freed again and the
  // exception propagates: copies only read `from`, so it is left as it was, and the updates that
  // waited on its heads go on in it.
  template <class Table, class Copy, class Publish>
  void migrate(Table& from, Copy&& copy, Publish&& publish) {
    std::uint64_t taken = 0;  // heads [0, taken) are kMigrated
    try {
      while (taken < from.buckets) {
        auto& head = from.heads[taken];
        sync::SpinWait wait;
        for (std::uint64_t state = kFree;
             !head.lock.compare_exchange_weak(state, kMigrated, std::memory_order_acquire);
             state = kFree) {
          wait.wait();
        }
        ++taken;
        copy(head);
      }
      publish();
    } catch (...) {
      for (std::uint64_t i = 0; i < taken; ++i) {
        from.heads[i].lock.store(kFree, std::memory_order_release);
      }
      throw;
    }
  }

  static constexpr bool speculative() noexcept { return false; }
};

}  // namespace clht

using ClhtLb = BasicClht<clht::BucketLocks>;

}  // namespace ccf
