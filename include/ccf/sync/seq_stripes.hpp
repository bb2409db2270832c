// SeqStripes: lock striping with optimistic, store-free reads (the synchronization of the
// striped cuckoo filter, concurrent/striped_cuckoo_filter.hpp, and of each table of the hopscotch
// map, tables/hopscotch_map.hpp; the writers' locks of the concurrent cuckoo map,
// tables/cuckoo_map.hpp, whose lookups validate per-bucket versions).
//
// S stripes (a power of two); bucket i belongs to stripe i mod S. Each stripe is one cache line
// of its own:
//
//   | seq (u64) | items (i64) | padding ... |   (64 bytes)
//
// seq is a seqlock and a spin lock at once: even = free, odd = a writer is inside. items is the
// stripe's shard of the item count (items() sums them), so counting costs no extra shared line.
//
//   read(a, b, probe)   optimistic: read both stripes' seq (even), run probe, re-read both seq;
//                       unchanged => probe saw one consistent moment of every bucket of those
//                       stripes. Stores nothing, so read-only work scales with cores. Retries
//                       while a writer is inside one of its stripes.
//   Guard(a[, b[, c]])  locks the stripes of up to three buckets, in address order (no deadlock
//                       between guards), each once.
//   RangeGuard(a, n, wait)  the stripes of buckets a .. a + n - 1 (n <= S), in address order
//                       (a run that wraps around takes its part at the start of the array
//                       first); without `wait`, only if each is free when tried (else none
//                       held).
//   prefetch_for_lock(a, b)  fetch the stripe lines of buckets a and b for writing, ahead of a
//                       Guard: a batch stages it with the buckets, so that the lock's miss
//                       overlaps theirs and those of the keys ahead instead of coming after.
//   waiting             a writer waits for a stripe, and a reader for a writer to leave one,
//                       through SpinWait: pauses, then yields (a holder may be preempted).
//
// Memory ordering (a seqlock in the fence-free form of Boehm, "Can seqlocks get along with
// programming language memory models?", 2012), numbered for the comments at the points of use:
//   (1) writer: CAS seq even -> odd, acquire (the lock acquisition);
//   (2) writer: the protected data's updates are release stores or RMWs, so the odd seq (1)
//       happens-before any reader that sees an update; pairs with (4);
//   (3) writer: seq.store(odd + 1, release): publishes the updates; pairs with (5) and with the
//       next writer's (1);
//   (4) reader: the probe's loads of protected data are acquire: a reader that saw an update of
//       a writer also sees that writer's odd seq at (6), and retries;
//   (5) reader: seq.load(acquire) before the probe;
//   (6) reader: seq.load(relaxed) after the probe (kept after it by (4)).
// No standalone fences: ThreadSanitizer does not model them, and on x86 acquire loads and
// release stores are what the plain instructions already do. The users of this class state how
// their data meets (2) and (4).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "ccf/detail/prefetch.hpp"
#include "ccf/sync/spin_wait.hpp"

namespace ccf::sync {

class SeqStripes {
  struct alignas(kCacheLine) Stripe {
    std::atomic<std::uint64_t> seq{0};
    std::atomic<std::int64_t> items{0};
  };

 public:
  // `count` must be a power of two.
  explicit SeqStripes(std::size_t count)
      : count_(count), stripes_(std::make_unique<Stripe[]>(count)) {}

  std::size_t count() const noexcept { return count_; }
  std::size_t memory_bytes() const noexcept { return count_ * sizeof(Stripe); }

  // probe() as of one moment at which no writer was inside the stripes of buckets a and b.
  template <class Probe>
  auto read(std::uint64_t a, std::uint64_t b, Probe&& probe) const {
    const Stripe& first = stripe_of(a);
    const Stripe& second = stripe_of(b);
    SpinWait wait;
    for (;;) {
      // (5) acquire: pairs with the release (3) of the last writer of each stripe.
      const std::uint64_t seq1 = first.seq.load(std::memory_order_acquire);
      const std::uint64_t seq2 = second.seq.load(std::memory_order_acquire);
      if (((seq1 | seq2) & 1) == 0) {
        // (4): the probe's acquire loads; if they see a writer's update (2), (6) sees its seq.
        auto result = probe();
        // (6)
        if (first.seq.load(std::memory_order_relaxed) == seq1 &&
            second.seq.load(std::memory_order_relaxed) == seq2) {
          return result;
        }
      }
      wait.wait();
    }
  }

  void prefetch_for_lock(std::uint64_t a, std::uint64_t b) const noexcept {
    ccf::detail::prefetch_line_for_write(&stripe_of(a));
    ccf::detail::prefetch_line_for_write(&stripe_of(b));
  }

