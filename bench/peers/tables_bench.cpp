// Side-by-side benchmark of concurrent hash maps (64-bit keys and values): ccf's ClhtLb, ClhtLf,
// CuckooMap and HopscotchMap<32> beside growt (uaGrow, usGrow, folklore), Boost.Unordered's
// concurrent_flat_map, ParlayHash's parlay_unordered_map, libcuckoo's cuckoohash_map and TBB's
// concurrent_hash_map, each peer compiled in when its HAVE_* macro is defined.
//
// Not built by CMake (it needs the peers' headers): bench/peers/tables.sh builds and runs it
// against checkouts of their repositories (its header has the commands).
//
// Workloads, after tools/chtbench's hash-table workload (bench/table_growth.py's build and churn
// runs): i keys (--items) are distinct keys of [1, r], r = 2i, chosen uniformly; the tables see
// mix63 of each, a bijection on [0, 2^63) that keeps 0 at 0, so the keys are random-looking,
// non-zero and below 2^63 (growt's slots use bit 63 as a mark and 2^63 - 1 as a tombstone).
//  build_empty_T     T threads (--threads) insert the i keys, split evenly, into a table built
//                    for growth (ccf and libcuckoo: constructed with capacity 1; growt,
//                    ParlayHash, TBB: with 0, their smallest; Boost: default constructed):
//                    M inserts/s = i / seconds
//  build_reserved_T  the same into a table sized for i (constructed with i; Boost: reserve(i))
//  B/item            RSS growth from before construction to after the build (/proc/self/statm),
//                    / i, the build threads' stacks and malloc arenas included as for every
//                    table; for ccf also memory_bytes() / i
//  lookups_T         (T = --op-threads, 2) a table built sized for i: T threads look up keys of
//                    [1, r] drawn uniformly (half present) for --ms: M lookups/s
//  mix_90_5_5_T      then on the same table: 90% lookups, 5% inserts, 5% erases of keys drawn
//                    uniformly from [1, r] (the table stays about half full): M ops/s
// Every table runs in a child process of its own (fork per measurement), so that tables do not
// share RSS or allocator state. Threads are not pinned (chtbench's default) and start together
// at a barrier; a phase lasts from the first thread's start to the last one's end
// (steady_clock). Each round runs every job over every table, the table order rotating between
// rounds; the summary gives medians over rounds.
// Checks (a failure ends the run): every build insert succeeds; after a build, size() is i
// where the table has an exact size, every 16th inserted key is found and as many absent keys
// are not; lookups find i / r of their keys (within 1%); after the mix, size() is i plus the
// inserts less the erases that succeeded.
// growt's folklore cannot grow (no build_empty) and its erase leaves a tombstone that no insert
// reuses and nothing clears (growt's own deletion test leaves it out), so it has no mix row.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ccf/hash.hpp"
#include "ccf/tables/clht_lb.hpp"
#include "ccf/tables/clht_lf.hpp"
#include "ccf/tables/cuckoo_map.hpp"
#include "ccf/tables/hopscotch_map.hpp"

#ifdef HAVE_GROWT
#define XXH3  // growt's CMake default hash (utils/default_hash.hpp)
#include "allocator/alignedallocator.hpp"
#include "data-structures/table_config.hpp"
#include "utils/default_hash.hpp"
#endif
#ifdef HAVE_BOOST
#include <boost/unordered/concurrent_flat_map.hpp>
#include <boost/version.hpp>
#endif
#ifdef HAVE_PARLAY
#include "parlay_hash/unordered_map.h"
#endif
#ifdef HAVE_LIBCUCKOO
#include <libcuckoo/cuckoohash_map.hh>
#endif
#ifdef HAVE_TBB
#include <tbb/concurrent_hash_map.h>
#include <tbb/version.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
using Key = std::uint64_t;

