// Addressing for a filter that grows by levels of m, 2m, 4m, ... buckets, built so that every
// bucket of level k has exactly one "parent" in each smaller level: bucket i of level k lies
// under bucket i >> (k - j) of level j, for the primary AND the alternate bucket of every
// fingerprint:
//
//   index_k(h)         = index_0(h) << k  |  top k bits of x(h)        x(h) = bits 16..31 of h
//   alternate_k(i, fp) = alternate_0(i >> k, fp) << k  |  (i ^ top k bits of g(fp)) low k bits
//
// where index_0 and alternate_0 are the single-table rules of addressing.hpp (any m, so level
// 0 is exactly the sequential filter's table and shares its file format). Both rules commute
// with the parent map: index_k(h) >> 1 = index_{k-1}(h) and
// alternate_k(i, fp) >> 1 = alternate_{k-1}(i >> 1, fp). alternate_k is an involution (the
// high part is alternate_0's, the low part an XOR with a constant of fp).
//
// The property the lock-free filter's erase relies on (docs/lockfree.md): two keys with the
// same fingerprint and the same bucket pair in level k ("colliding in level k") have the same
// fingerprint and the same pair in every level j < k, because both pairs map onto the parent
// pair. Fingerprints use bits 0..F-1 of h and x(h) bits 16..31, so they are independent.
#pragma once

#include <cstdint>

#include "ccf/detail/addressing.hpp"

namespace ccf::detail {

template <unsigned FpBits>
class NestedAddressing {
 public:
  // Levels 0 .. kMaxLevel: level k appends k bits below level 0's bucket index.
  static constexpr unsigned kMaxLevel = 16;

  NestedAddressing(std::uint64_t base_buckets, unsigned level) noexcept
      : base_(base_buckets), level_(level), low_mask_((std::uint64_t{1} << level) - 1) {}

  std::uint64_t buckets() const noexcept { return base_.buckets() << level_; }
  unsigned level() const noexcept { return level_; }

  std::uint64_t index(std::uint64_t hash) const noexcept {
    return (base_.index(hash) << level_) | (extension(hash) >> (kMaxLevel - level_));
  }

  static std::uint32_t fingerprint(std::uint64_t hash) noexcept {
    return Addressing<FpBits>::fingerprint(hash);
  }

  std::uint64_t alternate(std::uint64_t bucket, std::uint32_t fp) const noexcept {
    const std::uint64_t low = (bucket ^ (spread(fp) >> (kMaxLevel - level_))) & low_mask_;
    return (base_.alternate(bucket >> level_, fp) << level_) | low;
  }

 private:
  static std::uint64_t extension(std::uint64_t hash) noexcept { return (hash >> 16) & 0xffff; }
  // 16 bits of fp, independent of the bits alternate_0 draws from it (another multiplier).
  static std::uint64_t spread(std::uint32_t fp) noexcept {
    return (fp * 0xc2b2ae3d27d4eb4fULL) >> 48;
  }

  Addressing<FpBits> base_;
  unsigned level_;
  std::uint64_t low_mask_;
};

}  // namespace ccf::detail
