#include "serve/cf_filter.hpp"

#include <functional>
#include <new>
#include <stdexcept>
#include <string>

#include "ccf/concurrent/striped_cuckoo_filter.hpp"

namespace ccf::serve {
namespace {

// One seed for every sub-filter of every key: items map alike in all of a key's sub-filters.
constexpr FilterOptions kSubOptions{.max_load = 1.0};

template <unsigned Slots>
class SubOf final : public CfFilter::Sub {
 public:
  // capacity = buckets * Slots at max_load 1: exactly `buckets` buckets.
  explicit SubOf(std::uint64_t buckets) : filter_(buckets * Slots, kSubOptions) {}
  bool insert(std::string_view item) override { return filter_.insert(item) == Status::kOk; }
  bool contains(std::string_view item) const override { return filter_.contains(item); }
  std::size_t count(std::string_view item) const override { return filter_.count(item); }
  bool erase(std::string_view item) override { return filter_.erase(item) == Status::kOk; }
  std::size_t memory_bytes() const override { return filter_.memory_bytes(); }

 private:
  StripedCuckooFilter<16, Slots> filter_;
};

std::unique_ptr<CfFilter::Sub> make_sub(const CfParams& params) {
  switch (params.bucket_size) {
    case 1:
      return std::make_unique<SubOf<1>>(params.buckets);
    case 2:
      return std::make_unique<SubOf<2>>(params.buckets);
    case 4:
      return std::make_unique<SubOf<4>>(params.buckets);
    default:
      throw std::invalid_argument("CfFilter: bucket size " + std::to_string(params.bucket_size) +
                                  " has no layout");
  }
}

}  // namespace

CfFilter::CfFilter(const CfParams& params)
    : params_(params), items_(params.items), deletes_(params.deletes) {
  subs_[0] = make_sub(params_);
  filters_.store(1, std::memory_order_release);
}

CfFilter::~CfFilter() = default;

std::mutex& CfFilter::nx_lock(std::string_view item) const {
  return nx_locks_[std::hash<std::string_view>{}(item) % nx_locks_.size()];
}

AddResult CfFilter::add(std::string_view item, bool only_if_absent) {
  if (!only_if_absent) return add_unchecked(item);
  const std::lock_guard lock(nx_lock(item));  // (4)
  if (contains(item)) return AddResult::kPresent;
  return add_unchecked(item);
}

AddResult CfFilter::add_unchecked(std::string_view item) {
  for (;;) {
    const unsigned seen = filters();
    if (subs_[seen - 1]->insert(item)) {  // (2) the newest
      items_.fetch_add(1);
      return AddResult::kAdded;
    }
    if (params_.expansion == 0) return AddResult::kFull;
    if (seen >= kMaxFilters) return AddResult::kMaxExpansions;
    if (!grow(seen)) return AddResult::kNoMemory;
  }
}

bool CfFilter::grow(unsigned seen) {
  const std::lock_guard lock(grow_mutex_);
  if (filters_.load(std::memory_order_relaxed) != seen) return true;  // another insert grew it
  try {
    subs_[seen] = make_sub(params_);
  } catch (const std::bad_alloc&) {
    return false;
  }
  filters_.store(seen + 1, std::memory_order_release);  // (1)
  return true;
}

bool CfFilter::contains(std::string_view item) const {
  for (;;) {
    const std::uint64_t before = removals_.load();  // (3)
    for (unsigned k = filters(); k-- > 0;) {
      if (subs_[k]->contains(item)) return true;
    }
    if (removals_.load() == before) return false;
  }
}

std::uint64_t CfFilter::count(std::string_view item) const {
  for (;;) {
    const std::uint64_t before = removals_.load();  // (3)
    std::uint64_t copies = 0;
    for (unsigned k = filters(); k-- > 0;) copies += subs_[k]->count(item);
    if (removals_.load() == before) return copies;
  }
}

bool CfFilter::erase(std::string_view item) {
  for (;;) {
    const std::uint64_t before = removals_.load();  // (3)
    bool raced = false;
    for (unsigned k = filters(); k-- > 0;) {
      if (!subs_[k]->contains(item)) continue;
      removals_.fetch_add(1);  // (3) before the removal
      if (subs_[k]->erase(item)) {
        items_.fetch_sub(1);
        deletes_.fetch_add(1);
        return true;
      }
      raced = true;  // another delete took that copy first
      break;
    }
    if (!raced && removals_.load() == before) return false;
  }
}

CfFilter::Info CfFilter::info() const {
  const unsigned n = filters();
  std::uint64_t bytes = sizeof(*this);
  for (unsigned k = 0; k < n; ++k) bytes += subs_[k]->memory_bytes();
  return {bytes,
          params_.buckets,
          n,
          items_.load(),
          deletes_.load(),
          params_.bucket_size,
          params_.expansion,
          params_.max_iterations};
}

}  // namespace ccf::serve
