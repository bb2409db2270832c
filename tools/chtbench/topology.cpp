#include "topology.hpp"

#include <fmt/format.h>
#include <hwloc.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>

namespace chtbench {

Pin parse_pin(std::string_view text) {
  if (text == "default") return Pin::kDefault;
  if (text == "compact") return Pin::kCompact;
  if (text == "balanced") return Pin::kBalanced;
  throw std::invalid_argument(
      fmt::format("bad pinning '{}': expected default, compact or balanced", text));
}

std::string_view to_string(Pin pin) {
  switch (pin) {
    case Pin::kDefault:
      return "default";
    case Pin::kCompact:
      return "compact";
    case Pin::kBalanced:
      return "balanced";
  }
  return "?";
}

const std::string& cpu_model() {
  static const std::string model = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
      if (line.starts_with("model name")) {
        const std::size_t colon = line.find(':');
        if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
      }
    }
    return std::string("unknown CPU");
  }();
  return model;
}

const Topology& Topology::get() {
  static const Topology instance;
  return instance;
}

void Topology::Deleter::operator()(hwloc_topology* t) const {
  hwloc_topology_destroy(t);
}

Topology::Topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw std::runtime_error("hwloc_topology_init failed");
  topo_.reset(raw);
  if (hwloc_topology_load(raw) != 0) throw std::runtime_error("hwloc could not load the topology");
  hwloc_topology_t topo = raw;

  // Compact: hwloc's logical PU order is depth-first (package, core, hyperthread).
  const int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (int i = 0; i < pus; ++i) {
    compact_.push_back(hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, i));
  }

  // Balanced: round r takes the r-th hyperthread of every core, packages interleaved.
  struct Core {
    unsigned package;
    unsigned rank;  // index of the core within its package
    std::vector<hwloc_obj_t> pus;
  };
  std::vector<Core> cores;
  std::vector<unsigned> per_package;
  const int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  for (int i = 0; i < ncores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, i);
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, core);
    const unsigned package = pkg != nullptr ? pkg->logical_index : 0;
    if (per_package.size() <= package) per_package.resize(package + 1, 0);
    Core c{package, per_package[package]++, {}};
    for (unsigned j = 0; j < core->arity; ++j) {
      if (core->children[j]->type == HWLOC_OBJ_PU) c.pus.push_back(core->children[j]);
    }
    if (c.pus.empty()) {
      hwloc_obj_t pu =
          hwloc_get_next_obj_inside_cpuset_by_type(topo, core->cpuset, HWLOC_OBJ_PU, nullptr);
      if (pu != nullptr) c.pus.push_back(pu);
    }
    cores.push_back(std::move(c));
  }
  cores_ = static_cast<unsigned>(cores.size());
  std::ranges::stable_sort(cores, [](const Core& a, const Core& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.package < b.package;
  });
  for (std::size_t round = 0; balanced_.size() < compact_.size(); ++round) {
    const std::size_t before = balanced_.size();
    for (const Core& c : cores) {
      if (round < c.pus.size()) balanced_.push_back(c.pus[round]);
    }
    if (balanced_.size() == before) break;  // PUs outside any core: fall back to compact
  }
  if (balanced_.size() != compact_.size()) balanced_ = compact_;
}

std::vector<unsigned> Topology::order(Pin pin) const {
  std::vector<unsigned> os;
  for (hwloc_obj_t pu : pin == Pin::kBalanced ? balanced_ : compact_) os.push_back(pu->os_index);
  return os;
}

bool Topology::pin_current_thread(Pin pin, unsigned index) const {
  if (pin == Pin::kDefault || compact_.empty()) return true;
  const auto& pus = pin == Pin::kBalanced ? balanced_ : compact_;
  return hwloc_set_cpubind(topo_.get(), pus[index % pus.size()]->cpuset, HWLOC_CPUBIND_THREAD) == 0;
}

}  // namespace chtbench
