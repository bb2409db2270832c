// Semi-sorting's 12-bit nibble code, checked exhaustively (all 3876 codes, all 65536 nibble
// tuples), the space it saves, and the table against a multiset model for every width. The
// file is built twice: as is (with BMI2 at this project's -march, a bucket is decoded by
// deposit instructions) and with -mno-bmi2 (the portable decode): both paths are tested.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

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

// Random buckets of random fingerprints (duplicates and shared nibbles frequent: a small
// range), inserted, read back, looked up, erased, against a multiset per bucket.
template <unsigned F>
void check_against_model() {
  constexpr std::size_t kBuckets = 64;
  ccf::SemiSortedTable<F> table(kBuckets);
  std::vector<std::multiset<std::uint32_t>> model(kBuckets);
  std::mt19937_64 random(F);
  const std::uint32_t mask = (std::uint32_t{1} << F) - 1;
  for (int op = 0; op < 100'000; ++op) {
    const std::size_t bucket = random() % kBuckets;
    // Mostly a few values with every nibble (so sorted nibbles repeat), sometimes any value.
    std::uint32_t fp = random() % 4 == 0 ? static_cast<std::uint32_t>(random()) & mask
                                         : static_cast<std::uint32_t>(random() % 48) * 5 + 1;
    fp &= mask;
    if (fp == 0) fp = 1;  // 0 marks an empty slot
    std::multiset<std::uint32_t>& held = model[bucket];
    if (random() % 2 == 0) {
      const bool room = held.size() < 4;
      ASSERT_EQ(table.try_insert(bucket, fp), room);
      if (room) held.insert(fp);
    } else {
      const bool present = held.contains(fp);
      ASSERT_EQ(table.try_erase(bucket, fp), present);
      if (present) held.erase(held.find(fp));
    }
    std::multiset<std::uint32_t> read;
    for (unsigned slot = 0; slot < 4; ++slot) {
      if (const std::uint32_t got = table.read(bucket, slot)) read.insert(got);
    }
    ASSERT_EQ(read, held) << "bucket " << bucket << " after op " << op;
    ASSERT_EQ(table.has_empty(bucket), held.size() < 4);
    const std::uint32_t probe = static_cast<std::uint32_t>(random()) & mask;
    if (probe != 0) {
      ASSERT_EQ(table.contains(bucket, probe), held.contains(probe)) << probe;
    }
    for (const std::uint32_t value : held) {
      ASSERT_TRUE(table.contains(bucket, value)) << value;
      // Near misses: the same high part with another nibble, the same nibble with another high.
      for (const std::uint32_t near :
           {value ^ 0x1u, value ^ 0x8u, value ^ 0x10u, value ^ (mask & ~0xfu)}) {
        if (near != 0) {
          ASSERT_EQ(table.contains(bucket, near), held.contains(near)) << near;
        }
      }
    }
  }
}

// Every fingerprint probed against buckets of four random ones (repeated nibbles and highs
// included): contains() compares in the stored form, against the fingerprints read back.
template <unsigned F>
void check_every_probe() {
  constexpr std::size_t kBuckets = 300;
  ccf::SemiSortedTable<F> table(kBuckets);
  std::mt19937_64 random(F + 1);
  const std::uint32_t mask = (std::uint32_t{1} << F) - 1;
  const std::uint32_t probes = std::min<std::uint32_t>(mask, 1u << 12);
  for (std::size_t bucket = 0; bucket < kBuckets; ++bucket) {
    const unsigned filled = static_cast<unsigned>(bucket % 5);  // 0 to 4 slots in use
    std::multiset<std::uint32_t> held;
    for (unsigned k = 0; k < filled; ++k) {
      // Few distinct nibbles and highs, so that partial matches are common.
      std::uint32_t fp = (static_cast<std::uint32_t>(random() % 3) << 4 | random() % 3) & mask;
      if (random() % 2 == 0) fp = static_cast<std::uint32_t>(random()) & mask;
      if (fp == 0) fp = 1;
      ASSERT_TRUE(table.try_insert(bucket, fp));
      held.insert(fp);
    }
    for (std::uint32_t step = 0; step < probes; ++step) {
      // Every fingerprint for F <= 12; for F = 16, 4096 of them, the held ones' parts among them.
      const std::uint32_t probe = F <= 12 ? step + 1 : (step * 0x9e37u + (step & 1)) & mask;
      if (probe == 0) continue;
      ASSERT_EQ(table.contains(bucket, probe), held.contains(probe))
          << "bucket " << bucket << " probe " << probe;
    }
  }
}

TEST(SemiSortedTable, ContainsAgreesWithTheStoredFingerprintsForEveryProbe) {
  check_every_probe<8>();
  check_every_probe<12>();
  check_every_probe<16>();
}

TEST(SemiSortedTable, AgreesWithAMultisetPerBucket) {
  check_against_model<8>();
  check_against_model<12>();
  check_against_model<16>();
}

}  // namespace
