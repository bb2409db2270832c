// BasicCuckooFilter's by-bucket operations (fingerprint_at, insert_fingerprint,
// restore_fingerprint, erase_fingerprint), which bucket an insert takes, and its addressing
// parameter (a filter as one level of a nested family, saved and loaded with that addressing).
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ccf/ccf.hpp"
#include "ccf/detail/nested_addressing.hpp"

namespace {

using Striped = ccf::StripedCuckooFilter<16, 2>;
using Nested = ccf::detail::NestedAddressing<16>;
using NestedStriped = ccf::BasicCuckooFilter<ccf::AtomicPackedTable<16, 2>,
                                             ccf::StripedSync<ccf::ReadMode::kOptimistic>, Nested>;

template <class Filter>
std::size_t stored_fingerprints(const Filter& filter) {
  std::size_t stored = 0;
  for (std::uint64_t bucket = 0; bucket < filter.bucket_count(); ++bucket) {
    for (unsigned slot = 0; slot < Filter::kSlots; ++slot) {
      stored += filter.fingerprint_at(bucket, slot) != 0;
    }
  }
  return stored;
}

TEST(FilterByBucket, FingerprintsTakenOutAndPutBackKeepEveryKey) {
  Striped filter(2000);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(filter.insert(std::uint64_t(i)), ccf::Status::kOk);
  EXPECT_EQ(stored_fingerprints(filter), filter.size());
  for (std::uint64_t bucket = 0; bucket < filter.bucket_count(); ++bucket) {
    for (unsigned slot = 0; slot < Striped::kSlots; ++slot) {
      const std::uint32_t fp = filter.fingerprint_at(bucket, slot);
      if (fp == 0) continue;
      ASSERT_EQ(filter.erase_fingerprint(bucket, fp), ccf::Status::kOk);
      ASSERT_EQ(filter.insert_fingerprint(bucket, fp), ccf::Status::kOk);
    }
  }
  EXPECT_EQ(filter.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(filter.contains(std::uint64_t(i))) << i;
}

TEST(FilterByBucket, WithoutMakingRoomAFullPairRefusesAndChangesNothing) {
  ccf::CuckooFilter<ccf::PackedTable<16, 2>> filter(64, ccf::FilterOptions{.max_load = 1.0});
  const std::uint32_t fp = 0x1234;
  std::uint64_t bucket = 0;
  // Fill the pair of (bucket 0, fp): 2 buckets of 2 slots, or one bucket if they coincide.
  int stored = 0;
  while (filter.insert_fingerprint(bucket, fp, /*make_room=*/false) == ccf::Status::kOk) ++stored;
  EXPECT_GE(stored, 2);
  EXPECT_LE(stored, 4);
  EXPECT_EQ(filter.size(), static_cast<std::size_t>(stored));
  EXPECT_EQ(filter.insert_fingerprint(bucket, fp, false), ccf::Status::kFull);
  EXPECT_EQ(filter.size(), static_cast<std::size_t>(stored));
  EXPECT_EQ(filter.erase_fingerprint(bucket, 0x4321), ccf::Status::kNotFound);
}

// An insert goes to the emptier of its two buckets, the primary on a tie; restore_fingerprint
// puts a fingerprint in the bucket named, as a file had it.
template <class Filter>
void expect_emptier_bucket_taken() {
  Filter filter(4000);
  const std::uint32_t fp = 0x0abc;
  const ccf::detail::Addressing<16> addressing(filter.bucket_count());
  std::uint64_t primary = 0;
  while (addressing.alternate(primary, fp) == primary) ++primary;
  const std::uint64_t alternate = addressing.alternate(primary, fp);
  const auto copies_in = [&](std::uint64_t bucket) {
    unsigned copies = 0;
    for (unsigned slot = 0; slot < Filter::kSlots; ++slot) {
      copies += filter.fingerprint_at(bucket, slot) == fp;
    }
    return copies;
  };
  // A tie (both empty): the primary.
  ASSERT_EQ(filter.insert_fingerprint(primary, fp, false), ccf::Status::kOk);
  EXPECT_EQ(copies_in(primary), 1u);
  // The primary now has fewer free slots: the alternate, until the two are even again.
  ASSERT_EQ(filter.insert_fingerprint(primary, fp, false), ccf::Status::kOk);
  EXPECT_EQ(copies_in(alternate), 1u);
  ASSERT_EQ(filter.insert_fingerprint(primary, fp, false), ccf::Status::kOk);
  EXPECT_EQ(copies_in(primary), 2u);
  // Restored where named, even into the fuller bucket.
  ASSERT_EQ(filter.restore_fingerprint(primary, fp), ccf::Status::kOk);
  EXPECT_EQ(copies_in(primary), 3u);
  EXPECT_EQ(copies_in(alternate), 1u);
  ASSERT_EQ(filter.restore_fingerprint(primary, fp), ccf::Status::kOk);
  EXPECT_EQ(filter.restore_fingerprint(primary, fp), ccf::Status::kFull);  // 4 slots, all used
  EXPECT_EQ(filter.size(), 5u);
}

TEST(FilterByBucket, InsertsTakeTheEmptierBucketAndRestoresTheNamedOne) {
  expect_emptier_bucket_taken<ccf::CuckooFilter<ccf::PackedTable<16, 4>>>();
  expect_emptier_bucket_taken<ccf::CuckooFilter<ccf::SemiSortedTable<16>>>();
  expect_emptier_bucket_taken<ccf::StripedCuckooFilter<16, 4>>();
}

TEST(FilterByBucket, OutOfRangeArgumentsAreRefused) {
  Striped filter(100);
  EXPECT_THROW((void)filter.fingerprint_at(filter.bucket_count(), 0), std::invalid_argument);
  EXPECT_THROW((void)filter.fingerprint_at(0, Striped::kSlots), std::invalid_argument);
  EXPECT_THROW((void)filter.insert_fingerprint(0, 0), std::invalid_argument);
  EXPECT_THROW((void)filter.insert_fingerprint(0, 1u << 16), std::invalid_argument);
  EXPECT_THROW((void)filter.erase_fingerprint(filter.bucket_count(), 1), std::invalid_argument);
  EXPECT_EQ(filter.size(), 0u);
}

TEST(FilterByBucket, ANestedLevelSavesAndLoadsWithItsAddressing) {
  NestedStriped level(Nested(100, 3));  // 800 buckets
  EXPECT_EQ(level.bucket_count(), 800u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(level.insert(std::uint64_t(i)), ccf::Status::kOk);
  std::stringstream saved;
  level.save(saved);
  const auto loaded = NestedStriped::load(saved, Nested(100, 3));
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(loaded->contains(std::uint64_t(i))) << i;
  std::stringstream again(saved.str());
  EXPECT_THROW((void)NestedStriped::load(again, Nested(100, 2)), ccf::FormatError);
}

// Nesting: two keys that share a fingerprint and a bucket pair in level 3 share them in level 1.
TEST(FilterByBucket, NestedLevelsKeepAPairsParent) {
  const Nested big(50, 3), small(50, 1);
  for (std::uint64_t h = 1; h < 200000; h += 7919) {
    const std::uint64_t hash = ccf::hash_key(h);
    const auto at_big = ccf::detail::locate(big, hash);
    const auto at_small = ccf::detail::locate(small, hash);
    ASSERT_EQ(at_big.fp, at_small.fp);
    ASSERT_EQ(at_big.primary >> 2, at_small.primary);
    ASSERT_EQ(at_big.alternate >> 2, at_small.alternate);
    ASSERT_EQ(big.alternate(at_big.alternate, at_big.fp), at_big.primary);
  }
}

}  // namespace