[[noreturn]] void fail(const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  std::fputs("tables_bench: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(3);  // also from a child: no destructors of state it shares with the parent
}

// A bijection on [0, 2^63): xor-shifts and odd multipliers modulo 2^63 (fmix64's steps).
constexpr Key kMask63 = (Key{1} << 63) - 1;
Key mix63(Key x) {
  x ^= x >> 31;
  x = (x * 0xff51afd7ed558ccdULL) & kMask63;
  x ^= x >> 29;
  x = (x * 0xc4ceb9fe1a85ec53ULL) & kMask63;
  return x ^ (x >> 32);
}

// splitmix64's sequence; below(n) is uniform in [0, n) (multiply-shift, as chtbench).
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = s += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return ccf::reduce_range(next(), n); }
};

// ---- adapters: A(n) (n = 0: built for growth), handle() per thread, insert / contains / erase
// of key k with value k, size() where exact, memory_bytes() where the table reports it.
template <class Map>
struct Ccf {
  static constexpr bool kGrows = true, kErases = true;
  Map t;
  explicit Ccf(std::size_t n) : t(n == 0 ? 1 : n) {}
  Ccf& handle() { return *this; }
  bool insert(Key k) { return t.insert(k, k) == ccf::Status::kOk; }
  bool contains(Key k) { return t.contains(k); }
  bool erase(Key k) { return t.erase(k) == ccf::Status::kOk; }
  std::optional<std::size_t> size() { return t.size(); }
  std::optional<std::size_t> memory_bytes() { return t.memory_bytes(); }
};

#ifdef HAVE_GROWT
template <hmod... Mods>
using GrowtTable = typename growt::table_config<Key, Key, utils_tm::hash_tm::default_hash,
                                                growt::AlignedAllocator<>, Mods...>::table_type;

// The growing tables need a handle per thread; folklore's handle is the table itself.
template <class M, bool Grows>
struct Growt {
  static constexpr bool kGrows = Grows, kErases = Grows;
  M t;
  explicit Growt(std::size_t n) : t(n) {}  // 0 as in growt's tests (at least 512 slots)
  struct Handle {
    typename M::handle_type h;
    bool insert(Key k) { return h.insert(k, k).second; }
    bool contains(Key k) { return h.find(k) != h.end(); }
    bool erase(Key k) { return h.erase(k) != 0; }
  };
  Handle handle() { return {t.get_handle()}; }
  std::optional<std::size_t> size() { return std::nullopt; }  // approximate only
  std::optional<std::size_t> memory_bytes() { return std::nullopt; }
};
using UaGrow = Growt<GrowtTable<hmod::growable, hmod::deletion>, true>;
using UsGrow = Growt<GrowtTable<hmod::growable, hmod::deletion, hmod::sync>, true>;
using Folklore = Growt<GrowtTable<>, false>;
#endif

#ifdef HAVE_BOOST
struct BoostCfm {
  static constexpr bool kGrows = true, kErases = true;
  boost::concurrent_flat_map<Key, Key> t;
  explicit BoostCfm(std::size_t n) { t.reserve(n); }  // 0: as default constructed
  BoostCfm& handle() { return *this; }
  bool insert(Key k) { return t.emplace(k, k); }
  bool contains(Key k) { return t.contains(k); }
  bool erase(Key k) { return t.erase(k) != 0; }
  std::optional<std::size_t> size() { return t.size(); }
  std::optional<std::size_t> memory_bytes() { return std::nullopt; }
};
#endif

#ifdef HAVE_PARLAY
struct Parlay {
  static constexpr bool kGrows = true, kErases = true;
  parlay::parlay_unordered_map<Key, Key> t;
  explicit Parlay(std::size_t n) : t(static_cast<long>(n)) {}  // 0: its default
  Parlay& handle() { return *this; }
  bool insert(Key k) { return !t.Insert(k, k).has_value(); }
  bool contains(Key k) { return t.Find(k).has_value(); }
  bool erase(Key k) { return t.Remove(k).has_value(); }
  std::optional<std::size_t> size() { return static_cast<std::size_t>(t.size()); }
  std::optional<std::size_t> memory_bytes() { return std::nullopt; }
};
#endif

