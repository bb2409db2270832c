#include "workload.hpp"

#include <fmt/format.h>
#include <libdivide.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <ccf/detail/page_buffer.hpp>
#include <ccf/hash.hpp>
#include <ccf/sync/elision_stats.hpp>
#include <chrono>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <thread>

#include "adapters/null_structure.hpp"
#include "memory_probe.hpp"
#include "parallel.hpp"
#include "timing.hpp"

namespace chtbench {

namespace {
constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
}  // namespace

std::uint64_t OpCounts::total() const {
  return std::accumulate(n.begin(), n.end(), 0ULL);
}

OpCounts& OpCounts::operator+=(const OpCounts& other) {
  for (std::size_t i = 0; i < n.size(); ++i) n[i] += other.n[i];
  return *this;
}

double physical_memory_bytes() {
  return static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
         static_cast<double>(::sysconf(_SC_PAGESIZE));
}

void require_memory(double bytes, const std::string& sizes) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const double have = physical_memory_bytes();
  if (bytes > have) {
    throw UsageError(fmt::format("{}: needs {:.1f} GiB, this machine has {:.1f} GiB", sizes,
                                 bytes / kGiB, have / kGiB));
  }
}

RunConfig resolve(const StructureInfo& info, RunConfig c) {
  c.structure = info.name;
  if (c.threads == 0) throw UsageError("--threads (n) must be at least 1");
  if (c.threads > 1 && !info.traits.thread_safe) {
    throw UsageError(
        fmt::format("'{}' is sequential (not thread-safe): --threads (n) must be 1, not {}",
                    info.name, c.threads));
  }
  if (c.update_pct > 100) throw UsageError("--update (u) is a percentage: 0 to 100");
  if (c.insert_pct && *c.insert_pct > c.update_pct) {
    throw UsageError(fmt::format(
        "--insert-pct {} exceeds --update (u) {}: inserts are part of the updates, so it must "
        "lie in [0, {}]",
        *c.insert_pct, c.update_pct, c.update_pct));
  }
  const bool erases = c.insert_pct ? *c.insert_pct < c.update_pct : c.update_pct > 0;
  if (erases && !info.traits.erase) {
    throw UsageError(
        fmt::format("'{}' cannot erase, so its updates must all be inserts: --update (u) must "
                    "be 0, not {}, unless --insert-pct is u",
                    info.name, c.update_pct));
  }
  if (c.range == 0) c.range = c.initial > kU64Max / 2 ? kU64Max : 2 * c.initial;
  if (c.range == 0) throw UsageError("--range (r) must be set when --initial (i) is 0");
  if (c.initial > c.range) {
    throw UsageError(fmt::format(
        "--initial (i) {} exceeds --range (r) {}: the initial items are distinct keys of [1, r], "
        "so i must lie in [0, {}]",
        c.initial, c.range, c.range));
  }
  if (info.traits.filter && c.threads > c.range) {
    throw UsageError(fmt::format(
        "--threads (n) {} exceeds --range (r) {}: each thread owns keys, so n must lie in "
        "[1, {}]",
        c.threads, c.range, c.range));
  }
  if (c.capacity == 0) c.capacity = c.range;
  // A hash table grows: a capacity below i builds it from (nearly) empty. A filter cannot.
  if (info.traits.filter && c.capacity < c.initial) {
    throw UsageError(
        fmt::format("--capacity {} cannot hold the --initial (i) {} items: it must lie in [{}, {}]",
                    c.capacity, c.initial, c.initial, kU64Max));
  }
  if (c.duration_ms == 0) throw UsageError("--duration-ms (d) must be at least 1");
  if (c.repeat == 0) throw UsageError("--repeat must be at least 1");
  return c;
}

void require_memory(const StructureInfo& info, const RunConfig& c) {
  const double bitmaps = static_cast<double>(c.range) / 8 + 4096.0 * c.threads;
  const double item_bits = info.traits.filter ? c.fp_bits : 64;
  const double items = static_cast<double>(std::max(c.capacity, c.initial)) * item_bits / 8;
  std::string sizes =
      fmt::format("--initial {}, --range {} and --capacity {}", c.initial, c.range, c.capacity);
  if (info.traits.filter) sizes += fmt::format(" at --fp-bits {}", c.fp_bits);
  require_memory(bitmaps + items, sizes);
}

