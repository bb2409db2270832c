// quiescent_lookup_bench: the lock-free filter against the striped one on a table that fits in
// cache, after writers churned it and left (docs/benchmarks.md, docs/lockfree.md).
//
// Per round and filter (F = 8, 4 slots, 2^L buckets, growth off): a thread fills the table to
// --load and exits; another erases and re-inserts every other key and exits; then
//   lookups  T threads look up resident keys (their own random order), --ops each;
//   mix      T threads run 90% lookups of resident keys, 5% erases and 5% inserts: each thread
//            owns every T-th key of the churned half, erases one it holds and inserts one it
//            erased, so the load stays where the fill left it.
// The filters alternate within each round; each figure is the median of --rounds rounds.
// The tables alone, last: one thread probes random buckets of each filter's table (KcasTable:
// seven 8-bit slots per 63-bit K-CAS word, a bucket may straddle two words; AtomicPackedTable:
// one 32-bit bucket), the part of a lookup that the layout decides -- the ceiling a lock-free
// lookup in cache can reach against the striped one while it keeps the packed layout.
// Every lookup of a resident key must succeed: a miss is a false negative, reported and made
// the exit status. The words a K-CAS changed hold plain values again once it returns
// (lockfree/kcas.hpp), so the lookups read no descriptor; --kcas-stats prints the count.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <ccf/concurrent/striped_cuckoo_filter.hpp>
#include <ccf/hash.hpp>
#include <ccf/lockfree/lock_free_cuckoo_filter.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using LockFree = ccf::LockFreeCuckooFilter<8, ccf::lockfree::KcasStats>;
using Striped = ccf::StripedCuckooFilter<8, 4>;

struct Setup {
  unsigned log2_buckets = 12;
  double load = 0.95;
  std::uint64_t ops = 4'000'000;
  unsigned rounds = 3;
  std::vector<unsigned> threads{1, 2, 8};
};

struct Result {
  double lookups_mops = 0;
  double mix_mops = 0;
  std::uint64_t false_negatives = 0;
  std::uint64_t reads_through_descriptor = 0;  // lock-free only: during the timed lookups
};

std::uint64_t key_of(std::uint64_t i) {
  return ccf::mix64(i + 0x5eed);
}

template <class Filter>
std::unique_ptr<Filter> make(const Setup& s) {
  const std::size_t slots = std::size_t{4} << s.log2_buckets;
  ccf::FilterOptions options;
  options.max_load = 1.0;  // exactly 2^L buckets
  if constexpr (std::is_same_v<Filter, LockFree>) {
    return std::make_unique<Filter>(slots, LockFree::Options{options, false});
  } else {
    return std::make_unique<Filter>(slots, options);
  }
}

