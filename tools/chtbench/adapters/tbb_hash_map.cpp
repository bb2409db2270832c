// `tbb-hash-map`: oneTBB's tbb::concurrent_hash_map (per-bucket reader-writer locks), used as a
// set, with its default hash_compare.
#include <tbb/concurrent_hash_map.h>

#include "adapters/metered_set.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

struct TbbOps {
  struct Empty {};
  using Map = tbb::concurrent_hash_map<std::uint64_t, Empty, tbb::tbb_hash_compare<std::uint64_t>,
                                       CountingAllocator<std::pair<const std::uint64_t, Empty>>>;
  static Map make(std::size_t capacity, const Map::allocator_type& allocator) {
    return Map(capacity, allocator);
  }
  static bool insert(Map& map, std::uint64_t key) { return map.insert({key, Empty{}}); }
  static bool contains(const Map& map, std::uint64_t key) { return map.count(key) != 0; }
  static bool erase(Map& map, std::uint64_t key) { return map.erase(key); }
};

}  // namespace

void register_tbb_hash_map(Registry& r) {
  r.add({"tbb-hash-map",
         "oneTBB tbb::concurrent_hash_map (per-bucket RW locks), as a set",
         {.filter = false, .thread_safe = true, .peer = true},
         MeteredSet<TbbOps>::make});
}

}  // namespace chtbench
