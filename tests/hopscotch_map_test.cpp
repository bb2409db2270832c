// What is particular to HopscotchMap (include/ccf/tables/hopscotch_map.hpp): keys that share one
// home bucket (a degenerate hash must neither livelock nor grow the table without end), and its
// reserved key. The contract it shares with every table (model, churn through resizes,
// linearizability, absurd capacity) is tested in hash_table_contract_test.cpp.
#include "ccf/tables/hopscotch_map.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ccf/detail/clht_sizing.hpp"
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
  TypeParam map(kHomes * 3 / 4);  // sized at load 0.75: kHomes home buckets
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

// Keys whose home bucket, in a table of `homes` home buckets, lies in [from, to).
std::vector<std::uint64_t> keys_with_homes(std::uint64_t homes, std::uint64_t from,
                                           std::uint64_t to, std::size_t count,
                                           std::uint64_t first_key) {
  std::vector<std::uint64_t> keys;
  for (std::uint64_t key = first_key; keys.size() < count; ++key) {
    const std::uint64_t home = ccf::reduce_range(ccf::detail::ClhtSizing::hash(key), homes);
    if (home >= from && home < to) keys.push_back(key);
  }
  return keys;
}

// Inserts near a segment boundary (segments are 256 buckets) hop items homed in the next
// segment. Writers churn keys homed on both sides of one boundary, crowded enough that most
// inserts hop; readers look up keys homed there that nobody touches; 8 threads on 2 cores.
// (Races here are rare events; the next test pins one down deterministically.)
TYPED_TEST(Hopscotch, ChurnAcrossASegmentBoundaryLosesNothing) {
  constexpr unsigned kWriters = 4, kReaders = 4;
  TypeParam map(1024 * 3 / 4);  // about 1024 home buckets: four segments
  const std::uint64_t homes = map.bucket_count();
  ASSERT_GE(homes, 1000u);
  constexpr std::uint64_t kBoundary = 512, kWidth = 48;
  const std::vector<std::uint64_t> stable =
      keys_with_homes(homes, kBoundary - kWidth, kBoundary + kWidth, 3 * kWidth / 2, 1);
  const std::vector<std::uint64_t> churned =
      keys_with_homes(homes, kBoundary - kWidth, kBoundary + kWidth, kWidth, stable.back() + 1);
  for (const std::uint64_t key : stable) ASSERT_EQ(map.insert(key, ~key), Status::kOk);
  const std::uint64_t rounds = ccf::testing::scaled<std::uint64_t>(200'000, 10);
  std::atomic<unsigned> writers_left{kWriters};
  std::atomic<std::uint64_t> missed{0};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w);
      std::vector<bool> present(churned.size() / kWriters);
      for (std::uint64_t i = 0; i < rounds; ++i) {
        const std::size_t j = rng() % present.size();
        const std::uint64_t key = churned[w + kWriters * j];
        const bool was = present[j];
        const Status status = was ? map.erase(key) : map.insert(key, ~key);
        if (status == Status::kOk) present[j] = !was;
        if (status != Status::kOk && !(status == Status::kFull && !was)) missed.fetch_add(1);
        if (map.find(key) != (present[j] ? std::optional(~key) : std::nullopt)) missed.fetch_add(1);
      }
      for (std::size_t j = 0; j < present.size(); ++j) {
        if (present[j]) {
          ASSERT_EQ(map.erase(churned[w + kWriters * j]), Status::kOk);
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(100 + r);
      for (std::uint64_t n = 0; writers_left.load() > 0 || n < 1000; ++n) {
        const std::uint64_t key = stable[rng() % stable.size()];
        if (map.find(key) != ~key) missed.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(missed.load(), 0u);
  EXPECT_EQ(map.size(), stable.size());
  for (const std::uint64_t key : stable) ASSERT_EQ(map.find(key), ~key);
  EXPECT_EQ(map.resizes(), 0u) << "the crowd was meant to stay in one table";
}

// Pauses the insert that moves `target`, after the copy and before the item leaves its old
// bucket, until `released` (at most 10 s).
struct PausingHook {
  static inline std::atomic<std::uint64_t> target{0};
  static inline std::atomic<bool> paused{false};
  static inline std::atomic<bool> released{false};
  static void on_move(std::uint64_t key) noexcept {
    if (key != target.load()) return;
    paused.store(true);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!released.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
  }
};

// An insert homed at the end of one segment moves an item homed in the next segment: a lookup
// and an erase of that item must wait for it (they lock, or validate, only the item's own
// segment, so the insert must hold that segment's lock too). Built so that the move is certain:
// 12 items homed at bucket 500 fill 500..511, one item homed at each of 512 .. 500 + H - 1 sits
// there, and one more key homed at 500 finds its first free bucket at 500 + H, out of reach:
// the first item it may move is the one homed at 512.
TYPED_TEST(Hopscotch, AnInsertHoldsTheNextSegmentOfTheItemsItMoves) {
  constexpr std::uint64_t kH = TypeParam::kNeighbourhood;
  using Map = ccf::HopscotchMap<kH, PausingHook>;
  Map map(1024 * 3 / 4);
  const std::uint64_t homes = map.bucket_count();
  const std::vector<std::uint64_t> at_500 = keys_with_homes(homes, 500, 501, 13, 1);
  std::vector<std::uint64_t> keys(at_500.begin(), at_500.end() - 1);
  for (std::uint64_t home = 512; home < 500 + kH; ++home) {
    keys.push_back(keys_with_homes(homes, home, home + 1, 1, 1).front());
  }
  for (const std::uint64_t key : keys) ASSERT_EQ(map.insert(key, ~key), Status::kOk);
  const std::uint64_t mover = at_500.back();
  const std::uint64_t moved = keys[12];  // homed at 512
  PausingHook::target = moved;
  PausingHook::paused = false;
  PausingHook::released = false;

  std::thread insert([&] { EXPECT_EQ(map.insert(mover, ~mover), Status::kOk); });
  while (!PausingHook::paused.load()) std::this_thread::yield();
  std::atomic<bool> found_done{false}, erase_done{false};
  std::optional<std::uint64_t> found;
  std::thread lookup([&] {
    found = map.find(moved);
    found_done = true;
  });
  std::thread erase([&] {
    EXPECT_EQ(map.erase(moved), Status::kOk);
    erase_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(found_done.load()) << "a lookup of the moving item did not wait for the move";
  EXPECT_FALSE(erase_done.load()) << "an erase of the moving item did not wait for the move";
  PausingHook::released = true;
  insert.join();
  lookup.join();
  erase.join();
  // Released together, the lookup and the erase may take effect in either order.
  if (found) {
    EXPECT_EQ(*found, ~moved);
  }
  EXPECT_EQ(map.find(moved), std::nullopt);
  EXPECT_EQ(map.find(mover), ~mover);
  for (const std::uint64_t key : keys) {
    if (key != moved) {
      ASSERT_EQ(map.find(key), ~key) << key;
    }
  }
  EXPECT_EQ(map.size(), keys.size());
}

TYPED_TEST(Hopscotch, ZeroKeyIsRefused) {
  TypeParam map(4);
  EXPECT_THROW(static_cast<void>(map.insert(0, 1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(map.find(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(map.erase(0)), std::invalid_argument);
  EXPECT_EQ(map.size(), 0u);
}

}  // namespace
