// The striped concurrent cuckoo filter: sequential behaviour, stress with invariant checks
// (also oversubscribed: 8 and 16 threads on 2 cores), near-full churn, and linearizability of
// small concurrent histories.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "batched_operations.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "concurrent_churn.hpp"
#include "linearizability.hpp"
#include "sanitizer_scale.hpp"
#include "test_keys.hpp"

namespace {

using ccf::ReadMode;
using ccf::Status;
using ccf::testing::member_keys;

template <class Filter>
class StripedFilter : public ::testing::Test {};
using Filters = ::testing::Types<ccf::StripedCuckooFilter<12, 4, ReadMode::kOptimistic>,
                                 ccf::StripedCuckooFilter<16, 4, ReadMode::kOptimistic>,
                                 ccf::StripedCuckooFilter<16, 4, ReadMode::kLocking>,
                                 ccf::StripedCuckooFilter<8, 8, ReadMode::kOptimistic>>;
TYPED_TEST_SUITE(StripedFilter, Filters);

TYPED_TEST(StripedFilter, FillsAsFullAsTheSequentialFilterWithoutFalseNegatives) {
  const std::size_t capacity = ccf::testing::scaled<std::size_t>(1 << 20, 16);
  TypeParam filter(capacity);
  const auto keys = member_keys(2 * capacity, 21);
  std::size_t stored = 0;
  while (filter.insert(keys[stored]) == Status::kOk) ++stored;
  EXPECT_GE(filter.load_factor(), 0.95) << filter.shape();
  EXPECT_EQ(filter.size(), stored);
  // Without a victim slot, kFull is per item: other items may still find room. A kFull
  // changes nothing; every kOk item is found.
  std::vector<std::uint64_t> in_filter(keys.begin(), keys.begin() + static_cast<long>(stored));
  std::size_t refused = 1;
  for (std::size_t i = stored + 1; i < stored + capacity / 50; ++i) {
    const std::size_t before = filter.size();
    if (filter.insert(keys[i]) == Status::kOk) {
      ASSERT_EQ(filter.size(), before + 1);
      in_filter.push_back(keys[i]);
    } else {
      ASSERT_EQ(filter.size(), before);
      ++refused;
    }
  }
  EXPECT_GT(refused, capacity / 1000);  // the table really is full
  stored = in_filter.size();
  std::size_t missing = 0;
  for (const auto key : in_filter) missing += !filter.contains(key);
  EXPECT_EQ(missing, 0u);
  for (std::size_t i = 0; i < stored; i += 3) ASSERT_EQ(filter.erase(in_filter[i]), Status::kOk);
  for (std::size_t i = 0; i < stored; ++i) {
    if (i % 3 != 0) {
      ASSERT_TRUE(filter.contains(in_filter[i])) << i;
    }
  }
}

constexpr int kRounds = ccf::testing::scaled(1'000'000, 20);

using Optimistic = ccf::StripedCuckooFilter<12, 4, ReadMode::kOptimistic>;
using Locking = ccf::StripedCuckooFilter<16, 4, ReadMode::kLocking>;

template <class Filter>
void churn(const ccf::testing::ChurnConfig& config) {
  Filter filter(config.capacity);
  ccf::testing::churn(filter, config);
}

TEST(StripedChurn, TwoReadersTwoWriters) {
  churn<Optimistic>({1 << 16, 0.3, 0.3, 2, 2, kRounds});
}
TEST(StripedChurn, NearFullTable) {
  churn<Optimistic>({1 << 14, 0.85, 0.12, 2, 2, kRounds});
}
TEST(StripedChurn, EightThreadsOnTwoCores) {
  churn<Optimistic>({1 << 14, 0.45, 0.45, 4, 4, kRounds / 2});
}
TEST(StripedChurn, SixteenThreadsOnTwoCores) {
  churn<Optimistic>({1 << 14, 0.45, 0.45, 8, 8, kRounds / 4});
}
TEST(StripedChurn, LockingReadsSixteenThreads) {
  churn<Locking>({1 << 14, 0.45, 0.45, 8, 8, kRounds / 4});
}

// A tiny table, so that the keys share stripes and moves happen.
TEST(StripedLinearizability, SmallHistoriesAreLinearizable) {
  ccf::testing::check_small_histories([] { return std::make_unique<Optimistic>(64); },
                                      ccf::testing::scaled(3000, 5));
}

TEST(StripedLinearizability, CheckerRejectsANonLinearizableHistory) {
  using ccf::testing::Operation;
  using ccf::testing::OpKind;
  // insert(0) completes, then a later contains(0) says absent: impossible.
  const std::vector<Operation> bad = {{OpKind::kInsert, 0, true, 0, 1},
                                      {OpKind::kContains, 0, false, 2, 3}};
  EXPECT_FALSE(ccf::testing::linearizable(bad, ccf::testing::MultisetModel(1)));
  // Overlapping: the contains may linearize before the insert.
  const std::vector<Operation> ok = {{OpKind::kInsert, 0, true, 0, 3},
                                     {OpKind::kContains, 0, false, 1, 2}};
  EXPECT_TRUE(ccf::testing::linearizable(ok, ccf::testing::MultisetModel(1)));
}

TEST(StripedFilter, BadParametersAreRejected) {
  EXPECT_THROW(Optimistic(0), std::invalid_argument);
  EXPECT_THROW(Optimistic(100, {.max_load = 2}), std::invalid_argument);
}

}  // namespace

namespace {
TEST(StripedFilter, BatchedLookupsAgreeWithSingleOnes) {
  Optimistic filter(100'000);
  const auto keys = ccf::testing::member_keys(200'000, 5);
  for (std::size_t i = 0; i < 90'000; ++i) ASSERT_EQ(filter.insert(keys[i]), Status::kOk);
  ccf::testing::expect_batched_lookups_agree(filter, keys, 90'000);
}

TEST(StripedFilter, BatchedInsertsFillAsFullAsSingleOnes) {
  Optimistic filter(1 << 16);
  ccf::testing::expect_batched_inserts_fill(filter, ccf::testing::member_keys(1 << 17, 6));
}
}  // namespace
