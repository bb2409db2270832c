// Insertion as the concurrent filters do it, on a bare table and addressing (for the benches
// that study layouts and searches outside a filter): a free slot in either bucket, else the
// shortest path within kConcurrentPathDepth displacements (moved along), else refused.
#pragma once

#include <cstdint>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/hash.hpp"

namespace bench {

template <class Table, class Addressing>
bool insert_along_path(Table& table, const Addressing& addressing, std::uint64_t key) {
  using Path =
      ccf::detail::CuckooPath<Table::kSlots, ccf::detail::kConcurrentPathDepth<Table::kSlots>>;
  const ccf::detail::Location at = ccf::detail::locate(addressing, ccf::hash_key(key));
  if (table.try_insert(at.primary, at.fp) || table.try_insert(at.alternate, at.fp)) return true;
  Path path;
  if (!ccf::detail::find_cuckoo_path(table, addressing, at.primary, at.alternate, path)) {
    return false;
  }
  ccf::detail::move_along(table, path, at.fp);
  return true;
}

}  // namespace bench
