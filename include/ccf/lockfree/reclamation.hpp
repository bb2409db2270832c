// EpochDomain: epoch-based reclamation (EBR) for the descriptors of ccf::lockfree.
//
// Why epochs and not hazard pointers. In the K-CAS of kcas.hpp (1) a reader dereferences a
// descriptor reached through a word, (2) a helper dereferences descriptors recursively (helping
// nests up to one level per concurrent K-CAS), and (3) the descriptors that their operation
// could not restore at once (a helper was still inside, or a late installer of a descriptor
// they replaced may be) need TWO grace periods: one after the outcome is decided (so that no
// late installer can re-install it) before their words are finalized, and one after
// finalization before they are freed; the epoch also tells when such a late installer is gone. With
// hazard pointers, (1) costs a publish-and-revalidate with a full fence per descriptor reached, (2)
// needs an unbounded number of hazard slots, and (3) needs a second mechanism. With epochs a reader
// pins once per operation (one store, no per-pointer work), nesting is free, and (3) is a re-retire
// from the finalizer. The price is the classic one: a thread stalled inside a guard stops the
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
//                                              │ spare:   the buffer a bag is emptied into
//
//   pin:     state = (E << 1) | 1            (outermost guard only; guards nest)
//   unpin:   state = 0
//   retire:  append to bags[E % 3] (first emptying that bag if it still holds epoch E - 3 or
//            older, then labelling it E unless a deleter run meanwhile labelled it later; a
//            retire from a deleter only relabels it, see below)
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
// A domain used after the thread's cache is gone (by a destructor of static storage that runs
// after the main thread's thread_local objects) borrows a record for each call, likewise.
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
// replays it), so labels only grow. A retire from a deleter never empties a bag: if its bag
// still holds an older epoch, the bag keeps those items and takes the later label (a later label
// only delays them), so deleters never nest and one spare buffer per record is enough.
//
// Memory. No allocation in the steady state: a record's three bags and its spare reserve
// kBagReserve items when the record is created, and emptying a bag swaps its buffer with the
// spare (the deleters run from the spare; the bag goes on with the spare's capacity). A bag
// fills up only while reclamation is held back (a thread stalled inside a guard); then all four
// buffers of the record double together and keep that capacity (buffers rotate through the
// swaps, and the finalizers of a full bag refill another one), so the same stall again
// allocates nothing.
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
#include <utility>
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
  std::atomic<std::uint64_t> growths{0};  // grow() calls: 4 allocations each
  // Owned by the thread holding in_use (handed over by (E7)).
  unsigned nesting = 0;
  unsigned retires_since_advance = 0;
  bool reclaiming = false;  // deleters are running out of `spare`
  EpochBag bags[3];
  std::vector<EpochRetired> spare;  // empty unless reclaiming

  explicit EpochRecord(std::size_t reserve) {
    for (EpochBag& bag : bags) bag.items.reserve(reserve);
    spare.reserve(reserve);
  }
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