// Runs body(thread index) on `threads` threads; returns the seconds from start to the last.
template <class Body>
double timed(unsigned threads, Body body) {
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      body(t);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const auto start = Clock::now();
  go.store(true);
  for (std::thread& t : pool) t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

template <class Filter>
Result run(const Setup& s, unsigned threads) {
  auto filter = make<Filter>(s);
  const std::size_t slots = std::size_t{4} << s.log2_buckets;
  const auto target = static_cast<std::size_t>(s.load * static_cast<double>(slots));
  std::size_t stored = 0;
  std::thread([&] {  // the fill, by a thread that exits
    while (stored < target && filter->insert(key_of(stored)) == ccf::Status::kOk) ++stored;
  })
      .join();
  std::thread([&] {  // the churn, by another
    for (std::size_t i = 0; i < stored; i += 2) (void)filter->erase(key_of(i));
    for (std::size_t i = 0; i < stored; i += 2) (void)filter->insert(key_of(i));
  })
      .join();

  Result r;
  std::atomic<std::uint64_t> misses{0};
  std::uint64_t through_before = 0;
  if constexpr (std::is_same_v<Filter, LockFree>) {
    through_before = filter->kcas().stats().reads_through_descriptor.load();
  }
  const double lookup_s = timed(threads, [&](unsigned t) {
    std::mt19937_64 rng(t + 1);
    std::uint64_t missed = 0;
    for (std::uint64_t i = 0; i < s.ops; ++i) missed += !filter->contains(key_of(rng() % stored));
    misses.fetch_add(missed);
  });
  r.lookups_mops = static_cast<double>(s.ops * threads) / lookup_s / 1e6;
  if constexpr (std::is_same_v<Filter, LockFree>) {
    r.reads_through_descriptor =
        filter->kcas().stats().reads_through_descriptor.load() - through_before;
  }

  // The mix: the odd keys stay (looked up); thread t owns the even keys i with i / 2 = t mod T.
  const double mix_s = timed(threads, [&](unsigned t) {
    std::vector<std::uint64_t> held, erased;
    for (std::size_t i = 2 * t; i < stored; i += 2 * threads) held.push_back(key_of(i));
    std::mt19937_64 rng(t + 101);
    std::uint64_t missed = 0;
    for (std::uint64_t i = 0; i < s.ops; ++i) {
      const std::uint64_t pick = rng() % 20;
      if (pick == 0 && !held.empty()) {  // 5% erases of a key this thread holds
        const std::size_t at = rng() % held.size();
        (void)filter->erase(held[at]);
        erased.push_back(held[at]);
        held[at] = held.back();
        held.pop_back();
      } else if (pick == 1 && !erased.empty()) {  // 5% inserts of a key it erased
        if (filter->insert(erased.back()) == ccf::Status::kOk) held.push_back(erased.back());
        erased.pop_back();
      } else {
        missed += !filter->contains(key_of(2 * (rng() % (stored / 2)) + 1));
      }
    }
    misses.fetch_add(missed);
  });
  r.mix_mops = static_cast<double>(s.ops * threads) / mix_s / 1e6;
  r.false_negatives = misses.load();
  return r;
}

volatile std::uint64_t probe_sink = 0;

// Bucket probes per second (millions) of a table, one thread, random buckets in cache.
template <class Table>
double probe_rate(const Table& table, std::uint64_t buckets, std::uint64_t ops) {
  std::vector<std::uint32_t> at(1 << 16);
  std::mt19937_64 rng(5);
  for (std::uint32_t& b : at) b = static_cast<std::uint32_t>(rng() % buckets);
  std::uint64_t found = 0;
  const auto start = Clock::now();
  for (std::uint64_t i = 0; i < ops; ++i) {
    found += table.contains(at[i & 0xffff], static_cast<std::uint32_t>(i & 0xff) | 1);
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  probe_sink = found;  // keeps the probes
  return static_cast<double>(ops) / s / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Setup s;
  CLI::App app{"lock-free vs striped cuckoo filter lookups on a churned, quiescent table"};
  app.add_option("--log2-buckets", s.log2_buckets, "table of 2^L buckets x 4 slots")
      ->check(CLI::Range(4u, 26u));
  app.add_option("--load", s.load, "fill to this load")->check(CLI::Range(0.1, 0.96));
  app.add_option("--ops", s.ops, "operations per thread per phase")
      ->check(CLI::Range(std::uint64_t{1000}, std::uint64_t{1} << 32));
  app.add_option("--rounds", s.rounds, "rounds (the median is reported)")
      ->check(CLI::Range(1u, 99u));
  app.add_option("--threads", s.threads, "thread counts")->check(CLI::Range(1u, 256u));
  CLI11_PARSE(app, argc, argv);

  std::map<unsigned, std::vector<Result>> lf, st;
  for (unsigned round = 0; round < s.rounds; ++round) {
    for (unsigned t : s.threads) {
      lf[t].push_back(run<LockFree>(s, t));
      st[t].push_back(run<Striped>(s, t));
    }
  }
  fmt::print("2^{} buckets x 4 slots, F = 8, load {:.2f}, {} ops per thread, median of {}\n",
             s.log2_buckets, s.load, s.ops, s.rounds);
  fmt::print("{:>7} | {:>10} {:>10} {:>6} | {:>10} {:>10} {:>6} | {:>9} {:>13}\n", "threads",
             "lf lookup", "st lookup", "ratio", "lf mix", "st mix", "ratio", "false neg",
             "lf desc reads");
  std::uint64_t false_negatives = 0;
  for (unsigned t : s.threads) {
    std::vector<double> a, b, c, d;
    std::uint64_t through = 0;
    for (const Result& r : lf[t]) {
      a.push_back(r.lookups_mops);
      c.push_back(r.mix_mops);
      false_negatives += r.false_negatives;
      through += r.reads_through_descriptor;
    }
    for (const Result& r : st[t]) {
      b.push_back(r.lookups_mops);
      d.push_back(r.mix_mops);
      false_negatives += r.false_negatives;
    }
    // Ratios of the same round, then their median (the machine's noise cancels within a round).
    std::vector<double> lookup_ratio, mix_ratio;
    for (std::size_t i = 0; i < a.size(); ++i) {
      lookup_ratio.push_back(a[i] / b[i]);
      mix_ratio.push_back(c[i] / d[i]);
    }
    fmt::print(
        "{:>7} | {:>10.2f} {:>10.2f} {:>6.2f} | {:>10.2f} {:>10.2f} {:>6.2f} | {:>9} {:>13}\n", t,
        median(a), median(b), median(lookup_ratio), median(c), median(d), median(mix_ratio),
        false_negatives, through);
  }
  // The tables alone (empty: a probe's cost does not depend on the contents).
  using LockFreeTable = ccf::lockfree::KcasTable<8, ccf::lockfree::Kcas<3>>;
  const std::uint64_t buckets = std::uint64_t{1} << s.log2_buckets;
  ccf::lockfree::Kcas<3> kcas;
  std::vector<ccf::lockfree::KcasWord> words(LockFreeTable::payload_bytes(buckets) / 8);
  const LockFreeTable lock_free_table(kcas, words.data(), buckets);
  const ccf::AtomicPackedTable<8, 4> striped_table(buckets);
  std::vector<double> lf_probe, st_probe, ratio;
  for (unsigned round = 0; round < s.rounds; ++round) {
    lf_probe.push_back(probe_rate(lock_free_table, buckets, 4 * s.ops));
    st_probe.push_back(probe_rate(striped_table, buckets, 4 * s.ops));
    ratio.push_back(lf_probe.back() / st_probe.back());
  }
  fmt::print(
      "table probes alone (M buckets/s, 1 thread): lock-free {:.1f}, striped {:.1f}, ratio "
      "{:.2f}\n",
      median(lf_probe), median(st_probe), median(ratio));
  return false_negatives == 0 ? 0 : 1;
}
