// Structures by name. Each adapter file contributes a `register_*` function; registry()
// calls them all once. A new structure is one StructureInfo added by its adapter.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "structure.hpp"

namespace chtbench {

class Registry {
 public:
  // Throws std::logic_error on a duplicate name.
  void add(StructureInfo info);
  const StructureInfo* find(std::string_view name) const;
  std::span<const StructureInfo> all() const { return entries_; }

 private:
  std::vector<StructureInfo> entries_;
};

// Every built-in structure, sorted by name.
const Registry& registry();

// The adapters' registration functions (adapters/*.cpp).
void register_ccf_coarse_filters(Registry& r);
void register_ccf_cuckoo_map(Registry& r);
void register_ccf_concurrent_filters(Registry& r);
void register_ccf_filters(Registry& r);
void register_ccf_lock_free_filter(Registry& r);
void register_ccf_tables(Registry& r);
void register_libcds_maps(Registry& r);
void register_libcuckoo_map(Registry& r);
void register_locked_sets(Registry& r);
void register_null_structure(Registry& r);
void register_tbb_hash_map(Registry& r);
void register_urcu_hash_table(Registry& r);

}  // namespace chtbench
