// BasicClht<Writers>: the cache-line hash table of David, Guerraoui and Trigonakis
// ("Asynchronized concurrency: the secret to scaling concurrent search data structures", ASPLOS
// 2015) with lock-based updates and a cooperative, incremental resize: a map from non-zero 64-bit
// keys to 64-bit values where a lookup touches one cache line (two while a resize forwards it)
// and never writes or waits. How updates exclude each other is the Writers policy:
//
//   ClhtLb       clht::BucketLocks         a lock per head bucket (CLHT-lb)      clht_lb.hpp
//   HtmClht<E>   clht::GlobalElided<E>     ONE lock for the table, elided with   htm_clht.hpp
//                                          RTM by the scheme E (thesis ch. 4)
//   HtmClhtFine  clht::BucketElided<>      the bucket locks, elided with RTM     htm_clht.hpp
//
// A Writers policy provides
//   static constexpr std::string_view kName;         the table's name in error messages
//   update(tables, h, f)       f(head, table) on h's chain, in the table that holds it (from
//                              tables.current(), a head whose lock word reads kMigrated is
//                              followed to table->successor()), exclusive with every other
//                              update of that chain and with its migration
//   migrating(f)               f(), a run of migrate() calls, in one section if the policy has a
//                              section to take (the global lock: taken once per run, not per head)
//   migrate(head, copy)        within migrating(): copy(head) exclusive with the head's updates,
//                              then the head's lock word set to kMigrated (release); clht::Migrate
//                              says what happened (a head held by an update may be skipped:
//                              kBusy). copy never throws; false means it wrote nothing and needs
//                              heap buckets, which are allocated outside migrating()
//   speculative()              whether sections run as hardware transactions
//   migration_step()           optional: called between two heads a migration takes (tests
//                              suspend a thread there)
// The lookups, the slot protocol and the migration below are the same under every policy.
//
// Layout: an array of m buckets (any m: the index is reduce_range(h, m), not a mask), one 64-byte
// line each, plus overflow buckets chained from it:
//
//   | lock (8) | key0 key1 key2 (24) | val0 val1 val2 (24) | next (8) |     key 0: empty slot
//
// The head's first word is its lock (bucket-lock policies) and, for every policy, its forwarding
// mark: kMigrated (0) once its chain was copied into the next table. Overflow buckets come from
// the table's pool (detail/bucket_pool.hpp: room for m, reserved with the table on huge pages,
// taken inside the section, never throwing), and from the heap only once the pool is used up. A
// heap bucket sits on an ordinary page among other allocations (a lookup that follows the chain
// may pay a page walk besides its miss) and costs a chaining insert an aligned allocation; the
// pool made CLHT-lb 1.2-1.3x faster at u = 10% (docs/benchmarks.md).
// Under RTM (HtmClht), a section that takes a pool bucket writes the pool's shared counter and
// may touch a fresh page, either of which can abort it; it then ends under the policy's
// fallback lock. Such sections are rare: only an insert into a full chain takes a bucket.
//
// Operations (h = mix64(key): CLHT indexes with the raw key; mixed, adversarial or strided keys
// cannot pile into one chain):
//   find    no lock, no store: for each slot of the chain (in the table that holds it, M4),
//           read key, value, key again; the key unchanged means the value belongs to it
//           (the atomic snapshot of key + value). A slot whose key is not ours is skipped.
//           (ASCY 1-4: searches do not write or wait.)
//   contains  find without the value: each bucket's three keys compared at once (Bucket::holds).
//   insert  a key contains() sees present is refused (kExists) without update(): a failed
//           update writes nothing (ASCY 3). Else (after its share of a migration under way, M3)
//           under update() of the head's chain (the head guards its whole chain); refuse if the
//           key is present now (kExists); else write the value, then the key (release) into the
//           first empty slot, or into a new overflow bucket linked last (release).
//   erase   a key contains() sees absent is kNotFound without update(); else as insert, under
//           update(): clear the key (release). Values are never cleared.
//   insert_or_assign: as insert, always under update(): a present key's value is overwritten
//           (a reader sees the old or the new value, never a torn one: values are single atomic
//           words).
//
// Sizing: a table built for n items gets ceil(n / 3) buckets -- every slot used at n, the excess
// of the fuller buckets in overflow buckets -- so at half that load (how benchmarks size it) it
// spends about 43 bytes of head bucket and 4 of overflow per item. Resize (double) when an insert
// had to chain a new overflow bucket and the table then holds more than 3 items per bucket on
// average -- never on one chain's length alone (the reference design resizes on a single
// overflow, which livelocks when hashes collide).
//
// Resize: no thread waits for one; the threads that update meanwhile do its work, a chunk each,
// as Java's ConcurrentHashMap and growt (Maier, Sanders, Dementiev, "Concurrent hash tables: fast
// and general(?)!", TOPC 2019) migrate:
//   M1  Begin. The inserting thread that crosses the threshold, if it gets resize_lock_ (a
//       try-lock: others go on), allocates the table twice as large (its heads not yet built)
//       and the per-chunk counters, then stores the old table's `migration` pointer (release;
//       loaded with acquire). Only the current table begins one, and only once: a table becomes
//       current when its own migration into it is complete, so at most two tables take
//       updates at any time, and successor() of a forwarded head is never null (its migration
//       pointer was stored before any head was migrated, and the kMigrated read that led there
//       was an acquire of a store made after).
//   M2  One head. Writers::migrate takes old head i as an update would (its lock kFree ->
//       kLocked, or the global lock, held for a run of heads), copies its chain into new heads 2i
//       and 2i + 1 -- doubling with reduce_range maps old head i onto exactly those two, so no two
//       copies share a new chain and copies need no lock in the new table -- constructing them
//       first, then stores kMigrated (release). Nobody reads or updates new heads 2i, 2i + 1 before
//       reading old head i as kMigrated (M4), so the copy's relaxed stores are published by that
//       one release. Invariant: every key with hash h is in the chain of the OLDEST table held
//       whose head for h is not kMigrated (its "holder"); a kMigrated head never changes again.
//       The copy first counts what it must chain and sets the buckets aside (Spares): from the
//       new pool, else it returns false and the heap buckets are allocated with no lock held
//       before the head is tried again -- a copy never throws, so no lock is left held.
//   M3  Chunks. Heads go in chunks of kChunk, claimed with one fetch_add on `claims`: claim c
//       takes chunk c mod chunks. Every insert and erase that meets a migration under way
//       takes one claim first (help()); reserve() claims until the table is large enough.
//       A claim skips heads already migrated, and heads an update holds (kBusy): their chunk's
//       count stays above zero, and a later claim (the cursor wraps around) takes it again.
//       So a thread suspended in the middle of its chunk holds nobody: the heads it has not
//       reached are migrated by the claims of the others once the cursor comes round, and when
//       it resumes it finds them kMigrated and skips them. (A thread suspended while it holds
//       one head -- inside one copy, as inside any update -- holds that chain's updates and the
//       end of the migration, as a suspended lock holder does; lookups, the other chains and
//       the other heads' migration go on. Under the global-lock policies a run of heads is one
//       section (migrating()), so a thread suspended there holds every update, as a suspended
//       holder of that lock always does.) tests/table_resize_test.cpp suspends a migrating
//       thread.
//   M4  Lookups never wait: a lookup scans the chain, then reads the head's lock word (acquire,
//       ordered after the scan): anything but kMigrated means the chain was its keys' holder
//       throughout the scan -- kMigrated is final -- and its keys change only under the head's
//       exclusion, so the scan saw the chain as it was at moments inside the lookup (CLHT's
//       argument) and its answer, hit or miss, stands. kMigrated sends it on to successor()
//       (at most one visit per table: bounded, wait-free). Reading the word after the scan,
//       not before, keeps the common path free of a branch on whether the key was found (see
//       present()). Updates follow kMigrated heads too (update()) and lock the holder's head;
//       they never wait for the migration as a whole, only for a head's lock, as before.
//   M5  Publication. Each migrated head decrements its chunk's count and the last one the
//       chunks' count (acq_rel), so the thread that takes the last count to zero has seen every
//       copy; it makes the new table current (TableGenerations::publish, release; current() is
//       an acquire), and counts the resize. Publishing never throws: the new table was kept
//       by tables_ when the migration began.
//   M6  Memory. Then it hands the old table's heads and pool back to the system (madvise
//       MADV_DONTNEED: the address range stays and reads as zeros, i.e. kMigrated everywhere),
//       keeping the small Table object for successor(). An epoch (lockfree/reclamation.hpp)
//       would cost every lookup a seq_cst store -- a full fence, which keeps consecutive
//       lookups' cache misses from overlapping -- so lookups announce nothing, and a lookup
//       that may still be in the old table copes with its zeros instead: its check of the
//       lock word after the scan (M4) reads kMigrated (0), and it goes on in the successor.
//       That is sound because every head was kMigrated before the pages went: a scan that
//       read a zero read it after the pages were dropped, hence after its head's kMigrated
//       store, and the check, an acquire load ordered after that load, reads the store or the
//       zeros -- kMigrated either way. (On x86-64 the kernel's TLB shootdown drains the CPUs
//       that had the pages mapped; on AArch64 the broadcast TLB invalidation and its barrier
//       give the same order, as long as the scan's loads stay acquire.) A stale mix of words
//       and zeros only shortens a scan (a zero key is an empty slot, a zero `next` the chain's
//       end), whose answer the check then throws away. Updates hold a head of the table they
//       write, which therefore cannot be retired under them, and a late one finds 0, which is
//       not kFree, and follows it; a helper resuming into a retired table loads a head before
//       it tries to take it (clht_lb.hpp), as a failed CAS would write the page back. (A CAS
//       that read kFree just before the migration and fails after the discard still takes back
//       the page it touches, as does a helper's Spares list after two resizes: memory
//       memory_bytes() does not count, never a wrong answer.) A late lookup may take a page
//       fault on the retired range (a read of the zero page). Tables whose chains hold heap
//       buckets (a pool used up while resizes failed) or whose heads are on the heap (under
//       64 KiB) are kept whole until the map goes, as all were before.
//
// Memory ordering: a writer's slot stores are release and a reader's loads acquire, so a reader
// that sees a key also sees the value written before it; the head lock's CAS is acquire and its
// release store publishes the critical section to the next holder (a global lock's, or a
// committed transaction's, likewise). M1-M6 give the migration's.
//
// Progress: lookups wait-free (bounded by the number of tables); updates blocking (the policy's
// lock), never waiting for a migration as a whole: its helpers never wait on each other, and
// it completes once each of its heads has been free of updates at some claim.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ccf/detail/bucket_pool.hpp"
#include "ccf/detail/clht_sizing.hpp"
#include "ccf/detail/map_api.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/detail/table_generations.hpp"
#include "ccf/detail/word_block.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"
#include "ccf/sync/spin_wait.hpp"