namespace {

constexpr std::uint64_t kInitialStream = 1;
constexpr std::uint64_t kOpStream = 2;
constexpr unsigned kSampleEvery = 64;    // one timed operation in 64
constexpr unsigned kStopCheck = 64;      // operations between reads of the stop flag (sampled)
constexpr std::size_t kDrawChunk = 256;  // operations drawn at a time, one call per operation

std::int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// The keys one thread owns -- k with (k - 1) mod n == thread, rank (k - 1) / n -- and a bitmap
// of which are present. The hash-table workload uses it only to build the initial set. The
// bitmap (r / n bits) is read at random during the run: it lives on huge pages like the
// filters, so that a check costs a cache miss but no page walk.
class Ownership {
 public:
  Ownership(std::uint64_t range, unsigned threads, unsigned thread)
      : n_(threads),
        divide_by_n_(std::uint64_t{threads}),
        thread_(thread),
        ranks_(thread < range ? (range - 1 - thread) / threads + 1 : 0),
        buffer_(std::max<std::uint64_t>(ranks_ / 64 + (ranks_ % 64 != 0), 1) *
                sizeof(std::uint64_t)),
        bits_(reinterpret_cast<std::uint64_t*>(buffer_.data())) {}  // mmap: zeroed

  std::uint64_t ranks() const { return ranks_; }
  std::uint64_t key(std::uint64_t rank) const { return rank * n_ + thread_ + 1; }
  // The owner thread and the rank of `key`: one libdivide multiply instead of a 64-bit division
  // (tens of cycles, on every lookup).
  bool owns(std::uint64_t key) const { return (key - 1) - rank(key) * n_ == thread_; }
  std::uint64_t rank(std::uint64_t key) const { return (key - 1) / divide_by_n_; }
  bool present(std::uint64_t rank) const { return (bits_[rank / 64] >> (rank % 64)) & 1; }
  void set(std::uint64_t rank, bool value) {
    const std::uint64_t mask = std::uint64_t{1} << (rank % 64);
    bits_[rank / 64] = value ? bits_[rank / 64] | mask : bits_[rank / 64] & ~mask;
  }

  // Marks `count` uniformly chosen ranks present (count <= ranks()).
  void choose(std::uint64_t count, Rng& rng) {
    const bool invert = count > ranks_ / 2;  // then choose the absent ones instead
    if (invert) {
      for (std::uint64_t r = 0; r < ranks_; ++r) set(r, true);
      count = ranks_ - count;
    }
    while (count > 0) {
      const std::uint64_t r = rng.below(ranks_);
      if (present(r) == invert) {
        set(r, !invert);
        --count;
      }
    }
  }

  template <class F>
  void for_each_present(F f) const {
    for (std::uint64_t r = 0; r < ranks_; ++r) {
      if (present(r)) f(key(r), r);
    }
  }

 private:
  std::uint64_t n_;
  libdivide::divider<std::uint64_t> divide_by_n_;
  std::uint64_t thread_;
  std::uint64_t ranks_;
  ccf::detail::PageBuffer buffer_;
  std::uint64_t* bits_;
};

enum class OpKind : std::uint8_t { kInsert, kErase, kLookup };

// The operation mix, drawn as r uniform in [0, 200): inserts below `inserts`, erases below
// `updates`, lookups above (half percents, so an odd u splits exactly in two).
struct OpMix {
  std::uint64_t inserts, updates;
  explicit OpMix(const RunConfig& c)
      : inserts(c.insert_pct ? 2 * std::uint64_t{*c.insert_pct} : c.update_pct),
        updates(2 * std::uint64_t{c.update_pct}) {}
  OpKind draw(Rng& rng) const {
    const std::uint64_t r = rng.below(200);
    return r < inserts ? OpKind::kInsert : r < updates ? OpKind::kErase : OpKind::kLookup;
  }
};

OpClass classify(OpKind kind, bool ok) {
  constexpr std::array<OpClass, 3> kSuccess = {OpClass::kPutSuc, OpClass::kRemSuc,
                                               OpClass::kGetSuc};
  const auto success = kSuccess[static_cast<std::size_t>(kind)];
  return ok ? success : static_cast<OpClass>(static_cast<unsigned>(success) + 1);
}

struct alignas(64) ThreadStats {
  OpCounts ops;
  std::uint64_t false_negatives = 0;
  std::unique_ptr<std::array<LatencyHistogram, kOpClasses>> latency;
};

// A drawn operation key. `refused`: the filter workload knows the update must fail (insert of
// a present key, erase of an absent one) and runs the search a set would run instead.
struct Draw {
  std::uint64_t key;
  bool refused = false;
};

// Hash-table workload: every key from [1, r].
class SetPolicy {
 public:
  SetPolicy(const RunConfig& c, Ownership&) : keys_(c.dist, c.range) {}
  Draw draw(OpKind, Rng& rng) { return {keys_(rng)}; }
  void draw_lookups(std::span<std::uint64_t> keys, Rng& rng) const { keys_.fill(keys, rng); }
  void after(OpKind, const Draw&, bool, ThreadStats&) {}
  void after_lookups(std::span<const std::uint64_t>, std::span<const bool>, ThreadStats&) {}

