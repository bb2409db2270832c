// The shared stress test of every concurrent filter: readers continuously look up a resident
// set (inserted first, never erased) while writers insert and erase keys of their own. Every
// other reader uses the filter's batched lookup (contains_many), and every other writer its
// batched insert (insert_many), where it has one.
//
// With writers_outlast_readers, writers run their operations and then go on churning until
// every reader is done, so that every lookup runs while writers insert and erase (and relocate
// fingerprints). Not for filters whose readers take a writer-preferring lock: constant writing
// would starve the readers for good.
//
// Invariants checked: no resident key is ever missed (zero false negatives under concurrent
// relocation); every erase of a key its writer knows is present succeeds; at the end every key
// a writer left inserted is present and size() equals resident + left-in keys exactly.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <concepts>
#include <functional>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "ccf/status.hpp"
#include "test_keys.hpp"

namespace ccf::testing {

template <class Filter>
concept BatchedLookups = requires(const Filter& f, std::span<const std::uint64_t> keys,
                                  std::span<bool> out) {
  f.contains_many(keys, out);
};

template <class Filter>
concept BatchedInserts = requires(Filter& f, std::span<const std::uint64_t> keys) {
  { f.insert_many(keys) } -> std::convertible_to<std::size_t>;
};

struct ChurnConfig {
  std::size_t capacity;
  double resident;  // keys inserted first and never erased, as a fraction of capacity
  double pool;      // the writers' keys together, as a fraction of capacity
  unsigned readers;
  unsigned writers;
  int operations_per_writer;      // at least; writers go on until the readers are done
  std::uint64_t min_lookups = 0;  // readers go on until they did at least this many together
  bool writers_outlast_readers = false;
  std::function<void()> after_fill = {};  // runs once the resident keys are in, before the churn
};

// Returns the number of lookups the readers made (all checked).
template <class Filter>
std::uint64_t churn(Filter& filter, const ChurnConfig& config) {
  const auto capacity = static_cast<double>(config.capacity);
  const auto resident = member_keys(static_cast<std::size_t>(config.resident * capacity), 31);
  for (const auto key : resident) {
    if (filter.insert(key) != Status::kOk) {
      ADD_FAILURE() << "the filter refused a resident key before the churn";
      return 0;
    }
  }
  if (config.after_fill) config.after_fill();
  const auto per_writer = static_cast<std::size_t>(config.pool * capacity) / config.writers;
  const std::uint64_t min_lookups_per_reader = config.min_lookups / config.readers;

  std::atomic<std::uint64_t> misses{0}, lookups{0};
  std::atomic<unsigned> writers_past_quota{0}, readers_done{0};
  std::vector<std::vector<std::uint64_t>> left_in(config.writers);
  std::barrier start(static_cast<std::ptrdiff_t>(config.readers + config.writers));
  {
    std::vector<std::jthread> threads;
    for (unsigned w = 0; w < config.writers; ++w) {
      threads.emplace_back([&, w] {
        // Writer w owns the keys of stream 1000 + w: disjoint from everyone else's.
        const auto mine = member_keys(per_writer, 1000 + w);
        std::vector<bool> present(per_writer, false);
        std::mt19937_64 rng(w);
        // Odd writers of a filter with batched inserts insert runs of absent keys with them.
        const bool batched = w % 2 == 1 && BatchedInserts<Filter>;
        std::vector<std::uint64_t> run;
        const auto step = [&] {
          const std::size_t i = rng() % per_writer;
          if (present[i]) {
            EXPECT_EQ(filter.erase(mine[i]), Status::kOk);
            present[i] = false;
          } else if (!batched) {
            present[i] = filter.insert(mine[i]) == Status::kOk;
          } else if constexpr (BatchedInserts<Filter>) {
            run.clear();
            for (std::size_t j = i; j < per_writer && !present[j] && run.size() < 8; ++j) {
              run.push_back(mine[j]);
            }
            // The leading `stored` keys went in; the rest were not tried (the filter was full).
            const std::size_t stored = filter.insert_many(std::span<const std::uint64_t>(run));
            for (std::size_t k = 0; k < stored; ++k) present[i + k] = true;
          }
        };
        start.arrive_and_wait();
        for (int op = 0; op < config.operations_per_writer; ++op) step();
        writers_past_quota.fetch_add(1);
        while (config.writers_outlast_readers && readers_done.load() < config.readers) step();
        for (std::size_t i = 0; i < per_writer; ++i) {
          if (present[i]) left_in[w].push_back(mine[i]);
        }
      });
    }
    for (unsigned r = 0; r < config.readers; ++r) {
      threads.emplace_back([&, r] {
        std::size_t i = r;
        std::uint64_t local_misses = 0, local_lookups = 0;
        start.arrive_and_wait();
        // Until every writer has done its quota, at least one full pass over the resident set,
        // and this reader's share of min_lookups.
        // Odd readers of a filter with batched lookups use them, in batches of kBatch.
        constexpr std::size_t kBatch = 32;
        const bool batched = r % 2 == 1 && BatchedLookups<Filter>;
        std::array<std::uint64_t, kBatch> keys{};
        std::array<bool, kBatch> found{};
        while (writers_past_quota.load() < config.writers || local_lookups < resident.size() ||
               local_lookups < min_lookups_per_reader) {
          if (!batched) {
            local_misses += !filter.contains(resident[i]);
            ++local_lookups;
            i = (i + 7919) % resident.size();
            continue;
          }
          for (auto& key : keys) {
            key = resident[i];
            i = (i + 7919) % resident.size();
          }
          if constexpr (BatchedLookups<Filter>) {
            local_misses += kBatch - filter.contains_many(std::span<const std::uint64_t>(keys),
                                                          std::span<bool>(found));
          }
          local_lookups += kBatch;
        }
        misses += local_misses;
        lookups += local_lookups;
        readers_done.fetch_add(1);
      });
    }
  }
  EXPECT_EQ(misses.load(), 0u) << "false negatives among " << lookups.load() << " lookups";
  std::size_t expected_size = resident.size();
  for (const auto& keys : left_in) {
    expected_size += keys.size();
    for (const auto key : keys) EXPECT_TRUE(filter.contains(key));
  }
  for (const auto key : resident) EXPECT_TRUE(filter.contains(key));
  EXPECT_EQ(filter.size(), expected_size);
  return lookups.load();
}

}  // namespace ccf::testing