namespace ccf {

namespace clht {
// The head bucket's lock word. kMigrated is 0 so that a retired table's pages, which read as
// zeros once handed back to the system, read as forwarded (M6).
inline constexpr std::uint64_t kMigrated = 0, kFree = 1, kLocked = 2;

// What Writers::migrate(head, copy) did.
enum class Migrate {
  kNow,          // copied and marked kMigrated by this call
  kAlready,      // marked kMigrated before
  kBusy,         // an update (or another migrator) holds the head: try it later
  kNeedsMemory,  // copy() returned false: nothing written, the head left open
};
}  // namespace clht

template <class Writers>
class BasicClht : public detail::MapApi<BasicClht<Writers>, std::uint64_t, std::uint64_t> {
 public:
  static constexpr unsigned kSlots = detail::ClhtSizing::kSlots;  // pairs per 64-byte bucket
  // Heads a helper migrates per claim (M3).
  static constexpr std::uint64_t kChunk = 64;

  // Room for `capacity` items at the resize threshold (3 per bucket) without resizing. Throws
  // std::invalid_argument if that needs more than 2^40 head buckets (64 TiB), the library's
  // table limit; reserve() likewise, changing nothing.
  explicit BasicClht(std::size_t capacity = 1024)
      : tables_(std::make_unique<Table>(buckets_for(capacity), Table::kBuilt)) {}
  BasicClht(const BasicClht&) = delete;
  BasicClht& operator=(const BasicClht&) = delete;
  // A migration left under way (quiescent now): the new table's heads exist only for the old
  // heads migrated (M2), so their heap buckets are freed here and its destructor skips it.
  ~BasicClht() {
    Table& table = *tables_.current();
    if (Migration* m = table.migration.load(std::memory_order_acquire)) {
      for (std::uint64_t i = 0; i < table.buckets; ++i) {
        if (table.at(i).lock.load(std::memory_order_relaxed) != clht::kMigrated) continue;
        m->to->free_heap_chain(2 * i);
        m->to->free_heap_chain(2 * i + 1);
      }
    }
  }

