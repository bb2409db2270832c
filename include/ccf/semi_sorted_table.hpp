// SemiSortedTable: 4-slot buckets that save one bit per fingerprint (Fan et al.'s
// "semi-sorting", thesis §5.4.1).
//
// The order of the fingerprints inside a bucket carries no information, so sort them by their
// low 4 bits ("nibbles"). A sorted 4-tuple of nibbles is a multiset of size 4 over 16 values:
// C(16+4-1, 4) = 3876 of them, which a 12-bit code can name instead of 16 plain bits. The high
// F-4 bits of each fingerprint are stored plainly, in the sorted order:
//
//   bucket (4F - 4 bits):  | code (12) | high_0 (F-4) | high_1 (F-4) | high_2 | high_3 |
//                           bit 0                                              bit 4F-5
//
// fingerprint k = nibble_k | high_k << 4, where nibble_0 <= nibble_1 <= nibble_2 <= nibble_3
// are decoded from the code. Buckets are packed at bit granularity (bucket i starts at bit
// i * (4F - 4)), so the table costs exactly F - 1 bits per slot.
//
// The code is the combinatorial-number-system rank of the multiset: map a <= b <= c <= d to the
// strictly increasing a < b+1 < c+2 < d+3 in [0, 19), rank = C(a,1) + C(b+1,2) + C(c+2,3) +
// C(d+3,4). Encoding is four lookups in tables of at most 20 entries; decoding is one lookup in
// a 3876-entry table of 16-bit words (7.6 KiB, comfortably inside L1).
//
// A lookup does not assemble the fingerprints. The high parts already lie in F-4-bit lanes, and a
// second table (kNibbleSpreadTable<F-4>: 7.6, 15.1 or 30.3 KiB for F = 8, 12, 16) gives the code's
// nibbles in lanes of the same width, so one XOR against each part of the wanted fingerprint and
// an OR leave a zero lane exactly where both parts match. A plain lookup waits on two cache
// misses, and the out-of-order window overlaps those of consecutive lookups only as far as it
// holds their instructions: the fewer that wait on each bucket's load, the more lookups are in
// flight (docs/benchmarks.md measures it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#if defined(__BMI2__)
#include <immintrin.h>
#endif

#include "ccf/detail/bit_lanes.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/prefetch.hpp"

namespace ccf {
namespace detail {

constexpr std::uint32_t binomial(std::uint32_t n, std::uint32_t k) {
  if (k > n) return 0;
  std::uint64_t result = 1;
  for (std::uint32_t i = 1; i <= k; ++i) result = result * (n - k + i) / i;
  return static_cast<std::uint32_t>(result);
}

template <std::uint32_t K>
constexpr std::array<std::uint16_t, 20> binomial_column() {
  std::array<std::uint16_t, 20> values{};
  for (std::uint32_t n = 0; n < values.size(); ++n) {
    values[n] = static_cast<std::uint16_t>(binomial(n, K));
  }
  return values;
}

struct NibbleCodec {
  static constexpr std::uint32_t kCodes = 3876;  // C(19, 4)
  static constexpr unsigned kCodeBits = 12;
  static constexpr auto kC1 = binomial_column<1>();
  static constexpr auto kC2 = binomial_column<2>();
  static constexpr auto kC3 = binomial_column<3>();
  static constexpr auto kC4 = binomial_column<4>();

  // Rank of the sorted nibbles a <= b <= c <= d.
  static constexpr std::uint16_t encode(unsigned a, unsigned b, unsigned c, unsigned d) noexcept {
    return static_cast<std::uint16_t>(kC1[a] + kC2[b + 1] + kC3[c + 2] + kC4[d + 3]);
  }
  // The four sorted nibbles of `code`, nibble k in bits [4k, 4k+4).
  static std::uint16_t decode(std::uint16_t code) noexcept;
};

// The smallest unsigned type with room for four lanes of LaneBits bits.
template <unsigned LaneBits>
using NibbleLanes =
    std::conditional_t<(4 * LaneBits <= 16), std::uint16_t,
                       std::conditional_t<(4 * LaneBits <= 32), std::uint32_t, std::uint64_t>>;

// For every code, its sorted nibbles a <= b <= c <= d in lanes of LaneBits bits: nibble k in bits
// [k * LaneBits, k * LaneBits + 4).
template <unsigned LaneBits>
constexpr std::array<NibbleLanes<LaneBits>, NibbleCodec::kCodes> make_nibble_table() {
  std::array<NibbleLanes<LaneBits>, NibbleCodec::kCodes> table{};
  for (unsigned a = 0; a < 16; ++a)
    for (unsigned b = a; b < 16; ++b)
      for (unsigned c = b; c < 16; ++c)
        for (unsigned d = c; d < 16; ++d)
          table[NibbleCodec::encode(a, b, c, d)] = static_cast<NibbleLanes<LaneBits>>(
              a | b << LaneBits | std::uint64_t{c} << 2 * LaneBits |
              std::uint64_t{d} << 3 * LaneBits);
  return table;
}
template <unsigned LaneBits>
inline constexpr std::array<NibbleLanes<LaneBits>, NibbleCodec::kCodes> kNibbleSpreadTable =
    make_nibble_table<LaneBits>();

inline std::uint16_t NibbleCodec::decode(std::uint16_t code) noexcept {
  return kNibbleSpreadTable<4>[code];
}

}  // namespace detail

template <unsigned FpBits>
class SemiSortedTable {
 public:
  static_assert(FpBits == 8 || FpBits == 12 || FpBits == 16,
                "semi-sorted buckets support 8, 12 and 16-bit fingerprints");

  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = 4;
  static constexpr std::uint32_t kFpMask = (std::uint32_t{1} << FpBits) - 1;
  static constexpr unsigned kHighBits = FpBits - 4;
  static constexpr unsigned kBucketBits = detail::NibbleCodec::kCodeBits + 4 * kHighBits;
  static constexpr std::string_view kLayout = "semi-sorted";
  static constexpr double kBitsPerSlot = kBucketBits / 4.0;