 private:
  KeyGenerator keys_;
};

// Filter workload: updates draw from the thread's own keys and are checked against its
// presence bitmap, so a filter only ever inserts absent keys and erases present ones, while the
// operation mix and failure rates stay those of the hash-table workload.
class FilterPolicy {
 public:
  FilterPolicy(const RunConfig& c, Ownership& own)
      : own_(own), own_keys_(c.dist, own.ranks()), all_keys_(c.dist, c.range) {}

  Draw draw(OpKind kind, Rng& rng) {
    if (kind == OpKind::kLookup) return {all_keys_(rng)};
    const std::uint64_t rank = own_keys_(rng) - 1;
    return {own_.key(rank), own_.present(rank) != (kind == OpKind::kErase)};
  }
  // draw(kLookup) for every key of a run of lookups.
  void draw_lookups(std::span<std::uint64_t> keys, Rng& rng) const { all_keys_.fill(keys, rng); }

  void after(OpKind kind, const Draw& d, bool ok, ThreadStats& stats) {
    if (d.refused) return;
    switch (kind) {
      case OpKind::kLookup:
        stats.false_negatives += missed_present(d.key, ok);
        break;
      case OpKind::kErase:  // a present key whose fingerprint was not found
        stats.false_negatives += !ok;
        [[fallthrough]];
      case OpKind::kInsert:
        if (ok) own_.set(own_.rank(d.key), kind == OpKind::kInsert);
        break;
    }
  }

  // after() for a run of lookups.
  void after_lookups(std::span<const std::uint64_t> keys, std::span<const bool> found,
                     ThreadStats& stats) {
    std::uint64_t misses = 0;  // a local: stats is reached through a reference
    for (std::size_t k = 0; k < keys.size(); ++k) misses += missed_present(keys[k], found[k]);
    stats.false_negatives += misses;
  }

 private:
  // Lookups verify a sample of the keys: a lookup that did not find a sampled key this thread
  // knows is present is a false negative. One key in 16 is sampled, chosen by a multiplicative
  // hash, so that most lookups pay neither the owner's division nor a bitmap read. (Prefetching
  // the sampled keys' bitmap words while drawing them cost the harness more than it saved; see
  // docs/chtbench.md, `run`, point 6.) The bitmap
  // is far larger than the caches: reading it on every miss added a cache miss of the harness's
  // own to half of all lookups, a fifth of a batched read-only run at i = 2^25. A fixed sample
  // checked on every lookup of it still catches any systematic false negative; updates always
  // consult the bitmap (they must), and the test suite checks every key.
  bool sampled(std::uint64_t key) const {
    return (key * 0x9e3779b97f4a7c15ULL) >> 60 == 0 && own_.owns(key);
  }
  // The sample test comes first: it is false for 15 keys in 16, a branch the CPU predicts,
  // where a lookup's outcome is a coin toss at r = 2i.
  bool missed_present(std::uint64_t key, bool found) const {
    return sampled(key) && !found && own_.present(own_.rank(key));
  }

