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

// The key whose mix64 (default seed) is `hash`: mix64 inverted step by step (xor-shifts by 33
// undo themselves; the multiplications by odd constants have inverses mod 2^64). Tests use it to
// make keys that hash alike -- the adversarial input a structure must survive.
constexpr std::uint64_t inverse_mod_2_64(std::uint64_t odd) noexcept {
  std::uint64_t x = odd;  // Newton's iteration: each step doubles the correct low bits
  for (int i = 0; i < 6; ++i) x *= 2 - odd * x;
  return x;
}
constexpr std::uint64_t unmix64(std::uint64_t hash, std::uint64_t seed = kDefaultSeed) noexcept {
  std::uint64_t k = hash;
  k ^= k >> 33;
  k *= inverse_mod_2_64(0xc4ceb9fe1a85ec53ULL);
  k ^= k >> 33;
  k *= inverse_mod_2_64(0xff51afd7ed558ccdULL);
  k ^= k >> 33;
  return k ^ seed;
}
static_assert(mix64(unmix64(12345)) == 12345 && unmix64(mix64(777)) == 777);

}  // namespace ccf::testing
