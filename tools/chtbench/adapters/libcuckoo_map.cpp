// `libcuckoo-map`: libcuckoo's cuckoohash_map (Li et al., "Algorithmic improvements for fast
// concurrent cuckoo hashing", EuroSys 2014: striped spin locks, BFS cuckoo paths, 4-slot
// buckets), the reference concurrent cuckoo map, used as a set with its defaults -- std::hash
// (the identity on integers) and 4 slots per bucket -- as a user would use it.
#include <libcuckoo/cuckoohash_map.hh>

#include "adapters/metered_set.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

struct LibcuckooOps {
  struct Empty {};
  using Map = libcuckoo::cuckoohash_map<std::uint64_t, Empty, std::hash<std::uint64_t>,
                                        std::equal_to<std::uint64_t>,
                                        CountingAllocator<std::pair<const std::uint64_t, Empty>>>;
  static Map make(std::size_t capacity, const Map::allocator_type& allocator) {
    return Map(capacity, Map::hasher(), Map::key_equal(), allocator);
  }
  static bool insert(Map& map, std::uint64_t key) { return map.insert(key, Empty{}); }
  static bool contains(const Map& map, std::uint64_t key) { return map.contains(key); }
  static bool erase(Map& map, std::uint64_t key) { return map.erase(key); }
};

}  // namespace

void register_libcuckoo_map(Registry& r) {
  r.add({"libcuckoo-map",
         "libcuckoo cuckoohash_map (striped locks, BFS paths, 4-slot buckets), as a set",
         {.filter = false, .thread_safe = true, .peer = true},
         MeteredSet<LibcuckooOps>::make});
}

}  // namespace chtbench
