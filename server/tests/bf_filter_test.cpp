// BfFilter, the value behind one BF.* key: the promises it adds to the library's scalable Bloom
// filter (server/bf/filter.hpp, points 1-4) and its dump. A model test with tiny sub-filters
// (growth on nearly every add), the dump pieces (SCANDUMP's chunks, LOADCHUNK's checks, a
// whole dump restored), and concurrent tests with more threads than cores: racing adds of
// one new item answer kAdded exactly once, and no acknowledged item is ever missed while the
// key grows.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sanitizer_scale.hpp"
#include "server/bf/filter.hpp"

namespace {

using ccf::BloomAddResult;
using ccf::ScalableBloomOptions;
using ccf::serve::BfFilter;

std::string item(std::uint64_t i) {
  return std::string("item:").append(std::to_string(i));
}

ScalableBloomOptions options(std::uint64_t capacity, double error_rate, std::uint32_t expansion) {
  ScalableBloomOptions o;
  o.capacity = capacity;
  o.error_rate = error_rate;
  o.expansion = expansion;
  return o;
}

// The fewest sub-filters of capacities c, c*e, c*e^2, ... that hold `items` (at least one).
std::uint64_t filters_for(std::uint64_t items, std::uint64_t capacity, std::uint64_t expansion) {
  std::uint64_t filters = 1, total = capacity;
  for (std::uint64_t next = capacity; total < items; ++filters) {
    next *= expansion;
    total += next;
  }
  return filters;
}

TEST(BfFilterModel, EveryAddedItemIsFoundAndTheCountsFollowTheAdds) {
  for (const std::uint32_t expansion : {1u, 2u, 3u}) {
    BfFilter filter(options(2, 0.01, expansion));
    std::set<std::string> added;  // items whose add answered kAdded
    std::mt19937_64 random(expansion);
    for (int op = 0; op < ccf::testing::scaled(3000, 5); ++op) {
      const std::string key = item(random() % 2000);
      const BloomAddResult result = filter.add(key);
      ASSERT_NE(result, BloomAddResult::kFull);
      ASSERT_NE(result, BloomAddResult::kNoMemory);
      // kPresent for an item not added before is a false positive: allowed, counted nowhere.
      if (result == BloomAddResult::kAdded) {
        ASSERT_TRUE(added.insert(key).second) << key;
      }
      ASSERT_TRUE(filter.contains(key)) << key;
    }
    for (const std::string& key : added) ASSERT_TRUE(filter.contains(key)) << key;
    const BfFilter::Info info = filter.info();
    EXPECT_EQ(info.items, added.size());
    EXPECT_EQ(info.filters, filters_for(added.size(), 2, expansion)) << "expansion " << expansion;
    EXPECT_EQ(info.expansion, expansion);
  }
}

TEST(BfFilterModel, ANonScalingFilterStopsAtItsCapacityAndAddInOrderStopsThere) {
  BfFilter filter(options(3, 0.01, 0));
  const std::vector<std::string_view> items = {"a", "b", "a", "c", "d", "e"};
  const std::vector<BloomAddResult> results = filter.add_in_order(items);
  const std::vector<BloomAddResult> expected = {BloomAddResult::kAdded, BloomAddResult::kAdded,
                                                BloomAddResult::kPresent, BloomAddResult::kAdded,
                                                BloomAddResult::kFull};
  EXPECT_EQ(results, expected);
  EXPECT_EQ(filter.info().items, 3u);
  EXPECT_EQ(filter.info().filters, 1u);
  EXPECT_EQ(filter.add("b"), BloomAddResult::kPresent);  // present answers 0 even when full
}

// Follows SCANDUMP's iterators from 1, as a client does.
std::vector<std::pair<long long, std::string>> scan(const BfFilter& filter) {
  std::vector<std::pair<long long, std::string>> chunks;
  for (std::uint64_t iterator = 1;;) {
    const std::optional<std::string> chunk = filter.chunk(iterator);
    if (!chunk) break;
    iterator += chunk->size();
    chunks.emplace_back(static_cast<long long>(iterator), *chunk);
  }
  return chunks;
}

TEST(BfFilterDump, ChunksAreTheSubFiltersAndLoadBackIntoAFilterMadeFromTheHeader) {
  BfFilter filter(options(10, 0.01, 2));
  for (int i = 0; i < 200; ++i) filter.add(item(i));
  const auto subs = filter.sub_filters();
  const auto chunks = scan(filter);
  ASSERT_EQ(chunks.size(), subs.size());  // no sub-filter here exceeds a chunk's 16 MiB
  for (std::size_t k = 0; k < subs.size(); ++k) EXPECT_EQ(chunks[k].second.size(), subs[k].bytes);

  const std::unique_ptr<BfFilter> copy = BfFilter::from_header(filter.header());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->info().items, filter.info().items);  // counters at once, bits later
  for (const auto& [iterator, data] : chunks) {
    ASSERT_EQ(copy->load_chunk(iterator, data), BfFilter::LoadResult::kOk);
  }
  for (int i = 0; i < 200; ++i) EXPECT_EQ(copy->contains(item(i)), filter.contains(item(i)));
  EXPECT_EQ(copy->dump()->blobs, filter.dump()->blobs);
}

