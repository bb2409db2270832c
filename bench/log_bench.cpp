// log_bench: the log store's figures (docs/log_store.md). For each measure, the median of
// --repeat runs on a fresh store in --dir:
//   put      entries/s and MB/s of user-keyed puts under each fsync policy (every entry,
//            every 64, none)
//   import   MB/s of content-addressed puts (SHA-1 of each chunk), as `ccf log import` does
//   get      lookups/s with the log in the page cache: hits (data read and checksummed) and
//            misses (never-stored keys), on 1 and 2 threads
//   index    bytes of index per live entry
//   recovery seconds to reopen the store (scan, checksums, index), per million entries
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ccf/store/log_store.hpp"

namespace {

namespace fs = std::filesystem;
using ccf::store::LogStore;
using ccf::store::LogStoreOptions;
using ccf::store::SyncPolicy;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::string key_of(std::uint64_t i) {
  return fmt::format("key-{:016}", i);
}

std::string random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

struct Config {
  std::string dir = "log_bench.tmp";
  std::uint64_t entries = 1'000'000;
  std::uint64_t synced_entries = 2000;  // fsync-per-entry runs are far slower: fewer entries
  std::size_t value_bytes = 100;
  std::size_t chunk_bytes = 4096;
  std::uint64_t import_bytes = 256ull << 20;
  std::uint64_t lookups = 1'000'000;
  int repeat = 3;
};

LogStoreOptions with_sync(SyncPolicy policy) {
  LogStoreOptions options;
  options.sync = policy;
  options.sync_every = 64;
  return options;
}

// Fills a fresh store with n user-keyed entries; returns the seconds the puts took.
double fill(const Config& c, SyncPolicy policy, std::uint64_t n) {
  fs::remove_all(c.dir);
  std::mt19937_64 rng(1);
  const std::string value = random_bytes(rng, c.value_bytes);
  LogStore store(c.dir, with_sync(policy));
  const auto start = Clock::now();
  for (std::uint64_t i = 0; i < n; ++i) store.put(key_of(i), value);
  store.sync();
  return seconds_since(start);
}

double lookups_per_second(const LogStore& store, const Config& c, int threads, bool hits) {
  std::vector<std::thread> workers;
  const std::uint64_t each = c.lookups / static_cast<std::uint64_t>(threads);
  std::vector<std::uint64_t> found(static_cast<std::size_t>(threads));
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 10);
      std::uint64_t ok = 0;
      for (std::uint64_t i = 0; i < each; ++i) {
        const std::uint64_t id = rng() % c.entries + (hits ? 0 : c.entries);
        ok += store.get(key_of(id)).has_value();
      }
      found[static_cast<std::size_t>(t)] = ok;
    });
  }
  for (auto& worker : workers) worker.join();
  const double seconds = seconds_since(start);
  for (const std::uint64_t ok : found) {
    if (ok != (hits ? each : 0)) throw std::runtime_error("lookup results are wrong");
  }
  return static_cast<double>(each * static_cast<std::uint64_t>(threads)) / seconds;
}

