// The reader side of the Bloom filters' stress tests: writer w publishes how many of its keys
// keys[w] it has acknowledged in done[w] (release), and a reader looks up random acknowledged
// keys -- a batch through contains_many and each one through contains -- until `writing` falls
// to 0. Every one of those lookups must hit: once an insert has returned, no lookup that starts
// afterwards may miss its key. Adds the lookups made and the misses seen to the totals.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

namespace ccf::testing {

template <class Filter>
void read_acknowledged_keys(const Filter& filter,
                            const std::vector<std::vector<std::uint64_t>>& keys,
                            const std::vector<std::atomic<std::size_t>>& done,
                            const std::atomic<int>& writing, std::uint64_t seed,
                            std::size_t batch_size, std::atomic<std::uint64_t>& misses,
                            std::atomic<std::uint64_t>& checked) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> batch(batch_size);
  const std::unique_ptr<bool[]> out = std::make_unique<bool[]>(batch_size);
  std::uint64_t local_misses = 0;
  std::uint64_t local_checked = 0;
  do {
    const auto w = static_cast<std::size_t>(rng() % keys.size());
    const std::size_t acknowledged = done[w].load(std::memory_order_acquire);
    if (acknowledged == 0) continue;
    for (auto& key : batch) key = keys[w][rng() % acknowledged];
    filter.contains_many(std::span<const std::uint64_t>(batch),
                         std::span<bool>(out.get(), batch_size));
    for (std::size_t i = 0; i < batch.size(); ++i) {
      local_misses += !out[i];
      local_misses += !filter.contains(batch[i]);
    }
    local_checked += 2 * batch.size();
  } while (writing.load(std::memory_order_acquire) != 0);
  misses.fetch_add(local_misses);
  checked.fetch_add(local_checked);
}

}  // namespace ccf::testing
