// growth_ceiling: what growing costs a hash table that has no synchronization at all -- the
// machine's ceiling for the growth figures of docs/benchmarks.md ("build from empty ÷ build
// after reserve", and the share of a timed window a doubling takes).
//
// T threads each build their own table of i / T random 64-bit keys at the same time (the work
// per core of a T-thread build into one shared table, with no lock, atomic instruction or shared
// line), once into a table sized for its keys and once into one grown from 16 slots by
// doubling (the sized table's pages are written before the clock starts, as ccf's tables
// construct every bucket of a table made for a size). Three tables:
//   linear  open addressing, linear probing, 16-byte slots (key 0: free), home =
//           reduce_range(mix64(key), m), grown at load --load by a rehash that walks the old
//           slots in order (homes keep their order, so the new table is written front to back),
//           buffers from ccf's PageBuffer (mmap + huge-page advice: the allocator ccf's tables
//           use). Its growth is the cheapest a migration can be: one streaming pass, each item
//           read and placed once.
//   linear-warm  the same, but each larger table's pages were written before the clock started
//           (buffers prepared for every size it will reach): growth without the kernel's page
//           faults and zeroing, which a table growing into new memory cannot avoid.
//   absl    absl::flat_hash_map<uint64_t, uint64_t> (Abseil's SwissTable), reserve(i / T) for
//           the sized build: the growth of a well-kept sequential table.
// A concurrent table's build from empty ÷ sized above these ratios would have to grow more
// cheaply than an unsynchronized rehash. Last, `doubling` times one rehash of the linear table
// holding 0.9 · --double-items / T keys per thread (chtbench's resize experiment: 90% full):
// a resize experiment of d ms cannot keep more than about 1 - t / d of its sized rate, t this
// time, when the copy runs on the same cores as the operations. Beside it, in the same round,
// ccf's ClhtLb, ClhtLf, CuckooMap and HopscotchMap<32> double a table of as many keys by
// reserve() from T threads: their cooperative migration against the unsynchronized rehash.
//
//   growth_ceiling [--log2-items 23] [--threads 1 2] [--rounds 3] [--load 0.75]
//                  [--double-items 4194304]
#include <absl/container/flat_hash_map.h>
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "ccf/detail/page_buffer.hpp"
#include "ccf/hash.hpp"
#include "ccf/tables/clht_lb.hpp"
#include "ccf/tables/clht_lf.hpp"
#include "ccf/tables/cuckoo_map.hpp"
#include "ccf/tables/hopscotch_map.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Unsynchronized linear probing over m slots plus a tail of kTail, so that no probe wraps.
class LinearTable {
 public:
  // `touch`: write every page now (as ccf's tables construct every bucket of a table made for a
  // size); otherwise the pages fault as inserts first reach them.
  // `spares`: zeroed, already written buffers, smallest last, that the table and its growth take
  // before they map new memory.
  using Spares = std::vector<ccf::detail::PageBuffer>;
  LinearTable(std::size_t slots, double load, bool touch, Spares spares = {})
      : m_(std::max<std::size_t>(slots, 16)),
        load_(load),
        spares_(std::move(spares)),
        buffer_(take_buffer(bytes_for(m_), spares_)),
        slots_(reinterpret_cast<Slot*>(buffer_.data())) {
    if (touch) buffer_.clear();
  }

  static std::size_t bytes_for(std::size_t slots) { return (slots + kTail) * sizeof(Slot); }

  // Inserts a key not yet present (the builds insert distinct keys), doubling first when the
  // table would pass its load.
  void insert_new(std::uint64_t key, std::uint64_t value) {
    if (static_cast<double>(count_ + 1) > load_ * static_cast<double>(m_)) grow();
    place(key, value);
    ++count_;
  }

  bool contains(std::uint64_t key) const {
    for (const Slot* s = slots_ + home(key); s->key != 0; ++s) {
      if (s->key == key) return true;
    }
    return false;
  }

