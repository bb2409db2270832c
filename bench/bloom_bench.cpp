// bloom_bench: the blocked Bloom filters against the memory system (docs/benchmarks.md).
//
// One blocked-filter operation touches one random 64-byte line, so its reference is a probe
// that reads one uniformly random line per operation of a region the size of the filter,
// batched with prefetch (16 operations' lines in flight), measured in the same run at the same
// thread count; beside it, the same probe with one locked OR per operation, the ceiling of any
// concurrent insert that changes a line atomically. For each thread count: the concurrent
// blocked filter's inserts (the whole
// build of --items keys, split between the threads) and lookups of random keys, batched
// (insert_many / contains_many: hash ahead and prefetch) and one call per key; then the
// sequential blocked filter, one thread. Every figure is the median of --rounds rounds, in
// million operations per second. The probe runs right before each measurement, so that on a
// shared machine a figure and its reference see the same load; the ratio column is the median
// of the rounds' figure / probe ratios, the probe row the median of all its runs.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <barrier>
#include <ccf/bloom_filter.hpp>
#include <ccf/detail/page_buffer.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Keys are handed to the filter in chunks of this many, generated in place (in cache).
constexpr std::size_t kChunk = 4096;

// Every timed body's result lands here: an atomic's side effect, so no read is elided.
std::atomic<std::uint64_t> observed{0};

// Million operations per second of `threads` threads each running body(thread, ops) on its
// share of `total` operations, started together behind a barrier.
double mops(unsigned threads, std::uint64_t total,
            const std::function<std::uint64_t(unsigned, std::uint64_t)>& body) {
  std::barrier start(static_cast<std::ptrdiff_t>(threads) + 1);
  std::vector<Clock::time_point> begin(threads), end(threads);
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start.arrive_and_wait();
      begin[t] = Clock::now();
      observed.fetch_add(body(t, total / threads), std::memory_order_relaxed);
      end[t] = Clock::now();
    });
  }
  start.arrive_and_wait();
  workers.clear();  // joins
  const double seconds =
      std::chrono::duration<double>(std::ranges::max(end) - std::ranges::min(begin)).count();
  return static_cast<double>(total / threads * threads) / seconds / 1e6;
}

double median(std::vector<double> values) {
  std::ranges::sort(values);
  return values[values.size() / 2];
}

// One uniformly random line of `region` per operation, 16 operations' lines prefetched ahead.
std::uint64_t probe_lines(const ccf::detail::PageBuffer& region, std::uint64_t stream,
                          std::uint64_t ops) {
  constexpr std::size_t kBatch = 16;
  const std::uint64_t lines = region.size() / 64;
  std::uint64_t sum = 0;
  std::uint64_t counter = ccf::mix64(stream);
  for (std::uint64_t done = 0; done < ops; done += kBatch) {
    const std::byte* line[kBatch];
    for (auto& at : line) {
      at = region.data() + ccf::reduce_range(ccf::mix64(++counter), lines) * 64;
      __builtin_prefetch(at);
    }
    for (const std::byte* at : line) {
      std::uint64_t word;
      std::memcpy(&word, at, sizeof word);
      sum += word;
    }
  }
  return sum;
}

// The same lines, each changed by one locked OR (prefetched for writing 16 operations ahead):
// what any concurrent insert that sets bits in a shared line with an atomic read-modify-write
// pays at the least -- the ceiling of such inserts, whatever their layout. x86's locked
// instructions are full barriers, so the misses of consecutive ones overlap only through the
// prefetches.
void probe_locked_lines(ccf::detail::PageBuffer& region, std::uint64_t stream, std::uint64_t ops) {
  constexpr std::size_t kBatch = 16;
  const std::uint64_t lines = region.size() / 64;
  std::uint64_t counter = ccf::mix64(stream);
  for (std::uint64_t done = 0; done < ops; done += kBatch) {
    std::uint64_t* line[kBatch];
    for (auto& at : line) {
      at = reinterpret_cast<std::uint64_t*>(region.data() +
                                            ccf::reduce_range(ccf::mix64(++counter), lines) * 64);
      __builtin_prefetch(at, 1);
    }
    for (std::uint64_t* at : line) {
      std::atomic_ref<std::uint64_t>(*at).fetch_or(counter & 63, std::memory_order_relaxed);
    }
  }
}

// Thread t's i-th key: mix64 of 2 (256 i + t), + 1 for lookups -- disjoint between threads, and
// lookup keys are never inserted, so their answers are (nearly all) negative.
std::uint64_t key_of(std::uint64_t index, unsigned thread, bool member) {
  return ccf::mix64(2 * ((index << 8) | thread) + (member ? 0 : 1));
}

template <class Filter>
std::uint64_t run_inserts(Filter& filter, unsigned thread, std::uint64_t ops, bool batched) {
  std::vector<std::uint64_t> keys(kChunk);
  for (std::uint64_t done = 0; done < ops; done += kChunk) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, ops - done));
    for (std::size_t i = 0; i < n; ++i) keys[i] = key_of(done + i, thread, true);
    if (batched) {
      filter.insert_many(std::span<const std::uint64_t>(keys.data(), n));
    } else {
      for (std::size_t i = 0; i < n; ++i) filter.insert(keys[i]);
    }
  }
  return ops;
}

template <class Filter>
std::uint64_t run_lookups(const Filter& filter, unsigned thread, std::uint64_t ops, bool batched,
                          std::uint64_t round) {
  std::vector<std::uint64_t> keys(kChunk);
  std::unique_ptr<bool[]> out(new bool[kChunk]);
  std::uint64_t hits = 0;
  for (std::uint64_t done = 0; done < ops; done += kChunk) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, ops - done));
    for (std::size_t i = 0; i < n; ++i) keys[i] = key_of(done + i + (round << 40), thread, false);
    if (batched) {
      hits += filter.contains_many(std::span<const std::uint64_t>(keys.data(), n),
                                   std::span<bool>(out.get(), n));
    } else {
      for (std::size_t i = 0; i < n; ++i) hits += filter.contains(keys[i]);
    }
  }
  return hits;
}

