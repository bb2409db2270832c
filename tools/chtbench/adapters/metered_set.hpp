// A peer's concurrent map used as a set (a key maps to an empty value), charged for every byte
// it allocates through CountingAllocator. What differs between peers -- how the map is built
// and its insert / lookup / erase calls -- is a small Ops class:
//
//   struct Ops {
//     using Map = ...;                          // allocator_type: a CountingAllocator
//     static Map make(std::size_t capacity, const Map::allocator_type&);
//     static bool insert(Map&, std::uint64_t); contains(const Map&, ...); erase(Map&, ...);
//   };
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "adapters/counting_allocator.hpp"
#include "structure.hpp"

namespace chtbench {

template <class Ops>
class MeteredSet final : public StructureBase<MeteredSet<Ops>> {
  using Map = typename Ops::Map;

 public:
  explicit MeteredSet(const StructureConfig& config)
      : capacity_(config.capacity),
        map_(Ops::make(config.capacity, typename Map::allocator_type(&meter_))) {}

  bool insert(std::uint64_t key) override { return Ops::insert(map_, key); }
  bool contains(std::uint64_t key) const override { return Ops::contains(map_, key); }
  bool erase(std::uint64_t key) override { return Ops::erase(map_, key); }
  std::size_t size() const override { return map_.size(); }
  std::size_t capacity() const override { return capacity_; }
  std::size_t memory_bytes() const override { return sizeof(*this) + meter_.total(); }

  static std::unique_ptr<Structure> make(const StructureConfig& config) {
    return std::make_unique<MeteredSet>(config);
  }

 private:
  std::size_t capacity_;
  MemoryMeter meter_;  // declared before map_, whose allocator points at it
  Map map_;
};

}  // namespace chtbench