#ifdef HAVE_LIBCUCKOO
struct Libcuckoo {
  static constexpr bool kGrows = true, kErases = true;
  libcuckoo::cuckoohash_map<Key, Key> t;
  explicit Libcuckoo(std::size_t n) : t(n == 0 ? 1 : n) {}
  Libcuckoo& handle() { return *this; }
  bool insert(Key k) { return t.insert(k, k); }
  bool contains(Key k) { return t.contains(k); }
  bool erase(Key k) { return t.erase(k); }
  std::optional<std::size_t> size() { return t.size(); }
  std::optional<std::size_t> memory_bytes() { return std::nullopt; }
};
#endif

#ifdef HAVE_TBB
struct Tbb {
  static constexpr bool kGrows = true, kErases = true;
  using Map = tbb::concurrent_hash_map<Key, Key>;
  Map t;
  explicit Tbb(std::size_t n) : t(n) {}  // n buckets (reserve(n); 0: none)
  Tbb& handle() { return *this; }
  bool insert(Key k) { return t.insert(Map::value_type(k, k)); }
  bool contains(Key k) { return t.count(k) != 0; }
  bool erase(Key k) { return t.erase(k); }
  std::optional<std::size_t> size() { return t.size(); }
  std::optional<std::size_t> memory_bytes() { return std::nullopt; }
};
#endif

// ---- configuration and keys ---------------------------------------------------------------------
struct Config {
  std::size_t items = std::size_t{1} << 23;
  std::vector<unsigned> threads{2, 8};
  unsigned op_threads = 2;
  unsigned ms = 2000;
  unsigned rounds = 3;
  std::vector<std::string> only;    // rows; empty: all
  std::vector<std::string> tables;  // tables; empty: all
};
Config g;

// perm: [1, r] in random order; its first i entries are the inserted keys (keys holds their
// mix63), the rest are absent.
std::vector<std::uint32_t> g_perm;
std::vector<Key> g_keys;
std::size_t range() {
  return 2 * g.items;
}

void make_keys() {
  const std::size_t r = range();
  g_perm.resize(r);
  for (std::size_t x = 0; x < r; ++x) {
    g_perm[x] = static_cast<std::uint32_t>(x + 1);
    if (mix63(x + 1) == kMask63) fail("key %zu maps to growt's tombstone 2^63 - 1", x + 1);
  }
  Rng rng{1};
  for (std::size_t x = 0; x < g.items; ++x) std::swap(g_perm[x], g_perm[x + rng.below(r - x)]);
  g_keys.resize(g.items);
  for (std::size_t x = 0; x < g.items; ++x) g_keys[x] = mix63(g_perm[x]);
}

std::int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Runs body(handle, t) on T threads, each with its own handle, released together by a barrier;
// main_part runs on the caller meanwhile. Returns the seconds from the first thread's start to
// the last one's end.
template <class A, class Body, class Main>
double phase(A& a, unsigned T, Body body, Main main_part) {
  std::barrier start(static_cast<std::ptrdiff_t>(T) + 1);
  std::vector<Clock::time_point> begin(T), end(T);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < T; ++t) {
    threads.emplace_back([&, t] {
      auto&& h = a.handle();
      start.arrive_and_wait();
      begin[t] = Clock::now();
      body(h, t);
      end[t] = Clock::now();
    });
  }
  start.arrive_and_wait();
  main_part();
  for (auto& th : threads) th.join();
  return std::chrono::duration<double>(*std::max_element(end.begin(), end.end()) -
                                       *std::min_element(begin.begin(), begin.end()))
      .count();
}

// ---- jobs ---------------------------------------------------------------------------------------
struct Job {
  bool reserved;
  unsigned threads;
  bool report_build, lookups, mix;
};

// What a child sends back through its pipe (trivially copyable); -1: not measured.
struct Result {
  double build_s = -1, rss_bytes = -1, own_bytes = -1, lookup_mops = -1, mix_mops = -1;
};

