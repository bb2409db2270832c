// TableSet: a ccf hash table (include/ccf/tables/) as a set -- a key maps to itself -- and
// add_table, which registers one. Every table shares this vocabulary (find / insert / erase /
// size / capacity / memory_bytes / resizes).
//
// The tables' adapters live in more than one translation unit (ccf_tables.cpp,
// ccf_cuckoo_map.cpp) on purpose: GCC stops inlining in a unit once it has grown by a fixed share
// (--param inline-unit-growth), so with every table in one unit, whichever table's lookup the
// inliner reaches last is called out of line -- a cost a user's program, which holds one table,
// does not pay (docs/chtbench.md, "Source layout").
#pragma once

#include <ccf/status.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "adapters/elision_events.hpp"
#include "registry.hpp"

namespace chtbench {

template <class Table>
class TableSet final : public StructureBase<TableSet<Table>> {
 public:
  explicit TableSet(const StructureConfig& config) : table_(make(config)) {}

  bool insert(std::uint64_t key) override { return table_.insert(key, key) == ccf::Status::kOk; }
  bool contains(std::uint64_t key) const override { return table_.contains(key); }
  bool erase(std::uint64_t key) override { return table_.erase(key) == ccf::Status::kOk; }
  std::size_t size() const override { return table_.size(); }
  std::size_t capacity() const override { return table_.capacity(); }
  std::size_t memory_bytes() const override { return table_.memory_bytes(); }
  std::vector<EventCount> event_counts() const override {
    std::vector<EventCount> counts{{"resizes", table_.resizes()},
                                   {"resize_ns", table_.resize_nanoseconds()}};
    if constexpr (requires { table_.writers().elision_stats(); }) {
      add_elision_events(table_.writers().elision_stats(), counts);
    }
    return counts;
  }

 private:
  // The table for `config`; std::invalid_argument for a growth factor it cannot take.
  static Table make(const StructureConfig& config) {
    if constexpr (requires { typename Table::Growth; }) {
      if (config.growth != 0) return Table(config.capacity, typename Table::Growth{config.growth});
    } else if (config.growth != 0 && config.growth != 2) {
      throw std::invalid_argument("this table only doubles: --growth 2 or none");
    }
    return Table(config.capacity);
  }

  Table table_;
};

template <class Table>
void add_table(Registry& r, std::string name, std::string description) {
  r.add({std::move(name),
         std::move(description),
         {.filter = false, .thread_safe = true},
         [](const StructureConfig& c) { return std::make_unique<TableSet<Table>>(c); }});
}

}  // namespace chtbench
