// Compiled at -O2 into an object file that tests/prefetch_kept_test.sh disassembles: the batched
// lookups and inserts of every filter kind and the concurrent maps must still contain their
// prefetch instructions (detail/prefetch.hpp says how -O2 used to delete them).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ccf/ccf.hpp"

namespace probe {

template <class Filter>
std::size_t batched(Filter& filter, std::span<const std::uint64_t> keys, std::span<bool> out) {
  return filter.contains_many(keys, out) + filter.insert_many(keys);
}

std::size_t sequential(ccf::CuckooFilter<ccf::PackedTable<12, 4>>& f,
                       std::span<const std::uint64_t> keys, std::span<bool> out) {
  return batched(f, keys, out);
}
std::size_t striped(ccf::StripedCuckooFilter<12, 4>& f, std::span<const std::uint64_t> keys,
                    std::span<bool> out) {
  return batched(f, keys, out);
}
std::size_t lock_free(ccf::LockFreeCuckooFilter<12>& f, std::span<const std::uint64_t> keys,
                      std::span<bool> out) {
  return batched(f, keys, out);
}
std::optional<std::uint64_t> hopscotch(const ccf::HopscotchMap<32>& map, std::uint64_t key) {
  return map.find(key);
}

}  // namespace probe
