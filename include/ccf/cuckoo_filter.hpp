// CuckooFilter: the sequential cuckoo filter (Fan et al. 2014; thesis §5.2) -- the filter core
// (basic_cuckoo_filter.hpp) with no synchronization at all.
//
//   CuckooFilter<PackedTable<F, b>>      b in {2, 4, 8}, F in {4, 8, 12, 16, 32}: F bits/slot
//   CuckooFilter<SemiSortedTable<F>>     b = 4, F in {8, 12, 16}: F - 1 bits/slot
//
// It has a victim slot and a random-walk fallback (basic_cuckoo_filter.hpp, "Full"): with the
// default kick budget (500) it fills to >= 95% of its slots with b = 4 before the first kFull,
// and no item is ever lost. Not thread-safe; see the concurrent filters for that. Movable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "ccf/basic_cuckoo_filter.hpp"
#include "ccf/packed_table.hpp"
#include "ccf/semi_sorted_table.hpp"
#include "ccf/sync/access.hpp"

namespace ccf {

// No synchronization: operations are plain calls, a batch is one section.
class Unsynchronized : public detail::ExclusiveSections {
 public:
  static constexpr std::size_t kBatchChunk = std::numeric_limits<std::size_t>::max();
  static constexpr std::string_view kName = "";
  // A lookup loads its two buckets right away: a prefetch first only adds instructions (plain
  // negative lookups at 2^26 items: 11% faster without it).
  static constexpr bool kPrefetchLookups = false;

  using ExclusiveSections::ExclusiveSections;

  template <sync::Access, class F>
  decltype(auto) operation(F&& f) const {
    return f();
  }
  static constexpr std::size_t memory_bytes() noexcept { return 0; }
};

template <class Table>
using CuckooFilter = BasicCuckooFilter<Table, Unsynchronized>;

}  // namespace ccf
