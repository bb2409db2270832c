// How much larger a resizable map's next table is than the one it replaces
// (tables/cuckoo_map.hpp C1, tables/hopscotch_map.hpp R1): 2, the default, doubles it, as most
// maps do. A smaller factor keeps the memory after growing closer to a table sized for its
// items -- about `factor` times as large at most -- for more copying: a build from empty moves
// each item about 1 / (factor - 1) times instead of once (docs/benchmarks.md has the trade
// measured). Tables under a map's `factor_from` size double whatever the factor: a small table
// grown by a little would have too little room left for the inserts that run while it fills.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ccf::detail {

struct Growth {
  double factor = 2.0;
};

// `growth`, if its factor lies in [min_factor, 2]; else throws std::invalid_argument naming
// `map` and the range.
inline Growth checked_growth(Growth growth, double min_factor, std::string_view map) {
  if (!(growth.factor >= min_factor && growth.factor <= 2.0)) {
    const auto text = [](double x) {
      std::array<char, 32> digits{};
      char* end = std::to_chars(digits.data(), digits.data() + digits.size(), x).ptr;
      return std::string(digits.data(), end);
    };
    throw std::invalid_argument(std::string(map) + " growth factor must lie in [" +
                                text(min_factor) + ", 2], not " + text(growth.factor));
  }
  return growth;
}

// The size of the table that replaces one of `size` (buckets or homes): ceil(factor * size), or
// twice `size` below `factor_from`; at least size + 1, at most `limit`.
inline std::uint64_t grown_size(std::uint64_t size, Growth growth, std::uint64_t factor_from,
                                std::uint64_t limit) noexcept {
  if (size >= limit) return limit;
  const double factor = size < factor_from ? 2.0 : growth.factor;
  const double larger = std::ceil(static_cast<double>(size) * factor);
  return std::clamp<std::uint64_t>(
      static_cast<std::uint64_t>(std::min(larger, static_cast<double>(limit))), size + 1, limit);
}

}  // namespace ccf::detail
