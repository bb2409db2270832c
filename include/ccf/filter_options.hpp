// The options every cuckoo filter takes, and the sizing rule they share.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ccf/detail/filter_format.hpp"
#include "ccf/hash.hpp"

namespace ccf {

struct FilterOptions {
  std::uint64_t seed = kDefaultSeed;
  // Fingerprints one insert may displace in its random walk before the filter declares itself
  // full (500, as the reference design). Only filters with a victim slot walk (the sequential
  // and coarse ones); the others keep the value and save it, so a file says what was asked.
  unsigned max_kicks = 500;
  // Sizing target: the table gets ceil(capacity / max_load) slots. 0 picks the bucket size's
  // default (0.85 / 0.94 / 0.97 for b = 2 / 4 / 8), a load every insert reaches with room to
  // spare, so that `capacity` items fit.
  double max_load = 0;
};

namespace detail {
constexpr double default_max_load(unsigned slots) {
  return slots == 2 ? 0.85 : slots == 4 ? 0.94 : 0.97;
}

// Buckets for `capacity` items at the options' sizing load; throws std::invalid_argument for
// bad parameters (shared by every filter over a table of this kind).
template <class Table>
std::uint64_t checked_bucket_count(std::size_t capacity, const FilterOptions& options) {
  if (capacity == 0) throw std::invalid_argument("cuckoo filter capacity must be at least 1");
  const double max_load =
      options.max_load == 0 ? default_max_load(Table::kSlots) : options.max_load;
  if (!(max_load > 0 && max_load <= 1)) {
    throw std::invalid_argument("max_load must be in (0, 1]");
  }
  if (options.max_kicks > kMaxKicksLimit) {
    throw std::invalid_argument("max_kicks must be at most " + std::to_string(kMaxKicksLimit));
  }
  const double buckets = std::ceil(static_cast<double>(capacity) / (max_load * Table::kSlots));
  if (buckets * static_cast<double>(Table::payload_bytes(1)) >
      static_cast<double>(kMaxTableBytes)) {
    throw std::invalid_argument("cuckoo filter capacity " + std::to_string(capacity) +
                                " needs more than the 64 TiB table limit");
  }
  return static_cast<std::uint64_t>(buckets);
}
}  // namespace detail

}  // namespace ccf