  std::optional<std::uint64_t> find(std::uint64_t key) const {
    check(key);
    const std::uint64_t h = hash(key);
    for (const Table* table = tables_.current();; table = table->successor()) {
      const Bucket& head = table->head(h);
      std::optional<std::uint64_t> found;
      for (const Bucket* b = &head; b != nullptr && !found;
           b = b->next.load(std::memory_order_acquire)) {
        for (unsigned s = 0; s < kSlots; ++s) {
          if (b->key[s].load(std::memory_order_acquire) != key) continue;
          const std::uint64_t value = b->value[s].load(std::memory_order_acquire);
          if (b->key[s].load(std::memory_order_acquire) == key) {
            found = value;
            break;
          }
        }
      }
      if (!forwarded(head)) return found;  // (M4)
    }
  }
  // find without the value, and with one branch per bucket, the chain's end, which is taken
  // almost always (see Bucket::holds). Linearizable as find: a key is in at most one slot at a
  // time and never moves within a table, so a key present throughout the scan is seen by it.
  bool contains(std::uint64_t key) const {
    check(key);
    return present(key, hash(key));
  }
  // insert (kOk or kExists) and insert_or_assign: detail::MapApi over find and put.

  // kOk, or kNotFound. May throw std::bad_alloc from its share of a migration (M3), having
  // changed nothing.
  Status erase(std::uint64_t key) {
    check(key);
    const std::uint64_t h = hash(key);
    // A failed update writes nothing (ASCY 3): an absent key is reported without the lock, at
    // the moment contains() saw it absent.
    if (!present(key, h)) return Status::kNotFound;
    help();
    return writers_.update(tables_, h, [&](Bucket& head, Table&) {
      for (Bucket* b = &head; b != nullptr; b = b->next.load(std::memory_order_relaxed)) {
        for (unsigned s = 0; s < kSlots; ++s) {
          if (b->key[s].load(std::memory_order_relaxed) == key) {
            b->key[s].store(0, std::memory_order_release);
            items_.add(-1);
            return Status::kOk;
          }
        }
      }
      return Status::kNotFound;
    });
  }