struct Row {
  std::string what;
  unsigned threads;
  double value;
  double ratio;  // to the probe
};

// A measurement taken right after a probe run: its figures and their ratios to the probe.
struct Paired {
  std::vector<double> values, ratios;
  void add(double value, double probe) {
    values.push_back(value);
    ratios.push_back(value / probe);
  }
  Row row(std::string what, unsigned threads) const {
    return {std::move(what), threads, median(values), median(ratios)};
  }
};

// probe() runs the probe once at this thread count and returns its Mops/s.
template <class Filter, class Probe>
void measure_filter(const std::string& name, std::uint64_t items, double bits_per_item,
                    unsigned threads, unsigned rounds, std::uint64_t lookups, Probe&& probe,
                    std::vector<Row>& rows) {
  Filter filter(items, bits_per_item);
  for (const bool batched : {true, false}) {
    const std::string mode = batched ? "batched" : "plain";
    Paired inserts, finds;
    for (unsigned r = 0; r < rounds; ++r) {
      filter.clear();
      const double before_inserts = probe();
      inserts.add(
          mops(threads, items,
               [&](unsigned t, std::uint64_t ops) { return run_inserts(filter, t, ops, batched); }),
          before_inserts);
      const double before_lookups = probe();
      finds.add(mops(threads, lookups,
                     [&](unsigned t, std::uint64_t ops) {
                       return run_lookups(filter, t, ops, batched, r);
                     }),
                before_lookups);
    }
    rows.push_back(inserts.row(name + " insert " + mode, threads));
    rows.push_back(finds.row(name + " lookup " + mode, threads));
  }
  // The filter holds items keys at bits_per_item: its expected rate, as a sanity figure.
  fmt::print("# {} {} threads: {:.2f} bits/item, k = {}, expected FPR {:.4f}\n", name, threads,
             filter.bits_per_item(), filter.hash_count(), filter.expected_fpr());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "bloom_bench: million ops/s of the blocked Bloom filters (concurrent: 1..N threads;\n"
      "sequential: 1 thread), inserts building the whole filter and lookups of random keys,\n"
      "batched and plain, against a one-random-line-per-operation memory probe over a region\n"
      "the size of the filter, measured in the same run. Medians of --rounds rounds."};
  unsigned log2_items = 26;
  double bits_per_item = 10.0;
  std::vector<unsigned> thread_counts{1, 2};
  unsigned rounds = 3;
  double lookups_factor = 1.0;
  app.add_option("--log2-items", log2_items, "items: 2^k")->check(CLI::Range(8u, 31u));
  app.add_option("--bits-per-item", bits_per_item, "bits per item")->check(CLI::Range(1.0, 64.0));
  app.add_option("--threads", thread_counts, "thread counts for the concurrent filter");
  app.add_option("--rounds", rounds, "rounds; medians are reported")->check(CLI::Range(1u, 99u));
  app.add_option("--lookups", lookups_factor, "lookups per round, as a multiple of the items")
      ->check(CLI::Range(0.01, 100.0));
  CLI11_PARSE(app, argc, argv);

  const std::uint64_t items = std::uint64_t{1} << log2_items;
  const auto lookups = static_cast<std::uint64_t>(lookups_factor * static_cast<double>(items));
  const ccf::BlockedBloomFilter shape(items, bits_per_item);
  ccf::detail::PageBuffer region(shape.memory_bytes());
  for (std::size_t at = 0; at < region.size(); at += 64) {  // no page faults while measuring
    const std::uint64_t word = ccf::mix64(at);
    std::memcpy(region.data() + at, &word, sizeof word);
  }
  std::vector<Row> rows;
  for (const unsigned threads : thread_counts) {
    std::vector<double> probes;
    const auto probe = [&] {
      const auto stream = static_cast<std::uint64_t>(probes.size()) << 32;
      probes.push_back(mops(threads, lookups, [&](unsigned t, std::uint64_t ops) {
        return probe_lines(region, stream | t, ops);
      }));
      return probes.back();
    };
    const std::size_t first = rows.size();
    rows.push_back({"probe (1 line/op)", threads, 0, 1});
    Paired locked;
    for (unsigned r = 0; r < rounds; ++r) {
      const double before = probe();
      locked.add(mops(threads, items,
                      [&](unsigned t, std::uint64_t ops) {
                        probe_locked_lines(region, (std::uint64_t{r + 1} << 48) | t, ops);
                        return ops;
                      }),
                 before);
    }
    rows.push_back(locked.row("probe, 1 locked OR/op", threads));
    measure_filter<ccf::ConcurrentBlockedBloomFilter>("concurrent", items, bits_per_item, threads,
                                                      rounds, lookups, probe, rows);
    if (threads == 1) {
      measure_filter<ccf::BlockedBloomFilter>("sequential", items, bits_per_item, 1, rounds,
                                              lookups, probe, rows);
    }
    rows[first].value = median(probes);
  }
  fmt::print("{} items, {:.1f} bits/item, {} MiB; {} rounds, medians\n", items, bits_per_item,
             shape.memory_bytes() >> 20, rounds);
  fmt::print("{:<28} {:>7} {:>9} {:>8}\n", "operation", "threads", "Mops/s", "of probe");
  for (const Row& row : rows) {
    fmt::print("{:<28} {:>7} {:>9.2f} {:>8.2f}\n", row.what, row.threads, row.value, row.ratio);
  }
  return 0;
}
