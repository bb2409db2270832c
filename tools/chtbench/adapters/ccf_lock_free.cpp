// The lock-free ccf cuckoo filter, growth off. --fp-bits picks the fingerprint width: 8 or 12.
#include <ccf/lockfree/lock_free_cuckoo_filter.hpp>

#include "adapters/filter_adapter.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

// The lock-free filter with growth off, so that "fill until the first failure" ends.
template <unsigned F>
class FixedLockFree : public ccf::LockFreeCuckooFilter<F> {
 public:
  FixedLockFree(std::size_t capacity, ccf::FilterOptions options)
      : ccf::LockFreeCuckooFilter<F>(capacity, {.filter = options, .grow = false}) {}
};

}  // namespace

void register_ccf_lock_free_filter(Registry& r) {
  add_concurrent_filter<FixedLockFree, 8, 12>(
      r, "lf-cuckoo-filter",
      "lock-free: K-CAS migrations along BFS paths, removal-counter-checked lookups (growth off)");
}

}  // namespace chtbench
