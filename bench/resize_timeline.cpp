// resize_timeline: chtbench's resize experiment (docs/benchmarks.md) as a timeline. T threads
// (--threads) run 60% lookups, 35% inserts and 5% erases (chtbench's -u 40 --insert-pct 35) on
// random keys of [1, 2i] for --ms, on a table holding i keys: one made for i / 0.9 keys ("from90",
// 90% full: it grows during the run) and one made for 2i ("sized_r": room for every key, it never
// grows), alternating for --rounds. It prints each run's rate in every --bin-ms window and the
// windows in which the run saw its table resizing, so that what chtbench gives as one ratio for a
// whole run shows in its parts: the windows before the resize (the table between its sizing and
// its growth load), during it, and after it.
//
//   resize_timeline [--structure cuckoo-map] [--log2-items 22] [--ms 3000] [--bin-ms 100]
//                   [--rounds 3] [--threads 2]
//
// Exit status 1 if a table's size after a run is not its initial keys plus the inserts that
// succeeded less the erases that did: a resize that lost or duplicated an item.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ccf/status.hpp"
#include "ccf/tables/clht_lb.hpp"
#include "ccf/tables/clht_lf.hpp"
#include "ccf/tables/cuckoo_map.hpp"
#include "ccf/tables/hopscotch_map.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// splitmix64: the key and operation stream of one thread.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() noexcept {
    std::uint64_t z = state += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

struct Config {
  std::size_t items;
  unsigned threads, ms, bin_ms;
};

struct Timeline {
  std::vector<double> mops;    // per window
  std::vector<bool> resizing;  // per window: a thread saw the table resizing
  double mops_all = 0;         // over the whole run
  std::uint64_t resizes = 0;
};

// Operations a thread runs between two looks at the clock, the stop flag and resizing().
constexpr std::size_t kStep = 4096;

template <class Table>
Timeline run(const Config& c, std::size_t capacity, std::uint64_t seed) {
  Table table(capacity);
  const std::uint64_t range = 2 * c.items;
  Rng fill{seed};
  for (std::size_t held = 0; held < c.items;) {
    held += table.insert(fill.next() % range + 1, 1) == ccf::Status::kOk ? 1 : 0;
  }
  const std::size_t windows = (c.ms + c.bin_ms - 1) / c.bin_ms;
  struct PerThread {
    std::vector<std::uint64_t> ops;  // per window
    std::vector<bool> resizing;      // per window: seen resizing
    std::int64_t net = 0;            // inserts less erases that succeeded
    std::uint64_t total = 0;
  };
  std::vector<PerThread> per(c.threads);
  std::atomic<bool> stop{false};
  std::barrier start(static_cast<std::ptrdiff_t>(c.threads) + 1);
  Clock::time_point t0;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < c.threads; ++t) {
    pool.emplace_back([&, t] {
      PerThread& mine = per[t];
      mine.ops.assign(windows, 0);
      mine.resizing.assign(windows, false);
      Rng rng{seed * 1000 + t + 1};
      start.arrive_and_wait();
      // Relaxed: the flag only ends the loop; the counts are read after the join.
      while (!stop.load(std::memory_order_relaxed)) {
        for (std::size_t k = 0; k < kStep; ++k) {
          const std::uint64_t draw = rng.next();
          const std::uint64_t key = draw % range + 1;
          const unsigned pick = static_cast<unsigned>((draw >> 44) % 100);
          if (pick < 60) {
            static_cast<void>(table.contains(key));
          } else if (pick < 95) {
            mine.net += table.insert(key, key) == ccf::Status::kOk ? 1 : 0;
          } else {
            mine.net -= table.erase(key) == ccf::Status::kOk ? 1 : 0;
          }
        }
        const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
        const auto w =
            std::min<std::size_t>(static_cast<std::size_t>(since.count()) / c.bin_ms, windows - 1);
        mine.ops[w] += kStep;
        mine.total += kStep;
        if (table.resizing()) mine.resizing[w] = true;
      }
    });
  }
  t0 = Clock::now();
  start.arrive_and_wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(c.ms));
  stop.store(true, std::memory_order_relaxed);
  for (auto& th : pool) th.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  Timeline out;
  std::int64_t net = 0;
  std::uint64_t total = 0;
  for (std::size_t w = 0; w < windows; ++w) {
    std::uint64_t ops = 0;
    bool resizing = false;
    for (const PerThread& p : per) {
      ops += p.ops[w];
      resizing = resizing || p.resizing[w];
    }
    const double span_ms =
        static_cast<double>(std::min<std::size_t>(c.bin_ms, c.ms - w * c.bin_ms));
    out.mops.push_back(static_cast<double>(ops) / span_ms / 1e3);
    out.resizing.push_back(resizing);
  }
  for (const PerThread& p : per) {
    net += p.net;
    total += p.total;
  }
  out.mops_all = static_cast<double>(total) / seconds / 1e6;
  out.resizes = table.resizes();
  const auto expected = static_cast<std::int64_t>(c.items) + net;
  if (static_cast<std::int64_t>(table.size()) != expected) {
    throw std::runtime_error(
        fmt::format("the table holds {} items after the run, not {}", table.size(), expected));
  }
  return out;
}

