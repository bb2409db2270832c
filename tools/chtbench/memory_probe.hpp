// The physical reference for a lookup-bound structure ("limit_mops").
//
// One probe operation reads two independent, uniformly random 64-byte lines of a region the
// size of the structure under test -- what a cuckoo filter lookup must touch at the least (two
// candidate buckets). Operations are issued in batches: the line addresses of a whole batch are
// computed and prefetched first, then read, so the misses overlap as well as the memory system
// allows. A structure's throughput divided by this figure says how close it comes to the
// hardware's limit for its size; the region uses the same huge-page policy as the ccf filters.
//
// Header-only and free of chtbench dependencies so that other benchmarks can reuse it:
//   chtbench::MemoryProbe probe(table_bytes);
//   double mops = chtbench::measure_limit_mops(probe, threads, std::chrono::milliseconds(300));
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <ccf/detail/page_buffer.hpp>
#include <ccf/hash.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace chtbench {

class MemoryProbe {
 public:
  static constexpr std::size_t kLine = 64;
  static constexpr std::size_t kBatch = 16;  // operations per batch: 32 lines in flight

  explicit MemoryProbe(std::size_t region_bytes)
      : lines_(std::max<std::size_t>(region_bytes, 4096) / kLine), buffer_(lines_ * kLine) {
    // Touch every line so that the measurement never pays for page faults.
    for (std::size_t i = 0; i < lines_; ++i) {
      const std::uint64_t word = ccf::mix64(i);
      std::memcpy(buffer_.data() + i * kLine, &word, sizeof word);
    }
  }

  std::size_t region_bytes() const { return lines_ * kLine; }

  // Runs `ops` operations (rounded up to whole batches) of the stream numbered `stream`;
  // returns a checksum that the caller must consume so that the reads are not elided.
  std::uint64_t run(std::uint64_t stream, std::uint64_t ops) const {
    std::uint64_t sum = 0;
    std::uint64_t counter = ccf::mix64(stream);
    const std::byte* base = buffer_.data();
    for (std::uint64_t done = 0; done < ops; done += kBatch) {
      const std::byte* lines[2 * kBatch];
      for (auto& line : lines) {
        line = base + ccf::reduce_range(ccf::mix64(++counter), lines_) * kLine;
        __builtin_prefetch(line);
      }
      for (std::size_t i = 0; i < kBatch; ++i) sum += load(lines[2 * i]) ^ load(lines[2 * i + 1]);
    }
    return sum;
  }

 private:
  static std::uint64_t load(const std::byte* p) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  std::size_t lines_;
  ccf::detail::PageBuffer buffer_;
};

// Million probe operations per second of `threads` threads running together for `duration`
// (started behind a barrier). `on_thread(i)` runs first in thread i, e.g. to pin it.
inline double measure_probe_mops(const MemoryProbe& probe, unsigned threads,
                                 std::chrono::milliseconds duration,
                                 const std::function<void(unsigned)>& on_thread = {}) {
  using Clock = std::chrono::steady_clock;
  constexpr std::uint64_t kChunk = 64 * MemoryProbe::kBatch;
  std::atomic<bool> stop{false};
  std::vector<std::uint64_t> ops(threads, 0);
  std::vector<Clock::time_point> begin(threads), end(threads);
  std::atomic<std::uint64_t> checksum{0};  // keeps the reads observable
  std::barrier start(static_cast<std::ptrdiff_t>(threads) + 1);
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      if (on_thread) on_thread(t);
      start.arrive_and_wait();
      begin[t] = Clock::now();
      std::uint64_t done = 0, sum = 0;
      // At least one chunk: on a busy machine a thread may first run after `stop` is set, and
      // a measurement of nothing would report a limit of 0. Relaxed: the flag only ends the
      // loop; results are published by the join.
      do {
        sum += probe.run(t * 0x100000000ULL + done, kChunk);
        done += kChunk;
      } while (!stop.load(std::memory_order_relaxed));
      end[t] = Clock::now();
      ops[t] = done;
      checksum.fetch_add(sum, std::memory_order_relaxed);
    });
  }
  start.arrive_and_wait();
  std::this_thread::sleep_for(duration);
  stop.store(true, std::memory_order_relaxed);
  workers.clear();  // joins
  // The threads' own clocks: the caller may have been descheduled at the barrier.
  const double seconds =
      std::chrono::duration<double>(std::ranges::max(end) - std::ranges::min(begin)).count();
  std::uint64_t total = 0;
  for (const std::uint64_t n : ops) total += n;
  return static_cast<double>(total) / seconds / 1e6;
}

// The limit: the best of `rounds` measurements of duration / rounds each. The best, not the
// median: it is the reference for what the hardware can do, and on a shared machine the
// interference that lowers a round is not a property of the memory system.
inline double measure_limit_mops(const MemoryProbe& probe, unsigned threads,
                                 std::chrono::milliseconds duration,
                                 const std::function<void(unsigned)>& on_thread = {},
                                 unsigned rounds = 3) {
  double best = 0;
  for (unsigned r = 0; r < rounds; ++r) {
    best = std::max(best, measure_probe_mops(probe, threads, duration / rounds, on_thread));
  }
  return best;
}

}  // namespace chtbench