// Ends a thread's ownership of a record (drain() may be emptying it meanwhile: quiescent).
inline void give_back(EpochRecord& record) noexcept {
  assert(record.nesting == 0);
  // (E7) release: the limbo bags this thread filled are handed to the next owner, whose
  // acquire CAS on in_use (acquire_record) pairs with this store.
  record.in_use.store(false, std::memory_order_release);
}

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
    closed() = true;  // a domain used later in this thread (static storage) borrows records
  }

  // Set once this thread's cache is destroyed; trivially destructible, so it stays readable.
  static bool& closed() noexcept {
    thread_local constinit bool flag = false;
    return flag;
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
    give_back(*e.record);
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
        if (borrowed_) detail::give_back(*record_);
      }
    }

   private:
    friend class EpochDomain;
    Guard(Record* record, bool borrowed) noexcept : record_(record), borrowed_(borrowed) {}
    Record* record_;
    bool borrowed_;  // a record borrowed for this guard alone (see LocalRecord)
  };

  // How many retires a thread makes between two attempts to advance the epoch and reclaim.
  static constexpr unsigned kRetiresPerAdvance = 16;
  // Items each bag (and the spare) of a record has room for from the start: a thread retires
  // ~kRetiresPerAdvance items per epoch when the epoch moves freely, and up to a few times that
  // when an attempt to advance finds a thread pinned at the previous epoch; 8x is the margin.
  static constexpr std::size_t kBagReserve = 8 * kRetiresPerAdvance;

  EpochDomain() : shared_(std::make_shared<detail::EpochShared>()) {}
  EpochDomain(const EpochDomain&) = delete;
  EpochDomain& operator=(const EpochDomain&) = delete;
  // Requires quiescence (see drain()).
  ~EpochDomain() {
    drain();
    shared_->alive.store(false);
  }

  [[nodiscard]] Guard pin() {
    LocalRecord local = local_record();
    Record* r = local.get();
    if (r->nesting++ == 0) {
      const std::uint64_t e = shared_->epoch.load();  // (E1)
      r->state.store((e << 1) | 1);                   // (E2)
    }
    return Guard(r, local.hand_over());
  }

  // Hands `object` to the domain: deleter(object) runs once no guard that could still reach
  // it is alive. The caller must already have made the object unreachable for new guards.
  void retire(void* object, void (*deleter)(void*)) {
    const LocalRecord local = local_record();
    Record* r = local.get();
    const std::uint64_t e = shared_->epoch.load();  // (E6)
    detail::EpochBag& bag = r->bags[e % 3];
    if (bag.epoch != e) {
      // The bag still holds epoch e - 3 or older: E >= bag.epoch + 2, so it is free to go. A
      // retire from a deleter (r->reclaiming) leaves its items there under the later label.
      if (!r->reclaiming) reclaim_bag(*r, bag);
      // A deleter that retired may have labelled this bag with a later epoch (E moved on by a
      // multiple of 3 while the deleters ran): keep it, or its items would be freed too soon.
      // The later label is also safe for `object`.
      bag.epoch = std::max(bag.epoch, e);
    }
    if (bag.items.size() == bag.items.capacity()) [[unlikely]] {
      grow(*r);
    }
    bag.items.push_back(detail::EpochRetired{object, deleter});
    // Statistics, owner-written: relaxed (see EpochRecord).
    r->retired.store(r->retired.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (++r->retires_since_advance >= kRetiresPerAdvance && !r->reclaiming) {
      r->retires_since_advance = 0;
      try_advance();
      reclaim(*r);
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
    const LocalRecord local = local_record();
    reclaim(*local.get());
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
  // How often a full bag made a record's four buffers grow (each time: 4 allocations and 4
  // frees); only while reclamation is held back.
  std::uint64_t growth_count() const noexcept { return sum(&Record::growths); }

 private:
  // The calling thread's record; or, once the thread's cache is gone (the domain is used by a
  // destructor of static or thread storage that runs after it), a record borrowed for one call
  // (or one guard) and given back at its end, as a thread that lives that long would.
  class LocalRecord {
   public:
    LocalRecord(Record* record, bool borrowed) noexcept : record_(record), borrowed_(borrowed) {}
    LocalRecord(const LocalRecord&) = delete;
    LocalRecord& operator=(const LocalRecord&) = delete;
    ~LocalRecord() {
      if (borrowed_) detail::give_back(*record_);
    }
    Record* get() const noexcept { return record_; }
    bool hand_over() noexcept { return std::exchange(borrowed_, false); }  // to a Guard

   private:
    Record* record_;
    bool borrowed_;
  };

  LocalRecord local_record() {
    if (detail::EpochThreadCache::closed()) [[unlikely]] {
      return {acquire_record(), true};
    }
    detail::EpochThreadCache& cache = detail::epoch_thread_cache();
    if (Record* r = cache.find(shared_.get())) return {r, false};
    Record* r = acquire_record();
    cache.add(shared_, r);
    return {r, false};
  }

  void reclaim(Record& r) {
    if (r.reclaiming) return;  // called from a deleter: the outer reclamation carries on
    const std::uint64_t e = shared_->epoch.load();  // (E6)
    for (detail::EpochBag& bag : r.bags) {
      // A deleter may have relabelled a later bag meanwhile: the label is read afresh.
      if (bag.epoch + 2 <= e && !bag.items.empty()) reclaim_bag(r, bag);
    }
  }

  // A free record (adopting its bags) or a new one, now owned by the caller.
  Record* acquire_record() {
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
      mine = new Record(kBagReserve);
      mine->next = shared_->head.load();
      while (!shared_->head.compare_exchange_weak(mine->next, mine)) {
      }
    }
    return mine;
  }

  // Runs the deleters of one of r's bags (r is the caller's record, or any record when
  // quiescent); the bag may receive new items meanwhile (a deleter that retires lands in the
  // current epoch's bag, which may be this one, and relabels it). Allocates nothing: the items
  // move to r.spare by a swap, so the bag goes on with the spare's capacity, and the spare keeps
  // theirs. Deleters retiring to r only append (r.reclaiming), so the spare is not reentered;
  // deleters retiring to another record (drain()) may empty that record's bags, into its own
  // spare.
  static std::size_t reclaim_bag(Record& r, detail::EpochBag& bag) {
    assert(!r.reclaiming && r.spare.empty());
    r.reclaiming = true;
    bag.items.swap(r.spare);
    // By index and by copy: a deleter's retire may grow (move) r.spare, never change its items.
    for (std::size_t i = 0; i < r.spare.size(); ++i) {
      const detail::EpochRetired item = r.spare[i];
      item.deleter(item.object);
    }
    const std::size_t count = r.spare.size();
    r.spare.clear();  // keeps its capacity
    r.reclaiming = false;
    // Statistics, owner-written (or quiescent): relaxed (see EpochRecord).
    r.reclaimed.store(r.reclaimed.load(std::memory_order_relaxed) + count,
                      std::memory_order_relaxed);
    return count;
  }

  // A bag is full (reclamation was held back): doubles the capacity of every buffer of r. The
  // spare may be in use (deleters running): reserve() keeps its items and their order.
  static void grow(Record& r) {
    std::size_t capacity = r.spare.capacity();
    for (const detail::EpochBag& bag : r.bags) capacity = std::max(capacity, bag.items.capacity());
    capacity *= 2;
    for (detail::EpochBag& bag : r.bags) bag.items.reserve(capacity);
    r.spare.reserve(capacity);
    // Statistics, owner-written: relaxed (see EpochRecord).
    r.growths.store(r.growths.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
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
