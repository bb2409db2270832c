#include "registry.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace chtbench {

void Registry::add(StructureInfo info) {
  if (find(info.name) != nullptr) throw std::logic_error("duplicate structure name " + info.name);
  const auto pos = std::ranges::upper_bound(entries_, info.name, {}, &StructureInfo::name);
  entries_.insert(pos, std::move(info));
}

const StructureInfo* Registry::find(std::string_view name) const {
  const auto it = std::ranges::find(entries_, name, &StructureInfo::name);
  return it == entries_.end() ? nullptr : &*it;
}

const Registry& registry() {
  static const Registry instance = [] {
    Registry r;
    register_ccf_coarse_filters(r);
    register_ccf_cuckoo_map(r);
    register_ccf_concurrent_filters(r);
    register_ccf_filters(r);
    register_ccf_lock_free_filter(r);
    register_ccf_tables(r);
    register_libcds_maps(r);
    register_libcuckoo_map(r);
    register_locked_sets(r);
    register_null_structure(r);
    register_tbb_hash_map(r);
    register_urcu_hash_table(r);
    return r;
  }();
  return instance;
}

}  // namespace chtbench
