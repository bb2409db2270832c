// AnyCuckooFilter: a cuckoo filter whose shape (fingerprint width, bucket size, semi-sorting)
// is chosen at run time -- for tools, configuration files and loading files of unknown shape.
//
// It holds one of the supported CuckooFilter instantiations in a std::variant and forwards
// every call; the cost is one switch per call. Programs that know the shape at compile time
// should use CuckooFilter<...> directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "ccf/cuckoo_filter.hpp"

namespace ccf {

struct FilterParams {
  std::size_t capacity = 0;
  unsigned fp_bits = 12;
  unsigned slots_per_bucket = 4;
  bool semi_sorted = false;
  FilterOptions options{};
};

namespace detail {
template <unsigned F>
using PackedFilters = std::variant<CuckooFilter<PackedTable<F, 2>>, CuckooFilter<PackedTable<F, 4>>,
                                   CuckooFilter<PackedTable<F, 8>>>;
template <class... Variants>
struct concat_variants;
template <class... A, class... B, class... Rest>
struct concat_variants<std::variant<A...>, std::variant<B...>, Rest...>
    : concat_variants<std::variant<A..., B...>, Rest...> {};
template <class... A>
struct concat_variants<std::variant<A...>> {
  using type = std::variant<A...>;
};
using AnyFilterVariant = typename concat_variants<
    PackedFilters<4>, PackedFilters<8>, PackedFilters<12>, PackedFilters<16>, PackedFilters<32>,
    std::variant<CuckooFilter<SemiSortedTable<8>>, CuckooFilter<SemiSortedTable<12>>,
                 CuckooFilter<SemiSortedTable<16>>>>::type;
}  // namespace detail

class AnyCuckooFilter {
  template <class F>
  decltype(auto) visit(F&& f) {
    return std::visit(std::forward<F>(f), filter_);
  }
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), filter_);
  }

 public:
  static constexpr std::string_view kSupported =
      "fingerprint bits 4, 8, 12, 16 or 32 with 2, 4 or 8 slots per bucket; semi-sorted: "
      "fingerprint bits 8, 12 or 16 with 4 slots per bucket";

  // Throws std::invalid_argument for an unsupported shape or bad capacity/options.
  explicit AnyCuckooFilter(const FilterParams& params)
      : filter_(make(params, [&](auto tag) {
          using Filter = typename decltype(tag)::type;
          return Filter(params.capacity, params.options);
        })) {}

  // Reads a filter of any supported shape. Throws FormatError.
  static AnyCuckooFilter load(std::istream& in) {
    const detail::FilterHeader h = detail::HeaderCodec::read(in);
    FilterParams shape;
    shape.fp_bits = h.fp_bits;
    shape.slots_per_bucket = h.slots;
    shape.semi_sorted = h.layout == detail::TableLayout::kSemiSorted;
    try {
      return AnyCuckooFilter(make(shape, [&](auto tag) {
        using Filter = typename decltype(tag)::type;
        return std::move(*Filter::read_after_header(h, in));
      }));
    } catch (const std::invalid_argument& unsupported) {
      throw FormatError(std::string("unsupported filter shape in file: ") + unsupported.what());
    }
  }

  Status insert(std::uint64_t key) noexcept {
    return visit([&](auto& f) { return f.insert(key); });
  }
  Status insert(std::string_view key) noexcept {
    return visit([&](auto& f) { return f.insert(key); });
  }
  bool contains(std::uint64_t key) const noexcept {
    return visit([&](const auto& f) { return f.contains(key); });
  }
  bool contains(std::string_view key) const noexcept {
    return visit([&](const auto& f) { return f.contains(key); });
  }
  Status erase(std::uint64_t key) noexcept {
    return visit([&](auto& f) { return f.erase(key); });
  }
  Status erase(std::string_view key) noexcept {
    return visit([&](auto& f) { return f.erase(key); });
  }
  template <class Key>
  std::size_t contains_many(std::span<const Key> keys, std::span<bool> out) const {
    return visit([&](const auto& f) { return f.contains_many(keys, out); });
  }
  template <class Key>
  std::size_t insert_many(std::span<const Key> keys) noexcept {
    return visit([&](auto& f) { return f.insert_many(keys); });
  }

  std::size_t size() const noexcept {
    return visit([](const auto& f) { return f.size(); });
  }
  std::size_t capacity() const noexcept {
    return visit([](const auto& f) { return f.capacity(); });
  }
  double load_factor() const noexcept {
    return visit([](const auto& f) { return f.load_factor(); });
  }
  double bits_per_item() const noexcept {
    return visit([](const auto& f) { return f.bits_per_item(); });
  }
  std::size_t memory_bytes() const noexcept {
    return visit([](const auto& f) { return f.memory_bytes(); });
  }
  unsigned fp_bits() const noexcept {
    return visit([](const auto& f) { return f.kFpBits; });
  }
  unsigned slots_per_bucket() const noexcept {
    return visit([](const auto& f) { return f.kSlots; });
  }
  bool victim_used() const noexcept {
    return visit([](const auto& f) { return f.victim_used(); });
  }
  std::string shape() const {
    return visit([](const auto& f) { return f.shape(); });
  }
  void clear() noexcept {
    visit([](auto& f) { f.clear(); });
  }
  void save(std::ostream& out) const {
    visit([&](const auto& f) { f.save(out); });
  }
  // BasicCuckooFilter::merge; also std::invalid_argument when the shapes differ.
  Status merge(const AnyCuckooFilter& other) {
    return visit([&](auto& f) {
      using Filter = std::decay_t<decltype(f)>;
      const auto* same = std::get_if<Filter>(&other.filter_);
      if (same == nullptr) {
        throw std::invalid_argument("merge: the filters differ in shape (" + f.shape() + " and " +
                                    other.shape() + ")");
      }
      return f.merge(*same);
    });
  }

  // The filter itself, for code that wants to specialise on the shape.
  const detail::AnyFilterVariant& variant() const noexcept { return filter_; }

 private:
  template <class T>
  struct Tag {
    using type = T;
  };

  explicit AnyCuckooFilter(detail::AnyFilterVariant&& filter) : filter_(std::move(filter)) {}

  // Builds the alternative whose shape matches `params` with build(Tag<Filter>{}).
  template <class Build>
  static detail::AnyFilterVariant make(const FilterParams& params, Build&& build) {
    return make_from<0>(params, build);
  }
  template <std::size_t I, class Build>
  static detail::AnyFilterVariant make_from(const FilterParams& params, Build& build) {
    if constexpr (I == std::variant_size_v<detail::AnyFilterVariant>) {
      throw std::invalid_argument(
          "unsupported cuckoo filter shape: " + std::to_string(params.fp_bits) +
          "-bit fingerprints, " + std::to_string(params.slots_per_bucket) + " slots/bucket" +
          (params.semi_sorted ? ", semi-sorted" : "") + " (supported: " + std::string(kSupported) +
          ")");
    } else {
      using Filter = std::variant_alternative_t<I, detail::AnyFilterVariant>;
      constexpr bool semi = Filter::table_type::kLayout == std::string_view("semi-sorted");
      if (Filter::kFpBits == params.fp_bits && Filter::kSlots == params.slots_per_bucket &&
          semi == params.semi_sorted) {
        return detail::AnyFilterVariant(std::in_place_index<I>, build(Tag<Filter>{}));
      }
      return make_from<I + 1>(params, build);
    }
  }

  detail::AnyFilterVariant filter_;
};

}  // namespace ccf
