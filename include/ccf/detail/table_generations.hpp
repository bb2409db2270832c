// The tables a resizable hash map has had (tables/basic_clht.hpp, tables/clht_lf.hpp,
// tables/cuckoo_map.hpp, tables/hopscotch_map.hpp): the current one and every older one, kept
// until the map is destroyed instead of a grace period -- lookups never announce themselves, so
// one may still be reading an old table. Each map hands an old table's pages back once its
// migration is done, keeping only the Table object (BasicClht's M6, ClhtLf's L6, CuckooMap's C6,
// HopscotchMap's R6), so old tables cost little even for a map that grows by less than 2. Also
// what resizing has cost.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace ccf::detail {

template <class Table>
class TableGenerations {
 public:
  explicit TableGenerations(std::unique_ptr<Table> first) : current_(first.get()) {
    tables_.push_back(std::move(first));
  }

  // Acquire: pairs with publish(); a table seen is a table fully built.
  Table* current() const noexcept { return current_.load(std::memory_order_acquire); }
  // For a writer holding what keeps the current table current (a resize must take it first).
  bool is_current(const Table* table) const noexcept {
    return current_.load(std::memory_order_relaxed) == table;
  }

  // Holds `next` (until the map goes) without making it current: a table a migration fills
  // before it is published. May throw std::bad_alloc; `next` is then freed and nothing is held.
  Table* keep(std::unique_ptr<Table> next) {
    const std::lock_guard guard(tables_lock_);
    tables_.push_back(std::move(next));
    return tables_.back().get();
  }

  // Frees a table kept but never made reachable (a migration that lost the race to begin).
  void drop(const Table* kept) noexcept {
    const std::lock_guard guard(tables_lock_);
    std::erase_if(tables_, [kept](const auto& table) { return table.get() == kept; });
  }

  // Makes `kept` the current table. Release: everything written into it before is seen by
  // whoever loads it. `start`: when the resize that built it began. Never throws.
  void publish(Table* kept, std::chrono::steady_clock::time_point start) noexcept {
    current_.store(kept, std::memory_order_release);
    count(start);
  }
  // The same if `expected` is still the current table (for a map any of whose threads may
  // publish); false, changing nothing, if it is not.
  bool publish_if(Table* expected, Table* kept,
                  std::chrono::steady_clock::time_point start) noexcept {
    if (!current_.compare_exchange_strong(expected, kept, std::memory_order_release,
                                          std::memory_order_relaxed)) {
      return false;
    }
    count(start);
    return true;
  }

  std::uint64_t resizes() const noexcept { return resizes_.load(std::memory_order_relaxed); }
  std::uint64_t resize_nanoseconds() const noexcept {
    return resize_ns_.load(std::memory_order_relaxed);
  }
  // Table::memory_bytes() summed over every table held.
  std::size_t memory_bytes() const {
    const std::lock_guard guard(tables_lock_);
    std::size_t bytes = 0;
    for (const auto& table : tables_) bytes += table->memory_bytes();
    return bytes;
  }

 private:
  void count(std::chrono::steady_clock::time_point start) noexcept {
    resizes_.fetch_add(1, std::memory_order_relaxed);
    resize_ns_.fetch_add(
        static_cast<std::uint64_t>(
            std::chrono::nanoseconds(std::chrono::steady_clock::now() - start).count()),
        std::memory_order_relaxed);
  }

  std::atomic<Table*> current_;
  mutable std::mutex tables_lock_;  // keep() and drop() against memory_bytes()
  std::vector<std::unique_ptr<Table>> tables_;
  std::atomic<std::uint64_t> resizes_{0};
  std::atomic<std::uint64_t> resize_ns_{0};
};

}  // namespace ccf::detail