  explicit SemiSortedTable(std::size_t buckets)
      : buckets_(buckets), storage_(payload_bytes(buckets) + kTailSlack) {
    clear();
  }

  static constexpr std::size_t payload_bytes(std::size_t buckets) noexcept {
    return (buckets * kBucketBits + 7) / 8;
  }

  std::size_t bucket_count() const noexcept { return buckets_; }
  std::size_t memory_bytes() const noexcept { return storage_.size(); }
  bool huge_pages_advised() const noexcept { return storage_.huge_pages_advised(); }

  // Both ends of the 8 bytes load() reads: a bucket that straddles two cache lines would
  // otherwise pay an unprefetched miss for the second.
  [[gnu::always_inline]] void prefetch(std::size_t bucket) const noexcept {
    const std::byte* const first = storage_.data() + bucket * kBucketBits / 8;
    detail::prefetch_line(first);
    detail::prefetch_line(first + 7);
  }

  // Without assembling the fingerprints (see the header): slot k holds fp exactly when lane k of
  // (highs ^ fp's high part) | (nibbles ^ fp's nibble) is zero.
  bool contains(std::size_t bucket, std::uint32_t fp) const noexcept {
    return HighLanes::zero_lanes(differences(bucket, fp)) != 0;
  }

  // Empty slots hold fingerprint 0.
  bool has_empty(std::size_t bucket) const noexcept { return contains(bucket, 0); }
  unsigned free_slots(std::size_t bucket) const noexcept {
    return HighLanes::count_zero_lanes(differences(bucket, 0));
  }

  bool try_insert(std::size_t bucket, std::uint32_t fp) noexcept {
    return replace_first(bucket, 0, fp);
  }
  bool try_erase(std::size_t bucket, std::uint32_t fp) noexcept {
    return replace_first(bucket, fp, 0);
  }

  std::uint32_t read(std::size_t bucket, unsigned slot) const noexcept {
    return Lanes::get(lanes(load(bucket)), slot);
  }

  std::uint32_t exchange(std::size_t bucket, unsigned slot, std::uint32_t fp) noexcept {
    const std::uint64_t fps = lanes(load(bucket));
    store(bucket, pack(Lanes::set(fps, slot, fp)));
    return Lanes::get(fps, slot);
  }

  std::span<const std::byte> payload() const noexcept {
    return {storage_.data(), payload_bytes(buckets_)};
  }
  std::span<std::byte> payload() noexcept { return {storage_.data(), payload_bytes(buckets_)}; }

  // An empty bucket is four zero fingerprints, whose code is encode(0,0,0,0) = 0: all-zero
  // storage is an empty table.
  void clear() noexcept { storage_.clear(); }

  // Occupied slots, or nothing if some bucket holds a code outside [0, 3876) -- which only a
  // corrupted file can produce. Used to validate a table read from a file.
  std::optional<std::uint64_t> count_occupied() const noexcept {
    std::uint64_t occupied = 0;
    for (std::size_t bucket = 0; bucket < buckets_; ++bucket) {
      const std::uint64_t bits = load(bucket);
      if ((bits & kCodeMask) >= detail::NibbleCodec::kCodes) return std::nullopt;
      const std::uint64_t fps = lanes(bits);
      for (unsigned k = 0; k < 4; ++k) occupied += Lanes::get(fps, k) != 0;
    }
    return occupied;
  }

 private:
  static_assert(detail::NibbleCodec::encode(0, 0, 0, 0) == 0);
  // The four fingerprints of a bucket as 16-bit lanes of one word.
  using Lanes = detail::BitLanes<16, 4>;
  // The four high parts as the bucket stores them, above the code.
  using HighLanes = detail::BitLanes<kHighBits, 4>;
  static constexpr std::uint64_t kBucketMask = (std::uint64_t{1} << kBucketBits) - 1;
  static constexpr std::uint64_t kCodeMask = (1u << detail::NibbleCodec::kCodeBits) - 1;
  static constexpr std::uint64_t kHighMask = (std::uint64_t{1} << kHighBits) - 1;
  static constexpr std::size_t kTailSlack = 8;