  // Exact when no update is in flight.
  std::size_t size() const noexcept { return static_cast<std::size_t>(items_.value()); }
  std::size_t bucket_count() const noexcept { return tables_.current()->buckets; }
  // Slots in the current table's head buckets (chains hold more).
  std::size_t capacity() const noexcept { return kSlots * bucket_count(); }
  // Grows the table (if needed) so that `capacity` items fit without a resize, migrating until
  // it does (with whichever threads help). A std::bad_alloc leaves every item in place and every
  // chain open; a migration it began goes on with later updates.
  void reserve(std::size_t capacity) {
    const std::uint64_t wanted = buckets_for(capacity);
    for (Table* table = tables_.current(); table->buckets < wanted; table = tables_.current()) {
      Migration* m = table->migration.load(std::memory_order_acquire);
      if (m == nullptr) {
        if (2 * table->buckets > kMaxBuckets) return;  // at the limit: chains grow instead
        begin_migration(*table);                       // false: another thread is beginning it
      } else if (!migrate_chunk(*table, *m)) {
        sync::cpu_relax();  // the chunk claimed was done, or its heads busy
      }
    }
  }
  // Whether a resize is under way: begun, its new table not yet current.
  bool resizing() const noexcept {
    return tables_.current()->migration.load(std::memory_order_relaxed) != nullptr;
  }
  // Resizes done so far, and the time from the start of each to its publication, in all.
  std::uint64_t resizes() const noexcept { return tables_.resizes(); }
  std::uint64_t resize_nanoseconds() const noexcept { return tables_.resize_nanoseconds(); }
  // True when updates run as hardware transactions (RTM present and the policy elides).
  bool speculative() const noexcept { return writers_.speculative(); }
  // The writers' policy (its locks, for statistics).
  Writers& writers() noexcept { return writers_; }
  const Writers& writers() const noexcept { return writers_; }

  // Buckets (head and overflow) of every table still held, and the map object.
  std::size_t memory_bytes() const { return tables_.memory_bytes() + sizeof(*this); }

