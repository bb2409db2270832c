// Kcas: lock-free multi-word compare-and-swap over 64-bit words.
//
// The lock-free cuckoo filter moves a fingerprint between two buckets in one step: clear the
// source slot, fill the target slot (each in its word) and raise the source stripe's removal
// counter (a third word). Kcas makes such a change of up to MaxWords words atomic.
//
// ALGORITHM: Guerraoui, Kogan, Marathe, Zablotchi, "Efficient Multi-word Compare and Swap",
// DISC 2020 (GKMZ), with the words restored by the operation itself. GKMZ was chosen over
// Harris-Fraser-Pratt (HFP, 2002) because it needs k + 1 CASes on the critical path where HFP
// needs 3k + 1 (an RDCSS, i.e. two CASes, to install each word plus k CASes to remove the
// descriptor), and because its descriptor is one flat object with no RDCSS sub-descriptors.
// GKMZ leaves the descriptor in the words after the operation, for reclamation to remove after
// a grace period; but then every later read of such a word reads through the descriptor (an
// epoch pin and two loads), and a table that only serves lookups is never cleaned: measured,
// lookups of a table churned by a thread that exited ran at 0.25x the striped filter's. Here
// the operation's last member (below) restores its words at once, while the lines are in its
// cache: k more CASes and one fetch-sub, 2k + 2 in all, and a table between operations holds
// payloads only.
//
// A word holds either a payload or a reference to entry i of a descriptor:
//
//   bit:    63   62                                                          0
//         +----+--------------------------------------------------------------+
//         |  0 | payload: 63 bits, the caller's data (KcasField packs fields) |
//         +----+--------------------------------------------------------------+
//         |  1 | descriptor address (64-byte aligned, < 2^63)  |  entry i     |
//         +----+--------------------------------------------------------------+
//   So bit 63 is reserved; bits 0..62 (kPayloadBits = 63) are the caller's: the lock-free
//   filter packs five 12-bit (seven 8-bit) fingerprints into them, or one 63-bit counter.
//
//   descriptor (64-byte aligned, from per-thread pools, see "Memory" below):
//     status        active -> succeeded | failed, decided once
//     members       threads that may still install it: the owner from birth, a helper from
//                   join to leave; 0 = closed, for good
//     wait_until    0, or E + 2: it replaced a reference to a decided descriptor that was not
//                   cleanable, at epoch E (below)
//     size, owner   n entries; the Kcas whose epoch domain reclaims it
//     entries[0..n) {word, expected, desired}, sorted by word address
//
//   logical value of a word = payload                      if it holds a payload
//                           = entries[i].expected          if it refers to an active or failed D
//                           = entries[i].desired           if it refers to a succeeded D
//
// compare_exchange(entries), k = n words, run by the owner and by any thread that helps:
//   1. for i in 0..n (address order): read word i;
//        it refers to D (entry i)         -> installed already, next word
//        it refers to another ACTIVE D'   -> join D', help it to completion, leave, re-read
//        its logical value != expected_i  -> outcome = failed, stop
//        D is no longer active            -> stop (someone decided)
//        it refers to a decided D' that is not cleanable -> D.wait_until = epoch + 2
//        CAS(word i: what was read -> ref(D, i)), retry on failure        (k CASes)
//   2. CAS(D.status: active -> outcome)            the linearization point (1 CAS)
//   3. leave: members -= 1 (1 fetch-sub). The thread that closes D (members 1 -> 0) restores
//      its words if the epoch is past D.wait_until: CAS(word i: ref(D, i) -> final) (k CASes)
// So a successful K-CAS costs 2k + 2 atomic read-modify-writes, all by the owner while the words'
// lines are in its cache (HFP: 3k + 1), plus one epoch pin (a locked store). Before allocating
// anything, compare_exchange reads the words and fails at once if one already differs from its
// expected value (a failed K-CAS changes nothing, so it may linearize at that read).
//
// Why this is linearizable. A reference to an active D is only ever replaced after D has been
// decided (whoever finds D active helps it first), so when the status CAS succeeds every word
// refers to D and all logical values switch from expected to desired (or stay) at once.
//
// The one hazard: a "late" installer (the owner or a helper) reads word i (value v), checks
// that D is active, is preempted, and meanwhile D is installed, decided and removed and the
// word holds v again; the late CAS would then re-install a decided D and change the word's
// value. HFP prevents this with RDCSS, GKMZ with a grace period before any removal; this file
// with one rule:
//
//   (R) a payload is written over a reference to a decided D only when D is CLEANABLE --
//       closed (members = 0) and the global epoch >= D.wait_until -- or by finalization, which
//       starts only after an epoch grace period that follows D's decision.
//
// Why (R) suffices. Every installer of D is a member of D until its last install CAS (a helper
// joins before it reads any word for D, and join fails once D is closed), so after D closes
// nobody installs D again: restoring a closed D's words at once cannot be undone by a late
// CAS. While D is decided but open (its owner has not left yet, or a helper is still inside),
// a write over ref(D, i) installs another descriptor instead of a payload -- a K-CAS's, or for
// cas() a fresh one-word descriptor born succeeded and closed -- whose wait_until is E + 2 for
// the epoch E it read after seeing D decided. A late installer H of D read word i before D's
// decision, inside a guard that it keeps until it leaves D, so H is pinned at an epoch <= E;
// the epoch gets two past E only after every such guard closed: the replacing descriptor is
// not cleanable, and its words are not restored, while H may still install D. A descriptor
// installed over one that is not yet cleanable waits likewise (its E is the later one). So from the
// moment H read word i until H leaves D, word i holds no payload again unless it held one all
// along: it refers to D, or to a chain of waiting descriptors installed over that, or D was never
// installed there (then D did not succeed, since success needs every word installed, and H's CAS
// installs a failed D, which reads as expected_i, the value it replaced; D's last member restores
// it). Nor can a reference H read recur: a decided descriptor is never installed anew, and a
// descriptor is reused only after a grace period (induct on the first re-install). A closing thread
// whose descriptor still waits pushes the epoch on (two try_advance calls, which never wait) before
// it leaves the words to finalization. tests/kcas_test.cpp plays the hazard: KcasLateHelper (the
// owner, or a helper, completes D) and KcasLateHelperChain (a waiting K-CAS, then a cas, over D's
// word).
//
// Reclamation (reclamation.hpp). The owner retires D when it leaves. If it closed D and
// restored the words, D is freed for reuse after one grace period (readers and helpers may
// still hold it). Otherwise -- a helper is still a member (it restores the words when it
// leaves) or D still waits -- D takes GKMZ's path: after the first grace period the finalizer
// runs step 3 (a CAS that fails where the words were restored or replaced already) and
// retires D again; after the second grace period D is freed. So every word a Kcas operated on
// must outlive the Kcas, or drain() must run before the words go away.
//
// Memory. No operation allocates in the steady state (glibc's allocator takes locks: a preempted
// holder would stall a lock-free operation). Each thread's descriptor pool is one block of
// kPoolDescriptors, allocated at once on the thread's first K-CAS; a descriptor cycles within
// its thread: made from the pool, retired, finalized and destroyed by the same thread (a thread
// reclaims what it retired), back to the pool. The pool runs dry only when reclamation is held
// back, i.e. a thread stalled inside an epoch guard; only then does a descriptor come from `new`
// (KcasStats::descriptors_beyond_pool), and it is kept when freed (up to kMaxCachedDescriptors
// per thread), so a later stall of the same length allocates nothing. The retire bags reserve
// their capacity up front in the same way (reclamation.hpp).
//
// Reads see through descriptors: read() returns the logical value above and never helps, so a
// reader writes nothing to shared words (a reference's status is read after the reference; if
// D is active the value was `expected` at the earlier read, otherwise the read linearizes just
// after D's decision, when the word still referred to D). A plain payload costs one load and
// no locked instruction; a reference (met only while an operation is in flight, or left by one
// whose helper was preempted) adds an epoch pin and two loads from the descriptor.
//
// Progress: compare_exchange and cas are lock-free: an operation retries only when another
// one changed a word or decided a descriptor, and it helps rather than waits, so a thread
// stopped anywhere (see the hook below) never stops the others (a stopped member keeps its
// descriptor's words referring to it: they read through it, and writes over them install
// waiting descriptors). Helping nests: while helping D' at word w, a thread may meet D'' at a
// word above w (entries are installed in address order, so the chain strictly climbs the
// address order and cannot cycle); the depth is at most the number of concurrent K-CAS
// operations. A join retries only when another thread joined or left. read() is wait-free. A
// stalled thread delays only reclamation (and so the finalization of the words its epoch pins).
//
// Synchronization points. All accesses to words, statuses, members and wait_until are seq_cst: the
// argument for (R) uses the single total order (a thread that pins after D was retired must read
// D's decided status; a join that succeeds precedes the close in the order of `members`), and on
// x86-64 a seq_cst load is a plain load and every RMW is a locked instruction anyway. Numbered for
// reference below:
//   (K1) read a word            (K2) install CAS: word -> ref(D, i)   [publishes D's entries]
//   (K3) read a status, members, wait_until or the epoch
//   (K4) decision CAS on D.status
//   (K5) cas(): payload CAS, also over a cleanable reference
//   (K6) cas(): CAS word -> ref(fresh, 0)
//   (K7) cleanup and finalization CAS: ref(D, i) -> final value
//   (K8) join CAS / leave fetch-sub on D.members
//   (K9) read the epoch, raise D.wait_until
// Statistics counters are relaxed (they order nothing).
//
// FAQ
// - Can a word be changed by two Kcas objects? No. A word belongs to one Kcas: descriptors are
//   protected by the epoch domain of the Kcas that made them.
// - Can I load a KcasWord myself? No; it may hold a descriptor reference. Use read().
// - What must outlive what? Every word must outlive its Kcas (whose destructor finalizes the
//   descriptors still in words), or the owner must call drain() while quiescent first.
// - Does a failed compare_exchange write? It may have installed its descriptor in some words
//   before finding the mismatch; their logical values never change, and its last member
//   restores them before it returns.
// - When does a word hold a reference between operations? Only when a helper of the operation
//   was preempted before it left (the helper restores the words when it leaves), or the
//   operation wrote over a decided descriptor that was still open and, at its close, the epoch
//   could not be pushed two past its wait (a thread was pinned then): finalization restores
//   those. A table that one thread at
//   a time changes never does (tests: KcasSequential.SuccessAndFailureLeavePayloads,
//   LockFreeQuiescent.*).
// - Why is read() not helping? It need not: seeing through is linearizable and wait-free, and
//   it keeps lookups free of shared writes.
//
// Test hook: Hook::kEnabled = true makes the algorithm call hook(event) before and after each
// install CAS, before each decision and before each cleanup CAS, in owners and helpers alike;
// a test can block there to play a stalled thread. The default NoKcasHook compiles to nothing.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