  // Where lanes() puts the parts of a fingerprint: its nibble in bits 0-3 of each 16-bit lane,
  // its high bits above.
  static constexpr std::uint64_t kNibbleLanes = 0x000f000f000f000fULL;
  static constexpr std::uint64_t kHighLanes = (kHighMask << 4) * Lanes::kLow;

  // Bucket value -> four fingerprints in 16-bit lanes (in sorted-nibble order). With BMI2 the
  // two parts are deposited into their lanes by one instruction each: a lookup is a few
  // instructions past its load, so more lookups fit in the out-of-order window at once.
  static std::uint64_t lanes(std::uint64_t bucket_bits) noexcept {
    const std::uint64_t nibbles =
        detail::NibbleCodec::decode(static_cast<std::uint16_t>(bucket_bits & kCodeMask));
    const std::uint64_t highs = bucket_bits >> detail::NibbleCodec::kCodeBits;
#if defined(__BMI2__)
    return _pdep_u64(nibbles, kNibbleLanes) | _pdep_u64(highs, kHighLanes);
#else
    std::uint64_t fps = 0;
    for (unsigned k = 0; k < 4; ++k) {
      const std::uint64_t nibble = (nibbles >> (4 * k)) & 0xf;
      const std::uint64_t high = (highs >> (k * kHighBits)) & kHighMask;
      fps |= (nibble | high << 4) << (16 * k);
    }
    return fps;
#endif
  }

  // Four fingerprints in 16-bit lanes (any order) -> bucket value.
  static std::uint64_t pack(std::uint64_t fps) noexcept {
    std::array<std::uint32_t, 4> fp{};
    for (unsigned k = 0; k < 4; ++k) fp[k] = static_cast<std::uint32_t>(fps >> (16 * k)) & 0xffff;
    // Sorting network on the low nibble.
    const auto order = [&fp](unsigned i, unsigned j) {
      if ((fp[j] & 0xf) < (fp[i] & 0xf)) std::swap(fp[i], fp[j]);
    };
    order(0, 1);
    order(2, 3);
    order(0, 2);
    order(1, 3);
    order(1, 2);
    std::uint64_t bits =
        detail::NibbleCodec::encode(fp[0] & 0xf, fp[1] & 0xf, fp[2] & 0xf, fp[3] & 0xf);
    for (unsigned k = 0; k < 4; ++k) {
      bits |= std::uint64_t{fp[k] >> 4} << (detail::NibbleCodec::kCodeBits + k * kHighBits);
    }
    return bits;
  }

  bool replace_first(std::size_t bucket, std::uint32_t from, std::uint32_t to) noexcept {
    const std::uint64_t fps = lanes(load(bucket));
    const std::uint64_t match = Lanes::lanes_equal(fps, from);
    if (match == 0) return false;
    store(bucket, pack(Lanes::set(fps, Lanes::first_flagged_lane(match), to)));
    return true;
  }

  // Buckets are bit-packed. kBucketBits is a multiple of 4, so a bucket starts at bit offset 0
  // or 4 of its first byte and (being at most 60 bits) always lies inside one unaligned
  // 64-bit word.
  static_assert(kBucketBits % 4 == 0 && kBucketBits + 4 <= 64);

  std::uint64_t load(std::size_t bucket) const noexcept {
    return load_unmasked(bucket) & kBucketMask;
  }
  // Lane k (of HighLanes) is zero exactly when slot k holds fp; the bits above the four lanes
  // are junk, which the lane tricks never read.
  std::uint64_t differences(std::size_t bucket, std::uint32_t fp) const noexcept {
    const std::uint64_t bits = load_unmasked(bucket);  // the highs end at bit 4F - 5: above, junk
    const std::uint64_t nibbles = detail::kNibbleSpreadTable<kHighBits>[bits & kCodeMask];
    const std::uint64_t highs = bits >> detail::NibbleCodec::kCodeBits;
    return (highs ^ HighLanes::kLow * (fp >> 4)) | (nibbles ^ HighLanes::kLow * (fp & 0xf));
  }
  // The bucket in bits [0, kBucketBits), the next bucket's first bits above.
  std::uint64_t load_unmasked(std::size_t bucket) const noexcept {
    const std::size_t bit = bucket * kBucketBits;
    return detail::load_u64(storage_.data() + bit / 8) >> (bit % 8);
  }

  void store(std::size_t bucket, std::uint64_t value) noexcept {
    const std::size_t bit = bucket * kBucketBits;
    std::byte* at = storage_.data() + bit / 8;
    const unsigned shift = bit % 8;
    detail::store_u64(at, (detail::load_u64(at) & ~(kBucketMask << shift)) | value << shift);
  }

  std::size_t buckets_;
  detail::PageBuffer storage_;
};

}  // namespace ccf
