// The state of one table's cooperative migration into a table twice as large, chunk by chunk of
// the old table (tables/hopscotch_map.hpp R1-R6, tables/cuckoo_map.hpp C1-C6): the threads that
// update meanwhile claim chunks from a wrapping cursor and move them, and the one that moves the
// last chunk publishes the new table.
//
//   moved[c]  set (release) by the thread that moved chunk c, under the old table's locks of the
//             chunk, never cleared: readers load it with acquire to know which table holds c.
//   claim()   the next chunk at the cursor (claims mod chunks: a chunk skipped because it was
//             busy, or claimed by a thread then suspended, comes round again).
//   finish()  counts one chunk moved; true for the last (acq_rel: that thread has seen every copy).
//   stuck     set when a chunk could not be moved (its items found no room in the new table: a
//             degenerate hash); the table says what follows.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace ccf::detail {

template <class Table>
class TableMigration {
 public:
  TableMigration(Table* target, std::uint64_t chunk_count)
      : to(target),
        chunks(chunk_count),
        moved_(std::make_unique<std::atomic<bool>[]>(chunk_count)),
        left_(chunk_count) {}

  Table* const to;  // held by the map's TableGenerations
  const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  const std::uint64_t chunks;

  bool moved(std::uint64_t chunk) const noexcept {
    return moved_[chunk].load(std::memory_order_acquire);
  }
  // Under the chunk's locks in the old table, after its copy.
  void mark_moved(std::uint64_t chunk) noexcept {
    moved_[chunk].store(true, std::memory_order_release);
  }
  std::uint64_t claim() noexcept {
    return claims_.fetch_add(1, std::memory_order_relaxed) % chunks;
  }
  bool finish() noexcept { return left_.fetch_sub(1, std::memory_order_acq_rel) == 1; }

  // Release/acquire: whoever sees the migration stuck sees what the thread that stuck it did.
  bool stuck() const noexcept { return stuck_.load(std::memory_order_acquire); }
  void mark_stuck() noexcept { stuck_.store(true, std::memory_order_release); }

 private:
  const std::unique_ptr<std::atomic<bool>[]> moved_;
  std::atomic<bool> stuck_{false};
  alignas(64) std::atomic<std::uint64_t> claims_{0};
  alignas(64) std::atomic<std::uint64_t> left_;
};

}  // namespace ccf::detail
