// What is particular to HopscotchMap (include/ccf/tables/hopscotch_map.hpp): keys that share one
// home bucket (a degenerate hash must neither livelock nor grow the table without end), and its
// reserved key. The contract it shares with every table (model, churn through resizes,
// linearizability, absurd capacity) is tested in hash_table_contract_test.cpp.
#include "ccf/tables/hopscotch_map.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sanitizer_scale.hpp"
#include "test_keys.hpp"

namespace {

using ccf::Status;

// Keys whose hashes are 1, 2, 3, ...: their high bits are 0, so all have home bucket 0.
std::uint64_t colliding_key(std::uint64_t i) {
  return ccf::testing::unmix64(i + 1);
}

template <class Map>
class Hopscotch : public ::testing::Test {};
using Maps = ::testing::Types<ccf::HopscotchMap<32>, ccf::HopscotchMap<64>>;
TYPED_TEST_SUITE(Hopscotch, Maps);

TYPED_TEST(Hopscotch, OneHomeHoldsItsNeighbourhoodThenRefusesWithoutGrowing) {
  constexpr std::uint64_t kH = TypeParam::kNeighbourhood;
  TypeParam map(10'000);
  const std::size_t buckets = map.bucket_count();
  for (std::uint64_t i = 0; i < kH; ++i) ASSERT_EQ(map.insert(colliding_key(i), i), Status::kOk);
  EXPECT_EQ(map.insert(colliding_key(kH), kH), Status::kFull);
  EXPECT_EQ(map.insert_or_assign(colliding_key(kH + 1), 1), Status::kFull);
  EXPECT_EQ(map.insert(colliding_key(3), 99), Status::kExists);
  EXPECT_EQ(map.bucket_count(), buckets) << "one crowded home must not resize the table";
  EXPECT_EQ(map.size(), kH);
  for (std::uint64_t i = 0; i < kH; ++i) ASSERT_EQ(map.find(colliding_key(i)), i);
  ASSERT_EQ(map.erase(colliding_key(0)), Status::kOk);
  EXPECT_EQ(map.insert(colliding_key(kH), kH), Status::kOk);
  EXPECT_EQ(map.find(colliding_key(kH)), kH);
}

// A table kept nearly full, so that inserts hop items across segment boundaries all the time,
// while 8 threads share 2 cores: keys nobody touches are never missed, and every writer's keys
// are where its own model says.
TYPED_TEST(Hopscotch, NearlyFullChurnHopsItemsWithoutLosingAny) {
  constexpr unsigned kWriters = 4, kReaders = 4;
  constexpr std::uint64_t kHomes = 1024;
  TypeParam map(kHomes * 4 / 5);  // sized at load 0.8: kHomes home buckets
  const std::uint64_t stable = kHomes * 3 / 4, per_writer = kHomes / 5 / kWriters;
  for (std::uint64_t i = 1; i <= stable; ++i) ASSERT_EQ(map.insert(i, i), Status::kOk);
  const std::uint64_t rounds = ccf::testing::scaled<std::uint64_t>(100'000, 10);
  std::atomic<unsigned> writers_left{kWriters};
  std::atomic<std::uint64_t> missed{0};
  std::vector<std::vector<bool>> present(kWriters, std::vector<bool>(per_writer));
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w);
      const auto key_of = [&](std::uint64_t j) { return stable + 1 + w + kWriters * j; };
      for (std::uint64_t i = 0; i < rounds; ++i) {
        const std::uint64_t j = rng() % per_writer;
        const bool was = present[w][j];
        const Status status = was ? map.erase(key_of(j)) : map.insert(key_of(j), j);
        if (status == Status::kOk) present[w][j] = !was;
        EXPECT_TRUE(status == Status::kOk || (!was && status == Status::kFull)) << i;
        if (map.contains(key_of(j)) != present[w][j]) missed.fetch_add(1);
      }
      writers_left.fetch_sub(1);
    });
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(100 + r);
      for (std::uint64_t n = 0; writers_left.load() > 0 || n < 1000; ++n) {
        const std::uint64_t key = 1 + rng() % stable;
        if (map.find(key) != key) missed.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(missed.load(), 0u);
  std::size_t expected = stable;
  for (unsigned w = 0; w < kWriters; ++w) {
    for (std::uint64_t j = 0; j < per_writer; ++j) expected += present[w][j];
  }
  EXPECT_EQ(map.size(), expected);
  EXPECT_EQ(map.resizes(), 0u) << "the table was meant to stay nearly full";
}

TYPED_TEST(Hopscotch, ZeroKeyIsRefused) {
  TypeParam map(4);
  EXPECT_THROW(static_cast<void>(map.insert(0, 1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(map.find(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(map.erase(0)), std::invalid_argument);
  EXPECT_EQ(map.size(), 0u);
}

}  // namespace
