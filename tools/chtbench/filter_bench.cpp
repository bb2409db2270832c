#include "filter_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "keys.hpp"
#include "memory_probe.hpp"
#include "parallel.hpp"
#include "workload.hpp"

namespace chtbench {

double FilterResult::lookup_mops() const {
  if (positive_mops <= 0 || negative_mops <= 0) return 0;
  const auto p = static_cast<double>(positive_queries);
  const auto n = static_cast<double>(negative_queries);
  return (p + n) / (p / positive_mops + n / negative_mops);
}

namespace {

constexpr std::uint64_t kPositiveStream = 3;
constexpr std::uint64_t kNegativeStream = 4;
constexpr std::size_t kBatch = 1024;

std::vector<std::uint64_t> random_keys(std::uint64_t seed, std::uint64_t stream, std::size_t n) {
  Rng rng(stream_seed(seed, stream, 0));
  std::vector<std::uint64_t> keys(n);
  for (auto& k : keys) k = rng();
  return keys;
}

// Thread t's share of keys: indices t, t + n, t + 2n, ... (first `count` of them).
template <class F>
void for_share(const std::vector<std::uint64_t>& keys, unsigned t, unsigned n, std::size_t count,
               F f) {
  for (std::size_t j = 0, i = t; j < count && i < keys.size(); ++j, i += n) f(keys[i]);
}

// The checks that need the structure (the CLI checked each option's range). Throws UsageError.
void check_filter_config(const StructureInfo& info, const FilterBenchConfig& c) {
  if (!info.traits.filter) {
    throw UsageError(fmt::format("'{}' is not a filter; `chtbench run` benchmarks it", info.name));
  }
  if (c.threads == 0) throw UsageError("--threads (n) must be at least 1");
  if (c.threads > 1 && !info.traits.thread_safe) {
    throw UsageError(
        fmt::format("'{}' is sequential (not thread-safe): --threads (n) must be 1, not {}",
                    info.name, c.threads));
  }
  if (c.capacity == 0) throw UsageError("--capacity must be at least 1");
  if (!(c.fill > 0 && c.fill <= 1)) {
    throw UsageError(fmt::format("--fill must lie in (0, 1], not {}", c.fill));
  }
  // A lower bound: the filter's items and the positive and negative keys, 8 bytes each.
  const double positive_keys = c.fill * static_cast<double>(c.capacity);
  const double negative_keys = c.negative_queries != 0 ? static_cast<double>(c.negative_queries)
                                                       : std::max(positive_keys, 0x1p20);
  require_memory(
      static_cast<double>(c.capacity) * c.fp_bits / 8 + 8 * (positive_keys + negative_keys),
      fmt::format("--capacity {} at --fp-bits {} and --fill {}", c.capacity, c.fp_bits, c.fill));
}

std::unique_ptr<Structure> build_filter(const StructureInfo& info, const FilterBenchConfig& c) {
  try {
    return info.make({.capacity = c.capacity, .fp_bits = c.fp_bits, .seed = c.seed});
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("cannot build '{}' with --capacity {} and --fp-bits {}: {}",
                                 info.name, c.capacity, c.fp_bits, e.what()));
  }
}

// Fills the filter with `keys` (to --fill); sets the construction figures of r. Returns the
// keys each thread stored: thread t stored keys t, t + n, ... of its first stored[t]. The keys
// past kTailFrom of the slots are a phase of their own, timed apart: the hardest stretch of a
// build, where nearly every insert searches for a cuckoo path.
std::vector<std::size_t> construct(Structure& s, const FilterBenchConfig& c,
                                   const std::vector<std::uint64_t>& keys, FilterResult& r) {
  const unsigned n = c.threads;
  // Construction: each thread inserts its share until the first failure anywhere.
  std::vector<std::size_t> stored(n, 0);
  std::atomic<bool> full{false};
  // Keys [begin, end): thread t inserts those congruent to t mod n, in order. Returns seconds.
  const auto fill = [&](std::size_t begin, std::size_t end) {
    return parallel_phase(s, c.pin, n, [&](unsigned t) {
      std::size_t mine = 0;
      // Relaxed: the flag only shortens the other threads' loops.
      const auto go_on = [&] { return !full.load(std::memory_order_relaxed); };
      const std::size_t first = begin + (t + n - begin % n) % n;
      if (c.insert_batch == 0) {
        for (std::size_t i = first; i < end && go_on(); i += n) {
          if (!s.insert(keys[i])) {
            full.store(true, std::memory_order_relaxed);
            break;
          }
          ++mine;
        }
      } else {
        std::vector<std::uint64_t> batch;
        batch.reserve(c.insert_batch);
        for (std::size_t i = first; i < end && go_on();) {
          batch.clear();
          for (; i < end && batch.size() < c.insert_batch; i += n) batch.push_back(keys[i]);
          const std::size_t done = s.insert_many(batch);
          mine += done;
          if (done < batch.size()) {
            full.store(true, std::memory_order_relaxed);
            break;
          }
        }
      }
      stored[t] += mine;
    });
  };
  const auto tail_begin =
      std::min(keys.size(), static_cast<std::size_t>(kTailFrom * static_cast<double>(r.slots)));
  const double head_seconds = fill(0, tail_begin);
  const std::size_t head_items = std::accumulate(stored.begin(), stored.end(), std::size_t{0});
  const double tail_seconds =
      full.load() || tail_begin == keys.size() ? 0 : fill(tail_begin, keys.size());
  r.filled_to_failure = full.load();
  r.items = std::accumulate(stored.begin(), stored.end(), std::size_t{0});
  r.construction_mops = static_cast<double>(r.items) / (head_seconds + tail_seconds) / 1e6;
  r.construction_tail_mops = r.items > head_items && head_items == tail_begin
                                 ? static_cast<double>(r.items - head_items) / tail_seconds / 1e6
                                 : std::numeric_limits<double>::quiet_NaN();
  r.memory_bytes = s.memory_bytes();
  r.load_factor = s.load_factor();
  r.bits_per_item =
      r.items == 0 ? 0 : 8.0 * static_cast<double>(r.memory_bytes) / static_cast<double>(r.items);
  return stored;
}

// Plain and batched lookups of the stored keys and of keys never inserted; false negatives and
// the false-positive rate.
void measure_lookups(Structure& s, const FilterBenchConfig& c,
                     const std::vector<std::uint64_t>& keys, const std::vector<std::size_t>& stored,
                     FilterResult& r) {
  const unsigned n = c.threads;
  r.positive_queries = r.items;
  r.negative_queries =
      c.negative_queries != 0 ? c.negative_queries : std::max<std::uint64_t>(r.items, 1u << 20);
  const std::vector<std::uint64_t> negatives =
      random_keys(c.seed, kNegativeStream, r.negative_queries);
  const auto neg_share = [&](unsigned t) { return (negatives.size() - t + n - 1) / n; };

  // Lookups of `set`, each thread its share, kBatch keys at a time: plain through contains_each
  // (one lookup call per key, in a loop as a user writes it), batched through contains_many.
  std::atomic<std::uint64_t> hits{0};
  const auto lookups = [&](const std::vector<std::uint64_t>& set, auto share, bool batched) {
    hits = 0;
    return parallel_phase(s, c.pin, n, [&](unsigned t) {
      std::vector<std::uint64_t> batch;
      batch.reserve(kBatch);
      const auto out = std::make_unique<bool[]>(kBatch);
      std::uint64_t mine = 0;
      const auto flush = [&] {
        const std::span<bool> found(out.get(), batch.size());
        mine += batched ? s.contains_many(batch, found) : s.contains_each(batch, found);
        batch.clear();
      };
      for_share(set, t, n, share(t), [&](std::uint64_t k) {
        batch.push_back(k);
        if (batch.size() == kBatch) flush();
      });
      flush();
      hits.fetch_add(mine, std::memory_order_relaxed);  // relaxed: read after the join
    });
  };
  const auto pos_share = [&](unsigned t) { return stored[t]; };
  const auto mops = [](std::uint64_t q, double seconds) {
    return static_cast<double>(q) / seconds / 1e6;
  };

  r.positive_mops = mops(r.positive_queries, lookups(keys, pos_share, false));
  r.false_negatives = r.positive_queries - hits.load();
  r.negative_mops = mops(r.negative_queries, lookups(negatives, neg_share, false));
  r.false_positives = hits.load();
  r.fpr = static_cast<double>(r.false_positives) / static_cast<double>(r.negative_queries);
  r.positive_batched_mops = mops(r.positive_queries, lookups(keys, pos_share, true));
  r.negative_batched_mops = mops(r.negative_queries, lookups(negatives, neg_share, true));
}

}  // namespace

FilterResult run_filter_benchmark(const StructureInfo& info, FilterBenchConfig c) {
  c.structure = info.name;
  check_filter_config(info, c);
  const std::unique_ptr<Structure> s = build_filter(info, c);

  FilterResult r;
  r.config = c;
  r.slots = s->capacity();
  const auto to_insert = static_cast<std::size_t>(
      std::llround(c.fill * static_cast<double>(std::max<std::size_t>(r.slots, 1))));
  const std::vector<std::uint64_t> keys = random_keys(c.seed, kPositiveStream, to_insert);
  const std::vector<std::size_t> stored = construct(*s, c, keys, r);
  measure_lookups(*s, c, keys, stored, r);

  const MemoryProbe probe(r.memory_bytes);
  r.limit_mops =
      measure_limit_mops(probe, c.threads, std::chrono::milliseconds(c.probe_ms),
                         [&](unsigned t) { Topology::get().pin_current_thread(c.pin, t); });
  return r;
}

}  // namespace chtbench