  // Holds the stripes of one, two or three buckets for its lifetime.
  class Guard {
   public:
    Guard(const SeqStripes& stripes, std::uint64_t a) noexcept
        : held_{&stripes.stripe_of(a)}, count_(1) {
      lock_held();
    }
    Guard(const SeqStripes& stripes, std::uint64_t a, std::uint64_t b) noexcept
        : held_{&stripes.stripe_of(a), &stripes.stripe_of(b)} {
      if (held_[0] > held_[1]) std::swap(held_[0], held_[1]);
      count_ = held_[0] == held_[1] ? 1 : 2;
      lock_held();
    }
    Guard(const SeqStripes& stripes, std::uint64_t a, std::uint64_t b, std::uint64_t c) noexcept
        : held_{&stripes.stripe_of(a), &stripes.stripe_of(b), &stripes.stripe_of(c)} {
      std::sort(held_.begin(), held_.end());
      count_ = static_cast<unsigned>(std::unique(held_.begin(), held_.end()) - held_.begin());
      lock_held();
    }
    ~Guard() {
      for (unsigned i = 0; i < count_; ++i) unlock(*held_[i]);
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    // held_[0 .. count_): distinct and in address order, so guards never deadlock.
    void lock_held() noexcept {
      for (unsigned i = 0; i < count_; ++i) lock(*held_[i]);
    }

    std::array<Stripe*, 3> held_{};
    unsigned count_;
  };

  // Holds the stripes of a run of n <= count() buckets for its lifetime (the chunk a migration
  // copies, or the new segments a copy writes), in address order like Guard's.
  class RangeGuard {
   public:
    RangeGuard(const SeqStripes& stripes, std::uint64_t first, std::uint64_t n, bool wait) noexcept
        : stripes_(stripes),
          first_(first & (stripes.count_ - 1)),
          wrapped_(first_ + n > stripes.count_ ? first_ + n - stripes.count_ : 0) {
      assert(n <= stripes.count_);
      for (held_ = 0; held_ < n; ++held_) {
        Stripe& stripe = stripes_.stripes_[index(held_)];
        if (wait) {
          lock(stripe);
        } else if (!try_lock(stripe)) {
          release();
          return;
        }
      }
      owns_ = true;
    }
    ~RangeGuard() {
      if (owns_) release();
    }
    RangeGuard(const RangeGuard&) = delete;
    RangeGuard& operator=(const RangeGuard&) = delete;
    bool owns() const noexcept { return owns_; }

   private:
    // The i-th stripe in address order: the wrapped part [0, wrapped_), then [first_, count).
    std::uint64_t index(std::uint64_t i) const noexcept {
      return i < wrapped_ ? i : first_ + (i - wrapped_);
    }
    void release() noexcept {
      for (std::uint64_t i = 0; i < held_; ++i) unlock(stripes_.stripes_[index(i)]);
    }

    const SeqStripes& stripes_;
    const std::uint64_t first_;
    const std::uint64_t wrapped_;  // stripes of the run past the end of the array
    std::uint64_t held_ = 0;       // index(0 .. held_): held
    bool owns_ = false;
  };

  void add_items(std::uint64_t bucket, std::int64_t delta) noexcept {
    stripe_of(bucket).items.fetch_add(delta, std::memory_order_relaxed);
  }
  // Exact when no writer is inside; otherwise a value the count had recently.
  std::size_t items() const noexcept {
    std::int64_t total = 0;
    for (std::size_t s = 0; s < count_; ++s) {
      total += stripes_[s].items.load(std::memory_order_relaxed);
    }
    return static_cast<std::size_t>(total);
  }
  void clear_items() noexcept {
    for (std::size_t s = 0; s < count_; ++s) stripes_[s].items.store(0);
  }

 private:
  Stripe& stripe_of(std::uint64_t bucket) const noexcept { return stripes_[bucket & (count_ - 1)]; }

  static void lock(Stripe& stripe) noexcept {
    SpinWait wait;
    while (!try_lock(stripe)) wait.wait();
  }
  static bool try_lock(Stripe& stripe) noexcept {
    std::uint64_t seq = stripe.seq.load(std::memory_order_relaxed);
    // (1) acquire: everything the previous holder wrote before its release (3) is visible; the
    // holder's data updates (2) are release: ordered after this.
    return (seq & 1) == 0 &&
           stripe.seq.compare_exchange_strong(seq, seq + 1, std::memory_order_acquire);
  }
  static void unlock(Stripe& stripe) noexcept {
    // (3) release: publishes the holder's updates to readers' acquire load (5) and to the next
    // writer's acquire CAS (1).
    stripe.seq.store(stripe.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  std::size_t count_;
  std::unique_ptr<Stripe[]> stripes_;
};

}  // namespace ccf::sync
