// CfFilter, the filter behind one key of `ccf serve`: a model test (random adds and deletes of
// added items against a multiset, tiny sub-filters so that growth and shared fingerprints are
// frequent), RedisBloom's growth-and-delete failure mode, and a concurrent stress test with
// more threads than cores in which no acknowledged item may ever be missed.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ccf/detail/filter_format.hpp"
#include "sanitizer_scale.hpp"
#include "server/cf/filter.hpp"

namespace {

using ccf::serve::AddResult;
using ccf::serve::CfFilter;
using ccf::serve::CfParams;

// Strings are appended, not joined with operator+: GCC 12 warns wrongly (-Wrestrict) on that.
std::string item(std::uint64_t i) {
  return std::string("item:").append(std::to_string(i));
}

CfParams params(std::uint64_t buckets, unsigned bucket_size, unsigned expansion) {
  CfParams p;
  p.buckets = buckets;
  p.bucket_size = bucket_size;
  p.expansion = expansion;
  return p;
}

constexpr int kModelOperations = ccf::testing::scaled(200000, 10);

struct Shape {
  std::uint64_t buckets;
  unsigned bucket_size;
  unsigned expansion;
};

class CfFilterModel : public ::testing::TestWithParam<Shape> {};

TEST_P(CfFilterModel, AgreesWithAMultisetAndNeverMissesAnAddedItem) {
  const Shape shape = GetParam();
  CfFilter filter(params(shape.buckets, shape.bucket_size, shape.expansion));
  std::map<std::string, std::uint64_t> model;  // item -> copies added and not deleted
  std::uint64_t live = 0;
  std::mt19937_64 random(shape.buckets * 31 + shape.bucket_size * 7 + shape.expansion);
  std::uniform_int_distribution<std::uint64_t> universe(0, 400);  // repeats are frequent
  for (int op = 0; op < kModelOperations; ++op) {
    const std::string key = item(universe(random));
    if (random() % 512 == 0) filter.compact(true);  // moves copies; changes no answer
    switch (random() % 4) {
      case 0:
        if (random() % 2 == 0) {  // CF.INSERT's way: the batch pipeline, then one by one
          std::vector<std::string> batch;
          for (std::uint64_t n = 1 + random() % 6; n-- > 0;)
            batch.push_back(item(universe(random)));
          const std::vector<std::string_view> views(batch.begin(), batch.end());
          const std::size_t added = filter.add_many(views);
          ASSERT_LE(added, batch.size());
          for (std::size_t i = 0; i < batch.size(); ++i) {
            if (i >= added && filter.add(batch[i], false) != AddResult::kAdded) continue;
            ++model[batch[i]];
            ++live;
          }
          break;
        }
        [[fallthrough]];
      case 1: {
        const bool nx = random() % 4 == 0;
        const bool present_before = filter.contains(key);
        const AddResult result = filter.add(key, nx);
        if (result == AddResult::kAdded) {
          ++model[key];
          ++live;
        } else if (result == AddResult::kPresent) {
          ASSERT_TRUE(nx && present_before);
        } else {
          // Full without expansion; else out of sub-filters, or (expansion > 1) of the
          // addressing's 16 doublings: repeats of one item fill each sub-filter's 2b slots.
          if (shape.expansion == 0) {
            ASSERT_EQ(result, AddResult::kFull);
          } else if (shape.expansion == 1) {
            ASSERT_EQ(result, AddResult::kMaxExpansions);
          } else {
            ASSERT_TRUE(result == AddResult::kMaxExpansions || result == AddResult::kNoMemory);
          }
        }
        break;
      }
      case 2: {  // delete an added item (the precondition of every cuckoo filter's delete)
        const auto it = model.lower_bound(key);
        if (it == model.end()) break;
        ASSERT_TRUE(filter.erase(it->first)) << it->first;
        --live;
        if (--it->second == 0) model.erase(it);
        break;
      }
      default: {
        if (random() % 4 == 0) {  // CF.MEXISTS's way: answers as contains() one by one
          std::vector<std::string> batch;
          for (std::uint64_t n = 1 + random() % 8; n-- > 0;)
            batch.push_back(item(universe(random)));
          const std::vector<std::string_view> views(batch.begin(), batch.end());
          std::unique_ptr<bool[]> found = std::make_unique<bool[]>(batch.size());
          filter.contains_many(views, {found.get(), batch.size()});
          for (std::size_t i = 0; i < batch.size(); ++i) {
            ASSERT_EQ(found[i], filter.contains(batch[i])) << batch[i];
            ASSERT_TRUE(found[i] || !model.contains(batch[i])) << batch[i];
          }
          break;
        }
        const auto it = model.find(key);
        if (it == model.end()) break;
        ASSERT_TRUE(filter.contains(key)) << key;
        ASSERT_GE(filter.count(key), it->second) << key;
      }
    }
  }
  for (const auto& [key, copies] : model) {
    ASSERT_TRUE(filter.contains(key)) << key;
    ASSERT_GE(filter.count(key), copies) << key;
  }
  EXPECT_EQ(filter.info().items, live);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CfFilterModel,
                         ::testing::Values(Shape{2, 1, 1}, Shape{4, 2, 1}, Shape{8, 4, 1},
                                           Shape{16, 2, 0}, Shape{64, 1, 0}, Shape{64, 4, 1},
                                           Shape{1, 2, 2}, Shape{2, 1, 2}, Shape{1, 4, 4},
                                           Shape{2, 2, 16}),
                         [](const auto& test) {
                           std::string name = "b";  // appended: see key() below
                           name.append(std::to_string(test.param.buckets)).append("x");
                           name.append(std::to_string(test.param.bucket_size)).append("e");
                           return name.append(std::to_string(test.param.expansion));
                         });

// RedisBloom loses items here: a filter grown to many sub-filters, then every other item
// deleted. Every remaining item must still be found.
class CfFilterGrowth : public ::testing::TestWithParam<unsigned> {};

TEST_P(CfFilterGrowth, ThenDeletesLoseNoItem) {
  const unsigned expansion = GetParam();
  // Expansion 1: 512 slots per sub-filter, 24 or so of them; expansion 2: 64, 128, ... slots.
  CfFilter filter(params(expansion == 1 ? 256 : 32, 2, expansion));
  constexpr int kItems = 12000;
  for (int i = 0; i < kItems; ++i) {
    ASSERT_EQ(filter.add(item(static_cast<std::uint64_t>(i)), false), AddResult::kAdded) << i;
  }
  const CfFilter::Info grown = filter.info();
  ASSERT_GE(grown.filters, expansion == 1 ? 20u : 8u);
  for (int i = 0; i < kItems; i += 2) {
    ASSERT_TRUE(filter.erase(item(static_cast<std::uint64_t>(i)))) << i;
  }
  int missing = 0;
  for (int i = 1; i < kItems; i += 2)
    missing += !filter.contains(item(static_cast<std::uint64_t>(i)));
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(filter.info().items, static_cast<std::uint64_t>(kItems / 2));
}

INSTANTIATE_TEST_SUITE_P(Expansions, CfFilterGrowth, ::testing::Values(1u, 2u));

TEST(CfFilter, RefusesOnceItHasThirtyTwoSubFilters) {
  CfFilter filter(params(1, 2, 1));
  std::uint64_t i = 0;
  AddResult result = AddResult::kAdded;
  for (; i < 10000 && result == AddResult::kAdded; ++i) result = filter.add(item(i), false);
  EXPECT_EQ(result, AddResult::kMaxExpansions);
  EXPECT_EQ(filter.info().filters, CfFilter::kMaxFilters);
  EXPECT_TRUE(filter.at_max_filters());
}

// Sub-filter k is 2^(k log2 e) times the first; past the addressing's 16 doublings the filter
// cannot grow and says so.
TEST(CfFilter, GrowsByItsExpansionUntilTheAddressingEnds) {
  CfFilter filter(params(1, 2, 256));  // 2 slots, then 512, then 131072: the next needs 24 bits
  std::uint64_t i = 0;
  AddResult result = AddResult::kAdded;
  for (; i < 200000 && result == AddResult::kAdded; ++i) result = filter.add(item(i), false);
  EXPECT_EQ(result, AddResult::kNoMemory);
  EXPECT_EQ(filter.info().filters, 3u);
  for (std::uint64_t j = 0; j + 1 < i; ++j) ASSERT_TRUE(filter.contains(item(j))) << j;
}

// The contract's insert (CF-COMMANDS.md, "Insert"): a filter grows only when no sub-filter has
// a free slot in the item's pair. Copies of one item fill its pair (2 buckets of 2 slots) in the
// newest sub-filter and then in the older one before a third sub-filter is made.
TEST(CfFilter, GrowsOnlyWhenNoSubFilterHasAFreeSlotForTheItem) {
  CfFilter filter(params(1024, 2, 1));
  for (int copy = 1; copy <= 4; ++copy) ASSERT_EQ(filter.add("x", false), AddResult::kAdded);
  ASSERT_EQ(filter.info().filters, 1u);
  ASSERT_EQ(filter.add("x", false), AddResult::kAdded);  // x's pair is full: a second sub-filter
  ASSERT_EQ(filter.info().filters, 2u);
  // y: four copies in the newest sub-filter, then four in the older one, then growth.
  for (int copy = 1; copy <= 8; ++copy) {
    ASSERT_EQ(filter.add("y", false), AddResult::kAdded) << copy;
    ASSERT_EQ(filter.info().filters, 2u) << "grew at y's copy " << copy;
  }
  ASSERT_EQ(filter.add("y", false), AddResult::kAdded);
  EXPECT_EQ(filter.info().filters, 3u);
  EXPECT_EQ(filter.count("x"), 5u);
  EXPECT_EQ(filter.count("y"), 9u);
  // Deletes take the newest copies first; every copy stays countable until its own delete.
  for (std::uint64_t left = 9; left-- > 0;) {
    ASSERT_TRUE(filter.erase("y"));
    ASSERT_EQ(filter.count("y"), left);
  }
  EXPECT_TRUE(filter.contains("x"));
}

// Items stored in each sub-filter, from the dump's blobs (the library's filter files, whose
// header counts them: docs/file-format.md).
std::vector<std::uint64_t> items_per_sub_filter(const CfFilter& filter) {
  const std::shared_ptr<const CfFilter::Dump> dump = filter.dump(CfFilter::DumpUse::kSnapshot);
  std::vector<std::uint64_t> items;
  for (const std::string& blob : dump->blobs) {
    std::istringstream in(blob);
    items.push_back(ccf::detail::HeaderCodec::read(in).items);
  }
  return items;
}

// The contract's insert order: a free slot of the item's pair in any sub-filter, newest first,
// before the newest sub-filter's path search. One-slot buckets, so pairs fill early: once the
// key has grown, the adds whose pair is full in the newest sub-filter (which a path search
// there would still place, at under a third of its slots) take free slots of the older one.
// CF.ADD's path and CF.INSERT's (add_many, then add) alike.
TEST(CfFilter, AnOlderSubFilterFreeSlotComesBeforeTheNewestsPathSearch) {
  for (const bool batch : {false, true}) {
    SCOPED_TRACE(batch ? "add_many" : "add");
    CfFilter filter(params(1024, 1, 1));
    for (int copy = 1; copy <= 3; ++copy) ASSERT_EQ(filter.add("x", false), AddResult::kAdded);
    ASSERT_EQ(items_per_sub_filter(filter), (std::vector<std::uint64_t>{2, 1}));
    std::vector<std::string> keys;
    for (int i = 0; i < 300; ++i) keys.push_back(std::string("k").append(std::to_string(i)));
    if (batch) {
      const std::vector<std::string_view> views(keys.begin(), keys.end());
      const std::size_t batched = filter.add_many(views);
      EXPECT_EQ(batched, 0u) << "a grown key takes no batch";
      for (std::size_t i = batched; i < keys.size(); ++i) {
        ASSERT_EQ(filter.add(keys[i], false), AddResult::kAdded);
      }
    } else {
      for (const std::string& key : keys) ASSERT_EQ(filter.add(key, false), AddResult::kAdded);
    }
    const std::vector<std::uint64_t> items = items_per_sub_filter(filter);
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0] + items[1], 303u);
    EXPECT_GT(items[0], 2u) << "no add took an older sub-filter's free slot";
    for (const std::string& key : keys) EXPECT_TRUE(filter.contains(key)) << key;
  }
}

