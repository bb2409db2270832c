// BitLanes: lane reads and writes, and the zero-lane test and count the filters' buckets rely
// on, against a lane-by-lane reference on random and borrow-provoking words.
#include <gtest/gtest.h>

#include <bit>
#include <ccf/detail/bit_lanes.hpp>
#include <cstdint>
#include <random>

namespace {

template <unsigned Width, unsigned Lanes>
void check_lanes() {
  using L = ccf::detail::BitLanes<Width, Lanes>;
  std::mt19937_64 rng(Width * 100 + Lanes);
  for (int round = 0; round < 20000; ++round) {
    std::uint64_t word = 0;
    for (unsigned lane = 0; lane < Lanes; ++lane) {
      // Zero lanes, ones (a borrow from a zero lane below turns a 1 into a false flag) and
      // random values, in equal parts.
      const std::uint64_t kind = rng() % 3;
      const std::uint64_t value = kind == 0 ? 0 : kind == 1 ? 1 : rng() & L::kLaneMask;
      word = L::set(word, lane, value);
      ASSERT_EQ(L::get(word, lane), value);
    }
    std::uint64_t expected_zero = 0;
    for (unsigned lane = 0; lane < Lanes; ++lane) {
      if (L::get(word, lane) == 0) expected_zero |= std::uint64_t{1} << (lane * Width + Width - 1);
    }
    ASSERT_EQ(L::count_zero_lanes(word), static_cast<unsigned>(std::popcount(expected_zero)))
        << std::hex << word;
    const std::uint64_t flags = L::zero_lanes(word);
    ASSERT_EQ(flags != 0, expected_zero != 0) << std::hex << word;
    if (expected_zero != 0) {
      // The lowest flag is exact (higher ones may be borrows).
      ASSERT_EQ(L::first_flagged_lane(flags), L::first_flagged_lane(expected_zero));
    }
  }
}

TEST(BitLanes, ZeroLaneTestsMatchALaneByLaneReference) {
  check_lanes<4, 4>();
  check_lanes<8, 4>();
  check_lanes<12, 4>();
  check_lanes<12, 5>();
  check_lanes<16, 4>();
  check_lanes<8, 7>();
  check_lanes<4, 15>();
  check_lanes<32, 2>();
}

}  // namespace