#include "ccf/lockfree/reclamation.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define CCF_LOCKFREE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CCF_LOCKFREE_ASAN 1
#endif
#endif
#ifdef CCF_LOCKFREE_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ccf::lockfree {

namespace detail {

// Marks memory that is cached for reuse as unaddressable for AddressSanitizer, so that a use
// after reclamation is still reported when blocks are recycled instead of freed.
inline void poison(const void* p, std::size_t bytes) noexcept {
#ifdef CCF_LOCKFREE_ASAN
  __asan_poison_memory_region(p, bytes);
#else
  (void)p;
  (void)bytes;
#endif
}

inline void unpoison(const void* p, std::size_t bytes) noexcept {
#ifdef CCF_LOCKFREE_ASAN
  __asan_unpoison_memory_region(p, bytes);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace detail
#undef CCF_LOCKFREE_ASAN  // used above only: no project macro leaves a public header

enum class KcasStatus : std::uint32_t { kActive, kSucceeded, kFailed };

// Where a hook is called from.
enum class KcasHookPoint : std::uint8_t {
  kBeforeInstall,  // this thread checked entries[index].word and is about to CAS it
  kAfterInstall,   // this thread's CAS just installed the descriptor in entries[index].word
  kBeforeDecide,   // this thread is about to CAS the status (index = number of entries)
  kBeforeCleanup,  // the descriptor's last member is about to restore entries[index].word
};

struct KcasHookEvent {
  KcasHookPoint point;
  unsigned index;
  bool helping;                           // false in the thread that started the K-CAS
  const std::atomic<KcasStatus>* status;  // the descriptor's status, alive during the call
};

// The default hook: none.
struct NoKcasHook {
  static constexpr bool kEnabled = false;
  void operator()(const KcasHookEvent&) const noexcept {}
};

// The default statistics: none.
struct NoKcasStats {
  static constexpr bool kEnabled = false;
};

// Opt-in statistics, relaxed counters (approximate while operations run).
struct KcasStats {
  static constexpr bool kEnabled = true;
  std::atomic<std::uint64_t> kcas_calls{0};  // compare_exchange with >= 2 distinct words
  std::atomic<std::uint64_t> kcas_successes{0};
  std::atomic<std::uint64_t> kcas_early_failures{0};  // failed by the pre-read, no descriptor
  std::atomic<std::uint64_t> cas_calls{0};            // single-word cas (and 1-word K-CAS)
  std::atomic<std::uint64_t> cas_successes{0};
  std::atomic<std::uint64_t> cas_over_descriptor{0};    // cas that needed a one-word descriptor
  std::atomic<std::uint64_t> helps{0};                  // descriptors of other operations helped
  std::atomic<std::uint64_t> descriptors_allocated{0};  // made, from a pool or not
  std::atomic<std::uint64_t> descriptors_freed{0};
  // Made by `new` because this thread's pool was empty (reclamation held back by a stalled
  // thread), or because the thread's pool is already gone (static destruction).
  std::atomic<std::uint64_t> descriptors_beyond_pool{0};
  // Of those, deleted when freed because the freeing thread's list was full.
  std::atomic<std::uint64_t> descriptors_beyond_pool_deleted{0};
  std::atomic<std::uint64_t> words_finalized{0};  // finalization CASes that succeeded
  // Descriptors whose words their last member restored at once (the common case), and those
  // left to finalization after a grace period (a helper outlived the owner, or a wait).
  std::atomic<std::uint64_t> cleaned_at_once{0};
  std::atomic<std::uint64_t> left_to_finalization{0};
  std::atomic<std::uint64_t> words_cleaned{0};  // cleanup CASes that succeeded
  // read() calls that met a descriptor reference (and pinned, and read the descriptor). With
  // statistics on, that read writes this shared counter: KcasStats is for tests and diagnosis.
  std::atomic<std::uint64_t> reads_through_descriptor{0};
};

template <std::size_t MaxWords = 4, class Stats = NoKcasStats, class Hook = NoKcasHook>
class Kcas;

// A 64-bit word that K-CAS operations may change. Only a Kcas reads or writes its contents.
class alignas(8) KcasWord {
 public:
  static constexpr unsigned kPayloadBits = 63;
  static constexpr std::uint64_t kMarkBit = std::uint64_t{1} << kPayloadBits;
  static constexpr std::uint64_t kPayloadMask = kMarkBit - 1;

  static constexpr bool is_payload(std::uint64_t value) noexcept { return (value & kMarkBit) == 0; }

  constexpr KcasWord() noexcept : raw_(0) {}
  explicit constexpr KcasWord(std::uint64_t payload) noexcept : raw_(payload) {
    assert(is_payload(payload));
  }
  KcasWord(const KcasWord&) = delete;
  KcasWord& operator=(const KcasWord&) = delete;

  // True when the word holds a payload rather than a descriptor reference (for tests and
  // diagnostics: after Kcas::drain() every word is settled).
  bool is_settled() const noexcept { return is_payload(raw_.load()); }

 private:
  template <std::size_t, class, class>
  friend class Kcas;
  std::atomic<std::uint64_t> raw_;
};

static_assert(sizeof(KcasWord) == 8 && std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::is_trivially_destructible_v<KcasWord>, "tables of them are freed as raw memory");

// A bit field of a payload: bits [Offset, Offset + Width) of the 63 payload bits.
//   using Fingerprints = KcasField<0, 48>;  using Counter = KcasField<48, 15>;
//   payload = Counter::set(payload, Counter::get(payload) + 1);
template <unsigned Offset, unsigned Width>
struct KcasField {
  static_assert(Width > 0 && Offset + Width <= KcasWord::kPayloadBits,
                "a field must lie within payload bits 0..62");
  static constexpr std::uint64_t kMax = (std::uint64_t{1} << Width) - 1;
  static constexpr std::uint64_t kMask = kMax << Offset;

  static constexpr std::uint64_t get(std::uint64_t payload) noexcept {
    return (payload & kMask) >> Offset;
  }
  // Replaces the field; bits of `value` above Width are dropped (so a counter wraps).
  static constexpr std::uint64_t set(std::uint64_t payload, std::uint64_t value) noexcept {
    return (payload & ~kMask) | ((value & kMax) << Offset);
  }
};

// One word of a K-CAS: change *word from expected to desired (both payloads).
struct KcasEntry {
  KcasWord* word;
  std::uint64_t expected;
  std::uint64_t desired;
};

// Kcas<MaxWords, Stats, Hook>: MaxWords (2..64) bounds the words of one compare_exchange;
// Stats is NoKcasStats (default) or KcasStats; Hook is NoKcasHook (default) or a test hook
// with `static constexpr bool kEnabled = true` and a thread-safe operator()(const KcasHookEvent&).
template <std::size_t MaxWords, class Stats, class Hook>
class Kcas {
  static_assert(MaxWords >= 2 && MaxWords <= 64, "entry indices live in the 6 alignment bits");

  struct DescriptorBlock;

  struct alignas(64) Descriptor {
    std::atomic<KcasStatus> status;
    std::uint32_t size;
    // Threads that may still install this descriptor: the owner, from birth, and each helper
    // between join() and leave(). 0 = closed: nobody installs it again, ever.
    std::atomic<std::uint32_t> members;
    // 0, or the epoch from which its words may be restored: E + 2 for the epoch E read when an
    // install replaced a reference to a decided descriptor that was not cleanable (rule (R)).
    std::atomic<std::uint64_t> wait_until;
    Kcas* owner;
    Descriptor* next_free;   // link in a thread's free list
    DescriptorBlock* block;  // the pool block it lives in; nullptr: allocated on its own
    std::array<KcasEntry, MaxWords> entries;
  };

 public:
  // A thread's pool: descriptors taken at once on its first K-CAS. In the steady state a thread
  // has a few dozen descriptors out per Kcas it uses: EpochDomain tries to advance every
  // kRetiresPerAdvance (16) retires, and a descriptor is retired once when its words are
  // restored at once (twice when it takes finalization's path) and freed some 2 (4) epochs
  // after its K-CAS. 512 =
  // EpochDomain::kBagReserve (128) x 4 (3 bags + the one being emptied), what one domain's
  // reserved bags hold: a margin of 16x for one Kcas, and room for about ten busy in one thread.
  // 512 x 128 bytes (MaxWords <= 4) = 64 KiB per thread that runs K-CAS operations.
  static constexpr std::uint32_t kPoolDescriptors = 512;
  // The free list keeps descriptors allocated beyond the pool while it holds fewer than this.
  static constexpr std::uint32_t kMaxCachedDescriptors = 4 * kPoolDescriptors;
  // How often a thread whose pool is empty yields to the others before it allocates.
  static constexpr unsigned kYieldsBeforeAllocating = 16;

 private:
  // One allocation: kPoolDescriptors descriptors and the count of those not yet released. A
  // descriptor is released (never cached) when its owner thread's list is destroyed, when a
  // thread other than its owner frees it (adopted limbo bags, drain()), or when no list is left
  // (static destruction); the last release frees the block, so no thread keeps another's block
  // alive and every block is freed once all its descriptors are.
  struct DescriptorBlock {
    std::atomic<std::uint32_t> outstanding{kPoolDescriptors};
    std::array<Descriptor, kPoolDescriptors> descriptors;
  };

  // Gives d back for good: to its block, or to the allocator. d is unpoisoned.
  static void release(Descriptor* d) noexcept {
    DescriptorBlock* block = d->block;
    if (block == nullptr) {
      delete d;
      return;
    }
    detail::poison(d, sizeof(Descriptor));  // dead until the whole block goes
    // acq_rel: every use of the block's descriptors happens-before the delete.
    if (block->outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      detail::unpoison(block, sizeof(DescriptorBlock));
      delete block;
    }
  }

  // A thread's descriptors: its pool block's and those allocated beyond it. Cached descriptors
  // are poisoned for AddressSanitizer.
  class FreeList {
   public:
    FreeList() = default;
    FreeList(const FreeList&) = delete;
    FreeList& operator=(const FreeList&) = delete;
    ~FreeList() {
      while (Descriptor* d = pop()) release(d);
      closed() = true;  // a Kcas destroyed later in this thread (static storage) releases
    }

    // Set once this thread's list is destroyed; trivially destructible, so it stays readable.
    static bool& closed() noexcept {
      thread_local constinit bool flag = false;
      return flag;
    }

    // A descriptor for a new K-CAS; nullptr when the pool is empty. The thread's first call
    // fills the pool (the one allocation; throws std::bad_alloc).
    Descriptor* take() {
      if (block_ == nullptr) [[unlikely]] {
        block_ = new DescriptorBlock;
        for (Descriptor& d : block_->descriptors) {
          d.block = block_;
          link(&d);
        }
      }
      return pop();
    }

    // Keeps d if it is this thread's: from its block (always room: at most kPoolDescriptors of
    // them) or allocated on its own (while the list holds < kMaxCachedDescriptors). false: the
    // caller releases it.
    bool push(Descriptor* d) noexcept {
      if (d->block != nullptr ? d->block != block_ : size_ >= kMaxCachedDescriptors) return false;
      link(d);
      return true;
    }

    // The epoch (of which domain) at which this thread last yielded in vain for reclamation.
    bool gave_up_at(const EpochDomain* domain, std::uint64_t epoch) const noexcept {
      return gave_up_domain_ == domain && gave_up_epoch_ == epoch;
    }
    void give_up_at(const EpochDomain* domain, std::uint64_t epoch) noexcept {
      gave_up_domain_ = domain;
      gave_up_epoch_ = epoch;
    }

   private:
    Descriptor* pop() noexcept {
      Descriptor* d = head_;
      if (d == nullptr) return nullptr;
      detail::unpoison(d, sizeof(Descriptor));
      head_ = d->next_free;
      --size_;
      return d;
    }

    void link(Descriptor* d) noexcept {
      d->next_free = head_;
      head_ = d;
      ++size_;
      detail::poison(d, sizeof(Descriptor));
    }

    Descriptor* head_ = nullptr;
    std::uint32_t size_ = 0;
    DescriptorBlock* block_ = nullptr;  // this thread's pool; released with the list
    const EpochDomain* gave_up_domain_ = nullptr;
    std::uint64_t gave_up_epoch_ = 0;
  };

  static FreeList* free_list() noexcept {
    if (FreeList::closed()) return nullptr;
    thread_local FreeList list;
    return &list;
  }

 public:
  static constexpr std::size_t kMaxWords = MaxWords;

  Kcas() = default;
  explicit Kcas(Hook hook) : hook_(std::move(hook)) {}
  Kcas(const Kcas&) = delete;
  Kcas& operator=(const Kcas&) = delete;
  // Finalizes and frees every descriptor: no operation may run concurrently, and every word
  // this Kcas operated on must still exist.
  ~Kcas() { drain(); }

  // The logical value of `word`. Wait-free; writes nothing shared. The common case (a payload)
  // is inlined into the caller's loop; a descriptor reference takes the slow path.
  [[gnu::always_inline]] std::uint64_t read(const KcasWord& word) const {
    const std::uint64_t content = word.raw_.load();  // (K1)
    return KcasWord::is_payload(content) ? content : read_through_descriptor(word);
  }

  // read(first), then read(second): two reads, each linearizable on its own (not a snapshot),
  // with one test for the common case that both words hold payloads.
  [[gnu::always_inline]] std::pair<std::uint64_t, std::uint64_t> read_pair(
      const KcasWord& first, const KcasWord& second) const {
    const std::uint64_t a = first.raw_.load();   // (K1)
    const std::uint64_t b = second.raw_.load();  // (K1)
    if (KcasWord::is_payload(a | b)) [[likely]]
      return {a, b};
    return {KcasWord::is_payload(a) ? a : read_through_descriptor(first),
            KcasWord::is_payload(b) ? b : read_through_descriptor(second)};
  }

  // Single-word compare-and-swap on the logical value; lock-free. Cooperates with K-CAS
  // operations in flight (helps the one that holds the word, if it must).
  bool cas(KcasWord& word, std::uint64_t expected, std::uint64_t desired) {
    assert(KcasWord::is_payload(expected) && KcasWord::is_payload(desired));
    count(&KcasStats::cas_calls);
    std::uint64_t content = word.raw_.load();  // (K1)
    while (KcasWord::is_payload(content)) {
      if (content != expected) return false;
      // (R) allows a payload over a payload.
      if (word.raw_.compare_exchange_weak(content, desired)) {  // (K5)
        count(&KcasStats::cas_successes);
        return true;
      }
    }
    return cas_over_descriptor(word, expected, desired);
  }

  // Atomically: if every entries[i].word holds entries[i].expected, store every desired value
  // and return true; otherwise change nothing and return false. Lock-free.
  // Throws std::invalid_argument if entries.size() > MaxWords. Preconditions: values are payloads;
  // an entry may repeat a word only with the same expected and desired values (a repeat with
  // another expected value makes the K-CAS fail; one with another desired value is a caller bug and
  // fails too).
  bool compare_exchange(std::span<const KcasEntry> entries) {
    if (entries.size() > MaxWords) throw std::invalid_argument("Kcas: more entries than MaxWords");
    std::array<KcasEntry, MaxWords> sorted{};
    std::size_t n = 0;
    for (const KcasEntry& e : entries) {
      assert(KcasWord::is_payload(e.expected) && KcasWord::is_payload(e.desired));
      // Insertion sort by address; merge exact repeats.
      std::size_t at = n;
      while (at > 0 && std::less<>{}(e.word, sorted[at - 1].word)) --at;
      if (at > 0 && sorted[at - 1].word == e.word) {
        const KcasEntry& same = sorted[at - 1];
        assert(same.expected != e.expected || same.desired == e.desired);
        if (same.expected != e.expected || same.desired != e.desired) return false;
        continue;
      }
      std::move_backward(sorted.begin() + at, sorted.begin() + n, sorted.begin() + n + 1);
      sorted[at] = e;
      ++n;
    }
    if (n == 0) return true;
    if (n == 1) return cas(*sorted[0].word, sorted[0].expected, sorted[0].desired);

    count(&KcasStats::kcas_calls);
    for (std::size_t i = 0; i < n; ++i) {
      if (read(*sorted[i].word) != sorted[i].expected) {
        count(&KcasStats::kcas_early_failures);
        return false;
      }
    }
    Descriptor* d = make_descriptor(KcasStatus::kActive, n, sorted, /*pinned=*/false);
    bool succeeded = false;
    {
      const auto guard = domain_.pin();
      succeeded = run(*d, /*helping=*/false);
    }
    leave(*d, /*helping=*/false);  // d is the owner's: alive until the owner retires it
    if (succeeded) count(&KcasStats::kcas_successes);
    return succeeded;
  }

  bool compare_exchange(std::initializer_list<KcasEntry> entries) {
    return compare_exchange(std::span<const KcasEntry>(entries.begin(), entries.size()));
  }

  // Finalizes every retired descriptor (its words get their final payloads) and frees it,
  // ignoring epochs. Only when quiescent (no operation on this Kcas in flight, and the caller
  // has synchronized with the threads that ran them, e.g. joined them). Returns the number of
  // reclamation steps run (two per descriptor).
  std::size_t drain() { return domain_.drain(); }

  EpochDomain& domain() noexcept { return domain_; }
  const EpochDomain& domain() const noexcept { return domain_; }
  const Stats& stats() const noexcept { return stats_; }
  Hook& hook() noexcept { return hook_; }

 private:
  enum class Install { kDone, kMismatch, kDecided };

  static std::uint64_t reference(const Descriptor* d, std::uint32_t index) noexcept {
    const auto address = reinterpret_cast<std::uintptr_t>(d);
    assert((address & KcasWord::kMarkBit) == 0 && (address & 63) == 0);
    return KcasWord::kMarkBit | address | index;
  }
  static Descriptor* descriptor_of(std::uint64_t ref) noexcept {
    return reinterpret_cast<Descriptor*>(
        static_cast<std::uintptr_t>(ref & KcasWord::kPayloadMask & ~std::uint64_t{63}));
  }
  static std::uint32_t index_of(std::uint64_t ref) noexcept {
    return static_cast<std::uint32_t>(ref & 63);
  }

  // The logical value of a word's content; the caller is pinned if it is a reference.
  static std::uint64_t logical_value(std::uint64_t content) noexcept {
    if (KcasWord::is_payload(content)) return content;
    const Descriptor& d = *descriptor_of(content);
    const KcasEntry& e = d.entries[index_of(content)];
    return d.status.load() == KcasStatus::kSucceeded ? e.desired : e.expected;  // (K3)
  }

  // read() of a word that held a descriptor reference: out of line, so that read()'s payload
  // case stays small enough to inline into lookup loops.
  [[gnu::noinline]] std::uint64_t read_through_descriptor(const KcasWord& word) const {
    count(&KcasStats::reads_through_descriptor);
    const auto guard = domain_.pin();
    // Re-read under the guard: only a reference read while pinned is safe to follow.
    return logical_value(word.raw_.load());  // (K1)
  }

  // Steps 1-2 for descriptor d; the caller is pinned. Returns whether d succeeded.
  bool run(Descriptor& d, bool helping) {
    KcasStatus outcome = KcasStatus::kSucceeded;
    for (std::uint32_t i = 0; i < d.size; ++i) {
      const Install result = install(d, i, helping);
      if (result == Install::kDone) continue;
      if (result == Install::kMismatch) outcome = KcasStatus::kFailed;
      break;
    }
    hook(KcasHookPoint::kBeforeDecide, d.size, helping, d);
    KcasStatus active = KcasStatus::kActive;
    d.status.compare_exchange_strong(active, outcome);  // (K4) linearization point
    return d.status.load() == KcasStatus::kSucceeded;   // (K3)
  }

  // Step 1 for entry i of d.
  Install install(Descriptor& d, std::uint32_t i, bool helping) {
    const KcasEntry& e = d.entries[i];
    const std::uint64_t mine = reference(&d, i);
    std::uint64_t content = e.word->raw_.load();  // (K1)
    while (content != mine) {
      const bool reference = !KcasWord::is_payload(content);
      if (reference) {
        Descriptor& other = *descriptor_of(content);
        if (other.status.load() == KcasStatus::kActive) {  // (K3)
          help(other);
          content = e.word->raw_.load();  // (K1)
          continue;
        }
      }
      if (logical_value(content) != e.expected) return Install::kMismatch;
      if (d.status.load() != KcasStatus::kActive) return Install::kDecided;  // (K3)
      // Replacing a decided descriptor that may still have a late installer: d inherits the
      // wait (R). Set before the CAS; d cannot close while this thread is a member.
      if (reference && !cleanable(*descriptor_of(content))) wait_for_late_installers(d);
      hook(KcasHookPoint::kBeforeInstall, i, helping, d);
      if (e.word->raw_.compare_exchange_strong(content, mine)) {  // (K2)
        hook(KcasHookPoint::kAfterInstall, i, helping, d);
        break;
      }
    }
    return Install::kDone;
  }

  // cas() when the word holds a descriptor reference.
  bool cas_over_descriptor(KcasWord& word, std::uint64_t expected, std::uint64_t desired) {
    Descriptor* fresh = nullptr;
    bool published = false;
    bool succeeded = false;
    {
      const auto guard = domain_.pin();
      std::uint64_t content = word.raw_.load();  // (K1), re-read under the guard
      for (;;) {
        if (KcasWord::is_payload(content)) {
          if (content != expected) break;
          if (word.raw_.compare_exchange_weak(content, desired)) {  // (K5)
            succeeded = true;
            break;
          }
          continue;
        }
        Descriptor& other = *descriptor_of(content);
        if (other.status.load() == KcasStatus::kActive) {  // (K3)
          // Its logical value is its expected value; help only if that matches.
          if (other.entries[index_of(content)].expected != expected) break;
          help(other);
          content = word.raw_.load();  // (K1)
          continue;
        }
        if (logical_value(content) != expected) break;
        if (cleanable(other)) {
          // (R) allows a payload over a cleanable descriptor.
          if (word.raw_.compare_exchange_weak(content, desired)) {  // (K5)
            succeeded = true;
            break;
          }
          continue;
        }
        // (R): a descriptor that may still have a late installer gives way to a one-word
        // descriptor born succeeded and closed (no thread ever helps it) that waits for the
        // late installers, not to a payload.
        if (fresh == nullptr) {
          fresh = make_descriptor(KcasStatus::kSucceeded, 1, {KcasEntry{&word, expected, desired}},
                                  /*pinned=*/true);
          fresh->members.store(0, std::memory_order_relaxed);
        }
        wait_for_late_installers(*fresh);
        if (word.raw_.compare_exchange_weak(content, reference(fresh, 0))) {  // (K6)
          published = true;
          succeeded = true;
          break;
        }
      }
    }
    if (published) {
      count(&KcasStats::cas_over_descriptor);
      close(*fresh, /*helping=*/false);
    } else if (fresh != nullptr) {
      destroy(fresh);
    }
    if (succeeded) count(&KcasStats::cas_successes);
    return succeeded;
  }

  // Helps the active descriptor `other` as a member (its late installs wait for its close).
  // A descriptor that closed meanwhile is decided: the caller re-reads its word.
  void help(Descriptor& other) {
    std::uint32_t members = other.members.load();
    do {
      if (members == 0) return;
    } while (!other.members.compare_exchange_weak(members, members + 1));  // (K8) join
    count(&KcasStats::helps);
    run(other, /*helping=*/true);
    leave(other, /*helping=*/true);
  }

  // A member is done installing d (its run() returned, so d is decided). The last member closes
  // it; the owner retires it.
  void leave(Descriptor& d, bool helping) {
    if (d.members.fetch_sub(1) == 1) {  // (K8) leave
      close(d, helping);
    } else if (!helping) {
      // GKMZ's path: a helper is still inside; it restores the words when it leaves (or they
      // wait for finalization).
      count(&KcasStats::left_to_finalization);
      domain_.retire(&d, &finalize);
    }
  }

  // d is decided and closed: nobody installs it again. Its words are restored at once (step 3,
  // no grace period) unless late installers of a descriptor it replaced may still be inside;
  // then the epoch is pushed on (never waited for) and, if that does not get it past d's wait,
  // finalization restores them. The owner (helping = false) retires d: for reuse after one grace
  // period if its words are restored, else for finalization.
  void close(Descriptor& d, bool helping) {
    bool restorable = past_wait(d);
    if (!restorable) {
      domain_.try_advance();
      domain_.try_advance();
      restorable = past_wait(d);
    }
    if (restorable) clean(d, helping);
    if (helping) return;
    if (restorable) {
      count(&KcasStats::cleaned_at_once);
      domain_.retire(&d, &destroy);
    } else {
      count(&KcasStats::left_to_finalization);
      domain_.retire(&d, &finalize);
    }
  }

  // d replaced a reference to a decided descriptor that a member may still install (it read its
  // word before the decision, so it is pinned at an epoch <= E, read now): d's words wait until
  // the epoch is E + 2, when every guard opened at E or before has closed. Only members of d
  // call this, before they leave.
  void wait_for_late_installers(Descriptor& d) noexcept {
    const std::uint64_t until = domain_.epoch() + 2;  // (K9) with the store below
    std::uint64_t current = d.wait_until.load();
    while (current < until && !d.wait_until.compare_exchange_weak(current, until)) {
    }
  }

  bool past_wait(const Descriptor& d) const noexcept {
    return domain_.epoch() >= d.wait_until.load();  // (K3)
  }

  // Step 3 by d's last member: every word that still refers to d gets its final value.
  void clean(Descriptor& d, bool helping) {
    const bool succeeded = d.status.load() == KcasStatus::kSucceeded;  // (K3)
    for (std::uint32_t i = 0; i < d.size; ++i) {
      const KcasEntry& e = d.entries[i];
      hook(KcasHookPoint::kBeforeCleanup, i, helping, d);
      std::uint64_t mine = reference(&d, i);
      if (e.word->raw_.compare_exchange_strong(mine, succeeded ? e.desired : e.expected)) {  // (K7)
        count(&KcasStats::words_cleaned);
      }
    }
  }

  // Whether a payload may replace a reference to decided descriptor d at once: d is closed (it
  // has no late installer left) and past its wait (nor has any descriptor it replaced). The
  // caller is pinned.
  bool cleanable(const Descriptor& d) const noexcept {
    return d.members.load() == 0 && past_wait(d);  // (K3)
  }

  // Reclamation, first grace period over: no thread can install d any more (R). Step 3 for the
  // descriptors their last member did not restore.
  static void finalize(void* p) {
    auto* d = static_cast<Descriptor*>(p);
    const bool succeeded = d->status.load() == KcasStatus::kSucceeded;  // (K3)
    for (std::uint32_t i = 0; i < d->size; ++i) {
      const KcasEntry& e = d->entries[i];
      std::uint64_t mine = reference(d, i);
      if (e.word->raw_.compare_exchange_strong(mine, succeeded ? e.desired : e.expected)) {  // (K7)
        d->owner->count(&KcasStats::words_finalized);
      }
    }
    d->owner->domain_.retire(d, &destroy);
  }

  // Reclamation, second grace period over: no thread can reach d any more.
  static void destroy(void* p) {
    auto* d = static_cast<Descriptor*>(p);
    d->owner->count(&KcasStats::descriptors_freed);
    FreeList* list = free_list();
    if (list != nullptr && list->push(d)) return;
    if (d->block == nullptr) d->owner->count(&KcasStats::descriptors_beyond_pool_deleted);
    release(d);
  }

  // `pinned`: the caller is inside a guard of this domain (then it cannot wait for reclamation:
  // it holds it back itself).
  Descriptor* make_descriptor(KcasStatus status, std::size_t size,
                              const std::array<KcasEntry, MaxWords>& entries, bool pinned) {
    FreeList* list = free_list();
    Descriptor* d = list != nullptr ? list->take() : nullptr;
    if (d == nullptr && list != nullptr && !pinned) [[unlikely]]
      d = take_after_yielding(*list);
    if (d == nullptr) [[unlikely]] {
      d = new Descriptor;  // the pool is empty: reclamation is held back by a stalled thread
      d->block = nullptr;
      count(&KcasStats::descriptors_beyond_pool);
    }
    // Relaxed: no other thread can see d (recycled descriptors are past two grace periods);
    // the install CAS (K2) or (K6) publishes it.
    d->status.store(status, std::memory_order_relaxed);
    d->members.store(1, std::memory_order_relaxed);  // the owner
    d->wait_until.store(0, std::memory_order_relaxed);
    d->size = static_cast<std::uint32_t>(size);
    d->owner = this;
    d->entries = entries;
    count(&KcasStats::descriptors_allocated);
    return d;
  }

  // The pool is empty: reclamation is held back, nearly always by a thread preempted inside a
  // guard (more threads than cores). Yielding lets it run and leave the guard; reclaiming after
  // each yield refills the pool. Bounded, so no thread ever waits for a particular other
  // (lock-freedom holds): after kYieldsBeforeAllocating the caller allocates instead. Without
  // this, eight threads inserting on two cores had ~500,000 descriptors (64 MB) waiting.
  // A stall that outlasts the yields (a thread stopped inside a guard, not merely preempted) is
  // not waited for again while the epoch stays where it was: until it moves, the caller
  // allocates at once (yielding on a busy machine can cost a time slice each).
  Descriptor* take_after_yielding(FreeList& list) {
    if (list.gave_up_at(&domain_, domain_.epoch())) return nullptr;
    for (unsigned i = 0; i < kYieldsBeforeAllocating; ++i) {
      std::this_thread::yield();
      domain_.try_advance();
      domain_.reclaim();
      if (Descriptor* d = list.take()) return d;
    }
    list.give_up_at(&domain_, domain_.epoch());
    return nullptr;
  }

  void hook(KcasHookPoint point, std::uint32_t index, bool helping, const Descriptor& d) {
    if constexpr (Hook::kEnabled) hook_(KcasHookEvent{point, index, helping, &d.status});
  }

  void count(std::atomic<std::uint64_t> KcasStats::*counter) const noexcept {
    if constexpr (Stats::kEnabled) {
      // Statistics: relaxed, no ordering needed.
      (stats_.*counter).fetch_add(1, std::memory_order_relaxed);
    }
  }

  [[no_unique_address]] mutable Stats stats_;
  [[no_unique_address]] Hook hook_;
  mutable EpochDomain domain_;
};

}  // namespace ccf::lockfree