  Ownership& own_;
  KeyGenerator own_keys_;
  KeyGenerator all_keys_;
};

// The key the structure sees for harness key k: k, or with --keys scrambled fmix64(k) (mix64
// with seed 0), a bijection that keeps 0 at 0, so [1, r] maps onto r distinct non-zero keys.
// Policies, ownership and the false-negative checks work on harness keys throughout.
struct KeyMap {
  bool scrambled;
  std::uint64_t operator()(std::uint64_t key) const { return scrambled ? ccf::mix64(key, 0) : key; }
};

bool apply(Structure& s, OpKind kind, std::uint64_t key) {
  switch (kind) {
    case OpKind::kInsert:
      return s.insert(key);
    case OpKind::kErase:
      return s.erase(key);
    case OpKind::kLookup:
      return s.contains(key);
  }
  return false;
}

// One benchmark thread's timed loop with latency sampling (--latency): operations one by one,
// one in kSampleEvery timed with the cycle counter (only the structure call, never key
// generation).
template <class Policy>
void work_sampled(Structure& s, Policy policy, const RunConfig& c, unsigned thread,
                  const std::atomic<bool>& stop, ThreadStats& stats) {
  Rng rng(stream_seed(c.seed, kOpStream, thread));
  const std::uint64_t overhead = timer_overhead();
  const OpMix mix(c);
  const KeyMap structure_key{c.scrambled_keys};
  std::uint64_t sample_clock = 0;
  // At least one round, even for a thread first scheduled after `stop` was set (a run of
  // nothing would report no throughput). Relaxed: the flag only ends the loop; the counters
  // are read after the join.
  do {
    for (unsigned i = 0; i < kStopCheck; ++i) {
      const OpKind kind = mix.draw(rng);
      const Draw d = policy.draw(kind, rng);
      const bool sample = ++sample_clock % kSampleEvery == 0;
      const std::uint64_t t0 = sample ? cycles_begin() : 0;
      const std::uint64_t key = structure_key(d.key);
      const bool ok = d.refused ? (s.contains(key), false) : apply(s, kind, key);
      const std::uint64_t t1 = sample ? cycles_end() : 0;
      const OpClass cls = classify(kind, ok);
      if (sample) {
        const std::uint64_t ticks = t1 - t0;
        (*stats.latency)[static_cast<std::size_t>(cls)].record(ticks > overhead ? ticks - overhead
                                                                                : 0);
      }
      ++stats.ops[cls];
      policy.after(kind, d, ok, stats);
    }
  } while (!stop.load(std::memory_order_relaxed));
}

// The timed loop. Operation types are drawn a chunk at a time (B = --batch, or kDrawChunk for
// one call per operation); the keys of each run of consecutive lookups are drawn up front
// (lookups do not depend on the thread's state), then the run goes to contains_many in one
// call (--batch B > 1) or to contains() key by key in a tight loop, and its results are checked
// after it. Updates are drawn and applied one by one, in order, so the filter workload's
// ownership bookkeeping stays exact. The tight loop is what a user's loop of lookups looks
// like: drawing keys between calls would fill the CPU's out-of-order window with the harness's
// own instructions and hide the overlap of consecutive lookups' cache misses.
template <class Policy>
void work(Structure& s, Policy policy, const RunConfig& c, unsigned thread,
          const std::atomic<bool>& stop, ThreadStats& stats) {
  Rng rng(stream_seed(c.seed, kOpStream, thread));
  const OpMix mix(c);
  const bool one_call = c.batch == 1;
  const std::size_t chunk = one_call ? kDrawChunk : c.batch;
  std::vector<OpKind> kinds(chunk, OpKind::kLookup);
  std::vector<std::uint64_t> keys(chunk);
  const KeyMap structure_key{c.scrambled_keys};
  std::vector<std::uint64_t> scrambled(c.scrambled_keys ? chunk : 0);  // the structure's keys
  const auto found = std::make_unique<bool[]>(chunk);
  // At least one round, even for a thread first scheduled after `stop` was set (a run of
  // nothing would report no throughput). Relaxed: the flag only ends the loop; the counters
  // are read after the join.
  do {
    if (mix.updates > 0) {  // (read-only: every operation is a lookup already)
      for (auto& kind : kinds) kind = mix.draw(rng);
    }
    for (std::size_t i = 0; i < kinds.size();) {
      if (kinds[i] != OpKind::kLookup) {
        const Draw d = policy.draw(kinds[i], rng);
        const std::uint64_t key = structure_key(d.key);
        const bool ok = d.refused ? (s.contains(key), false) : apply(s, kinds[i], key);
        ++stats.ops[classify(kinds[i], ok)];
        policy.after(kinds[i], d, ok, stats);
        ++i;
        continue;
      }
      std::size_t run = mix.updates > 0 ? 0 : kinds.size() - i;  // read-only: all lookups
      while (i + run < kinds.size() && kinds[i + run] == OpKind::kLookup) ++run;
      policy.draw_lookups(std::span<std::uint64_t>(keys.data(), run), rng);
      const std::span<const std::uint64_t> run_keys(keys.data(), run);
      std::span<const std::uint64_t> lookup_keys = run_keys;
      if (c.scrambled_keys) {
        for (std::size_t k = 0; k < run; ++k) scrambled[k] = structure_key(keys[k]);
        lookup_keys = std::span<const std::uint64_t>(scrambled.data(), run);
      }
      std::size_t hits = 0;
      if (one_call) {
        hits = s.contains_each(lookup_keys, std::span<bool>(found.get(), run));
      } else {
        hits = s.contains_many(lookup_keys, std::span<bool>(found.get(), run));
      }
      stats.ops[OpClass::kGetSuc] += hits;
      stats.ops[OpClass::kGetFail] += run - hits;
      policy.after_lookups(run_keys, std::span<const bool>(found.get(), run), stats);
      i += run;
    }
  } while (!stop.load(std::memory_order_relaxed));
}

struct Repeat {
  double mops = 0;
  double seconds = 0;
  OpCounts ops;
  std::uint64_t false_negatives = 0;
  std::uint64_t initial_inserted = 0;
  double fill_seconds = 0;
  std::size_t size_after = 0;
  std::size_t memory_bytes = 0;
  std::int64_t rss_growth = 0;
  std::vector<EventCount> events;
  std::array<LatencyHistogram, kOpClasses> latency{};
};

std::unique_ptr<Structure> make_structure(const StructureInfo& info, const RunConfig& c) {
  try {
    return info.make(
        {.capacity = c.capacity, .fp_bits = c.fp_bits, .growth = c.growth, .seed = c.seed});
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format(
        "cannot build '{}' with --capacity {}, --fp-bits {}{}: {}", info.name, c.capacity,
        c.fp_bits, c.growth == 0 ? "" : fmt::format(", --growth {}", c.growth), e.what()));
  }
}

