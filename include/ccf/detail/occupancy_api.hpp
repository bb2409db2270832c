// load_factor() and bits_per_item(), written once for every cuckoo filter (CRTP). A filter
// derives from OccupancyApi<Filter>, declares it a friend, and provides size(), capacity()
// (slots) and table_bits() (the bits its buckets occupy).
#pragma once

#include <cstddef>

namespace ccf::detail {

template <class Filter>
class OccupancyApi {
 public:
  // Items in the table's slots / slots: at most 1. An item parked in the victim entry (filters
  // that have one) is counted by size() and bits_per_item() but holds no slot.
  double load_factor() const noexcept {
    std::size_t items = self().size();
    if constexpr (requires { self().victim_used(); }) {
      if (items > 0 && self().victim_used()) --items;
    }
    return static_cast<double>(items) / static_cast<double>(self().capacity());
  }
  // Bits of table storage per stored item (0 when empty).
  double bits_per_item() const noexcept {
    const std::size_t items = self().size();
    return items == 0 ? 0.0 : static_cast<double>(self().table_bits()) / static_cast<double>(items);
  }

 private:
  const Filter& self() const noexcept { return static_cast<const Filter&>(*this); }
};

}  // namespace ccf::detail