  // Rehashes into a table of twice the slots, walking the old slots in order.
  void grow() {
    LinearTable next(2 * m_, load_, false, std::move(spares_));
    for (std::size_t i = 0; i < m_ + kTail; ++i) {
      if (slots_[i].key != 0) next.place(slots_[i].key, slots_[i].value);
    }
    next.count_ = count_;
    spares_ = std::move(next.spares_);
    std::swap(m_, next.m_);
    buffer_.swap(next.buffer_);
    std::swap(slots_, next.slots_);
  }

  std::size_t memory_bytes() const { return buffer_.reserved_bytes(); }

 private:
  struct Slot {
    std::uint64_t key, value;
  };
  static constexpr std::size_t kTail = 4096;

  static ccf::detail::PageBuffer take_buffer(std::size_t bytes, Spares& spares) {
    if (spares.empty() || spares.back().size() != bytes) return ccf::detail::PageBuffer(bytes);
    ccf::detail::PageBuffer b = std::move(spares.back());
    spares.pop_back();
    return b;
  }

  std::size_t home(std::uint64_t key) const { return ccf::reduce_range(ccf::mix64(key), m_); }

  void place(std::uint64_t key, std::uint64_t value) {
    Slot* s = slots_ + home(key);
    while (s->key != 0) ++s;
    if (s == slots_ + m_ + kTail) throw std::runtime_error("linear: a probe ran off the tail");
    *s = Slot{key, value};
  }

  std::size_t m_;
  double load_;
  Spares spares_;
  ccf::detail::PageBuffer buffer_;
  Slot* slots_;
  std::size_t count_ = 0;
};

// Distinct non-zero keys of thread t: a splitmix64 stream (a bijection of the counter).
std::vector<std::uint64_t> keys_of(unsigned t, std::size_t n) {
  std::vector<std::uint64_t> keys(n);
  for (std::size_t j = 0; j < n; ++j) {
    std::uint64_t z = (static_cast<std::uint64_t>(t) << 40 | (j + 1)) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    keys[j] = (z ^ (z >> 31)) | 1;  // odd: never 0; still distinct up to 2^63 keys of a stream
  }
  return keys;
}

// Runs body(t) on threads 0..T-1, all released at once; returns the seconds from the first
// thread's start to the last thread's end (each thread reads the clock itself).
double timed_on_threads(unsigned threads, const std::function<void(unsigned)>& body) {
  std::barrier start(static_cast<std::ptrdiff_t>(threads));
  std::vector<Clock::time_point> begins(threads), ends(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      begins[t] = Clock::now();
      body(t);
      ends[t] = Clock::now();
    });
  }
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) -
                                       *std::min_element(begins.begin(), begins.end()))
      .count();
}

struct Build {
  double seconds;
  double bytes;  // the tables' memory, summed over threads
};

// Makes each thread's table (`make(n)`: sized for n keys, or as grown from empty) before the
// clock starts, as a concurrent table's reserve or construction is outside chtbench's timed fill;
// then times the threads inserting their keys, checks that every key is found, and returns the
// time and the tables' memory (`bytes_of`).
template <class Make, class Insert, class Contains, class BytesOf>
Build build(unsigned threads, const std::vector<std::vector<std::uint64_t>>& keys, Make make,
            Insert insert, Contains contains, BytesOf bytes_of) {
  std::vector<decltype(make(std::size_t{}))> tables;
  for (unsigned t = 0; t < threads; ++t) tables.push_back(make(keys[t].size()));
  const double s = timed_on_threads(threads, [&](unsigned t) {
    for (std::uint64_t key : keys[t]) insert(*tables[t], key);
  });
  double bytes = 0;
  for (unsigned t = 0; t < threads; ++t) {
    for (std::uint64_t key : keys[t]) {
      if (!contains(*tables[t], key)) throw std::runtime_error("a built table lost a key");
    }
    bytes += static_cast<double>(bytes_of(*tables[t]));
  }
  return {s, bytes};
}

