// `std-set-rwlock` and `absl-set-rwlock`: the plain choice a user would make without a
// concurrent structure -- a standard hash set behind a std::shared_mutex (lookups shared,
// updates exclusive). One template serves both sets; each uses its library's default hash.
#include <absl/container/flat_hash_set.h>

#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

#include "adapters/counting_allocator.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

template <template <class> class SetOf>
class LockedSet final : public StructureBase<LockedSet<SetOf>> {
 public:
  explicit LockedSet(const StructureConfig& config)
      : capacity_(config.capacity), set_(CountingAllocator<std::uint64_t>(&meter_)) {
    set_.reserve(config.capacity);
  }

  bool insert(std::uint64_t key) override {
    std::unique_lock lock(mutex_);
    return set_.insert(key).second;
  }
  bool contains(std::uint64_t key) const override {
    std::shared_lock lock(mutex_);
    return set_.contains(key);
  }
  bool erase(std::uint64_t key) override {
    std::unique_lock lock(mutex_);
    return set_.erase(key) != 0;
  }
  std::size_t size() const override { return set_.size(); }
  std::size_t capacity() const override { return capacity_; }
  std::size_t memory_bytes() const override { return sizeof(*this) + meter_.total(); }

 private:
  std::size_t capacity_;
  MemoryMeter meter_;  // declared before set_: the set's allocator points at it
  mutable std::shared_mutex mutex_;
  SetOf<CountingAllocator<std::uint64_t>> set_;
};

template <class Alloc>
using StdSet = std::unordered_set<std::uint64_t, std::hash<std::uint64_t>,
                                  std::equal_to<std::uint64_t>, Alloc>;
template <class Alloc>
using AbslSet = absl::flat_hash_set<std::uint64_t, absl::Hash<std::uint64_t>,
                                    std::equal_to<std::uint64_t>, Alloc>;

template <template <class> class SetOf>
StructureFactory factory() {
  return [](const StructureConfig& c) { return std::make_unique<LockedSet<SetOf>>(c); };
}

}  // namespace

void register_locked_sets(Registry& r) {
  const StructureTraits traits{.filter = false, .thread_safe = true, .peer = true};
  r.add({"std-set-rwlock", "std::unordered_set behind a std::shared_mutex", traits,
         factory<StdSet>()});
  r.add({"absl-set-rwlock", "absl::flat_hash_set behind a std::shared_mutex", traits,
         factory<AbslSet>()});
}

}  // namespace chtbench
