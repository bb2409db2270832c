// SWAR ("SIMD within a register") helpers: treat a 64-bit word as lanes of `Width` bits and
// ask whether any lane is zero or equal to a value, without a loop.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace ccf::detail {

// Lanes of `Width` bits, `Lanes` of them starting at bit 0 (Width * Lanes <= 64).
template <unsigned Width, unsigned Lanes>
struct BitLanes {
  static_assert(Width >= 2 && Width * Lanes <= 64);

  static constexpr std::uint64_t ones() {
    std::uint64_t value = 0;
    for (unsigned lane = 0; lane < Lanes; ++lane) value |= std::uint64_t{1} << (lane * Width);
    return value;
  }
  static constexpr std::uint64_t kLow = ones();                // lowest bit of every lane
  static constexpr std::uint64_t kHigh = kLow << (Width - 1);  // highest bit of every lane
  static constexpr std::uint64_t kLaneMask =
      (Width == 64) ? ~std::uint64_t{0} : (std::uint64_t{1} << Width) - 1;
  static constexpr std::uint64_t kAllMask =
      (Width * Lanes == 64) ? ~std::uint64_t{0} : (std::uint64_t{1} << (Width * Lanes)) - 1;

  // Non-zero iff some lane of `word` is zero; its lowest set bit lies in the lowest zero lane.
  // (A borrow can only flag a lane above a zero lane, so the lowest flag is always exact.)
  static constexpr std::uint64_t zero_lanes(std::uint64_t word) noexcept {
    return (word - kLow) & ~word & kHigh;
  }
  // How many lanes are zero, exactly: each lane's low bits are summed inside the lane (the sum
  // of two (Width - 1)-bit values cannot carry out of it), so no lane affects another.
  static constexpr unsigned count_zero_lanes(std::uint64_t word) noexcept {
    constexpr std::uint64_t kBelowHigh = kHigh - kLow;  // every lane's bits but its highest
    const std::uint64_t nonzero = (((word & kBelowHigh) + kBelowHigh) | word) & kHigh;
    return static_cast<unsigned>(std::popcount(nonzero ^ kHigh));
  }
  static constexpr std::uint64_t lanes_equal(std::uint64_t word, std::uint64_t value) noexcept {
    return zero_lanes(word ^ (value * kLow));
  }
  static constexpr unsigned first_flagged_lane(std::uint64_t flags) noexcept {
    return static_cast<unsigned>(std::countr_zero(flags)) / Width;
  }
  static constexpr std::uint32_t get(std::uint64_t word, unsigned lane) noexcept {
    return static_cast<std::uint32_t>((word >> (lane * Width)) & kLaneMask);
  }
  static constexpr std::uint64_t set(std::uint64_t word, unsigned lane,
                                     std::uint64_t value) noexcept {
    const unsigned shift = lane * Width;
    return (word & ~(kLaneMask << shift)) | value << shift;
  }
};

// Unaligned little-endian 64-bit load/store (compiles to one mov on x86-64).
inline std::uint64_t load_u64(const std::byte* from) noexcept {
  std::uint64_t value;
  std::memcpy(&value, from, sizeof value);
  return value;
}
inline void store_u64(std::byte* to, std::uint64_t value) noexcept {
  std::memcpy(to, &value, sizeof value);
}

}  // namespace ccf::detail