// One migration of a ccf table holding `items` keys (90% of the capacity it was made for) into
// a table twice as large -- reserve() for one item more than its slots hold, which each table
// meets with its next size, from `threads` threads at once: what the table's cooperative resize
// costs beside the unsynchronized rehash of as many items.
template <class Table>
double ccf_doubling_ms(unsigned threads, std::size_t items) {
  Table table(items * 10 / 9);
  for (std::uint64_t key : keys_of(99, items)) table.insert(key, key);
  const std::size_t buckets = table.bucket_count(), slots = table.capacity();
  const double ms = 1e3 * timed_on_threads(threads, [&](unsigned) { table.reserve(slots + 1); });
  if (table.size() != items) throw std::runtime_error("a migration lost keys");
  if (table.resizes() != 1 || table.bucket_count() != 2 * buckets) {
    throw std::runtime_error("reserve made " + std::to_string(table.resizes()) + " resizes, " +
                             std::to_string(buckets) + " -> " +
                             std::to_string(table.bucket_count()) + " buckets: not one doubling");
  }
  return ms;
}

// The ccf tables whose doubling is timed beside the unsynchronized one.
const std::vector<std::pair<std::string, std::function<double(unsigned, std::size_t)>>>
    ccf_doublings = {{"clht-lb", ccf_doubling_ms<ccf::ClhtLb>},
                     {"clht-lf", ccf_doubling_ms<ccf::ClhtLf>},
                     {"cuckoo-map", ccf_doubling_ms<ccf::CuckooMap<std::uint64_t, std::uint64_t>>},
                     {"hopscotch", ccf_doubling_ms<ccf::HopscotchMap<32>>}};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"growth without synchronization: the ceiling of build from empty ÷ sized"};
  unsigned log2_items = 23, rounds = 3;
  double load = 0.75;
  std::size_t double_items = std::size_t{1} << 22;
  std::vector<unsigned> thread_counts{1, 2};
  app.add_option("--log2-items", log2_items, "keys built, 2^N over all threads")
      ->check(CLI::Range(10u, 28u));
  app.add_option("--threads", thread_counts, "thread counts")->check(CLI::Range(1u, 64u));
  app.add_option("--rounds", rounds, "rounds (medians reported)")->check(CLI::Range(1u, 50u));
  app.add_option("--load", load, "the linear table's load at which it doubles")
      ->check(CLI::Range(0.3, 0.9));
  app.add_option("--double-items", double_items, "capacity of the doubled table (90% full)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 28));
  CLI11_PARSE(app, argc, argv);

  const std::size_t items = std::size_t{1} << log2_items;
  std::printf("# growth_ceiling --log2-items %u --load %.2f --double-items %zu, %u rounds\n",
              log2_items, load, double_items, rounds);
  std::printf("# round table threads build M_inserts/s B/item   (doubling: ms for one rehash)\n");
  // (table, threads, sized) -> rates and bytes per item; (threads) -> doubling ms
  std::map<std::tuple<std::string, unsigned, bool>, std::vector<double>> rate, bytes_per_item;
  std::map<std::pair<std::string, unsigned>, std::vector<double>> doubling_ms;
  for (unsigned round = 1; round <= rounds; ++round) {
    for (unsigned threads : thread_counts) {
      std::vector<std::vector<std::uint64_t>> keys;
      for (unsigned t = 0; t < threads; ++t) keys.push_back(keys_of(t, items / threads));
      using Swiss = absl::flat_hash_map<std::uint64_t, std::uint64_t>;
      const auto run = [&](const std::string& name, bool sized) {
        if (name != "absl") {
          return build(
              threads, keys,
              [&](std::size_t n) {
                if (sized) {
                  return std::make_unique<LinearTable>(
                      static_cast<std::size_t>(std::ceil(static_cast<double>(n) / load)), load,
                      true);
                }
                LinearTable::Spares spares;  // linear-warm: every size growth will reach, written
                for (std::size_t m = 32; name == "linear-warm" &&
                                         static_cast<double>(n) > load * static_cast<double>(m) / 2;
                     m *= 2) {
                  spares.emplace_back(LinearTable::bytes_for(m)).clear();
                }
                std::reverse(spares.begin(), spares.end());
                return std::make_unique<LinearTable>(16, load, false, std::move(spares));
              },
              [](LinearTable& t, std::uint64_t key) { t.insert_new(key, key); },
              [](const LinearTable& t, std::uint64_t key) { return t.contains(key); },
              [](const LinearTable& t) { return t.memory_bytes(); });
        }
        return build(
            threads, keys,
            [&](std::size_t n) {
              auto t = std::make_unique<Swiss>();
              if (sized) t->reserve(n);
              return t;
            },
            [](Swiss& t, std::uint64_t key) { t.emplace(key, key); },
            [](const Swiss& t, std::uint64_t key) { return t.contains(key); },
            // SwissTable: one 16-byte slot and one control byte per bucket.
            [](const Swiss& t) { return t.bucket_count() * (2 * sizeof(std::uint64_t) + 1); });
      };
      // Alternate the order within a round: sized first in odd rounds, grown first in even.
      const bool first_sized = round % 2 == 1;
      for (const bool sized : {first_sized, !first_sized}) {
        for (const char* name : {"linear", "linear-warm", "absl"}) {
          const Build r = run(name, sized);
          const auto key = std::make_tuple(std::string(name), threads, sized);
          rate[key].push_back(static_cast<double>(items) / r.seconds / 1e6);
          bytes_per_item[key].push_back(r.bytes / static_cast<double>(items));
          std::printf("%u %-11s %u %-10s %7.2f %6.1f\n", round, name, threads,
                      sized ? "sized" : "from_empty", rate[key].back(), bytes_per_item[key].back());
          std::fflush(stdout);
        }
      }
      // One doubling of a 90%-full table (--double-items over all threads), timed alone.
      const std::size_t per_thread = double_items / threads;
      std::vector<LinearTable> tables;
      for (unsigned t = 0; t < threads; ++t) {
        tables.emplace_back(
            static_cast<std::size_t>(std::ceil(static_cast<double>(per_thread) / load)), load,
            true);
        for (std::uint64_t key : keys_of(t + 64, per_thread * 9 / 10)) tables[t].insert_new(key, 1);
      }
      doubling_ms[{"linear", threads}].push_back(
          1e3 * timed_on_threads(threads, [&](unsigned t) { tables[t].grow(); }));
      tables.clear();
      const std::size_t moved = per_thread * 9 / 10 * threads;
      std::printf("%u doubling linear %u %zu_items %7.1f\n", round, threads, moved,
                  doubling_ms[{"linear", threads}].back());
      for (const auto& [name, doubling] : ccf_doublings) {
        doubling_ms[{name, threads}].push_back(doubling(threads, moved));
        std::printf("%u doubling %s %u %zu_items %7.1f\n", round, name.c_str(), threads, moved,
                    doubling_ms[{name, threads}].back());
        std::fflush(stdout);
      }
    }
  }
  std::printf(
      "## medians: table threads sized_M/s from_empty_M/s from_empty/sized "
      "B/item_sized B/item_from_empty\n");
  for (const char* name : {"linear", "linear-warm", "absl"}) {
    for (unsigned threads : thread_counts) {
      const auto sized = std::make_tuple(std::string(name), threads, true);
      const auto grown = std::make_tuple(std::string(name), threads, false);
      std::vector<double> ratios;
      for (std::size_t r = 0; r < rate[sized].size(); ++r) {
        ratios.push_back(rate[grown][r] / rate[sized][r]);  // within one round
      }
      std::printf("%-11s %u %7.2f %7.2f %5.2f %6.1f %6.1f\n", name, threads, median(rate[sized]),
                  median(rate[grown]), median(ratios), median(bytes_per_item[sized]),
                  median(bytes_per_item[grown]));
    }
  }
  std::vector<std::string> doubled{"linear"};
  for (const auto& [name, doubling] : ccf_doublings) doubled.push_back(name);
  for (const std::string& name : doubled) {
    for (unsigned threads : thread_counts) {
      std::printf("doubling %-10s %u threads: %.1f ms (median) for %zu items\n", name.c_str(),
                  threads, median(doubling_ms[{name, threads}]),
                  double_items / threads * 9 / 10 * threads);
    }
  }
  return 0;
}
