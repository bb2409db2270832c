// EpochDomain: epoch-based reclamation (EBR) for the descriptors of ccf::lockfree.
//
// Why epochs and not hazard pointers. The K-CAS of kcas.hpp leaves descriptors in the words
// they changed until reclamation finalizes them, so (1) a reader dereferences a descriptor
// reached through a word, (2) a helper dereferences descriptors recursively (helping nests up
// to one level per concurrent K-CAS), and (3) a descriptor needs TWO grace periods: one after
// its outcome is decided (so that no late helper can re-install it) before its words are
// finalized, and one after finalization before it is freed. With hazard pointers, (1) costs a
// publish-and-revalidate with a full fence per descriptor reached, (2) needs an unbounded
// number of hazard slots, and (3) needs a second mechanism. With epochs a reader pins once per
// operation (one store, no per-pointer work), nesting is free, and (3) is a re-retire from
// the finalizer. The price is the classic one: a thread stalled inside a guard stops the
// epoch, so memory retired after that point waits for it (see "Progress" below).
//
// State. A global epoch counter E and one record per registered thread:
//
//   EpochDomain ──► Shared { epoch E, head ──► Record ──► Record ──► ... (push-only list) }
//                                              │ state:  0            not in a critical region
//                                              │         (e << 1) | 1 pinned, observed E == e
//                                              │ in_use: owned by a live thread
//                                              │ bags[3]: limbo lists, bag[e % 3] holds what
//                                              │          this thread retired in epoch e
//
//   pin:     state = (E << 1) | 1            (outermost guard only; guards nest)
//   unpin:   state = 0
//   retire:  append to bags[E % 3] (first emptying that bag if it still holds epoch E - 3 or
//            older, then labelling it E unless a deleter run meanwhile labelled it later)
//   advance: E -> E + 1 once every pinned record observed E
//   reclaim: a bag of epoch b is freed once E >= b + 2
//
// Why E >= b + 2 is safe: E can only move past e + 1 after every thread pinned at e has left its
// region, so when E reaches b + 2 every region that was open while the object was still
// reachable (before the retire that read E == b) has closed; a region opened later cannot
// reach the object because the caller unlinked it before retiring it. Hence the invariant: a
// bag's label is at least the E read by the retire of each item in it (a later label only
// delays reclamation; an earlier one frees too soon).
//
// Threads register on first use (a thread_local cache maps each domain to the thread's
// record) and deregister at thread exit: the record is marked free and its limbo bags stay in
// it; the next thread that registers adopts the record, bags included, and reclaims them.
// drain() reclaims everything at once and is for quiescent moments (no thread inside a guard
// or retiring on this domain, e.g. after joining the workers); the destructor drains.
//
// Deleters may retire again (the K-CAS finalizer re-retires the descriptor it finalized). A
// bag's items are taken out before their deleters run, and such a retire reads E afresh: the
// thread is not pinned, so E may have moved on by a multiple of 3 meanwhile, and the retire
// then lands in the very bag being emptied and labels it with that later epoch. Nothing may
// lower a label afterwards: retire() relabelling the bag it emptied with its own, older E cut
// the grace period of what the deleter retired short (a finalized K-CAS descriptor was freed
// under a reader; kcas_reclamation_test DeleterRetiringIntoTheBagBeingEmptiedKeepsItsGracePeriod
// replays it), so labels only grow.
//
// Synchronization points (all seq_cst unless marked):
//   (E1) pin: load E            (E2) pin: store state = (e << 1) | 1
//   (E3) unpin: store state = 0, release
//   (E4) advance: load every record's state   (E5) advance: CAS E -> E + 1
//   (E6) retire / reclaim: load E
//   (E7) record hand-over: in_use = false (release) at thread exit / CAS false -> true
// (E2) is seq_cst because the region's later loads must not move before it (StoreLoad): if
// they could, the region might load a pointer that is being unlinked while an advancer (E4)
// still reads the record as unpinned, and the object would be freed under it. The C++ model
// forbids that reordering only between seq_cst operations, so a region must load the pointers
// it follows (to objects that may be retired here) with seq_cst loads, as Kcas does. (E3) only
// needs release: it publishes "done reading", and (E4) (seq_cst, so at least acquire) reading it
// makes everything the region did happen-before the reclaim that follows.
//
// Progress: pin, unpin and retire are lock-free (wait-free after a thread's first use, except
// that retire runs deleters). A stalled thread never blocks another thread's operation; it
// only delays reclamation of what was retired while it is pinned, so memory use is bounded
// only if threads do not stall inside guards for long.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ccf::lockfree {

