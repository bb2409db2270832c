// The key-level API that every cuckoo filter offers, written once (CRTP): 64-bit integer keys
// and byte strings, hashed with the filter's seed (hash.hpp) and passed to the filter's
// insert_hash / contains_hash / erase_hash. A filter derives from KeyApi<Filter>, declares it a
// friend, and provides those three and seed().
#pragma once

#include <cstdint>
#include <string_view>

#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf::detail {

template <class Filter>
class KeyApi {
 public:
  Status insert(std::uint64_t key) noexcept(noexcept(std::declval<Filter&>().insert_hash(0))) {
    return self().insert_hash(hash_key(key, self().seed()));
  }
  Status insert(std::string_view key) noexcept(noexcept(std::declval<Filter&>().insert_hash(0))) {
    return self().insert_hash(hash_key(key, self().seed()));
  }
  bool contains(std::uint64_t key) const
      noexcept(noexcept(std::declval<const Filter&>().contains_hash(0))) {
    return self().contains_hash(hash_key(key, self().seed()));
  }
  bool contains(std::string_view key) const
      noexcept(noexcept(std::declval<const Filter&>().contains_hash(0))) {
    return self().contains_hash(hash_key(key, self().seed()));
  }
  Status erase(std::uint64_t key) noexcept(noexcept(std::declval<Filter&>().erase_hash(0))) {
    return self().erase_hash(hash_key(key, self().seed()));
  }
  Status erase(std::string_view key) noexcept(noexcept(std::declval<Filter&>().erase_hash(0))) {
    return self().erase_hash(hash_key(key, self().seed()));
  }

 private:
  Filter& self() noexcept { return static_cast<Filter&>(*this); }
  const Filter& self() const noexcept { return static_cast<const Filter&>(*this); }
};

}  // namespace ccf::detail
