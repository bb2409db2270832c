// Waiting primitives shared by the spin locks, the reader-writer lock and the elision policies.
//
// Every waiter in ccf::sync spins through SpinWait: a short exponential run of PAUSE
// instructions (1, 2, 4, ... 64 per call), then std::this_thread::yield() on every further call.
// The yield matters as much as the pause: with more threads than cores (8 or 16 threads on 2
// cores) the thread a waiter depends on (a lock holder, the queue predecessor that must hand
// over an MCS/CLH lock) is often descheduled, and pure spinning would burn the rest of the
// waiter's time slice before the holder can run again.
//
// Also here: the cache-line size every lock pads its state to, and thread_slot(), a small
// per-thread index used to spread per-thread counters over padded slots (the reader indicator of
// ReaderWriterLock, the elision statistics).
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ccf::sync {

// The unit of coherence on every x86 and most ARM servers; lock states are padded to it so that
// two locks (or a lock and the data next to it) never share a line.
inline constexpr std::size_t kCacheLine = 64;

// One spin-wait hint: PAUSE on x86 (saves power, frees the sibling hyperthread and avoids the
// memory-order mis-speculation penalty when the awaited line changes), nothing elsewhere.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Exponential backoff for one wait: call wait() once per failed check.
class SpinWait {
 public:
  void wait() noexcept {
    if (round_ <= kMaxShift) {
      for (unsigned i = 0; i < (1u << round_); ++i) cpu_relax();
      ++round_;
    } else {
      std::this_thread::yield();
    }
  }

 private:
  static constexpr unsigned kMaxShift = 6;  // at most 64 pauses per call before yielding
  unsigned round_ = 0;
};

// A T alone on its cache line(s).
template <class T>
struct alignas(kCacheLine) CacheLinePadded {
  T value{};
};

// Number of distinct thread slots; threads beyond it share slots (round-robin), which the users
// of thread_slot() tolerate: they keep counters, not ownership flags, in the slots.
inline constexpr unsigned kThreadSlots = 64;

// This thread's slot in [0, kThreadSlots): assigned round-robin on the thread's first call.
inline unsigned thread_slot() noexcept {
  static std::atomic<unsigned> next{0};
  // Relaxed: only the atomicity of the increment matters (distinct threads get distinct
  // tickets); no data is published through it.
  thread_local const unsigned slot = next.fetch_add(1, std::memory_order_relaxed) % kThreadSlots;
  return slot;
}

}  // namespace ccf::sync