 private:
  friend class detail::MapApi<BasicClht<Writers>, std::uint64_t, std::uint64_t>;
  struct alignas(64) Bucket {
    std::atomic<std::uint64_t> lock{clht::kFree};  // head buckets: the lock or forwarding word
    std::atomic<std::uint64_t> key[kSlots]{};
    std::atomic<std::uint64_t> value[kSlots]{};
    std::atomic<Bucket*> next{nullptr};

    // Whether a slot holds `wanted`: the line's first 32 bytes, | lock | key0 key1 key2 |,
    // compared at once (detail/word_block.hpp), with no loop and no exit at a match. Lookups one
    // at a time overlap their cache misses only as far as the out-of-order window reaches: a
    // branch on which slot matched mispredicts at random, and its flush discards the next
    // lookups' loads already issued; every load and loop instruction takes room in the window.
    bool holds(std::uint64_t wanted) const noexcept {
#if CCF_DETAIL_VECTOR_WORD_LOADS
      constexpr unsigned kKeyWords = 0b1110;  // words 1-3 of the block: word 0 is the lock
      return (detail::equal_words(this, wanted) & kKeyWords) != 0;
#else
      bool found = false;
      for (const auto& slot_key : key) found |= slot_key.load(std::memory_order_acquire) == wanted;
      return found;
#endif
    }
  };
  static_assert(sizeof(Bucket) == 64, "one bucket, one cache line");
  static_assert(offsetof(Bucket, key) == 8 && kSlots == 3, "holds(): | lock | key0 key1 key2 |");
  static_assert(std::is_trivially_destructible_v<Bucket>, "head buckets are never destroyed");

  struct Table;

  // A doubling of one table under way (M1-M5): the table it fills and how far it is.
  struct Migration {
    explicit Migration(std::uint64_t buckets)
        : chunks((buckets + kChunk - 1) / kChunk), left(chunks), chunks_left(chunks) {
      for (std::uint64_t c = 0; c < chunks; ++c) {
        left[c].store(std::min(kChunk, buckets - c * kChunk), std::memory_order_relaxed);
      }
    }
    Table* to = nullptr;  // held by tables_
    std::chrono::steady_clock::time_point start;
    std::uint64_t chunks;
    detail::ChunkCounts left;                          // per chunk: heads not yet migrated
    alignas(64) std::atomic<std::uint64_t> claims{0};  // chunk c is claim c mod chunks (M3)
    alignas(64) std::atomic<std::uint64_t> chunks_left;
  };

  struct Table {
    enum Heads { kBuilt, kByMigration };
    // Head buckets on huge pages where the system allows (detail/page_buffer.hpp): random probes
    // into a table larger than the TLB's reach pay a page walk each otherwise. A migration's
    // table has its heads constructed by the copies that fill them (M2): its pages are touched
    // by every helper, not all by the thread that begins the resize.
    Table(std::uint64_t count, Heads heads_made)
        : buckets(count),
          storage(count * sizeof(Bucket)),
          heads(reinterpret_cast<Bucket*>(storage.data())),
          pool(count),
          whole(heads_made == kBuilt) {
      if (whole) {
        for (std::uint64_t i = 0; i < count; ++i) new (heads + i) Bucket;
      }
    }
    ~Table() {
      if (!whole || retired.load(std::memory_order_relaxed)) return;  // see ~BasicClht, retire
      for (std::uint64_t i = 0; i < buckets; ++i) free_heap_chain(i);
    }
    Table(const Table&) = delete;
    Table& operator=(const Table&) = delete;

    // The table head i's keys are migrated into; null before a migration begins (M1).
    Table* successor() const noexcept { return migration.load(std::memory_order_acquire)->to; }
    std::uint64_t index(std::uint64_t h) const noexcept { return reduce_range(h, buckets); }
    Bucket& at(std::uint64_t i) const noexcept { return *std::launder(heads + i); }
    Bucket& head(std::uint64_t h) const noexcept { return at(index(h)); }
    void free_heap_chain(std::uint64_t i) noexcept {
      for (Bucket* b = at(i).next.load(std::memory_order_relaxed); b != nullptr;) {
        Bucket* next = b->next.load(std::memory_order_relaxed);
        if (!pool.owns(b)) delete b;
        b = next;
      }
    }
    // Links `added` (first slot filled) after `last`, counting it.
    void chain(Bucket& last, Bucket* added) noexcept {
      last.next.store(added, std::memory_order_release);
      overflow.fetch_add(1, std::memory_order_relaxed);
      if (!pool.owns(added)) heap_buckets.fetch_add(1, std::memory_order_relaxed);
    }
    std::size_t memory_bytes() const noexcept {
      if (retired.load(std::memory_order_relaxed)) return 0;
      return (buckets + overflow.load(std::memory_order_relaxed)) * sizeof(Bucket);
    }