struct alignas(64) Counts {
  std::uint64_t ops = 0, hits = 0, inserted = 0, erased = 0;
};

constexpr unsigned kStopCheck = 64;  // operations between reads of the stop flag

// Runs for --ms: ops(h, rng, counts) kStopCheck times between reads of the stop flag.
template <class A, class Op>
std::pair<double, Counts> timed(A& a, unsigned seed, Op op) {
  const unsigned T = g.op_threads;
  std::vector<Counts> counts(T);
  std::atomic<bool> stop{false};
  const double s = phase(
      a, T,
      [&](auto& h, unsigned t) {
        Rng rng{seed * 1000 + t};
        Counts c;
        do {  // relaxed: the flag only ends the loop; the counts are read after the join
          for (unsigned n = 0; n < kStopCheck; ++n) op(h, rng, c);
          c.ops += kStopCheck;
        } while (!stop.load(std::memory_order_relaxed));
        counts[t] = c;
      },
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(g.ms));
        stop.store(true, std::memory_order_relaxed);
      });
  Counts sum;
  for (const Counts& c : counts) {
    sum.ops += c.ops;
    sum.hits += c.hits;
    sum.inserted += c.inserted;
    sum.erased += c.erased;
  }
  return {s, sum};
}

template <class A>
Result run_job(const char* name, const Job& job) {
  Result r;
  const std::size_t i = g.items, r_keys = range();
  malloc_trim(0);
  const std::int64_t rss0 = rss_bytes();
  A a(job.reserved ? i : 0);
  std::atomic<std::uint64_t> failed{0};
  r.build_s = phase(
      a, job.threads,
      [&](auto& h, unsigned t) {
        std::uint64_t f = 0;
        for (std::size_t x = i * t / job.threads; x < i * (t + 1) / job.threads; ++x) {
          f += !h.insert(g_keys[x]);
        }
        failed.fetch_add(f, std::memory_order_relaxed);
      },
      [] {});
  r.rss_bytes = static_cast<double>(rss_bytes() - rss0);
  if (auto b = a.memory_bytes()) r.own_bytes = static_cast<double>(*b);
  if (failed.load() != 0)
    fail("%s: %" PRIu64 " of %zu build inserts failed", name, failed.load(), i);
  {
    auto&& h = a.handle();
    if (auto n = a.size(); n && *n != i)
      fail("%s: size() %zu after the build, not %zu", name, *n, i);
    for (std::size_t x = 0; x < i; x += 16) {
      if (!h.contains(g_keys[x])) fail("%s: inserted key %zu not found", name, x);
      if (h.contains(mix63(g_perm[i + x]))) fail("%s: absent key %zu found", name, i + x);
    }
  }
  if (job.lookups) {
    const auto [s, c] = timed(a, 1, [&](auto& h, Rng& rng, Counts& k) {
      k.hits += h.contains(mix63(1 + rng.below(r_keys)));
    });
    const double share = static_cast<double>(c.hits) / static_cast<double>(c.ops);
    const double expected = static_cast<double>(i) / static_cast<double>(r_keys);
    if (c.ops >= 10000 && std::abs(share - expected) > 0.01) {
      fail("%s: lookups found %.4f of their keys, expected %.4f", name, share, expected);
    }
    r.lookup_mops = static_cast<double>(c.ops) / s / 1e6;
  }
  if (job.mix) {
    const auto [s, c] = timed(a, 2, [&](auto& h, Rng& rng, Counts& k) {
      const std::uint64_t kind = rng.below(20);  // 0: insert, 1: erase, else lookup
      const Key key = mix63(1 + rng.below(r_keys));
      if (kind == 0) {
        k.inserted += h.insert(key);
      } else if (kind == 1) {
        k.erased += h.erase(key);
      } else {
        k.hits += h.contains(key);
      }
    });
    const std::size_t expected = i + c.inserted - c.erased;
    if (auto n = a.size(); n && *n != expected) {
      fail("%s: size() %zu after the mix, expected %zu (%" PRIu64 " inserts, %" PRIu64 " erases)",
           name, *n, expected, c.inserted, c.erased);
    }
    r.mix_mops = static_cast<double>(c.ops) / s / 1e6;
  }
  return r;
}

