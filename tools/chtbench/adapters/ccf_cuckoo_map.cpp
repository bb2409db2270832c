// `cuckoo-map`: ccf's CuckooMap<u64, u64> (include/ccf/tables/cuckoo_map.hpp) as a set, in a
// translation unit of its own (adapters/table_set.hpp says why).
#include <ccf/tables/cuckoo_map.hpp>
#include <cstdint>

#include "adapters/table_set.hpp"
#include "registry.hpp"

namespace chtbench {

void register_ccf_cuckoo_map(Registry& r) {
  add_table<ccf::CuckooMap<std::uint64_t, std::uint64_t>>(
      r, "cuckoo-map",
      "ccf CuckooMap: (2,4) cuckoo, striped locks, store-free lookups on bucket versions, BFS "
      "paths, resize");
}

}  // namespace chtbench
