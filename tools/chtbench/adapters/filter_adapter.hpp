// One adapter for every ccf filter: anything with insert(uint64) -> ccf::Status,
// contains(uint64), size(), capacity() and memory_bytes(); erase, contains_many, insert_many,
// load_factor and event counts are used when the filter has them. Registering a filter:
//   r.add({"name", "description", filter_traits<F>(/*thread_safe=*/true),
//          [](const StructureConfig& c) { return std::make_unique<FilterAdapter<F>>(...); }});
#pragma once

#include <ccf/filter_options.hpp>
#include <ccf/status.hpp>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "adapters/elision_events.hpp"
#include "registry.hpp"
#include "structure.hpp"

namespace chtbench {

template <class F>
concept ErasableFilter = requires(F& f, std::uint64_t k) {
  { f.erase(k) } -> std::same_as<ccf::Status>;
};
template <class F>
concept BatchedFilter = requires(const F& f, std::span<const std::uint64_t> k, std::span<bool> o) {
  { f.contains_many(k, o) } -> std::convertible_to<std::size_t>;
};
template <class F>
concept BatchedInsertFilter = requires(F& f, std::span<const std::uint64_t> k) {
  { f.insert_many(k) } -> std::convertible_to<std::size_t>;
};
template <class F>
concept LoadFactorFilter = requires(const F& f) {
  { f.load_factor() } -> std::convertible_to<double>;
};
// Path executions restarted: the lock-free filter's own, or the striped policy's.
template <class F>
concept CountsRestarts = requires(const F& f) {
  { f.restarts() } -> std::convertible_to<std::uint64_t>;
};
template <class F>
concept PolicyCountsRestarts = requires(const F& f) {
  { f.policy().restarts() } -> std::convertible_to<std::uint64_t>;
};
template <class F>
concept CountsElision = requires(const F& f) {
  { f.policy().elision_stats() } -> std::same_as<ccf::sync::ElisionCounters>;
};
template <class F>
concept CountsKcas = requires(const F& f) {
  { f.kcas_operations() } -> std::convertible_to<std::uint64_t>;
  { f.migrations() } -> std::convertible_to<std::uint64_t>;
};

template <class F>
class FilterAdapter final : public StructureBase<FilterAdapter<F>> {
 public:
  template <class... Args>
  explicit FilterAdapter(Args&&... args) : filter_(std::forward<Args>(args)...) {}

  bool insert(std::uint64_t key) override { return filter_.insert(key) == ccf::Status::kOk; }
  bool contains(std::uint64_t key) const override { return filter_.contains(key); }
  bool erase(std::uint64_t key) override {
    if constexpr (ErasableFilter<F>) {
      return filter_.erase(key) == ccf::Status::kOk;
    } else {
      return false;  // not registered with erase support: the harness never calls it
    }
  }
  std::size_t contains_many(std::span<const std::uint64_t> keys,
                            std::span<bool> out) const override {
    if constexpr (BatchedFilter<F>) {
      return filter_.contains_many(keys, out);
    } else {
      return this->contains_each(keys, out);
    }
  }
  std::size_t insert_many(std::span<const std::uint64_t> keys) override {
    if constexpr (BatchedInsertFilter<F>) {
      return filter_.insert_many(keys);
    } else {
      return Structure::insert_many(keys);
    }
  }
  std::size_t size() const override { return filter_.size(); }
  std::size_t capacity() const override { return filter_.capacity(); }
  std::size_t memory_bytes() const override { return filter_.memory_bytes(); }
  double load_factor() const override {
    if constexpr (LoadFactorFilter<F>) {
      return filter_.load_factor();
    } else {
      return Structure::load_factor();
    }
  }
  std::vector<EventCount> event_counts() const override {
    std::vector<EventCount> counts;
    if constexpr (CountsKcas<F>) {
      counts.push_back({"kcas", filter_.kcas_operations()});
      counts.push_back({"migrations", filter_.migrations()});
    }
    if constexpr (CountsRestarts<F>) counts.push_back({"restarts", filter_.restarts()});
    if constexpr (PolicyCountsRestarts<F>) {
      counts.push_back({"restarts", filter_.policy().restarts()});
    }
    if constexpr (CountsElision<F>) add_elision_events(filter_.policy().elision_stats(), counts);
    return counts;
  }

 private:
  F filter_;
};

template <class F>
constexpr StructureTraits filter_traits(bool thread_safe) {
  return {.filter = true,
          .thread_safe = thread_safe,
          .erase = ErasableFilter<F>,
          .batched = BatchedFilter<F>};
}

// Makes FilterAdapter<Filter<F>> for the run's F = --fp-bits among `Widths`: each width its own
// compiled filter, so lookups are inlined into the adapter's loops (no run-time shape dispatch).
// std::invalid_argument names the widths `name` supports.
template <template <unsigned> class Filter, unsigned... Widths>
std::unique_ptr<Structure> make_with_width(const StructureConfig& c, const std::string& name) {
  std::unique_ptr<Structure> made;
  ((c.fp_bits == Widths ? void(made = std::make_unique<FilterAdapter<Filter<Widths>>>(
                                   c.capacity, ccf::FilterOptions{.seed = c.seed}))
                        : void()),
   ...);
  if (!made) {
    std::string widths;
    ((widths += (widths.empty() ? "" : ", ") + std::to_string(Widths)), ...);
    throw std::invalid_argument(name + " supports --fp-bits " + widths + ", not " +
                                std::to_string(c.fp_bits));
  }
  return made;
}

// Registers a thread-safe filter family under `name`, one compiled filter per width.
template <template <unsigned> class Filter, unsigned... Widths>
void add_concurrent_filter(Registry& r, std::string name, std::string description) {
  const std::string captured = name;
  r.add({std::move(name), std::move(description), filter_traits<Filter<12>>(/*thread_safe=*/true),
         [captured](const StructureConfig& c) {
           return make_with_width<Filter, Widths...>(c, captured);
         }});
}

}  // namespace chtbench
