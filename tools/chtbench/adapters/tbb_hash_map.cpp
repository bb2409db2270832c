// `tbb-hash-map`: oneTBB's tbb::concurrent_hash_map (per-bucket reader-writer locks), used as a
// set, with its default hash_compare.
#include <tbb/concurrent_hash_map.h>

#include "adapters/counting_allocator.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

class TbbHashMap final : public Structure {
  struct Empty {};
  using Map = tbb::concurrent_hash_map<std::uint64_t, Empty, tbb::tbb_hash_compare<std::uint64_t>,
                                       CountingAllocator<std::pair<const std::uint64_t, Empty>>>;

 public:
  explicit TbbHashMap(const StructureConfig& config)
      : capacity_(config.capacity), map_(config.capacity, Map::allocator_type(&meter_)) {}

  bool insert(std::uint64_t key) override { return map_.insert({key, Empty{}}); }
  bool contains(std::uint64_t key) const override { return map_.count(key) != 0; }
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

void register_tbb_hash_map(Registry& r) {
  r.add({"tbb-hash-map",
         "oneTBB tbb::concurrent_hash_map (per-bucket RW locks), as a set",
         {.filter = false, .thread_safe = true},
         [](const StructureConfig& c) { return std::make_unique<TbbHashMap>(c); }});
}

}  // namespace chtbench
