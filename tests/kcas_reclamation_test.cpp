// EpochDomain (lockfree/reclamation.hpp): what a guard protects, nesting, re-entrant deleters
// (one retiring into the very bag being emptied keeps its grace period; one retiring into a stale
// bag only delays it), hand-over of a finished thread's limbo bags, drain, and a reader/writer
// stress run that AddressSanitizer checks for use-after-free.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "ccf/lockfree/reclamation.hpp"

namespace {

using ccf::lockfree::EpochDomain;

// Counts live instances so a test can see exactly when the domain deletes one.
struct Tracked {
  static constexpr std::uint64_t kMagic = 0x5eed'cafe'f00d'beefULL;
  explicit Tracked(std::atomic<int>& live) : live_(live) { live_.fetch_add(1); }
  ~Tracked() {
    magic = 0;
    live_.fetch_sub(1);
  }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;

  std::uint64_t magic = kMagic;
  std::atomic<int>& live_;
};

// Advances and reclaims as much as the calling thread can.
void churn(EpochDomain& domain, int rounds = 8) {
  for (int i = 0; i < rounds; ++i) {
    domain.try_advance();
    domain.reclaim();
  }
}

TEST(EpochDomain, ReclaimsAfterTwoAdvances) {
  std::atomic<int> live{0};
  EpochDomain domain;
  domain.retire(new Tracked(live));
  EXPECT_EQ(live.load(), 1);
  domain.reclaim();  // same epoch: not yet
  EXPECT_EQ(live.load(), 1);
  ASSERT_TRUE(domain.try_advance());
  domain.reclaim();  // one advance: a region opened before the retire may still be open
  EXPECT_EQ(live.load(), 1);
  ASSERT_TRUE(domain.try_advance());
  domain.reclaim();
  EXPECT_EQ(live.load(), 0);
  EXPECT_EQ(domain.retired_count(), 1U);
  EXPECT_EQ(domain.reclaimed_count(), 1U);
}

TEST(EpochDomain, GuardInAnotherThreadHoldsBackReclamation) {
  std::atomic<int> live{0};
  EpochDomain domain;
  std::latch pinned(1);
  std::latch retired(1);
  std::latch unpinned(1);
  std::thread reader([&] {
    {
      const auto guard = domain.pin();
      pinned.count_down();
      retired.wait();
    }
    unpinned.count_down();
  });
  pinned.wait();
  for (int i = 0; i < 100; ++i) domain.retire(new Tracked(live));
  churn(domain);
  EXPECT_EQ(live.load(), 100) << "an object was freed while a guard older than it was alive";
  retired.count_down();
  unpinned.wait();
  churn(domain);
  EXPECT_EQ(live.load(), 0);
  reader.join();
}

TEST(EpochDomain, NestedGuardsUnpinAtTheOutermost) {
  std::atomic<int> live{0};
  EpochDomain domain;
  std::latch inner_closed(1);
  std::latch checked(1);
  std::thread reader([&] {
    const auto outer = domain.pin();
    { const auto inner = domain.pin(); }
    inner_closed.count_down();
    checked.wait();
  });
  inner_closed.wait();
  domain.retire(new Tracked(live));
  churn(domain);
  EXPECT_EQ(live.load(), 1) << "closing an inner guard unpinned the thread";
  checked.count_down();
  reader.join();
  churn(domain);
  EXPECT_EQ(live.load(), 0);
}

// A deleter that retires again (as the K-CAS finalizer does): the second object is reclaimed
// after further grace periods, or by drain().
struct TwoPhase {
  EpochDomain* domain;
  std::atomic<int>* live;
  Tracked* second;
  static void first_phase(void* p) {
    auto* self = static_cast<TwoPhase*>(p);
    self->domain->retire(self->second);
    delete self;
  }
};

TEST(EpochDomain, DeletersMayRetire) {
  std::atomic<int> live{0};
  EpochDomain domain;
  for (int i = 0; i < 50; ++i) {
    domain.retire(new TwoPhase{&domain, &live, new Tracked(live)}, &TwoPhase::first_phase);
  }
  churn(domain);
  EXPECT_EQ(live.load(), 0) << "second phase not reclaimed by later advances";

  for (int i = 0; i < 50; ++i) {
    domain.retire(new TwoPhase{&domain, &live, new Tracked(live)}, &TwoPhase::first_phase);
  }
  EXPECT_GT(domain.drain(), 0U);
  EXPECT_EQ(live.load(), 0);
  EXPECT_EQ(domain.retired_count(), domain.reclaimed_count());
}

// Regression (a TSan use-after-free in the lock-free filter's hammer): retire() empties the
// stale bag of its epoch by running its deleters, and a deleter that retires again while the
// epoch has moved on by a multiple of 3 lands in that same bag. The outer retire must not then
// relabel the bag with its own, older epoch: that shortened the grace period of the deleter's
// object, which was then freed at once. Every deleter here checks that two advances have passed
// since its object was retired.
struct EpochChecked {
  struct Context {
    EpochDomain domain;
    int early = 0;          // objects freed before two advances since their retire
    bool draining = false;  // drain() ignores epochs on purpose
  };
  Context* context;
  std::uint64_t retired_at;
  int advances_in_deleter;  // > 0: the deleter advances that often, then retires a follower