void run(const Config& c) {
  fmt::print(
      "log_bench: {} entries of {}-byte values (16-byte keys), {} lookups, median of {}, "
      "store in {}\n",
      c.entries, c.value_bytes, c.lookups, c.repeat, fs::absolute(c.dir).string());
  const std::uint64_t entry_bytes = 16 + 20 + c.value_bytes;
  struct Policy {
    const char* name;
    SyncPolicy policy;
    std::uint64_t entries;
  };
  for (const Policy p : {Policy{"fsync every entry", SyncPolicy::kEveryEntry, c.synced_entries},
                         Policy{"fsync every 64", SyncPolicy::kEveryN, c.entries},
                         Policy{"fsync none (once at end)", SyncPolicy::kNone, c.entries}}) {
    std::vector<double> rates;
    for (int r = 0; r < c.repeat; ++r)
      rates.push_back(static_cast<double>(p.entries) / fill(c, p.policy, p.entries));
    const double rate = median(rates);
    fmt::print("put      {:<26} {:>12.0f} entries/s {:>8.1f} MB/s   ({} entries)\n", p.name, rate,
               rate * static_cast<double>(entry_bytes) / 1e6, p.entries);
  }

  std::vector<double> import_rates;
  for (int r = 0; r < c.repeat; ++r) {
    fs::remove_all(c.dir);
    std::mt19937_64 rng(2);
    std::vector<std::string> chunks;
    for (std::uint64_t done = 0; done < c.import_bytes; done += c.chunk_bytes) {
      chunks.push_back(random_bytes(rng, c.chunk_bytes));
    }
    LogStore store(c.dir, with_sync(SyncPolicy::kNone));
    const auto start = Clock::now();
    for (const auto& chunk : chunks) store.put(std::string_view(chunk));
    store.sync();
    import_rates.push_back(static_cast<double>(chunks.size() * c.chunk_bytes) /
                           seconds_since(start));
  }
  fmt::print("import   content-addressed {}-B chunks {:>9.1f} MB/s {:>10.0f} entries/s ({} MiB)\n",
             c.chunk_bytes, median(import_rates) / 1e6,
             median(import_rates) / static_cast<double>(c.chunk_bytes), c.import_bytes >> 20);

  fill(c, SyncPolicy::kNone, c.entries);
  std::vector<double> recovery;
  for (int r = 0; r < c.repeat; ++r) {
    const LogStore store(c.dir, with_sync(SyncPolicy::kNone));
    recovery.push_back(store.recovery().seconds);
  }
  const LogStore store(c.dir, with_sync(SyncPolicy::kNone));
  for (const int threads : {1, 2}) {
    for (const bool hits : {true, false}) {
      std::vector<double> rates;
      for (int r = 0; r < c.repeat; ++r)
        rates.push_back(lookups_per_second(store, c, threads, hits));
      fmt::print("get      {} thread{} {:<17} {:>12.0f} lookups/s\n", threads,
                 threads > 1 ? "s" : " ", hits ? "hits" : "misses", median(rates));
    }
  }
  const auto stats = store.stats();
  fmt::print(
      "index    {:.2f} bytes per live entry ({} buckets, load {:.3f}, {} doublings while "
      "recovering)\n",
      static_cast<double>(stats.index_bytes) / static_cast<double>(stats.live_entries),
      stats.index_buckets, stats.index_load, stats.index_doublings);
  fmt::print("recovery {:.3f} s for {} entries ({} MB): {:.3f} s per million entries\n",
             median(recovery), c.entries, stats.log_bytes / 1000000,
             median(recovery) / (static_cast<double>(c.entries) / 1e6));
  fmt::print("tags     {} log reads to verify, {} of them false tag matches\n", stats.verify_reads,
             stats.false_tag_matches);
  fs::remove_all(c.dir);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{"log_bench: throughput, index size and recovery time of the log store"};
  app.add_option("--dir", c.dir, "Scratch directory (removed afterwards)");
  app.add_option("--entries", c.entries, "Entries per store")->check(CLI::Range(1000, 1 << 28));
  app.add_option("--synced-entries", c.synced_entries, "Entries for the fsync-every-entry run")
      ->check(CLI::Range(10, 1 << 20));
  app.add_option("--value-bytes", c.value_bytes, "Bytes of each value")
      ->check(CLI::Range(0, 1 << 20));
  std::uint64_t import_mib = c.import_bytes >> 20;
  app.add_option("--import-mib", import_mib, "MiB of content-addressed import")
      ->check(CLI::Range(1, 4096));
  app.add_option("--lookups", c.lookups, "Lookups per measure")->check(CLI::Range(1000, 1 << 30));
  app.add_option("--repeat", c.repeat, "Runs per measure (the median is shown)")
      ->check(CLI::Range(1, 21));
  CLI11_PARSE(app, argc, argv);
  c.import_bytes = import_mib << 20;
  try {
    run(c);
  } catch (const std::exception& error) {
    fmt::print(stderr, "log_bench: {}\n", error.what());
    return 1;
  }
  return 0;
}
