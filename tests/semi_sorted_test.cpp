// Semi-sorting's 12-bit nibble code, checked exhaustively (all 3876 codes, all 65536 nibble
// tuples), and the space it saves.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>

#include "ccf/packed_table.hpp"
#include "ccf/semi_sorted_table.hpp"

namespace {

using ccf::detail::NibbleCodec;

std::array<unsigned, 4> nibbles_of(std::uint16_t packed) {
  return {packed & 0xfu, (packed >> 4) & 0xfu, (packed >> 8) & 0xfu, (packed >> 12) & 0xfu};
}

TEST(NibbleCodec, EveryCodeDecodesToASortedTupleThatEncodesBack) {
  std::set<std::uint16_t> tuples;
  for (std::uint16_t code = 0; code < NibbleCodec::kCodes; ++code) {
    const auto n = nibbles_of(NibbleCodec::decode(code));
    ASSERT_TRUE(std::is_sorted(n.begin(), n.end())) << code;
    ASSERT_EQ(NibbleCodec::encode(n[0], n[1], n[2], n[3]), code);
    tuples.insert(NibbleCodec::decode(code));
  }
  EXPECT_EQ(tuples.size(), 3876u);  // a bijection onto the sorted tuples
}

TEST(NibbleCodec, EveryTupleOfNibblesHasACodeBelow3876) {
  std::set<std::uint16_t> codes;
  for (unsigned packed = 0; packed < 65536; ++packed) {
    auto n = nibbles_of(static_cast<std::uint16_t>(packed));
    std::sort(n.begin(), n.end());
    const std::uint16_t code = NibbleCodec::encode(n[0], n[1], n[2], n[3]);
    ASSERT_LT(code, NibbleCodec::kCodes);
    ASSERT_EQ(nibbles_of(NibbleCodec::decode(code)), n);
    codes.insert(code);
  }
  EXPECT_EQ(codes.size(), 3876u);
  EXPECT_LT(NibbleCodec::kCodes, 1u << NibbleCodec::kCodeBits);  // fits 12 bits
}

TEST(SemiSortedTable, SavesOneBitPerSlot) {
  constexpr std::size_t kBuckets = 1 << 16;
  EXPECT_EQ(ccf::SemiSortedTable<8>::payload_bytes(kBuckets) * 8, kBuckets * 4 * 7);
  EXPECT_EQ(ccf::SemiSortedTable<12>::payload_bytes(kBuckets) * 8, kBuckets * 4 * 11);
  EXPECT_EQ(ccf::SemiSortedTable<16>::payload_bytes(kBuckets) * 8, kBuckets * 4 * 15);
  using Plain = ccf::PackedTable<12, 4>;
  EXPECT_EQ(Plain::payload_bytes(kBuckets) * 8, kBuckets * 4 * 12);
}

TEST(SemiSortedTable, StoresEveryFingerprintCombinationOfABucket) {
  // Fill one bucket with 4 fingerprints sharing / not sharing nibbles and read them back.
  ccf::SemiSortedTable<12> table(5);
  const std::array<std::uint32_t, 4> fps = {0x0f1, 0x001, 0xab1, 0x010};  // repeated nibble 1
  for (std::uint32_t fp : fps) ASSERT_TRUE(table.try_insert(2, fp));
  std::multiset<std::uint32_t> read;
  for (unsigned slot = 0; slot < 4; ++slot) read.insert(table.read(2, slot));
  EXPECT_EQ(read, std::multiset<std::uint32_t>(fps.begin(), fps.end()));
  for (std::uint32_t fp : fps) EXPECT_TRUE(table.contains(2, fp));
  EXPECT_FALSE(table.contains(2, 0x011));
  EXPECT_FALSE(table.contains(1, 0x0f1));
  EXPECT_FALSE(table.contains(3, 0x0f1));
}

}  // namespace