  static void retire(Context& context, int advances) {
    context.domain.retire(new EpochChecked{&context, context.domain.epoch(), advances}, &deleter);
  }
  static void deleter(void* p) {
    auto* self = static_cast<EpochChecked*>(p);
    Context& context = *self->context;
    if (!context.draining && context.domain.epoch() < self->retired_at + 2) ++context.early;
    for (int i = 0; i < self->advances_in_deleter; ++i) context.domain.try_advance();
    if (self->advances_in_deleter > 0) retire(context, 0);
    delete self;
  }
};

TEST(EpochDomain, DeleterRetiringIntoTheBagBeingEmptiedKeepsItsGracePeriod) {
  for (int advances = 1; advances <= 7; ++advances) {
    EpochChecked::Context context;
    EpochChecked::retire(context, advances);  // epoch e, bag e % 3
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(context.domain.try_advance());
    // Epoch e + 3: this retire finds bag (e + 3) % 3 stale and runs its deleter, which moves
    // the epoch on and retires a follower, into the same bag when it moved on by 3 or 6.
    EpochChecked::retire(context, 0);
    context.domain.reclaim();
    for (int i = 0; i < 6; ++i) {
      EpochChecked::retire(context, 0);
      context.domain.try_advance();
      context.domain.reclaim();
    }
    context.draining = true;
    context.domain.drain();
    EXPECT_EQ(context.early, 0) << "an object was freed before two advances (its deleter "
                                << "advanced " << advances << " times)";
  }
}

// A deleter's retire never empties a bag (deleters do not nest, so one spare buffer per record
// suffices): if its bag still holds an older epoch, the old items stay and take the later label,
// which only delays them. Here reclaim() runs the deleter of bag 0 (epoch 3), which advances the
// epoch to 7 and retires into bag 1, still holding epoch 1.
TEST(EpochDomain, DeleterRetiringIntoAStaleBagDelaysItsItems) {
  struct AdvanceTwiceThenRetire {
    EpochDomain* domain;
    Tracked* follower;
    static void deleter(void* p) {
      auto* self = static_cast<AdvanceTwiceThenRetire*>(p);
      EXPECT_TRUE(self->domain->try_advance());
      EXPECT_TRUE(self->domain->try_advance());
      self->domain->retire(self->follower);
      delete self;
    }
  };
  std::atomic<int> live{0};
  EpochDomain domain;
  ASSERT_EQ(domain.epoch(), 1U);
  domain.retire(new Tracked(live));  // bag 1, epoch 1
  ASSERT_TRUE(domain.try_advance());
  ASSERT_TRUE(domain.try_advance());
  domain.retire(new AdvanceTwiceThenRetire{&domain, new Tracked(live)},
                &AdvanceTwiceThenRetire::deleter);  // bag 0, epoch 3
  ASSERT_TRUE(domain.try_advance());
  ASSERT_TRUE(domain.try_advance());
  domain.reclaim();  // epoch 5: bags 0 and 1 are due; bag 0 goes first
  EXPECT_EQ(domain.epoch(), 7U);
  EXPECT_EQ(live.load(), 2) << "bag 1 was emptied from inside a deleter, or its late item freed";
  ASSERT_TRUE(domain.try_advance());
  domain.reclaim();  // epoch 8: bag 1 (now epoch 7) is not due
  EXPECT_EQ(live.load(), 2);
  ASSERT_TRUE(domain.try_advance());
  domain.reclaim();  // epoch 9
  EXPECT_EQ(live.load(), 0);
  EXPECT_EQ(domain.retired_count(), domain.reclaimed_count());
}

TEST(EpochDomain, FinishedThreadsBagsAreAdoptedAndReclaimed) {
  std::atomic<int> live{0};
  EpochDomain domain;
  std::thread([&] {
    for (int i = 0; i < 10; ++i) domain.retire(new Tracked(live));
  }).join();
  EXPECT_EQ(live.load(), 10);
  // The next thread to register takes over the finished thread's record, bags included.
  std::thread([&] { churn(domain); }).join();
  EXPECT_EQ(live.load(), 0);
  EXPECT_EQ(domain.retired_count(), 10U);
  EXPECT_EQ(domain.reclaimed_count(), 10U);
}

TEST(EpochDomain, DestructorDrains) {
  std::atomic<int> live{0};
  {
    EpochDomain domain;
    const auto guard = domain.pin();
    for (int i = 0; i < 10; ++i) domain.retire(new Tracked(live));
  }
  EXPECT_EQ(live.load(), 0);
}

TEST(EpochDomain, DomainMayDieBeforeTheThreadsThatUsedIt) {
  std::atomic<int> live{0};
  auto domain = std::make_unique<EpochDomain>();
  std::latch used(1);
  std::latch destroyed(1);
  std::thread user([&] {
    domain->retire(new Tracked(live));
    used.count_down();
    destroyed.wait();
  });  // exits after the domain is gone: releases its record into the surviving shared state
  used.wait();
  domain.reset();
  destroyed.count_down();
  user.join();
  EXPECT_EQ(live.load(), 0);
}

// Readers follow a shared pointer inside guards while writers replace and retire it. ASan
// reports any read of a freed node; the magic check catches the rest.
TEST(EpochDomain, ReadersNeverSeeFreedObjects) {
  constexpr int kReaders = 3;
  constexpr int kWriters = 2;
  constexpr int kSwapsPerWriter = 20'000;
  std::atomic<int> live{0};
  std::atomic<std::uint64_t> bad_reads{0};
  {
    EpochDomain domain;
    std::atomic<Tracked*> shared{new Tracked(live)};
    std::atomic<int> writers_left{kWriters};
    std::latch start(kReaders + kWriters);
    std::vector<std::thread> threads;
    for (int r = 0; r < kReaders; ++r) {
      threads.emplace_back([&] {
        start.arrive_and_wait();
        while (writers_left.load() > 0) {
          const auto guard = domain.pin();
          const Tracked* node = shared.load();
          if (node->magic != Tracked::kMagic) bad_reads.fetch_add(1);
        }
      });
    }
    // Writers go on past kSwapsPerWriter until something has been reclaimed (a reader preempted
    // inside its guard holds the epoch back meanwhile; on a busy machine that can outlast the
    // swaps), for at most 20 s.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&] {
        start.arrive_and_wait();
        for (int i = 0; i < kSwapsPerWriter || (domain.reclaimed_count() == 0 &&
                                                std::chrono::steady_clock::now() < deadline);
             ++i) {
          domain.retire(shared.exchange(new Tracked(live)));
        }
        writers_left.fetch_sub(1);
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_GT(domain.reclaimed_count(), 0U) << "nothing was reclaimed while the threads ran";
    delete shared.load();
  }
  EXPECT_EQ(bad_reads.load(), 0U);
  EXPECT_EQ(live.load(), 0);
}

}  // namespace
