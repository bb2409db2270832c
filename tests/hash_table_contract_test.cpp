// The contract every ccf hash table (include/ccf/tables/) keeps, tested once for all of them on
// 64-bit keys and values:
// - a model test against std::unordered_map on a table that starts tiny, so that it resizes
//   many times;
// - a concurrent stress test with more threads than cores: writers churn their own keys
//   (insert, assign, erase) through resizes while readers check keys nobody touches (never
//   missing, never a wrong value) and the writers' keys (a value found always belongs to its
//   key: no torn key/value pair);
// - small histories of concurrent operations, each checked for linearizability against a set.
// Each table's own file tests what is particular to it (its limits, its key and value types).
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ccf/tables/clht_lb.hpp"
#include "ccf/tables/clht_lf.hpp"
#include "ccf/tables/cuckoo_map.hpp"
#include "ccf/tables/hopscotch_map.hpp"
#include "ccf/tables/htm_clht.hpp"
#include "linearizability.hpp"
#include "sanitizer_scale.hpp"

namespace {

using ccf::Status;

template <class Table>
class HashTableContract : public ::testing::Test {};

using Tables =
    ::testing::Types<ccf::ClhtLb, ccf::ClhtLf, ccf::HtmClhtFine, ccf::htm_clht::Mcs,
                     ccf::htm_clht::SlrMcs, ccf::htm_clht::HtmRetry, ccf::htm_clht::ScmTtasMcs,
                     ccf::htm_clht::SlrScmMcs, ccf::htm_clht::ScmTtasOpt,
                     ccf::CuckooMap<std::uint64_t, std::uint64_t>, ccf::HopscotchMap<32>,
                     ccf::HopscotchMap<64>>;
TYPED_TEST_SUITE(HashTableContract, Tables);

TYPED_TEST(HashTableContract, AgreesWithAMapThroughEveryResize) {
  TypeParam table(2);
  std::unordered_map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(11);
  const std::size_t ops = ccf::testing::scaled<std::size_t>(400'000, 8);
  for (std::size_t i = 0; i < ops; ++i) {
    // Keys from a range that grows, so the table grows through many sizes (0 is not a key:
    // ClhtLb reserves it).
    const std::uint64_t key = 1 + rng() % (64 + i / 64);
    const std::uint64_t value = rng();
    switch (rng() % 5) {
      case 0:
      case 1: {
        const bool fresh = !model.contains(key);
        ASSERT_EQ(table.insert(key, value), fresh ? Status::kOk : Status::kExists) << i;
        if (fresh) model[key] = value;
        break;
      }
      case 2: {
        const bool fresh = !model.contains(key);
        ASSERT_EQ(table.insert_or_assign(key, value), fresh ? Status::kOk : Status::kExists) << i;
        model[key] = value;
        break;
      }
      case 3:
        ASSERT_EQ(table.erase(key), model.erase(key) == 1 ? Status::kOk : Status::kNotFound) << i;
        break;
      default: {
        const auto found = table.find(key);
        const auto it = model.find(key);
        ASSERT_EQ(found.has_value(), it != model.end()) << i;
        if (found) {
          ASSERT_EQ(*found, it->second) << i;
        }
      }
    }
    ASSERT_EQ(table.size(), model.size()) << i;
  }
  EXPECT_GE(table.resizes(), 5u) << "the table was meant to grow through many sizes";
  for (const auto& [key, value] : model) ASSERT_EQ(table.find(key), value);
}

TYPED_TEST(HashTableContract, ReserveMakesRoomWithoutLaterResizes) {
  TypeParam table(4);
  table.reserve(10'000);
  const std::uint64_t resized = table.resizes();
  EXPECT_GE(resized, 1u) << "reserve() grew the table";
  for (std::uint64_t key = 1; key <= 10'000; ++key) ASSERT_EQ(table.insert(key, key), Status::kOk);
  EXPECT_EQ(table.resizes(), resized) << "inserts within the reserved capacity resized";
  EXPECT_EQ(table.size(), 10'000u);
  EXPECT_GT(table.memory_bytes(), 16u * 10'000) << "less than the pairs themselves";
}

// Capacities beyond the table limit are refused with an error that names the limit, and a
// reserve() that fails changes nothing.
TYPED_TEST(HashTableContract, AbsurdCapacityIsRefusedAndChangesNothing) {
  for (const std::size_t capacity : {std::size_t{1} << 63, ~std::size_t{0}}) {
    EXPECT_THROW(TypeParam{capacity}, std::invalid_argument) << capacity;
  }
  TypeParam table(100);
  ASSERT_EQ(table.insert(7, 70), Status::kOk);
  const std::size_t buckets = table.bucket_count();
  try {
    table.reserve(~std::size_t{0});
    ADD_FAILURE() << "reserve accepted an impossible capacity";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("table limit"), std::string::npos) << error.what();
  }
  EXPECT_EQ(table.bucket_count(), buckets);
  EXPECT_EQ(table.find(7), 70u);
  EXPECT_EQ(table.size(), 1u);
}

// A global FIFO (MCS) lock with more threads than cores hands itself to waiters that are not
// running: here about 1 ms per update once 8 threads share 2 cores (without RTM these tables are
// that lock). They churn 40 times fewer keys, still through resizes, so the test stays short.
template <class Table>
constexpr std::uint64_t kChurnDivisor = 1;
template <>
constexpr std::uint64_t kChurnDivisor<ccf::htm_clht::Mcs> = 40;
template <>
constexpr std::uint64_t kChurnDivisor<ccf::htm_clht::SlrMcs> = 40;
template <>
constexpr std::uint64_t kChurnDivisor<ccf::htm_clht::HtmRetry> = 40;
template <>
constexpr std::uint64_t kChurnDivisor<ccf::htm_clht::SlrScmMcs> = 40;

TYPED_TEST(HashTableContract, ChurnThroughResizesLosesNothingAndTearsNothing) {
  constexpr unsigned kWriters = 4, kReaders = 4;  // 8 threads on 2 cores
  constexpr std::uint64_t kStable = 2'000;        // keys 1..kStable: inserted first, never touched
  const std::uint64_t per_writer =
      ccf::testing::scaled<std::uint64_t>(20'000, 10) / kChurnDivisor<TypeParam>;
  TypeParam table(8);  // tiny: the writers' inserts resize it many times
  for (std::uint64_t key = 1; key <= kStable; ++key) {
    ASSERT_EQ(table.insert(key, key * 7), Status::kOk);
  }
  // Writer w owns keys kStable + 1 + w + kWriters * j; values are (key << 16) | version.
  const auto owned = [&](unsigned w, std::uint64_t j) { return kStable + 1 + w + kWriters * j; };
  std::vector<std::unordered_map<std::uint64_t, std::uint64_t>> models(kWriters);
  std::atomic<unsigned> writers_left{kWriters};
  std::atomic<std::uint64_t> stable_misses{0}, torn{0}, lookups{0};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w);
      auto& model = models[w];
      for (std::uint64_t i = 0; i < 4 * per_writer; ++i) {
        const std::uint64_t key = owned(w, rng() % per_writer);
        const std::uint64_t value = key << 16 | (i & 0xffff);
        switch (rng() % 4) {
          case 0:
          case 1:
            if (table.insert(key, value) == Status::kOk) {
              EXPECT_FALSE(model.contains(key));
              model[key] = value;
            } else {
              EXPECT_TRUE(model.contains(key));
            }
            break;
          case 2:
            table.insert_or_assign(key, value);
            model[key] = value;
            break;
          default:
            EXPECT_EQ(table.erase(key) == Status::kOk, model.erase(key) == 1);
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(100 + r);
      std::uint64_t mine = 0;
      while (writers_left.load() > 0 || mine < 1000) {
        const std::uint64_t stable = 1 + rng() % kStable;
        const auto found = table.find(stable);
        if (!found || *found != stable * 7) stable_misses.fetch_add(1);
        if (!table.contains(1 + rng() % kStable)) stable_misses.fetch_add(1);  // its own path
        const std::uint64_t churned = owned(rng() % kWriters, rng() % per_writer);
        if (const auto value = table.find(churned); value && *value >> 16 != churned) {
          torn.fetch_add(1);
        }
        ++mine;
      }
      lookups.fetch_add(mine);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(stable_misses.load(), 0u) << "a key nobody touched was missed or misread";
  EXPECT_EQ(torn.load(), 0u) << "a value was found under another key";
  EXPECT_GE(lookups.load(), kReaders * 1000u);
  EXPECT_GE(table.resizes(), 3u) << "the churn was meant to run through resizes";
  std::size_t expected = kStable;
  for (unsigned w = 0; w < kWriters; ++w) {
    expected += models[w].size();
    for (const auto& [key, value] : models[w]) ASSERT_EQ(table.find(key), value) << key;
  }
  EXPECT_EQ(table.size(), expected);
}

// A table as a set (a key maps to itself), for the history checker.
template <class Table>
struct AsSet {
  Table table{2};
  Status insert(std::uint64_t key) { return table.insert(key, key); }
  Status erase(std::uint64_t key) { return table.erase(key); }
  bool contains(std::uint64_t key) const { return table.contains(key); }
};

TYPED_TEST(HashTableContract, SmallHistoriesAreLinearizable) {
  ccf::testing::check_small_histories<ccf::testing::SetModel>(
      [] { return std::make_unique<AsSet<TypeParam>>(); }, ccf::testing::scaled(2000, 4));
}

// The checker itself refuses a set history no order explains: two inserts of one key that both
// succeed, with no erase between them.
TEST(HistoryChecker, RefusesADoubleInsert) {
  using ccf::testing::Operation;
  using ccf::testing::OpKind;
  const std::vector<Operation> bad = {{OpKind::kInsert, 0, true, 0, 1},
                                      {OpKind::kInsert, 0, true, 2, 3}};
  EXPECT_FALSE(ccf::testing::linearizable(bad, ccf::testing::SetModel(1)));
  const std::vector<Operation> ok = {{OpKind::kInsert, 0, true, 0, 1},
                                     {OpKind::kInsert, 0, false, 2, 3}};
  EXPECT_TRUE(ccf::testing::linearizable(ok, ccf::testing::SetModel(1)));
}

}  // namespace
