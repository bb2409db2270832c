// The ccf hash tables (include/ccf/tables/), used as sets: a key maps to itself.
//   clht-lb     ClhtLb: one cache line per bucket, lock-free lookups, per-bucket locks, resize
//   clht-lf     ClhtLf: one cache line per bucket, CAS updates on a snapshot word, resize
//   cuckoo-map  CuckooMap<u64, u64>: (2,4) cuckoo, striped locks, store-free lookups, resize
#include <ccf/tables/clht_lb.hpp>
#include <ccf/tables/clht_lf.hpp>
#include <ccf/tables/cuckoo_map.hpp>
#include <memory>

#include "registry.hpp"

namespace chtbench {
namespace {

// A table's set view. Both tables share this vocabulary (find / insert / erase / size /
// capacity / memory_bytes / resizes).
template <class Table>
class TableSet final : public Structure {
 public:
  explicit TableSet(const StructureConfig& config) : table_(config.capacity) {}

  bool insert(std::uint64_t key) override { return table_.insert(key, key) == ccf::Status::kOk; }
  bool contains(std::uint64_t key) const override { return table_.contains(key); }
  bool erase(std::uint64_t key) override { return table_.erase(key) == ccf::Status::kOk; }
  std::size_t size() const override { return table_.size(); }
  std::size_t capacity() const override { return table_.capacity(); }
  std::size_t memory_bytes() const override { return table_.memory_bytes(); }
  std::vector<EventCount> event_counts() const override {
    return {{"resizes", table_.resizes()}, {"resize_ns", table_.resize_nanoseconds()}};
  }

 private:
  Table table_;
};

using CuckooMap64 = ccf::CuckooMap<std::uint64_t, std::uint64_t>;

}  // namespace

void register_ccf_tables(Registry& r) {
  r.add({"clht-lb",
         "ccf ClhtLb: one cache line per bucket, store-free lookups, bucket locks, resize",
         {.filter = false, .thread_safe = true},
         [](const StructureConfig& c) { return std::make_unique<TableSet<ccf::ClhtLb>>(c); }});
  r.add({"clht-lf",
         "ccf ClhtLf: one cache line per bucket, lock-free CAS updates, store-free lookups, resize",
         {.filter = false, .thread_safe = true},
         [](const StructureConfig& c) { return std::make_unique<TableSet<ccf::ClhtLf>>(c); }});
  r.add({"cuckoo-map",
         "ccf CuckooMap: (2,4) cuckoo, striped seqlocks, store-free lookups, BFS paths, resize",
         {.filter = false, .thread_safe = true},
         [](const StructureConfig& c) { return std::make_unique<TableSet<CuckooMap64>>(c); }});
}

}  // namespace chtbench
