// rw_fairness_bench: one reader and one writer flat out on one coarse cuckoo filter, for the
// writer-preferring ReaderWriterLock<McsLock> and the phase-fair PhaseFairLock: lookups and
// updates completed, their ratio, and the longest single lookup. A writer-preferring lock lets the
// writer crowd the reader out; the phase-fair one admits a waiting reader after at most one
// writer. A measurement, so it belongs here and not in a test: what a thread completes in a time
// window depends on the scheduler (tests/rw_fairness_test.cpp checks the order of admission by
// handshakes instead).
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <latch>
#include <thread>

#include "ccf/concurrent/coarse_cuckoo_filter.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/phase_fair_lock.hpp"
#include "ccf/sync/rw_lock.hpp"
#include "ccf/sync/spin_locks.hpp"

namespace {

struct Hammered {
  std::uint64_t reads = 0;
  std::uint64_t writes = 0;
  std::chrono::nanoseconds longest_read{0};
  bool lost = false;  // a resident key was not found, or an update failed
};

template <class Lock>
Hammered hammer(std::chrono::milliseconds duration) {
  using Filter = ccf::CoarseCuckooFilter<ccf::PackedTable<12, 4>, ccf::sync::LockOnly<Lock>>;
  constexpr std::uint64_t kResident = 1 << 15;
  Filter filter(2 * kResident);
  Hammered result;
  for (std::uint64_t key = 0; key < kResident; ++key) {
    result.lost |= filter.insert(key) != ccf::Status::kOk;
  }
  std::atomic<bool> stop{false};
  std::atomic<bool> writer_lost{false}, reader_lost{false};
  std::latch start(3);
  std::thread writer([&] {
    start.arrive_and_wait();
    for (std::uint64_t key = 1 << 20; !stop.load(std::memory_order_relaxed); ++key) {
      if (filter.insert(key) != ccf::Status::kOk || filter.erase(key) != ccf::Status::kOk) {
        writer_lost = true;
      }
      result.writes += 2;
    }
  });
  std::thread reader([&] {
    start.arrive_and_wait();
    for (std::uint64_t key = 0; !stop.load(std::memory_order_relaxed); ++key) {
      const auto before = std::chrono::steady_clock::now();
      if (!filter.contains(key % kResident)) reader_lost = true;
      result.longest_read =
          std::max(result.longest_read, std::chrono::steady_clock::now() - before);
      ++result.reads;
    }
  });
  start.arrive_and_wait();
  std::this_thread::sleep_for(duration);
  stop.store(true);
  writer.join();
  reader.join();
  result.lost |= writer_lost.load() || reader_lost.load();
  return result;
}

void report(const char* lock, const Hammered& r) {
  fmt::print(
      "{:<26} {:>12} {:>12} {:>14.3f} {:>16.3f}\n", lock, r.reads, r.writes,
      static_cast<double>(r.reads) / static_cast<double>(std::max<std::uint64_t>(r.writes, 1)),
      std::chrono::duration<double, std::milli>(r.longest_read).count());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"one reader and one writer on a coarse filter: writer-preferring vs phase-fair"};
  unsigned milliseconds = 2000;
  app.add_option("-d,--duration-ms", milliseconds, "time each lock is hammered")
      ->check(CLI::Range(10u, 600'000u));
  CLI11_PARSE(app, argc, argv);
  const std::chrono::milliseconds duration(milliseconds);

  fmt::print("{:<26} {:>12} {:>12} {:>14} {:>16}\n", "lock", "lookups", "updates", "lookups/update",
             "longest lookup ms");
  const Hammered writer_preferring =
      hammer<ccf::sync::ReaderWriterLock<ccf::sync::McsLock>>(duration);
  report("ReaderWriterLock<McsLock>", writer_preferring);
  const Hammered phase_fair = hammer<ccf::sync::PhaseFairLock>(duration);
  report("PhaseFairLock", phase_fair);
  if (writer_preferring.lost || phase_fair.lost) {
    fmt::print(stderr, "rw_fairness_bench: a resident key was missed or an update failed\n");
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