    std::uint64_t buckets;
    detail::PageBuffer storage;
    Bucket* heads;  // in storage; trivially destructible
    // Overflow buckets: as many as heads, address space only until used (detail/bucket_pool.hpp).
    detail::BucketPool<Bucket> pool;
    // Set once, under resize_lock_, when a migration of this table begins (release: M1).
    std::atomic<Migration*> migration{nullptr};
    std::unique_ptr<Migration> owned_migration;
    bool whole;  // every head constructed: built so, or filled by a completed migration
    std::atomic<bool> retired{false};            // its pages handed back (M6)
    std::atomic<std::uint64_t> overflow{0};      // overflow buckets chained, pooled or not
    std::atomic<std::uint64_t> heap_buckets{0};  // of them from the heap
  };

  // Overflow buckets set aside for one copy (M2): from the new table's pool while it lasts, then
  // from the heap, allocated outside every section -- a std::bad_alloc thrown with a head's lock
  // (or the global one) held would leave it held. Kept in a list through their `next` words.
  class Spares {
   public:
    explicit Spares(Table& table) noexcept : table_(table) {}
    Spares(const Spares&) = delete;
    Spares& operator=(const Spares&) = delete;
    ~Spares() {
      while (Bucket* b = pop()) {
        if (!table_.pool.owns(b)) delete b;  // pool buckets go with the table
      }
    }
    // At least n set aside, topped up from the pool (never throws); false if the pool ran out,
    // with shortfall() the heap buckets still needed.
    bool reserve(std::uint64_t n) noexcept {
      for (; count_ < n; ++count_) {
        Bucket* b = table_.pool.allocate();
        if (b == nullptr) {
          shortfall_ = n - count_;
          return false;
        }
        push(b);
      }
      return true;
    }
    // The shortfall, from the heap: outside every section. May throw std::bad_alloc.
    void allocate() {
      for (; shortfall_ > 0; --shortfall_, ++count_) push(new Bucket);
    }
    Bucket* pop() noexcept {
      Bucket* b = first_;
      if (b != nullptr) {
        first_ = b->next.load(std::memory_order_relaxed);
        b->next.store(nullptr, std::memory_order_relaxed);
        --count_;
      }
      return b;
    }

   private:
    void push(Bucket* b) noexcept {
      b->next.store(first_, std::memory_order_relaxed);  // private until chained
      first_ = b;
    }
    Table& table_;
    Bucket* first_ = nullptr;
    std::uint64_t count_ = 0;
    std::uint64_t shortfall_ = 0;
  };

  static constexpr std::uint64_t kItemsPerBucket = detail::ClhtSizing::kItemsPerBucket;
  static constexpr std::uint64_t kMaxBuckets = detail::ClhtSizing::kMaxBuckets;
  static std::uint64_t buckets_for(std::size_t capacity) {
    return detail::ClhtSizing::buckets_for(capacity, Writers::kName);
  }
  static std::uint64_t hash(std::uint64_t key) noexcept {
    return detail::ClhtSizing::hash(key);
  }
  static void check(std::uint64_t key) {
    detail::ClhtSizing::check(key, Writers::kName);
  }

  // Whether `head` is forwarded once a lookup has scanned its chain (M4): if not, the scan read
  // the chain while it was its keys' holder. The scan's loads stay before this one: its scalar
  // loads are acquire, and its vector loads (x86 only, where loads keep their order) are kept
  // before it by the compiler barrier.
  static bool forwarded(const Bucket& head) noexcept {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return head.lock.load(std::memory_order_acquire) == clht::kMigrated;
  }

  // contains() of a checked key with hash h. One branch per bucket, the chain's end, and one on
  // the forwarding word, both predictable: none on whether the key was found (see Bucket::holds).
  bool present(std::uint64_t key, std::uint64_t h) const {
    for (const Table* table = tables_.current();; table = table->successor()) {
      const Bucket& head = table->head(h);
      const Bucket* b = &head;
      bool found;
      do {
        found = b->holds(key);
        b = b->next.load(std::memory_order_acquire);
      } while (!(found | (b == nullptr)));
      if (!forwarded(head)) return found;  // (M4)
    }
  }

