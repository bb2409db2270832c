// BasicCuckooFilter::merge and AnyCuckooFilter::merge: after a merge every item of either filter
// is found (victim included); mismatched filters are refused and left unchanged; a merge that
// runs out of room says so and loses none of the target's own items.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"

namespace {

using ccf::Status;

template <class Filter>
class Merge : public ::testing::Test {};
using Filters =
    ::testing::Types<ccf::CuckooFilter<ccf::PackedTable<12, 4>>,
                     ccf::CuckooFilter<ccf::SemiSortedTable<12>>,
                     ccf::CuckooFilter<ccf::PackedTable<8, 2>>, ccf::StripedCuckooFilter<12, 4>>;
TYPED_TEST_SUITE(Merge, Filters);

TYPED_TEST(Merge, EveryItemOfEitherFilterIsFound) {
  constexpr std::uint64_t kN = 20'000;
  TypeParam a(4 * kN);
  TypeParam b(4 * kN);
  for (std::uint64_t key = 1; key <= kN; ++key) ASSERT_EQ(a.insert(key), Status::kOk);
  for (std::uint64_t key = kN + 1; key <= 2 * kN; ++key) ASSERT_EQ(b.insert(key), Status::kOk);
  ASSERT_EQ(a.merge(b), Status::kOk);
  EXPECT_EQ(a.size(), 2 * kN);
  EXPECT_EQ(b.size(), kN);
  for (std::uint64_t key = 1; key <= 2 * kN; ++key) ASSERT_TRUE(a.contains(key)) << key;
  // The merged fingerprints are ordinary ones: erasing some keeps every other key.
  for (std::uint64_t key = kN + 1; key <= 2 * kN; key += 2) ASSERT_EQ(a.erase(key), Status::kOk);
  for (std::uint64_t key = 1; key <= 2 * kN; ++key) {
    if (key <= kN || (key - kN) % 2 == 0) {
      ASSERT_TRUE(a.contains(key)) << key;
    }
  }
}

TYPED_TEST(Merge, MismatchedFiltersAreRefusedAndLeftUnchanged) {
  TypeParam a(10'000);
  TypeParam other_size(20'000);
  TypeParam other_seed(10'000, ccf::FilterOptions{.seed = 7});
  for (std::uint64_t key = 1; key <= 100; ++key) {
    ASSERT_EQ(a.insert(key), Status::kOk);
    ASSERT_EQ(other_size.insert(key + 1000), Status::kOk);
    ASSERT_EQ(other_seed.insert(key + 1000), Status::kOk);
  }
  EXPECT_THROW(static_cast<void>(a.merge(other_size)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(a.merge(other_seed)), std::invalid_argument);
  EXPECT_EQ(a.size(), 100u);
  for (std::uint64_t key = 1; key <= 100; ++key) ASSERT_TRUE(a.contains(key));
}

TYPED_TEST(Merge, OutOfRoomSaysSoAndKeepsItsOwnItems) {
  constexpr std::uint64_t kN = 4000;
  TypeParam a(kN);
  TypeParam b(kN);
  std::uint64_t own = 0;
  for (std::uint64_t key = 1; key <= kN && a.insert(key) == Status::kOk; ++key) own = key;
  for (std::uint64_t key = 1; key <= kN && b.insert(key + kN) == Status::kOk; ++key) {
  }
  EXPECT_EQ(a.merge(b), Status::kFull);
  for (std::uint64_t key = 1; key <= own; ++key) ASSERT_TRUE(a.contains(key)) << key;
}

TEST(Merge, TheVictimIsMergedToo) {
  using Filter = ccf::CuckooFilter<ccf::PackedTable<8, 2>>;
  Filter b(64, ccf::FilterOptions{.max_kicks = 20});
  std::uint64_t last = 0;
  while (!b.victim_used()) ASSERT_EQ(b.insert(++last), Status::kOk);
  Filter a(64, ccf::FilterOptions{.max_kicks = 20});
  ASSERT_EQ(a.merge(b), Status::kOk);
  EXPECT_EQ(a.size(), b.size());
  for (std::uint64_t key = 1; key <= last; ++key) ASSERT_TRUE(a.contains(key)) << key;
}

TEST(Merge, AnyFilterRefusesAnotherShape) {
  ccf::AnyCuckooFilter a(ccf::FilterParams{.capacity = 1000, .fp_bits = 12});
  ccf::AnyCuckooFilter b(ccf::FilterParams{.capacity = 1000, .fp_bits = 16});
  ccf::AnyCuckooFilter c(ccf::FilterParams{.capacity = 1000, .fp_bits = 12});
  ASSERT_EQ(a.insert(std::uint64_t{1}), Status::kOk);
  ASSERT_EQ(c.insert(std::uint64_t{2}), Status::kOk);
  EXPECT_THROW(static_cast<void>(a.merge(b)), std::invalid_argument);
  EXPECT_EQ(a.size(), 1u);
  ASSERT_EQ(a.merge(c), Status::kOk);
  EXPECT_TRUE(a.contains(std::uint64_t{1}) && a.contains(std::uint64_t{2}));
}

}  // namespace
