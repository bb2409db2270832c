// `libcuckoo-map`: libcuckoo's cuckoohash_map (Li et al., "Algorithmic improvements for fast
// concurrent cuckoo hashing", EuroSys 2014: striped spin locks, BFS cuckoo paths, lock-free
// reads of (2,4)-style buckets with 4 slots), the reference concurrent cuckoo map, used as a set
// with its defaults -- std::hash (the identity on integers) and 4 slots per bucket -- as a user
// would use it.
#include <libcuckoo/cuckoohash_map.hh>

#include "adapters/counting_allocator.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

class LibcuckooMap final : public Structure {
  struct Empty {};
  using Map = libcuckoo::cuckoohash_map<std::uint64_t, Empty, std::hash<std::uint64_t>,
                                        std::equal_to<std::uint64_t>,
                                        CountingAllocator<std::pair<const std::uint64_t, Empty>>>;

 public:
  explicit LibcuckooMap(const StructureConfig& config)
      : capacity_(config.capacity),
        map_(config.capacity, Map::hasher(), Map::key_equal(), Map::allocator_type(&meter_)) {}

  bool insert(std::uint64_t key) override { return map_.insert(key, Empty{}); }
  bool contains(std::uint64_t key) const override { return map_.contains(key); }
  bool erase(std::uint64_t key) override { return map_.erase(key); }
  std::size_t size() const override { return map_.size(); }
  std::size_t capacity() const override { return capacity_; }
  std::size_t memory_bytes() const override { return sizeof(*this) + meter_.total(); }

 private:
  std::size_t capacity_;
  MemoryMeter meter_;  // declared before map_, whose allocator points at it
  Map map_;
};

}  // namespace

void register_libcuckoo_map(Registry& r) {
  r.add({"libcuckoo-map",
         "libcuckoo cuckoohash_map (striped locks, BFS paths, 4-slot buckets), as a set",
         {.filter = false, .thread_safe = true},
         [](const StructureConfig& c) { return std::make_unique<LibcuckooMap>(c); }});
}

}  // namespace chtbench