  Status put(std::uint64_t key, std::uint64_t value, bool assign) {
    check(key);
    const std::uint64_t h = hash(key);
    if (!assign && present(key, h)) return Status::kExists;  // read-only failure, as erase's
    help();
    // A bucket to chain comes from the table's pool, which never throws, inside the section.
    // Only when the pool is used up does it come from the heap, allocated before a section and
    // never inside one: a std::bad_alloc thrown while a head's lock (or the global one) is held
    // would leave it held.
    std::unique_ptr<Bucket> spare;
    for (;;) {
      Table* chained_in = nullptr;
      const std::optional<Status> status =
          writers_.update(tables_, h, [&](Bucket& head, Table& table) -> std::optional<Status> {
            chained_in = nullptr;  // a transaction's section may run again
            std::atomic<std::uint64_t>* empty_key = nullptr;
            std::atomic<std::uint64_t>* empty_value = nullptr;
            Bucket* last = &head;
            for (Bucket* b = &head; b != nullptr; b = b->next.load(std::memory_order_relaxed)) {
              last = b;
              for (unsigned s = 0; s < kSlots; ++s) {
                const std::uint64_t k = b->key[s].load(std::memory_order_relaxed);
                if (k == key) {
                  if (assign) b->value[s].store(value, std::memory_order_release);
                  return Status::kExists;
                }
                if (k == 0 && empty_key == nullptr) {
                  empty_key = &b->key[s];
                  empty_value = &b->value[s];
                }
              }
            }
            if (empty_key == nullptr) {  // chain a bucket, its first slot filled before linking
              Bucket* added = table.pool.allocate();
              if (added == nullptr) {
                if (!spare) return std::nullopt;  // allocated outside, then this runs again
                added = spare.release();
              }
              added->value[0].store(value, std::memory_order_relaxed);
              added->key[0].store(key, std::memory_order_relaxed);
              table.chain(*last, added);
              chained_in = &table;
            } else {
              empty_value->store(value, std::memory_order_release);
              empty_key->store(key, std::memory_order_release);
            }
            items_.add(1);
            return Status::kOk;
          });
      if (!status) {
        spare = std::make_unique<Bucket>();
        continue;
      }
      if (chained_in != nullptr && size() > kItemsPerBucket * chained_in->buckets) {
        try {
          begin_migration(*chained_in);
        } catch (const std::bad_alloc&) {
          // The item is stored; the table is as it was and its chains grow until a later
          // insert's resize finds the memory.
        }
      }
      return *status;
    }
  }

  // An update's share of a migration under way (M3): one chunk. May throw std::bad_alloc (heap
  // buckets for a copy), having changed nothing an operation can observe.
  void help() {
    Table& table = *tables_.current();
    if (Migration* m = table.migration.load(std::memory_order_acquire)) migrate_chunk(table, *m);
  }

  // Begins doubling `from` if it is current, its doubling has not begun, and no other thread is
  // beginning one (a try-lock: the others go on). Strong guarantee: a std::bad_alloc (the new
  // table, the migration's counters) begins nothing.
  bool begin_migration(Table& from) {
    const std::unique_lock guard(resize_lock_, std::try_to_lock);
    if (!guard.owns_lock() || tables_.current() != &from ||
        from.migration.load(std::memory_order_relaxed) != nullptr ||
        2 * from.buckets > kMaxBuckets) {
      return false;
    }
    auto migration = std::make_unique<Migration>(from.buckets);
    migration->start = std::chrono::steady_clock::now();
    migration->to = tables_.keep(std::make_unique<Table>(2 * from.buckets, Table::kByMigration));
    from.owned_migration = std::move(migration);
    // (M1) release: whoever loads the migration sees its table and counters initialised.
    from.migration.store(from.owned_migration.get(), std::memory_order_release);
    return true;
  }