TEST(BfFilterDump, LoadChunkChecksInTheContractsOrder) {
  BfFilter filter(options(4, 0.1, 2));
  const std::uint64_t bytes = filter.sub_filters()[0].bytes;
  const std::string fits(bytes, '\xff');
  EXPECT_EQ(filter.load_chunk(0, "x"), BfFilter::LoadResult::kBadData);
  EXPECT_EQ(filter.load_chunk(-9, "x"), BfFilter::LoadResult::kBadData);
  EXPECT_EQ(filter.load_chunk(3, "abcd"), BfFilter::LoadResult::kBadData);  // iterator < length
  EXPECT_EQ(filter.load_chunk(4, "abcd"), BfFilter::LoadResult::kNoLink);   // before byte 0
  EXPECT_EQ(filter.load_chunk(922337203685477588, "1"), BfFilter::LoadResult::kNoLink);
  EXPECT_EQ(filter.load_chunk(static_cast<long long>(bytes) + 2, fits + "!"),
            BfFilter::LoadResult::kTooBig);
  EXPECT_EQ(filter.load_chunk(static_cast<long long>(bytes) + 1, fits), BfFilter::LoadResult::kOk);
  EXPECT_TRUE(filter.contains("anything"));  // every bit set now
  EXPECT_EQ(filter.info().items, 0u);        // counters untouched
}

TEST(BfFilterDump, ARestoredDumpAnswersAlikeAndABadOneIsRefused) {
  BfFilter filter(options(5, 0.001, 3));
  for (int i = 0; i < 100; ++i) filter.add(item(i));
  const auto dump = filter.dump();
  std::string data;
  for (const std::string& blob : dump->blobs) data += blob;
  const std::unique_ptr<BfFilter> restored = BfFilter::restore(dump->header, data);
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->info().items, filter.info().items);
  EXPECT_EQ(restored->info().filters, filter.info().filters);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(restored->contains(item(i)));

  EXPECT_EQ(BfFilter::restore(dump->header, data.substr(1)), nullptr);  // data one byte short
  EXPECT_EQ(BfFilter::restore(dump->header, data + "x"), nullptr);      // one byte long
  for (std::size_t at = 0; at < dump->header.size(); at += 7) {
    std::string damaged = dump->header;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x40);
    EXPECT_EQ(BfFilter::from_header(damaged), nullptr) << "byte " << at;
  }
  EXPECT_EQ(BfFilter::from_header(dump->header.substr(0, dump->header.size() - 1)), nullptr);
}

constexpr int kThreads = 8;  // more than the two cores

TEST(BfFilterConcurrent, RacingAddsOfOneNewItemAnswerAddedExactlyOnce) {
  BfFilter filter(options(4, 0.01, 2));  // small: the races also meet growth
  constexpr int kItems = ccf::testing::scaled(2000, 10);
  std::vector<std::atomic<int>> added(kItems);
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < kItems; ++i) {
        if (filter.add(item(i)) == BloomAddResult::kAdded) added[i].fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::uint64_t total = 0;
  for (int i = 0; i < kItems; ++i) {
    ASSERT_LE(added[i].load(), 1) << item(i);  // 0 only for a false positive
    total += static_cast<std::uint64_t>(added[i].load());
    ASSERT_TRUE(filter.contains(item(i)));
  }
  EXPECT_EQ(filter.info().items, total);
}

TEST(BfFilterConcurrent, NoAcknowledgedItemIsMissedWhileTheKeyGrows) {
  BfFilter filter(options(8, 0.01, 2));
  constexpr int kWriters = kThreads / 2;
  constexpr int kPerWriter = ccf::testing::scaled(4000, 10);
  // acknowledged[w]: how many of writer w's items have had their add return (release).
  std::vector<std::atomic<int>> acknowledged(kWriters);
  std::atomic<int> writers_left{kWriters};
  std::atomic<long long> missed{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kPerWriter; ++i) {
        const std::string key = item(static_cast<std::uint64_t>(w) * kPerWriter + i);
        if (i % 3 == 0) {
          const std::string_view one[] = {key};
          filter.add_in_order(one);
        } else {
          filter.add(key);
        }
        acknowledged[w].store(i + 1, std::memory_order_release);
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int r = 0; r < kThreads - kWriters; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 random(r);
      while (writers_left.load() > 0) {
        const int w = static_cast<int>(random() % kWriters);
        const int done = acknowledged[w].load(std::memory_order_acquire);
        if (done == 0) continue;
        const int i = static_cast<int>(random() % static_cast<std::uint64_t>(done));
        if (!filter.contains(item(static_cast<std::uint64_t>(w) * kPerWriter + i))) {
          missed.fetch_add(1);
        }
        (void)filter.info();  // counters read beside the writers
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(missed.load(), 0);
  for (int k = 0; k < kWriters * kPerWriter; ++k) ASSERT_TRUE(filter.contains(item(k))) << k;
  EXPECT_GT(filter.info().filters, 5u);
}

}  // namespace