template <class Policy>
Repeat run_repeat(const StructureInfo& info, const RunConfig& c) {
  // Everything the harness itself needs is allocated before the baseline RSS is taken.
  std::vector<Ownership> owners;
  for (unsigned t = 0; t < c.threads; ++t) {
    owners.emplace_back(c.range, c.threads, t);
    Rng rng(stream_seed(c.seed, kInitialStream, t));
    owners[t].choose(c.initial / c.threads + (t < c.initial % c.threads ? 1 : 0), rng);
  }
  std::vector<ThreadStats> stats(c.threads);
  if (c.latency) {
    for (auto& s : stats) s.latency = std::make_unique<std::array<LatencyHistogram, kOpClasses>>();
  }
  ::malloc_trim(0);
  const std::int64_t rss_before = rss_bytes();
  Repeat out;
  {
    const std::unique_ptr<Structure> s = make_structure(info, c);

    // Initial fill: filler f inserts the initial keys of the owners t with t % fillers == f.
    const unsigned fillers = c.init_all ? c.threads : 1;
    std::atomic<std::uint64_t> inserted{0};
    out.fill_seconds = parallel_phase(*s, c.pin, fillers, [&](unsigned f) {
      std::uint64_t mine = 0;
      for (unsigned t = f; t < c.threads; t += fillers) {
        owners[t].for_each_present([&](std::uint64_t key, std::uint64_t rank) {
          if (s->insert(KeyMap{c.scrambled_keys}(key))) {
            ++mine;
          } else {
            owners[t].set(rank, false);  // a full filter: keep the bitmap truthful
          }
        });
      }
      inserted.fetch_add(mine, std::memory_order_relaxed);  // relaxed: read after the join
    });
    out.initial_inserted = inserted.load();
    const std::int64_t rss_filled = rss_bytes();

    out.events = s->event_counts();
    std::atomic<bool> stop{false};
    out.seconds = parallel_phase(
        *s, c.pin, c.threads,
        [&](unsigned t) {
          Policy policy(c, owners[t]);
          if (c.latency) {
            work_sampled(*s, policy, c, t, stop, stats[t]);
          } else {
            work(*s, policy, c, t, stop, stats[t]);
          }
        },
        [&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(c.duration_ms));
          stop.store(true, std::memory_order_relaxed);
        });

    for (const auto& st : stats) {
      out.ops += st.ops;
      out.false_negatives += st.false_negatives;
      if (st.latency) {
        for (std::size_t k = 0; k < kOpClasses; ++k) out.latency[k].merge((*st.latency)[k]);
      }
    }
    out.mops = static_cast<double>(out.ops.total()) / out.seconds / 1e6;
    out.size_after = s->size();
    out.memory_bytes = s->memory_bytes();
    const std::vector<EventCount> after = s->event_counts();
    for (std::size_t k = 0; k < after.size(); ++k)
      out.events[k].value = after[k].value - out.events[k].value;
    out.rss_growth = std::max(rss_filled, rss_bytes()) - rss_before;
  }
  ::malloc_trim(0);  // give the structure's memory back before the next measurement
  return out;
}

}  // namespace