namespace detail {

struct EpochRetired {
  void* object;
  void (*deleter)(void*);
};

// The objects a thread retired during one epoch.
struct EpochBag {
  std::uint64_t epoch = 0;
  std::vector<EpochRetired> items;
};

struct alignas(64) EpochRecord {
  std::atomic<std::uint64_t> state{0};  // 0, or (epoch << 1) | 1 while pinned
  std::atomic<bool> in_use{true};
  EpochRecord* next = nullptr;  // immutable once the record is published
  // Counters are written only by the thread owning the record (or by drain(), quiescent) and
  // read by anyone: relaxed loads and stores, never a read-modify-write.
  std::atomic<std::uint64_t> retired{0};
  std::atomic<std::uint64_t> reclaimed{0};
  // Owned by the thread holding in_use (handed over by (E7)).
  unsigned nesting = 0;
  unsigned retires_since_advance = 0;
  bool reclaiming = false;
  EpochBag bags[3];
};

struct EpochShared {
  std::atomic<std::uint64_t> epoch{1};
  std::atomic<EpochRecord*> head{nullptr};
  std::atomic<bool> alive{true};

  EpochShared() = default;
  EpochShared(const EpochShared&) = delete;
  EpochShared& operator=(const EpochShared&) = delete;
  ~EpochShared() {
    for (EpochRecord* r = head.load(); r != nullptr;) {
      EpochRecord* next = r->next;
      delete r;
      r = next;
    }
  }
};

// Per thread: the record this thread owns in each domain it has used. Entries keep their
// domain's shared state alive, so a record can be released at thread exit even if the domain
// was destroyed first.
class EpochThreadCache {
 public:
  struct Entry {
    std::shared_ptr<EpochShared> shared;
    EpochRecord* record;
  };

  EpochThreadCache() = default;
  EpochThreadCache(const EpochThreadCache&) = delete;
  EpochThreadCache& operator=(const EpochThreadCache&) = delete;
  ~EpochThreadCache() {
    for (Entry& e : entries_) release(e);
  }

  EpochRecord* find(const EpochShared* shared) const noexcept {
    for (const Entry& e : entries_) {
      if (e.shared.get() == shared) return e.record;
    }
    return nullptr;
  }

  void add(std::shared_ptr<EpochShared> shared, EpochRecord* record) {
    // Forget domains destroyed since (their records need no hand-over).
    std::erase_if(entries_, [](const Entry& e) { return !e.shared->alive.load(); });
    entries_.push_back(Entry{std::move(shared), record});
  }

 private:
  static void release(Entry& e) noexcept {
    assert(e.record->nesting == 0 && "thread exits inside an epoch guard");
    // (E7) release: the limbo bags this thread filled are handed to the next owner, whose
    // acquire CAS on in_use (register_thread) pairs with this store.
    e.record->in_use.store(false, std::memory_order_release);
  }

  std::vector<Entry> entries_;
};

inline EpochThreadCache& epoch_thread_cache() {
  thread_local EpochThreadCache cache;
  return cache;
}

}  // namespace detail

class EpochDomain {
  using Record = detail::EpochRecord;

 public:
  // A critical region: while a Guard is alive, nothing retired to this domain after the
  // Guard was created is reclaimed. Guards nest; only the outermost one publishes.
  class Guard {
   public:
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() {
      if (--record_->nesting == 0) {
        // (E3) release: everything this region read from retired objects happens-before the
        // advancer's load (E4) that sees 0, hence before the reclaim it enables.
        record_->state.store(0, std::memory_order_release);
      }
    }

   private:
    friend class EpochDomain;
    explicit Guard(Record* record) noexcept : record_(record) {}
    Record* record_;
  };

  // How many retires a thread makes between two attempts to advance the epoch and reclaim.
  static constexpr unsigned kRetiresPerAdvance = 16;

  EpochDomain() : shared_(std::make_shared<detail::EpochShared>()) {}
  EpochDomain(const EpochDomain&) = delete;
  EpochDomain& operator=(const EpochDomain&) = delete;
  // Requires quiescence (see drain()).
  ~EpochDomain() {
    drain();
    shared_->alive.store(false);
  }

  [[nodiscard]] Guard pin() {
    Record* r = local_record();
    if (r->nesting++ == 0) {
      const std::uint64_t e = shared_->epoch.load();  // (E1)
      r->state.store((e << 1) | 1);                   // (E2)
    }
    return Guard(r);
  }

