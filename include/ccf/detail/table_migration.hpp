// The state of one table's cooperative migration into a larger table, chunk by chunk of
// the old table (tables/hopscotch_map.hpp R1-R6, tables/cuckoo_map.hpp C1-C6): the threads that
// update meanwhile claim chunks from a wrapping cursor and move them, and the one that moves the
// last chunk publishes the new table.
//
//   move(c, lock, copy, last)  moves chunk c unless it is moved: lock() takes the chunk's locks
//             in the old table (a guard whose owns() is false when they are busy: kBusy), under
//             them the chunk is checked again, copy() copies it (false: its items found no room
//             in the new table -- a degenerate hash -- and the migration is stuck), and moved[c]
//             is set (release) before the locks go; then the one chunk count taken to zero
//             (acq_rel: that thread has seen every copy) calls last(), which publishes.
//   moved(c)  never cleared once set: readers load it with acquire to know which table holds c.
//   claim()   the next chunk at the cursor not moved yet (claims mod chunks: a chunk skipped
//             because it was busy, or claimed by a thread then suspended, comes round again).
//             The cursor visits the chunks in order (kInOrder: the old table is read as one
//             stream), or the even ones, then the odd ones (kEvenThenOdd), for a table whose
//             neighbouring chunks' copies share a piece of the new table (Hopscotch's copy of
//             segment s locks a run of new segments, 2s .. 2s + 2 when doubling, R2): claimed
//             in order, two threads' copies waited for each other, one after the other.
//             It passes over at most kMaxSkips moved chunks: where updates move their own keys'
//             chunks (tables/cuckoo_map.hpp C3), late in a migration most chunks at the cursor
//             are moved, and a claim that took the first of them would move nothing -- the
//             migration would then last until the cursor came round, about one update per chunk.
//   stuck()   a chunk could not be moved; the table says what follows.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace ccf::detail {

// A map's default migration hook: nothing. A Hook with `static void on_claim(std::uint64_t c)`
// is called by a thread that has claimed chunk c, before it takes the chunk's locks (tests
// suspend a thread there: it holds nobody).
struct NoMigrationHook {};

enum class ClaimOrder { kInOrder, kEvenThenOdd };

template <class Table, ClaimOrder kOrder = ClaimOrder::kInOrder>
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

  enum class Move { kMoved, kAlready, kBusy, kStuck };

  template <class Lock, class Copy, class Last>
  Move move(std::uint64_t chunk, Lock&& lock, Copy&& copy, Last&& last) {
    if (moved(chunk)) return Move::kAlready;
    {
      const auto guard = lock();
      if (!guard.owns()) return Move::kBusy;
      if (moved(chunk)) return Move::kAlready;
      if (stuck()) return Move::kStuck;
      if (!copy()) {
        // Release/acquire: whoever sees the migration stuck sees what this thread did.
        stuck_.store(true, std::memory_order_release);
        return Move::kStuck;
      }
      moved_[chunk].store(true, std::memory_order_release);
    }
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) last();
    return Move::kMoved;
  }

  bool moved(std::uint64_t chunk) const noexcept {
    return moved_[chunk].load(std::memory_order_acquire);
  }
  std::uint64_t claim() noexcept {
    // Relaxed: a claim only spreads helpers over the chunks; move() decides under the chunk's
    // locks, and reads moved(c) again there.
    std::uint64_t c = at_cursor(claims_.fetch_add(1, std::memory_order_relaxed));
    for (unsigned skipped = 0; skipped < kMaxSkips && moved(c); ++skipped) {
      c = at_cursor(claims_.fetch_add(1, std::memory_order_relaxed));
    }
    return c;
  }
  bool stuck() const noexcept { return stuck_.load(std::memory_order_acquire); }

 private:
  static constexpr unsigned kMaxSkips = 64;
  // The chunk of claim k.
  std::uint64_t at_cursor(std::uint64_t k) const noexcept {
    const std::uint64_t i = k % chunks;
    if constexpr (kOrder == ClaimOrder::kInOrder) return i;
    const std::uint64_t evens = (chunks + 1) / 2;
    return i < evens ? 2 * i : 2 * (i - evens) + 1;
  }
  const std::unique_ptr<std::atomic<bool>[]> moved_;
  std::atomic<bool> stuck_{false};
  alignas(64) std::atomic<std::uint64_t> claims_{0};
  alignas(64) std::atomic<std::uint64_t> left_;
};

}  // namespace ccf::detail