  // Claims one chunk of `from`'s heads (M3) and migrates those not yet migrated; false if it had
  // none left to do.
  bool migrate_chunk(Table& from, Migration& m) {
    // Relaxed: a claim only spreads helpers over the chunks; each head is migrated under its own
    // exclusion (M2), whoever claimed it.
    const std::uint64_t c = m.claims.fetch_add(1, std::memory_order_relaxed) % m.chunks;
    if (m.left[c].load(std::memory_order_relaxed) == 0) return false;
    Spares spares(*m.to);
    const std::uint64_t last = std::min(from.buckets, (c + 1) * kChunk);
    bool completed = false;  // this thread migrated the last head
    for (std::uint64_t i = c * kChunk; i < last;) {
      bool needs_memory = false;
      // One section for the run of heads (GlobalElided: one acquisition of its lock).
      writers_.migrating([&] {
        for (; i < last; ++i) {
          detail::ClhtSizing::prefetch_chain_ahead(from.heads, i, last);
          const clht::Migrate done = writers_.migrate(
              from.at(i), [&](const Bucket& head) { return copy(head, i, *m.to, spares); });
          if (done == clht::Migrate::kNeedsMemory) {
            needs_memory = true;
            return;
          }
          // (M5) acq_rel: the thread that takes a count to zero has seen every copy counted
          // before it (the counts' release sequences), so the last one publishes a table whose
          // every head is filled.
          if (done == clht::Migrate::kNow &&
              m.left[c].fetch_sub(1, std::memory_order_acq_rel) == 1 &&
              m.chunks_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            completed = true;
          }
          if constexpr (requires(Writers & w) { w.migration_step(); }) writers_.migration_step();
        }
      });
      if (needs_memory) spares.allocate();  // outside every section; may throw
    }
    if (completed) {
      m.to->whole = true;
      tables_.publish(m.to, m.start);
      retire(from);
    }
    return true;
  }

  // Copies old head i's chain (its lock held, or the global one) into the new heads 2i and
  // 2i + 1 -- doubling with reduce_range sends each key of head i to one of them -- constructing
  // them: nobody reads them before head i is marked kMigrated (M2). False, having written nothing
  // of the new table, if its pool cannot supply the overflow buckets the copy needs.
  static bool copy(const Bucket& head, std::uint64_t i, Table& to, Spares& spares) {
    const auto for_each_item = [&head](auto&& f) {
      for (const Bucket* b = &head; b != nullptr; b = b->next.load(std::memory_order_relaxed)) {
        for (unsigned s = 0; s < kSlots; ++s) {
          const std::uint64_t k = b->key[s].load(std::memory_order_relaxed);
          if (k != 0) f(k, b->value[s].load(std::memory_order_relaxed));
        }
      }
    };
    std::uint64_t items[2] = {0, 0};
    for_each_item([&](std::uint64_t k, std::uint64_t) { ++items[to.index(hash(k)) - 2 * i]; });
    const auto overflow = [](std::uint64_t n) { return n > kSlots ? (n - 1) / kSlots : 0; };
    if (!spares.reserve(overflow(items[0]) + overflow(items[1]))) return false;
    Bucket* fill[2] = {new (to.heads + 2 * i) Bucket, new (to.heads + 2 * i + 1) Bucket};
    unsigned used[2] = {0, 0};
    for_each_item([&](std::uint64_t k, std::uint64_t v) {
      const std::uint64_t d = to.index(hash(k)) - 2 * i;
      if (used[d] == kSlots) {
        Bucket* added = spares.pop();
        to.chain(*fill[d], added);
        fill[d] = added;
        used[d] = 0;
      }
      // Relaxed: published by the kMigrated release store that ends the migration of head i.
      fill[d]->value[used[d]].store(v, std::memory_order_relaxed);
      fill[d]->key[used[d]].store(k, std::memory_order_relaxed);
      ++used[d];
    });
    return true;
  }

  // (M6) Hands an old table's pages back once its every head is migrated and its successor
  // published. Not when its chains hold heap buckets (a lookup may be in one: they stay until
  // the map goes) or its heads are on the heap (tables under 64 KiB: detail/page_buffer.hpp).
  void retire(Table& old) noexcept {
    if (old.heap_buckets.load(std::memory_order_relaxed) != 0) return;
    if (!old.storage.discard()) return;
    old.pool.discard();
    old.retired.store(true, std::memory_order_relaxed);  // statistics and the destructor
  }

  detail::TableGenerations<Table> tables_;
  [[no_unique_address]] Writers writers_;
  std::mutex resize_lock_;  // one migration begins at a time
  detail::ShardedCounter items_;
};

}  // namespace ccf