LatencyStats summarize(const LatencyHistogram& h, double ghz) {
  return {.samples = h.count(),
          .p50 = h.quantile(0.50) / ghz,
          .p90 = h.quantile(0.90) / ghz,
          .p99 = h.quantile(0.99) / ghz,
          .p999 = h.quantile(0.999) / ghz,
          .max = static_cast<double>(h.max()) / ghz};
}

RunResult run_benchmark(const StructureInfo& info, const RunConfig& config,
                        const std::function<void(unsigned)>& on_repeat) {
  RunResult result;
  result.config = resolve(info, config);
  const RunConfig& c = result.config;
  require_memory(info, c);
  ccf::sync::ElisionStats::set_counting(c.elision_stats);  // before any thread of the run starts
  result.workload = info.traits.filter ? "filter" : "set";
  if (c.latency) {  // calibrate before any timed phase
    result.tsc_ghz = tsc_ghz();
    result.timer_overhead_ns = static_cast<double>(timer_overhead()) / result.tsc_ghz;
  }

  std::vector<Repeat> repeats;
  for (unsigned k = 0; k < c.repeat; ++k) {
    if (on_repeat) on_repeat(k);
    repeats.push_back(info.traits.filter ? run_repeat<FilterPolicy>(info, c)
                                         : run_repeat<SetPolicy>(info, c));
    result.repeat_mops.push_back(repeats.back().mops);
  }

  std::vector<std::size_t> order(repeats.size());
  std::iota(order.begin(), order.end(), 0);
  std::ranges::sort(order, {}, [&](std::size_t i) { return repeats[i].mops; });
  const Repeat& median = repeats[order[(order.size() - 1) / 2]];
  result.throughput_mops = order.size() % 2 == 1
                               ? median.mops
                               : (median.mops + repeats[order[order.size() / 2]].mops) / 2;
  result.seconds = median.seconds;
  result.ops = median.ops;
  result.false_negatives = median.false_negatives;
  result.initial_inserted = median.initial_inserted;
  result.fill_seconds = median.fill_seconds;
  result.size_after = median.size_after;
  result.memory_bytes = median.memory_bytes;
  result.events = median.events;
  result.rss_growth_bytes = median.rss_growth;
  if (c.latency) {
    std::array<LatencyStats, kOpClasses> lat;
    for (std::size_t k = 0; k < kOpClasses; ++k)
      lat[k] = summarize(median.latency[k], result.tsc_ghz);
    result.latency = lat;
  }

  // The harness's own cost: the same workload (threads, policy, key streams, pinning, batches)
  // over the null structure, for a quarter of the duration.
  StructureInfo null_info = info;  // the traits choose the workload: a filter's, for a filter
  null_info.make = [](const StructureConfig&) { return std::make_unique<NullStructure>(); };
  RunConfig harness = c;
  harness.duration_ms = std::clamp(c.duration_ms / 4, 10u, 250u);
  harness.latency = false;
  const Repeat alone = info.traits.filter ? run_repeat<FilterPolicy>(null_info, harness)
                                          : run_repeat<SetPolicy>(null_info, harness);
  result.harness_ns_per_op = 1e3 * c.threads / alone.mops;
  result.harness_share = result.harness_ns_per_op / (1e3 * c.threads / result.throughput_mops);

  const MemoryProbe probe(result.memory_bytes);
  const auto probe_time = std::chrono::milliseconds(std::clamp(c.duration_ms / 2, 10u, 500u));
  result.limit_mops = measure_limit_mops(probe, c.threads, probe_time, [&](unsigned t) {
    Topology::get().pin_current_thread(c.pin, t);
  });
  return result;
}

}  // namespace chtbench
