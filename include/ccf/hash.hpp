// Key hashing shared by every filter and table in ccf.
//
// Keys are 64-bit integers or byte strings. Integers go through a strong bijective mixer
// (the MurmurHash3 64-bit finalizer, seeded); byte strings go through XXH3 from xxHash
// (Debian's libxxhash-dev, used header-only). Every structure derives all it needs -- bucket
// index, fingerprint, Bloom bit positions -- from the one 64-bit hash these return.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

// xxHash inlined (no library to link): XXH_INLINE_ALL is defined only around the include, so the
// macro itself does not stay defined in the user's translation unit (a user who defined it keeps
// it). xxhash.h's own macros do stay: after this header, a later #include <xxhash.h> adds nothing
// and the user's XXH3 calls reach the same inlined copy (tests/public_headers_test.cpp).
#ifdef XXH_INLINE_ALL
#include <xxhash.h>
#else
#define XXH_INLINE_ALL
#include <xxhash.h>
#undef XXH_INLINE_ALL
#endif

namespace ccf {

inline constexpr std::uint64_t kDefaultSeed = 0x9e3779b97f4a7c15ULL;

// MurmurHash3's fmix64: a bijection on 64-bit words with full avalanche. The seed is mixed in
// first so that filters with different seeds hash independently.
constexpr std::uint64_t mix64(std::uint64_t key, std::uint64_t seed = kDefaultSeed) noexcept {
  std::uint64_t k = key ^ seed;
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

inline std::uint64_t hash_key(std::uint64_t key, std::uint64_t seed = kDefaultSeed) noexcept {
  return mix64(key, seed);
}

inline std::uint64_t hash_key(std::string_view key, std::uint64_t seed = kDefaultSeed) noexcept {
  return XXH3_64bits_withSeed(key.data(), key.size(), seed);
}

// Maps a uniformly distributed 64-bit value onto [0, n) without a division (Lemire's
// multiply-shift "fastrange"); unbiased up to n / 2^64.
constexpr std::uint64_t reduce_range(std::uint64_t hash, std::uint64_t n) noexcept {
  __extension__ using wide = unsigned __int128;  // GCC/Clang extension, hence __extension__
  return static_cast<std::uint64_t>((static_cast<wide>(hash) * n) >> 64);
}

}  // namespace ccf