// Runs the job in a child process; its result comes back through a pipe. A child that fails a
// check, or runs more than kChildSeconds, ends the run; one that crashes (a signal) is reported
// as such -- in its round's line and in the summary -- and the run goes on: nullopt.
constexpr unsigned kChildSeconds = 600;
std::vector<std::string> g_crashes;  // "table job: signal", for the summary
template <class A>
std::optional<Result> in_child(const char* name, const Job& job) {
  int fds[2];
  if (pipe(fds) != 0) fail("pipe: %s", std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) fail("fork: %s", std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    alarm(kChildSeconds);
    const Result r = run_job<A>(name, job);
    if (write(fds[1], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) fail("write to the parent");
    _exit(0);
  }
  close(fds[1]);
  Result r;
  const ssize_t got = read(fds[0], &r, sizeof r);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    if (WTERMSIG(status) == SIGALRM) fail("%s: child over the time limit", name);
    return std::nullopt;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != static_cast<ssize_t>(sizeof r)) {
    fail("%s: child failed (exit status %d)", name, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return r;
}

struct Table {
  const char* name;
  bool grows, erases;
  std::optional<Result> (*run)(const char*, const Job&);
  std::string about;
};

template <class A>
Table table(const char* name, std::string about) {
  return {name, A::kGrows, A::kErases, &in_child<A>, std::move(about)};
}

std::vector<Table> all_tables() {
  std::vector<Table> v{
      table<Ccf<ccf::ClhtLb>>("ClhtLb", "ccf::ClhtLb"),
      table<Ccf<ccf::ClhtLf>>("ClhtLf", "ccf::ClhtLf"),
      table<Ccf<ccf::CuckooMap<Key, Key>>>("CuckooMap", "ccf::CuckooMap<uint64_t, uint64_t>"),
      table<Ccf<ccf::HopscotchMap<32>>>("Hopscotch", "ccf::HopscotchMap<32>"),
  };
#ifdef HAVE_GROWT
  v.push_back(table<UaGrow>("uaGrow", "growt uaGrow (growable, deletion), xxh3"));
  v.push_back(table<UsGrow>("usGrow", "growt usGrow (growable, deletion, sync), xxh3"));
  v.push_back(table<Folklore>("folklore", "growt folklore (no mods), xxh3"));
#endif
#ifdef HAVE_BOOST
  v.push_back(table<BoostCfm>("boost_cfm", "boost::concurrent_flat_map, Boost " +
                                               std::to_string(BOOST_VERSION / 100000) + "." +
                                               std::to_string(BOOST_VERSION / 100 % 1000)));
#endif
#ifdef HAVE_PARLAY
  v.push_back(table<Parlay>("parlay", "parlay::parlay_unordered_map (ParlayHash)"));
#endif
#ifdef HAVE_LIBCUCKOO
  v.push_back(table<Libcuckoo>("libcuckoo", "libcuckoo::cuckoohash_map (Debian libcuckoo-dev)"));
#endif
#ifdef HAVE_TBB
  v.push_back(
      table<Tbb>("tbb_chm", std::string("tbb::concurrent_hash_map, oneTBB ") + TBB_VERSION_STRING));
#endif
  return v;
}

// ---- results ------------------------------------------------------------------------------------
std::vector<std::string> g_rows;  // in order of first appearance
std::map<std::pair<std::string, std::string>, std::vector<double>> g_values;  // (row, table)

// The summary's order: rows of one kind together, in order of appearance (thread counts).
std::size_t row_rank(const std::string& row) {
  static const char* const kinds[] = {"build_empty",
                                      "build_reserved",
                                      "lookups",
                                      "mix",
                                      "B/item RSS empty",
                                      "B/item RSS reserved",
                                      "B/item memory_bytes() empty"};
  std::size_t k = 0;
  while (k < std::size(kinds) && row.rfind(kinds[k], 0) != 0) ++k;
  return k;
}

void record(const std::string& row, const char* table, double v) {
  if (std::find(g_rows.begin(), g_rows.end(), row) == g_rows.end()) g_rows.push_back(row);
  g_values[{row, table}].push_back(v);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool wanted(const std::vector<std::string>& list, const std::string& x) {
  return list.empty() || std::find(list.begin(), list.end(), x) != list.end();
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t p = 0; p <= s.size();) {
    std::size_t q = s.find(',', p);
    if (q == std::string::npos) q = s.size();
    out.push_back(s.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

std::vector<Job> jobs() {
  const bool empty = wanted(g.only, "build_empty"), reserved = wanted(g.only, "build_reserved");
  const bool lookups = wanted(g.only, "lookups"), mix = wanted(g.only, "mix");
  std::vector<Job> v;
  bool ops_done = !(lookups || mix);
  for (unsigned T : g.threads) {
    if (empty) v.push_back({false, T, true, false, false});
  }
  for (unsigned T : g.threads) {
    if (!reserved) continue;
    const bool ops = T == g.op_threads;
    v.push_back({true, T, true, ops && lookups, ops && mix});
    ops_done |= ops;
  }
  if (!ops_done) v.push_back({true, g.op_threads, false, lookups, mix});
  return v;
}

void run_one(const Table& t, const Job& j, unsigned round) {
  if (!j.reserved && !t.grows) return;
  Job job = j;
  job.mix &= t.erases;
  if (!job.report_build && !job.lookups && !job.mix) return;
  const std::optional<Result> result = t.run(t.name, job);
  const double i = static_cast<double>(g.items);
  std::printf("round %u %-9s", round + 1, t.name);
  if (!result) {
    const std::string what =
        std::string(t.name) + " " +
        (job.report_build
             ? (job.reserved ? "build_reserved_" : "build_empty_") + std::to_string(job.threads)
             : "lookups/mix") +
        " (round " + std::to_string(round + 1) + ")";
    g_crashes.push_back(what);
    std::printf(" crashed (killed by a signal): no figure this round\n");
    std::fflush(stdout);
    return;
  }
  const Result& r = *result;
  if (job.report_build) {
    const std::string kind = job.reserved ? "reserved_" : "empty_";
    const std::string T = std::to_string(job.threads);
    record("build_" + kind + T + " M inserts/s", t.name, i / r.build_s / 1e6);
    record("B/item RSS " + kind + T, t.name, r.rss_bytes / i);
    std::printf(" build_%s%s %7.2f M inserts/s, RSS %6.1f B/item", kind.c_str(), T.c_str(),
                i / r.build_s / 1e6, r.rss_bytes / i);
    if (r.own_bytes >= 0) {
      record("B/item memory_bytes() " + kind + T, t.name, r.own_bytes / i);
      std::printf(", memory_bytes() %6.1f B/item", r.own_bytes / i);
    }
  }
  const std::string T = std::to_string(g.op_threads);
  if (job.lookups) {
    record("lookups_" + T + " M lookups/s", t.name, r.lookup_mops);
    std::printf(" lookups_%s %7.2f M/s", T.c_str(), r.lookup_mops);
  }
  if (job.mix) {
    record("mix_90_5_5_" + T + " M ops/s", t.name, r.mix_mops);
    std::printf(" mix_90_5_5_%s %7.2f M/s", T.c_str(), r.mix_mops);
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto next = [&]() -> std::string {
      if (a + 1 >= argc) fail("missing value for %s", arg.c_str());
      return argv[++a];
    };
    if (arg == "--items") {
      g.items = std::stoull(next());
    } else if (arg == "--threads") {
      g.threads.clear();
      for (const auto& s : split(next())) g.threads.push_back(static_cast<unsigned>(std::stoul(s)));
    } else if (arg == "--op-threads") {
      g.op_threads = static_cast<unsigned>(std::stoul(next()));
    } else if (arg == "--ms") {
      g.ms = static_cast<unsigned>(std::stoul(next()));
    } else if (arg == "--rounds") {
      g.rounds = static_cast<unsigned>(std::stoul(next()));
    } else if (arg == "--only") {
      g.only = split(next());
    } else if (arg == "--tables") {
      g.tables = split(next());
    } else {
      std::fprintf(stderr,
                   "usage: %s [--items 8388608] [--threads 2,8] [--op-threads 2] [--ms 2000] "
                   "[--rounds 3] [--only build_empty,build_reserved,lookups,mix] [--tables "
                   "NAME,...]\n",
                   argv[0]);
      return 1;
    }
  }
  for (const auto& row : g.only) {
    if (row != "build_empty" && row != "build_reserved" && row != "lookups" && row != "mix") {
      fail("--only: unknown row '%s' (build_empty, build_reserved, lookups, mix)", row.c_str());
    }
  }
  if (g.items == 0 || range() > UINT32_MAX) fail("--items must lie in [1, 2^31)");
  for (unsigned T : g.threads) {
    if (T == 0 || T > g.items) fail("--threads: each must lie in [1, items]");
  }
  if (g.op_threads == 0) fail("--op-threads must be at least 1");

  std::vector<Table> tables;
  for (Table& t : all_tables()) {
    if (wanted(g.tables, t.name)) tables.push_back(std::move(t));
  }
  for (const auto& name : g.tables) {
    if (std::none_of(tables.begin(), tables.end(),
                     [&](const Table& t) { return name == t.name; })) {
      fail("--tables: '%s' is not compiled in", name.c_str());
    }
  }
  std::string threads;
  for (unsigned T : g.threads) {
    if (!threads.empty()) threads += ',';
    threads += std::to_string(T);
  }
  const auto t0 = Clock::now();
  make_keys();
  std::printf(
      "items i = %zu, keys from [1, r = %zu] (mix63), threads %s, op threads %u, "
      "%u ms, %u rounds, %u cpus; key setup %.1fs\n",
      g.items, range(), threads.c_str(), g.op_threads, g.ms, g.rounds,
      std::thread::hardware_concurrency(),
      std::chrono::duration<double>(Clock::now() - t0).count());
  for (const Table& t : tables) std::printf("  %-9s %s\n", t.name, t.about.c_str());
  std::fflush(stdout);

  const std::vector<Job> job_list = jobs();
  for (unsigned round = 0; round < g.rounds; ++round) {
    for (const Job& j : job_list) {
      for (std::size_t k = 0; k < tables.size(); ++k) {
        run_one(tables[(k + round) % tables.size()], j, round);
      }
    }
  }

  std::printf(
      "\nMedians of %u rounds (per-round values above); '-': not run (folklore cannot "
      "grow, and has no mix), or not reported by the table.\n",
      g.rounds);
  std::stable_sort(g_rows.begin(), g_rows.end(), [](const std::string& a, const std::string& b) {
    return row_rank(a) < row_rank(b);
  });
  std::printf("%-34s", "row");
  for (const Table& t : tables) std::printf(" %10s", t.name);
  std::printf("\n");
  for (const auto& row : g_rows) {
    std::printf("%-34s", row.c_str());
    for (const Table& t : tables) {
      auto it = g_values.find({row, t.name});
      if (it == g_values.end()) {
        std::printf(" %10s", "-");
      } else {
        std::printf(" %10.2f", median(it->second));
      }
    }
    std::printf("\n");
  }
  for (const std::string& crash : g_crashes) std::printf("crashed: %s\n", crash.c_str());
  std::printf("total %.1fs\n", std::chrono::duration<double>(Clock::now() - t0).count());
  return 0;
}
