// What the two cache-line hash tables (tables/clht_lb.hpp, tables/clht_lf.hpp) share: 64-bit
// keys with 0 reserved for an empty slot, three pairs per 64-byte bucket, mixed hashes (CLHT
// indexes with the raw key; mixed, strided keys do not pile into one chain -- chosen keys still
// can: fmix64 is unseeded and invertible, as the tests' colliding keys show), sizing: a table
// built for n items gets ceil(n / 3) head buckets, and two pieces of their migrations (per-chunk
// counts, the copy's chain prefetch).
//
// Why fmix64 and not a cheaper multiplicative (Fibonacci) hash: that one spreads a dense key
// range evenly, so almost no head overflows (CLHT-lb 1.3-1.5x faster on chtbench's keys), but it
// piles some aligned and decimal-stride key sets into a few heads -- keys that are multiples of
// 2^16: 85% of them in chains, one of 38 keys, where fmix64 leaves 6% and 9
// (scripts/hash_spread.py; docs/benchmarks.md).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ccf/detail/prefetch.hpp"
#include "ccf/hash.hpp"

namespace ccf::detail {

// A CLHT migration's per-chunk counts of heads still to migrate, one cache line each: the
// threads of a migration claim consecutive chunks and decrement their chunk's count once per
// head, and counts packed together would pass one line between them on every head (false
// sharing: a ClhtLf doubling by 2 threads took longer than by 1). 64 bytes per chunk of 64 heads
// (4 KiB) is 1.6% of the old heads, held for the migration's length.
class ChunkCounts {
 public:
  explicit ChunkCounts(std::uint64_t chunks) : counts_(std::make_unique<Count[]>(chunks)) {}
  std::atomic<std::uint64_t>& operator[](std::uint64_t chunk) noexcept {
    return counts_[chunk].left;
  }

 private:
  struct alignas(64) Count {
    std::atomic<std::uint64_t> left{0};
  };
  std::unique_ptr<Count[]> counts_;
};

struct ClhtSizing {
  static constexpr unsigned kSlots = 3;  // pairs per 64-byte bucket
  static constexpr std::uint64_t kItemsPerBucket = kSlots;
  static constexpr std::uint64_t kMaxBuckets = std::uint64_t{1} << 40;  // 64 TiB of heads

  // Head buckets for `capacity` items at kItemsPerBucket each; std::invalid_argument (naming
  // `table`) beyond the table limit.
  static std::uint64_t buckets_for(std::size_t capacity, std::string_view table) {
    const std::uint64_t buckets = capacity / kItemsPerBucket + (capacity % kItemsPerBucket != 0);
    if (buckets > kMaxBuckets) {
      throw std::invalid_argument(std::string(table) + " capacity " + std::to_string(capacity) +
                                  " needs more than the 64 TiB table limit");
    }
    return std::max<std::uint64_t>(1, buckets);
  }
  static std::uint64_t hash(std::uint64_t key) noexcept { return mix64(key); }

  // A migration copies heads in order, which the hardware prefetcher follows, but their overflow
  // buckets lie anywhere in the pool, where it does not look: a copier about to take head i
  // starts loading the first overflow bucket of head i + kChainAhead (when below `end`), so
  // that the chain walk does not stall on it (perf: the walk's first load of an overflow bucket
  // was half of a copy's cycles). Relaxed: the pointer is only a hint, a stale one is harmless,
  // and pool buckets outlive their table.
  static constexpr std::uint64_t kChainAhead = 4;
  template <class Bucket>
  static void prefetch_chain_ahead(const Bucket* heads, std::uint64_t i, std::uint64_t end) {
    if (i + kChainAhead >= end) return;
    if (const Bucket* b = heads[i + kChainAhead].next.load(std::memory_order_relaxed)) {
      prefetch_line(b);
    }
  }
  // Inline, its throw out of line: it runs before every lookup.
  static void check(std::uint64_t key, std::string_view table) {
    if (key == 0) [[unlikely]] {
      reject_zero_key(table);
    }
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void reject_zero_key(std::string_view table) {
    throw std::invalid_argument(std::string(table) +
                                " keys must be non-zero (0 marks an empty slot)");
  }
};

}  // namespace ccf::detail
