// What the two cache-line hash tables (tables/clht_lb.hpp, tables/clht_lf.hpp) share: 64-bit
// keys with 0 reserved for an empty slot, three pairs per 64-byte bucket, multiplicative hashes,
// and sizing: a table built for n items gets ceil(n / 3) head buckets.
//
// The hash (hash.hpp's fibonacci_hash, its high bits the bucket index): CLHT indexes with the
// raw key modulo m, which puts every key of a stride that m divides into one chain; the
// multiplication spreads them. It replaced MurmurHash3's finalizer, which spreads every key set
// like a random function: at the benchmarks' load (half of 3 per bucket) a Poisson spread
// leaves 6.6% of the buckets with an overflow chain, and a lookup that meets one pays a second,
// dependent miss. Keys of a dense range -- sequential ids, the benchmarks' [1, r] -- now land
// evenly and almost no bucket overflows (CLHT-lb read-only 1.5x, docs/benchmarks.md); random
// 64-bit keys spread as before (chtbench --keys scrambled), for one multiply instead of two
// and three shifts. HopscotchMap indexes its homes with the same hash.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ccf/hash.hpp"

namespace ccf::detail {

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
  static std::uint64_t hash(std::uint64_t key) noexcept { return fibonacci_hash(key); }
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
