// Tests of the concurrent Bloom filters (bloom_filter.hpp, AtomicWordAccess) and of the batches
// of every Bloom filter: the same bits as the sequential filters, model-based checks of the
// no-false-negative rule, and stress runs with more threads than cores whose invariants are
// checked while they run -- a key whose insert a reader saw acknowledged (release / acquire on
// the writer's progress counter) must be found by that reader, and an erase of a key its thread
// inserted never fails.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "acknowledged_reader.hpp"
#include "ccf/bloom_filter.hpp"
#include "sanitizer_scale.hpp"
#include "test_keys.hpp"

namespace {

// Key streams of different threads: mix64 XORs its seed in first, so seeds that differ only
// above bit 40 keep the streams (inputs below 2^40) disjoint.
std::uint64_t thread_salt(int thread) {
  return static_cast<std::uint64_t>(thread + 1) << 40;
}

using ccf::Status;

// Pairs of (sequential, concurrent) filters of one layout.
template <class Sequential, class Concurrent>
struct Pair {
  using Seq = Sequential;
  using Conc = Concurrent;
};
using StandardPair = Pair<ccf::BloomFilter, ccf::ConcurrentBloomFilter>;
using BlockedPair = Pair<ccf::BlockedBloomFilter, ccf::ConcurrentBlockedBloomFilter>;
using CountingPair = Pair<ccf::CountingBloomFilter, ccf::ConcurrentCountingBloomFilter>;

template <class P>
class BloomPairTest : public ::testing::Test {};
using Pairs = ::testing::Types<StandardPair, BlockedPair, CountingPair>;
struct PairNames {
  template <class P>
  static std::string GetName(int) {
    if constexpr (std::is_same_v<P, StandardPair>) return "Standard";
    if constexpr (std::is_same_v<P, BlockedPair>) return "Blocked";
    return "Counting";
  }
};
TYPED_TEST_SUITE(BloomPairTest, Pairs, PairNames);

template <class Filter>
std::string saved(const Filter& filter) {
  std::ostringstream out;
  filter.save(out);
  return out.str();
}

// One layout, one set of keys: the sequential filter, the concurrent one, and each through
// insert_many, hold the very same words (their files are byte for byte equal), and every
// lookup path agrees.
TYPED_TEST(BloomPairTest, SameBitsAsSequentialThroughEveryPath) {
  using Seq = typename TypeParam::Seq;
  using Conc = typename TypeParam::Conc;
  const auto keys = ccf::testing::member_keys(5000);
  const auto others = ccf::testing::non_member_keys(5000);
  Seq seq(5000, 12);
  Conc conc(5000, 12);
  Seq seq_batch(5000, 12);
  Conc conc_batch(5000, 12);
  for (const std::uint64_t key : keys) {
    EXPECT_EQ(seq.insert(key), Status::kOk);
    EXPECT_EQ(conc.insert(key), Status::kOk);
  }
  EXPECT_EQ(seq_batch.insert_many(std::span<const std::uint64_t>(keys)), keys.size());
  EXPECT_EQ(conc_batch.insert_many(std::span<const std::uint64_t>(keys)), keys.size());
  const std::string bytes = saved(seq);
  EXPECT_EQ(saved(conc), bytes);
  EXPECT_EQ(saved(seq_batch), bytes);
  EXPECT_EQ(saved(conc_batch), bytes);
  EXPECT_EQ(conc.size(), keys.size());

  std::vector<std::uint64_t> mixed(keys.begin(), keys.begin() + 1000);
  mixed.insert(mixed.end(), others.begin(), others.begin() + 1000);
  const std::size_t room = mixed.size() + 3;  // longer than needed: the tail stays untouched
  std::unique_ptr<bool[]> out(new bool[room]());
  const std::span<bool> flags(out.get(), room);
  const std::size_t hits = conc.contains_many(std::span<const std::uint64_t>(mixed), flags);
  std::size_t expected_hits = 0;
  for (std::size_t i = 0; i < mixed.size(); ++i) {
    EXPECT_EQ(flags[i], seq.contains(mixed[i])) << i;
    EXPECT_EQ(flags[i], conc.contains(mixed[i])) << i;
    if (i < 1000) {
      EXPECT_TRUE(flags[i]);
    }
    expected_hits += flags[i];
  }
  EXPECT_EQ(hits, expected_hits);
  EXPECT_FALSE(flags[mixed.size()]);
  EXPECT_THROW(
      conc.contains_many(std::span<const std::uint64_t>(mixed), flags.first(mixed.size() - 1)),
      std::invalid_argument);
}

// String keys go through the batches too.
TYPED_TEST(BloomPairTest, StringBatches) {
  typename TypeParam::Conc filter(1000, 10);
  std::vector<std::string> owned;
  for (int i = 0; i < 1000; ++i) owned.push_back("user:" + std::to_string(i));
  const std::vector<std::string_view> keys(owned.begin(), owned.end());
  filter.insert_many(std::span<const std::string_view>(keys));
  std::unique_ptr<bool[]> out(new bool[keys.size()]);
  EXPECT_EQ(filter.contains_many(std::span<const std::string_view>(keys),
                                 std::span<bool>(out.get(), keys.size())),
            keys.size());
  for (const auto& key : keys) EXPECT_TRUE(filter.contains(key));
}

// Model-based: random inserts, lookups (single and batched) and, for the counting layout,
// erases of keys the model holds, against a multiset; no key the model holds is ever missed, and
// size() follows the model.
TYPED_TEST(BloomPairTest, ModelNoFalseNegative) {
  constexpr bool kCounting = std::is_same_v<TypeParam, CountingPair>;
  auto run = [](auto& filter) {
    std::mt19937_64 rng(42);
    std::multiset<std::uint64_t> model;
    std::vector<std::uint64_t> batch;
    std::unique_ptr<bool[]> out(new bool[64]);
    const int steps = ccf::testing::scaled(20000, 4);
    for (int step = 0; step < steps; ++step) {
      const std::uint64_t key = rng() % 3000;  // small universe: repeats and re-inserts
      switch (rng() % 4) {
        case 0:
        case 1:
          EXPECT_EQ(filter.insert(key), Status::kOk);
          model.insert(key);
          break;
        case 2:
          if constexpr (kCounting) {
            if (const auto it = model.find(key); it != model.end()) {
              ASSERT_EQ(filter.erase(key), Status::kOk) << "step " << step;
              model.erase(it);
            }
          }
          break;
        default:
          batch.clear();
          for (int i = 0; i < 64; ++i) batch.push_back(rng() % 3000);
          filter.contains_many(std::span<const std::uint64_t>(batch),
                               std::span<bool>(out.get(), 64));
          for (int i = 0; i < 64; ++i) {
            if (model.count(batch[i]) != 0) {
              ASSERT_TRUE(out[i]) << "batched false negative at step " << step;
              ASSERT_TRUE(filter.contains(batch[i])) << "false negative at step " << step;
            }
          }
      }
      ASSERT_EQ(filter.size(), model.size());
    }
    for (const std::uint64_t key : model) ASSERT_TRUE(filter.contains(key));
  };
  typename TypeParam::Seq seq(2000, 16);
  run(seq);
  typename TypeParam::Conc conc(2000, 16);
  run(conc);
}

// More threads than cores: writers insert disjoint keys (half one by one, half in batches) and
// publish their progress with a release store; readers acquire a writer's progress and look up
// keys below it, one by one and in batches: every one must be found, at that moment.
TYPED_TEST(BloomPairTest, StressAcknowledgedKeysAlwaysFound) {
  using Filter = typename TypeParam::Conc;
  constexpr int kWriters = 6;
  constexpr int kReaders = 4;
  const std::size_t per_writer = ccf::testing::scaled<std::size_t>(40000, 8);
  Filter filter(kWriters * per_writer, 10);
  std::vector<std::vector<std::uint64_t>> keys;
  for (int w = 0; w < kWriters; ++w) {
    keys.push_back(ccf::testing::member_keys(per_writer, thread_salt(w)));
  }
  std::vector<std::atomic<std::size_t>> done(kWriters);
  std::atomic<int> writing{kWriters};
  std::atomic<std::uint64_t> misses{0};
  std::atomic<std::uint64_t> checked{0};
  std::barrier start(kWriters + kReaders);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      start.arrive_and_wait();
      const std::span<const std::uint64_t> mine(keys[w]);
      for (std::size_t i = 0; i < mine.size();) {
        const std::size_t n = std::min<std::size_t>(i % 2 == 0 ? 1 : 32, mine.size() - i);
        if (n == 1) {
          filter.insert(mine[i]);
        } else {
          filter.insert_many(mine.subspan(i, n));
        }
        i += n;
        done[w].store(i, std::memory_order_release);  // acknowledges keys [0, i)
      }
      writing.fetch_sub(1, std::memory_order_release);
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      start.arrive_and_wait();
      ccf::testing::read_acknowledged_keys(filter, keys, done, writing,
                                           static_cast<std::uint64_t>(r), 16, misses, checked);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(misses.load(), 0u) << "of " << checked.load() << " lookups of acknowledged keys";
  EXPECT_GT(checked.load(), 0u);
  for (const auto& mine : keys) {
    for (const std::uint64_t key : mine) ASSERT_TRUE(filter.contains(key));
  }
  EXPECT_EQ(filter.size(), kWriters * per_writer);  // exact once every insert has returned
}

// Counting: each thread keeps its stable keys in and churns others (insert, then erase);
// erasing a key its thread inserted never fails whatever the others erase meanwhile, readers
// always find every stable key already acknowledged, and at the end only the stable keys count.
TEST(ConcurrentCountingBloomFilter, StressChurnKeepsStableKeys) {
  constexpr int kThreads = 8;
  const std::size_t stable = ccf::testing::scaled<std::size_t>(5000, 5);
  const std::size_t rounds = ccf::testing::scaled<std::size_t>(20000, 10);
  ccf::ConcurrentCountingBloomFilter filter(kThreads * (stable + 16), 32);
  std::vector<std::atomic<std::size_t>> done(kThreads);
  std::atomic<std::uint64_t> failures{0};
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto keys = ccf::testing::member_keys(stable, thread_salt(t));
      const auto churn = ccf::testing::non_member_keys(16, thread_salt(t));
      std::mt19937_64 rng(static_cast<std::uint64_t>(t));
      std::uint64_t local = 0;
      start.arrive_and_wait();
      for (std::size_t i = 0; i < rounds; ++i) {
        if (i < stable) {
          filter.insert(keys[i]);
          done[t].store(i + 1, std::memory_order_release);
        }
        const std::uint64_t c = churn[i % churn.size()];
        filter.insert(c);
        local += filter.erase(c) != Status::kOk;
        // Another thread's acknowledged stable key.
        const auto other = static_cast<int>(rng() % kThreads);
        const std::size_t acknowledged = done[other].load(std::memory_order_acquire);
        if (acknowledged != 0) {
          const auto theirs = ccf::mix64(2 * (rng() % acknowledged), thread_salt(other));
          local += !filter.contains(theirs);
        }
      }
      failures.fetch_add(local);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0u);
  for (int t = 0; t < kThreads; ++t) {
    for (const std::uint64_t key : ccf::testing::member_keys(stable, thread_salt(t))) {
      ASSERT_TRUE(filter.contains(key));
    }
  }
  EXPECT_EQ(filter.size(), kThreads * std::min(stable, rounds));
}

// A concurrent filter saved while writers run loads with every key acknowledged before save
// began (and the file is well formed, whatever it caught of the rest).
TEST(ConcurrentBlockedBloomFilter, SaveBesideInserts) {
  const std::size_t count = ccf::testing::scaled<std::size_t>(200000, 10);
  ccf::ConcurrentBlockedBloomFilter filter(2 * count, 10);
  const auto first = ccf::testing::member_keys(count, 7);
  const auto second = ccf::testing::member_keys(count, 8);
  filter.insert_many(std::span<const std::uint64_t>(first));
  std::thread writer([&] { filter.insert_many(std::span<const std::uint64_t>(second)); });
  std::stringstream file;
  filter.save(file);
  writer.join();
  const auto loaded = ccf::BlockedBloomFilter::load(file);
  for (const std::uint64_t key : first) ASSERT_TRUE(loaded.contains(key));
}

}  // namespace