using Runner = std::function<Timeline(const Config&, std::size_t, std::uint64_t)>;
const std::map<std::string, Runner> kTables = {
    {"clht-lb", run<ccf::ClhtLb>},
    {"clht-lf", run<ccf::ClhtLf>},
    {"cuckoo-map", run<ccf::CuckooMap<std::uint64_t, std::uint64_t>>},
    {"hopscotch", run<ccf::HopscotchMap<32>>}};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the resize experiment as a timeline: each window's rate, and the resize's windows"};
  std::string structure = "cuckoo-map";
  unsigned log2_items = 22, rounds = 3;
  Config c{.items = 0, .threads = 2, .ms = 3000, .bin_ms = 100};
  std::vector<std::string> names;
  for (const auto& [name, runner] : kTables) names.push_back(name);
  app.add_option("--structure", structure, "the table")->check(CLI::IsMember(names));
  app.add_option("--log2-items", log2_items, "i = 2^N keys to start with")
      ->check(CLI::Range(10u, 26u));
  app.add_option("--ms", c.ms, "length of each run")->check(CLI::Range(100u, 60'000u));
  app.add_option("--bin-ms", c.bin_ms, "length of a window")->check(CLI::Range(10u, 10'000u));
  app.add_option("--rounds", rounds, "rounds (each runs from90, then sized_r)")
      ->check(CLI::Range(1u, 50u));
  app.add_option("--threads", c.threads, "threads")->check(CLI::Range(1u, 256u));
  CLI11_PARSE(app, argc, argv);
  c.items = std::size_t{1} << log2_items;
  const Runner& runner = kTables.at(structure);
  const auto from90 = static_cast<std::size_t>(static_cast<double>(c.items) / 0.9);
  fmt::print(
      "# {}: i = {}, {} threads, 60% lookups / 35% inserts / 5% erases on [1, 2i], {} ms, "
      "windows of {} ms; M ops/s per window, [R] where the run saw the table resizing\n",
      structure, c.items, c.threads, c.ms, c.bin_ms);
  try {
    for (unsigned r = 0; r < rounds; ++r) {
      for (const auto& [label, capacity] :
           {std::pair<const char*, std::size_t>{"from90", from90}, {"sized_r", 2 * c.items}}) {
        const Timeline t = runner(c, capacity, r + 1);
        std::string line;
        for (std::size_t w = 0; w < t.mops.size(); ++w) {
          line += t.resizing[w] ? fmt::format(" [{:.1f}]", t.mops[w])
                                : fmt::format(" {:.1f}", t.mops[w]);
        }
        fmt::print("round {} {:8} {:.2f} M ops/s, resizes {}:{}\n", r + 1, label, t.mops_all,
                   t.resizes, line);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "resize_timeline: {}\n", e.what());
    return 1;
  }
}
