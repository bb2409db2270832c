// Addressing for a filter that grows by levels of m, 2m, 4m, ... buckets, built so that every
// bucket of level k has exactly one "parent" in each smaller level: bucket i of level k lies
// under bucket i >> (k - j) of level j, for the primary AND the alternate bucket of every
// fingerprint:
//
//   index_k(h)         = index_0(h) << k  |  top k bits of x(h)        x(h) = bits 16..31 of h
//   alternate_k(i, fp) = alternate_0(i >> k, p) << k  |  (i ^ top k bits of g(p)) low k bits
//                        where p = proj(fp)
//
// where index_0 and alternate_0 are the single-table rules of addressing.hpp (any m, so level
// 0 is exactly the sequential filter's table and shares its file format). Both rules commute
// with the parent map: index_k(h) >> 1 = index_{k-1}(h) and
// alternate_k(i, fp) >> 1 = alternate_{k-1}(i >> 1, fp). alternate_k is an involution (the
// high part is alternate_0's, the low part an XOR with a constant of fp).
//
// Stored width and addressing width. A level may store fingerprints wider than the ones its
// buckets are computed from: NestedAddressing<W, A> stores fp = Addressing<W>::fingerprint(h)
// (bits 0..W-1 of h, 0 remapped to 1) and addresses with its projection to A bits,
// proj(fp) = Addressing<A>::fingerprint(fp) (the low A bits, 0 remapped to 1). The projection
// of the stored fingerprint is the A-bit fingerprint of the same hash, for every h: if bits
// 0..W-1 of h are not all zero, fp holds them and its low A bits are h's; if they are, fp = 1,
// and so is the A-bit fingerprint (its bits 0..A-1 are zero too). So a level of wider
// fingerprints puts every key in the buckets a level of A-bit fingerprints would: only the
// comparison a lookup makes is W bits wide. The lock-free filter stores F bits in level 0 and
// F' >= F + 3 in later ones, all addressed with F (lock_free_cuckoo_filter.hpp).
//
// The property the lock-free filter's erase relies on (docs/lockfree.md): two keys with the
// same stored fingerprint and the same bucket pair in level k ("colliding in level k") have the
// same fingerprint and the same pair in every level j < k. Their A-bit fingerprints are equal
// (the projections of equal stored ones), so both pairs are computed from the same p and map
// onto the same parent pair; where level j stores wider fingerprints too, those are the
// same W bits. Fingerprints use bits 0..W-1 of h (W <= 16) and x(h) bits 16..31, so they are
// independent.
#pragma once

#include <cstdint>

#include "ccf/detail/addressing.hpp"

namespace ccf::detail {

// FpBits: the stored fingerprint width; AddrBits (<= FpBits): the width the buckets are computed
// from (the same unless a level stores wider fingerprints than the family addresses with).
template <unsigned FpBits, unsigned AddrBits = FpBits>
class NestedAddressing {
  static_assert(AddrBits <= FpBits && FpBits <= 16,
                "addressing uses at most the stored bits, and those lie below x(h)'s bits 16..31");

 public:
  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kAddrBits = AddrBits;
  // Levels 0 .. kMaxLevel: level k appends k bits below level 0's bucket index.
  static constexpr unsigned kMaxLevel = 16;

  NestedAddressing(std::uint64_t base_buckets, unsigned level) noexcept
      : base_(base_buckets), level_(level), low_mask_((std::uint64_t{1} << level) - 1) {}

  std::uint64_t buckets() const noexcept { return base_.buckets() << level_; }
  unsigned level() const noexcept { return level_; }

  // Level 0 is exactly the single-table rule: taken first, without the shifts and the spread
  // multiply that would only add zero bits (a lookup of an ungrown filter is all level 0).
  std::uint64_t index(std::uint64_t hash) const noexcept {
    if (level_ == 0) return base_.index(hash);
    return (base_.index(hash) << level_) | (extension(hash) >> (kMaxLevel - level_));
  }

  static std::uint32_t fingerprint(std::uint64_t hash) noexcept {
    return Addressing<FpBits>::fingerprint(hash);
  }

  // The A-bit fingerprint the buckets are computed from (the stored one when A = W).
  static std::uint32_t project(std::uint32_t fp) noexcept {
    if constexpr (AddrBits == FpBits) {
      return fp;
    } else {
      return Addressing<AddrBits>::fingerprint(fp);
    }
  }

  std::uint64_t alternate(std::uint64_t bucket, std::uint32_t fp) const noexcept {
    const std::uint32_t p = project(fp);
    if (level_ == 0) return base_.alternate(bucket, p);
    const std::uint64_t low = (bucket ^ (spread(p) >> (kMaxLevel - level_))) & low_mask_;
    return (base_.alternate(bucket >> level_, p) << level_) | low;
  }

 private:
  static std::uint64_t extension(std::uint64_t hash) noexcept { return (hash >> 16) & 0xffff; }
  // 16 bits of fp, independent of the bits alternate_0 draws from it (another multiplier).
  static std::uint64_t spread(std::uint32_t fp) noexcept {
    return (fp * 0xc2b2ae3d27d4eb4fULL) >> 48;
  }

  Addressing<AddrBits> base_;
  unsigned level_;
  std::uint64_t low_mask_;
};

}  // namespace ccf::detail
