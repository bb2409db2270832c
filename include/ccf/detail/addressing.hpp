// Partial-key cuckoo hashing for a table of ANY number of buckets.
//
// From one 64-bit key hash h:
//   i1 = reduce_range(h, m)                     (the high bits of h, without a division)
//   fp = low F bits of h, with 0 remapped to 1  (0 marks an empty slot)
//   i2 = alternate(i1, fp) = (H(fp) - i1) mod m, where H(fp) = reduce_range(fp * phi, m)
//
// alternate() is an involution for every m: (H - (H - i)) mod m = i. So the alternate of a
// stored fingerprint is computable from the bucket it sits in and the fingerprint alone -- no
// key is needed to relocate it -- without the reference design's XOR rule, which needs m to be
// a power of two and so leaves tables only 50-100% as full as asked. Every filter in ccf
// (sequential, lock-based, lock-free) shares this rule, so their tables are interchangeable
// on disk.
#pragma once

#include <cstdint>

#include "ccf/hash.hpp"

namespace ccf::detail {

template <unsigned FpBits>
class Addressing {
 public:
  static constexpr std::uint32_t kFpMask =
      FpBits == 32 ? ~std::uint32_t{0} : (std::uint32_t{1} << FpBits) - 1;

  explicit Addressing(std::uint64_t buckets) noexcept : buckets_(buckets) {}

  std::uint64_t buckets() const noexcept { return buckets_; }

  std::uint64_t index(std::uint64_t hash) const noexcept { return reduce_range(hash, buckets_); }

  static std::uint32_t fingerprint(std::uint64_t hash) noexcept {
    const auto fp = static_cast<std::uint32_t>(hash) & kFpMask;
    return fp + (fp == 0);
  }

  std::uint64_t alternate(std::uint64_t bucket, std::uint32_t fp) const noexcept {
    // Fibonacci hashing spreads even small fingerprints over the high bits reduce_range reads.
    const std::uint64_t target = reduce_range(fp * 0x9e3779b97f4a7c15ULL, buckets_);
    return target >= bucket ? target - bucket : target + buckets_ - bucket;
  }

 private:
  std::uint64_t buckets_;
};

// Where a key's fingerprint may be: its two candidate buckets and the fingerprint. Every
// cuckoo filter locates keys this way.
struct Location {
  std::uint64_t primary;
  std::uint64_t alternate;
  std::uint32_t fp;
};

// `hash` located by an addressing (Addressing, or one level's NestedAddressing).
template <class Addr>
[[gnu::always_inline]] inline Location locate(const Addr& addressing, std::uint64_t hash) noexcept {
  const std::uint64_t primary = addressing.index(hash);
  const std::uint32_t fp = addressing.fingerprint(hash);
  return {primary, addressing.alternate(primary, fp), fp};
}

}  // namespace ccf::detail
