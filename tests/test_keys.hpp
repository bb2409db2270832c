// Deterministic key streams for the tests: distinct 64-bit keys, and keys guaranteed disjoint
// from them (for false-positive measurements).
#pragma once

#include <cstdint>
#include <vector>

#include "ccf/hash.hpp"

namespace ccf::testing {

// mix64 is a bijection, so distinct inputs give distinct keys; even inputs for members,
// odd inputs for non-members keeps the two sets disjoint and both well spread.
inline std::vector<std::uint64_t> member_keys(std::size_t count, std::uint64_t salt = 1) {
  std::vector<std::uint64_t> keys(count);
  for (std::size_t i = 0; i < count; ++i) keys[i] = mix64(2 * i, salt);
  return keys;
}
inline std::vector<std::uint64_t> non_member_keys(std::size_t count, std::uint64_t salt = 1) {
  std::vector<std::uint64_t> keys(count);
  for (std::size_t i = 0; i < count; ++i) keys[i] = mix64(2 * i + 1, salt);
  return keys;
}

}  // namespace ccf::testing