TEST(CfFilter, WithoutExpansionAFullFilterSaysFullAndKeepsItsItems) {
  CfFilter filter(params(512, 1, 0));
  EXPECT_EQ(filter.add("x", false), AddResult::kAdded);
  EXPECT_EQ(filter.add("x", false), AddResult::kAdded);
  EXPECT_EQ(filter.add("x", false), AddResult::kFull);
  EXPECT_EQ(filter.count("x"), 2u);
  EXPECT_EQ(filter.info().filters, 1u);
}

// 8 threads on 2 cores: 4 add their own items (and delete every third one again), 3 read the
// items already acknowledged (one by one and in batches), 1 compacts the sub-filters again and
// again. No acknowledged, undeleted item may be missed at any moment.
TEST(CfFilter, ConcurrentAddsDeletesAndLookupsMissNothing) {
  CfFilter filter(params(2048, 2, 1));       // 4096 slots per sub-filter: grows during the run
  constexpr int kWriters = 4, kReaders = 3;  // and one thread compacting
  constexpr std::uint64_t kPerWriter = ccf::testing::scaled<std::uint64_t>(20000, 5);
  // acknowledged[w]: items 0 .. acknowledged[w] - 1 of writer w are added (and the deleted
  // ones, i % 3 == 2, deleted) -- published with release after the add returns.
  std::array<std::atomic<std::uint64_t>, kWriters> acknowledged{};
  std::atomic<int> writers_done{0};
  std::atomic<std::uint64_t> misses{0}, full{0};
  std::barrier start(kWriters + kReaders + 1);
  const auto key = [](int writer, std::uint64_t i) {
    return std::string("w").append(std::to_string(writer)).append(":").append(std::to_string(i));
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < kPerWriter; ++i) {
        if (filter.add(key(w, i), false) != AddResult::kAdded) {
          full.fetch_add(1);
          break;
        }
        // The item two places back with i % 3 == 2 is deleted (it stays acknowledged).
        if (i % 3 == 2 && !filter.erase(key(w, i))) misses.fetch_add(1);
        acknowledged[w].store(i + 1, std::memory_order_release);
      }
      writers_done.fetch_add(1);
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      start.arrive_and_wait();
      std::mt19937_64 random(static_cast<std::uint64_t>(r));
      while (writers_done.load() < kWriters) {
        const int w = static_cast<int>(random() % kWriters);
        const std::uint64_t known = acknowledged[w].load(std::memory_order_acquire);
        if (known == 0) continue;
        if (r % 2 == 0) {
          const std::uint64_t i = random() % known;
          if (i % 3 != 2 && !filter.contains(key(w, i))) misses.fetch_add(1);
          continue;
        }
        // CF.MEXISTS's batch: 16 acknowledged items that are never deleted (i % 3 != 2).
        std::vector<std::string> batch;
        for (int n = 0; n < 16; ++n) batch.push_back(key(w, random() % known / 3 * 3));
        const std::vector<std::string_view> views(batch.begin(), batch.end());
        bool found[16];
        filter.contains_many(views, found);
        for (const bool hit : found) misses.fetch_add(hit ? 0 : 1);
      }
    });
  }
  threads.emplace_back([&] {
    start.arrive_and_wait();
    while (writers_done.load() < kWriters) {
      filter.compact(true);
      std::this_thread::yield();
    }
  });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(full.load(), 0u);
  EXPECT_EQ(misses.load(), 0u);
  std::uint64_t kept = 0;
  for (int w = 0; w < kWriters; ++w) {
    for (std::uint64_t i = 0; i < kPerWriter; ++i) {
      if (i % 3 == 2) continue;
      ++kept;
      ASSERT_TRUE(filter.contains(key(w, i))) << key(w, i);
    }
  }
  EXPECT_EQ(filter.info().items, kept);
}

}  // namespace