  // Hands `object` to the domain: deleter(object) runs once no guard that could still reach
  // it is alive. The caller must already have made the object unreachable for new guards.
  void retire(void* object, void (*deleter)(void*)) {
    Record* r = local_record();
    const std::uint64_t e = shared_->epoch.load();  // (E6)
    detail::EpochBag& bag = r->bags[e % 3];
    if (bag.epoch != e) {
      // The bag still holds epoch e - 3 or older: E >= bag.epoch + 2, so it is free to go.
      reclaim_bag(*r, bag);
      // A deleter that retired may have labelled this bag with a later epoch (E moved on by a
      // multiple of 3 while the deleters ran): keep it, or its items would be freed too soon.
      // The later label is also safe for `object`.
      bag.epoch = std::max(bag.epoch, e);
    }
    bag.items.push_back(detail::EpochRetired{object, deleter});
    // Statistics, owner-written: relaxed (see EpochRecord).
    r->retired.store(r->retired.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (++r->retires_since_advance >= kRetiresPerAdvance && !r->reclaiming) {
      r->retires_since_advance = 0;
      try_advance();
      reclaim();
    }
  }

  template <class T>
  void retire(T* object) {
    retire(object, [](void* p) { delete static_cast<T*>(p); });
  }

  // Moves the epoch forward if every pinned thread has observed the current one.
  bool try_advance() {
    std::uint64_t e = shared_->epoch.load();
    for (Record* r = shared_->head.load(); r != nullptr; r = r->next) {
      const std::uint64_t s = r->state.load();  // (E4)
      if ((s & 1) != 0 && (s >> 1) != e) return false;
    }
    return shared_->epoch.compare_exchange_strong(e, e + 1);  // (E5)
  }

  // Runs the deleters of this thread's bags that are old enough.
  void reclaim() {
    Record* r = local_record();
    if (r->reclaiming) return;  // a deleter retired: the outer reclaim() carries on
    r->reclaiming = true;
    const std::uint64_t e = shared_->epoch.load();  // (E6)
    for (detail::EpochBag& bag : r->bags) {
      if (bag.epoch + 2 <= e) reclaim_bag(*r, bag);
    }
    r->reclaiming = false;
  }

  // Runs every pending deleter (including those retired by deleters), ignoring epochs.
  // Only when quiescent: no thread is inside a guard of this domain or retiring to it, and
  // the calling thread has synchronized with every thread that did (e.g. joined it).
  // Returns how many deleters ran.
  std::size_t drain() {
    std::size_t total = 0;
    for (bool again = true; again;) {
      again = false;
      for (Record* r = shared_->head.load(); r != nullptr; r = r->next) {
        for (detail::EpochBag& bag : r->bags) {
          if (bag.items.empty()) continue;
          total += reclaim_bag(*r, bag);
          again = true;
        }
      }
    }
    return total;
  }

  std::uint64_t epoch() const noexcept { return shared_->epoch.load(); }

  // Totals over all threads; exact when quiescent, approximate otherwise.
  std::uint64_t retired_count() const noexcept { return sum(&Record::retired); }
  std::uint64_t reclaimed_count() const noexcept { return sum(&Record::reclaimed); }

 private:
  Record* local_record() {
    detail::EpochThreadCache& cache = detail::epoch_thread_cache();
    if (Record* r = cache.find(shared_.get())) return r;
    return register_thread(cache);
  }

  Record* register_thread(detail::EpochThreadCache& cache) {
    Record* mine = nullptr;
    for (Record* r = shared_->head.load(); r != nullptr && mine == nullptr; r = r->next) {
      bool free = false;
      // (E7) acquire: adopts the bags the previous owner released with its release store.
      if (r->in_use.compare_exchange_strong(free, true, std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
        mine = r;
      }
    }
    if (mine == nullptr) {
      mine = new Record;
      mine->next = shared_->head.load();
      while (!shared_->head.compare_exchange_weak(mine->next, mine)) {
      }
    }
    cache.add(shared_, mine);
    return mine;
  }

  // Runs the deleters of one bag; the bag may receive new items meanwhile (a deleter that
  // retires lands in the current epoch's bag, which may be this one, and relabels it).
  static std::size_t reclaim_bag(Record& r, detail::EpochBag& bag) {
    std::vector<detail::EpochRetired> items;
    items.swap(bag.items);
    for (const detail::EpochRetired& item : items) item.deleter(item.object);
    // Statistics, owner-written (or quiescent): relaxed (see EpochRecord).
    r.reclaimed.store(r.reclaimed.load(std::memory_order_relaxed) + items.size(),
                      std::memory_order_relaxed);
    const std::size_t count = items.size();
    if (bag.items.empty()) {  // keep the capacity for the next epoch
      items.clear();
      bag.items.swap(items);
    }
    return count;
  }

  std::uint64_t sum(std::atomic<std::uint64_t> Record::*counter) const noexcept {
    std::uint64_t total = 0;
    for (Record* r = shared_->head.load(); r != nullptr; r = r->next) {
      // Statistics: relaxed, no ordering needed.
      total += (r->*counter).load(std::memory_order_relaxed);
    }
    return total;
  }

  std::shared_ptr<detail::EpochShared> shared_;
};

}  // namespace ccf::lockfree
