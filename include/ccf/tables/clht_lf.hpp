// ClhtLf: the lock-free cache-line hash table of David, Guerraoui and Trigonakis ("Asynchronized
// concurrency: the secret to scaling concurrent search data structures", ASPLOS 2015): a map
// from non-zero 64-bit keys to 64-bit values whose updates take no lock -- each one is a few
// CAS operations on one 64-bit "snapshot" word per chain -- and whose lookups store nothing,
// with a cooperative, lock-free resize.
//
// Layout: m head buckets (any m: the index is reduce_range(h, m)), one 64-byte line each, and
// overflow buckets chained from them (up to kMaxChain buckets per chain, from a pool the table
// reserves up front: no allocator call on any operation but a resize's):
//
//   | snapshot (8) | key0 key1 key2 (24) | val0 val1 val2 (24) | next (8) |
//
//   snapshot (head only): | version (38 bits) | unbuilt (1) | live (1) | valid bits (24: slot
//                           3c + j is slot j of the chain's c-th bucket) |
//
// A head is live (it takes updates), unbuilt (a head of a table a resize is filling, whose keys
// are still in the frozen chain before it), or frozen (neither bit: its chain was handed to the
// next table; final). A slot is free (key 0), reserved (key set, valid bit clear: an insert
// or a copy in progress, or an erased pair not yet cleared) or valid (bit set). Invariant (I): a
// valid slot's key and value never change; only the thread that reserved a slot (CAS key 0 -> k)
// or invalidated it writes it until it is free again. Every change of a snapshot raises its
// version.
//
// Operations (h = mix64(key), detail/clht_sizing.hpp), on a live head:
//   find    read the snapshot s; look for the key among the slots valid in s; read the value;
//           read the snapshot again: unchanged => by (I) the slots valid in s held exactly
//           those pairs at that moment, so the answer (found with that value, or absent) was
//           true then. Changed => an update of this chain completed: retry.
//   insert  reserve a free slot of the chain (CAS its key 0 -> k; none free: link a pool bucket
//           with the pair already in it), write the value, then publish: read s; if the key is
//           valid under s, release the reservation (kExists); else CAS s -> s + valid bit +
//           version. A successful CAS proves the chain did not change since the check, so no
//           key is ever valid twice.
//   insert_or_assign  as insert; a present key is replaced by the reserved slot in ONE CAS
//           (its bit cleared and the new one set), so a reader sees the old pair or the new.
//   erase   find the key's valid slot under s; CAS s -> s - its bit + version; then clear the
//           key (the slot is free again).
// Every CAS of an update expects a live s: once its head is frozen, it fails, and the update
// starts over in the table that holds its key (L3).
//
// Resize (double) when an insert had to chain a bucket and the table holds more than 3 items
// per head on average, or the overflow pool ran out -- never on one chain's length alone (the
// reference design resizes on a single full bucket, which livelocks when hashes collide): a
// chain of kMaxChain buckets in a table under half that full holds 24 keys with one hash
// prefix, a degenerate hash, and its insert returns kFull. The reference design doubles the
// table in one thread while updates wait for it; here the updates that meet the resize do it,
// and nobody waits for anybody (as growt's and Java's ConcurrentHashMap's migrations, but
// without their per-bucket locks):
//   L1  Begin. The inserting thread that crosses the threshold, if it is the first to raise
//       the table's `beginning` flag (the others go on), allocates the table twice as large,
//       every head unbuilt, and the per-chunk counters, then installs them with a CAS of the
//       old table's `migration` pointer (release; loaded with acquire). An insert that needs
//       the room (its chain full, the table crowded) does not wait for the flag's holder: it
//       allocates a table of its own and races that CAS (the loser frees its table). Only the
//       current table begins one, and only once: a table becomes current when every head of
//       it is built (L5), so at most two tables take updates.
//   L2  One head. Old head i is frozen (a CAS clearing live: its valid pairs are fixed from
//       then on), then each of new heads 2i and 2i + 1 is built -- doubling with
//       reduce_range sends each key of head i to one of them: its pairs in the frozen chain are
//       inserted into it by the insert protocol above, except that the publishing CAS expects
//       an UNBUILT head (a pair already valid there is skipped), then one CAS makes it live.
//       Any number of threads may build one head at once: by (I) and the snapshot CAS no pair
//       becomes valid twice; the thread whose CAS makes it live has seen every pair of the
//       frozen chain valid there, and nothing leaves an unbuilt head, so it is live with all
//       of them; after that, a late copier's CAS fails (the head is never unbuilt again) and it
//       releases what it reserved. Invariant: a key's pair is in the chain of the OLDEST table
//       whose head for it is not frozen, or, when that head is unbuilt, in the frozen chain
//       before it.
//   L3  Updates first take one claim of a migration under way (help(): a chunk of kChunk old
//       heads, claim c taking chunk c mod chunks; a chunk whose heads are all built is
//       skipped), then find their key's holder: from the current table, a frozen head sends
//       them to the successor, and an unbuilt head there is built first (L2) -- by them, not
//       waited for. A thread suspended anywhere in a migration holds nobody: another claim (the
//       cursor wraps around) or the updates of its keys build what it left; when it resumes,
//       its CASes fail on heads built since and it releases its reservations.
//   L4  Lookups never wait and never build: a frozen head is scanned as it stands (it no
//       longer changes), then the successor's head for the key is read (acquire, after the
//       scan): unbuilt => the frozen chain held the keys throughout, so the scan's answer
//       stands; built => the lookup goes on there. A live head's answer is CLHT's (above).
//   L5  Publication. Each build CAS counts down its chunk's count, and the last one the chunks'
//       count (acq_rel), so the thread that takes the last count to zero has seen every head
//       built; it makes the new table current (a CAS of the current table from the old one,
//       TableGenerations::publish_if, release; current() is an acquire), counts the resize and
//       retires the old table (L6). Should it be suspended before that CAS, any update that
//       finds the count at zero (acquire: it has seen every build too) makes the same CAS;
//       one succeeds. Publishing never throws: the new table was kept by tables_ when the
//       migration began.
//   L6  Memory. Then it hands the old table's heads and pool back to the system (madvise
//       MADV_DONTNEED: the range stays and reads as zeros), keeping the small Table object for
//       successor(), as BasicClht does (basic_clht.hpp, M6, which says why lookups announce
//       nothing). A zero snapshot is a frozen head with no valid slot, which is what every
//       head of the old table was: a lookup or update that reads one goes on in the successor,
//       whose heads are all built. A scan that reads zeros ends early (a zero `next`) or skips
//       them (a zero key is no key), and its answer is thrown away -- a live snapshot's check
//       reads 0 (changed), a frozen one's sends it on (the successor's head is built) -- by the
//       ordering argument of M6; a copier that reads a zero key (an acquire load, so that its
//       next look at the new head comes after it) stops: the head is built. And no late CAS of
//       a snapshot can succeed on a zero page: every one expects a value it read live (kLive)
//       or unbuilt (kUnbuilt: the mark is why unbuilt is not 0). Late reservations, links,
//       pool buckets, releases and erases' key clears -- and, on x86, a failed CAS -- write
//       the pages back (memory that memory_bytes() does not count, a huge page for one write),
//       never an answer. Heads under 64 KiB come from the heap and are kept whole.
//   A copy reserves a slot before it publishes, so copiers racing on one new chain may each
//   hold a reservation for a moment; only a new chain of 26 - c pairs or more, with c copiers
//   racing on it (24 pairs for two: a degenerate hash), can find no free slot, and its copier
//   then waits for the others' reservations to be published or released. When the pool is used
//   up, a copy takes a heap bucket (kept in a list, freed with the table) rather than stop; a
//   std::bad_alloc there, or from allocating a new table, leaves the update that was helping
//   unapplied and the migration under way.
//
// Progress: lookups are lock-free -- they retry only when an update of their chain completed --
// and visit each table at most once per try; updates are lock-free -- they retry only when
// another update's or a migration's CAS on their chain succeeded, and a migration's work, its
// publication included, is done by whoever meets it (L3, L5) -- except the degenerate copy
// above.
//
// Versions have 38 bits: a stale snapshot could only pass for a current one after exactly a
// multiple of 2^38 (2.7 * 10^11) changes of one chain while one operation is stalled between
// its two reads -- hours of a single chain changing at the fastest rate one cache line allows.
//
// Memory ordering: the snapshot's CAS that publishes a slot is release, and its loads are
// acquire: a find that sees the valid bit sees the key and value written before it. A find's
// key and value loads are acquire so that the snapshot's second load stays after them (a
// copy's value load is relaxed: a wrong value could only be published into a head that is
// still unbuilt, by a CAS after it, and by then the pair is fixed). Overflow buckets are linked
// with release (their first pair written before) and followed with acquire. L1, L5 and L6 give
// the migration's.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "ccf/detail/bucket_pool.hpp"
#include "ccf/detail/clht_sizing.hpp"
#include "ccf/detail/map_api.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/detail/table_generations.hpp"
#include "ccf/detail/table_migration.hpp"
#include "ccf/status.hpp"
#include "ccf/sync/spin_wait.hpp"

namespace ccf {

// Hook: detail::NoMigrationHook, or a test's: `static void on_frozen(std::uint64_t i)` is called
// by a thread that froze old head i in its claim, before it builds the new heads (L2);
// `static void on_last_build()` by the thread whose build took the last count, before it
// publishes (L5).
template <class Hook = detail::NoMigrationHook>
class BasicClhtLf : public detail::MapApi<BasicClhtLf<Hook>, std::uint64_t, std::uint64_t> {
 public:
  static constexpr unsigned kSlots = detail::ClhtSizing::kSlots;  // pairs per 64-byte bucket
  static constexpr unsigned kMaxChain = 8;                        // buckets per chain
  static constexpr std::uint64_t kChunk = 64;                     // old heads per claim (L3)

  // Room for `capacity` items at the resize threshold (3 per head bucket) without resizing.
  // Throws std::invalid_argument beyond the 64 TiB table limit; reserve() likewise, changing
  // nothing.
  explicit BasicClhtLf(std::size_t capacity = 1024)
      : tables_(
            std::make_unique<Table>(detail::ClhtSizing::buckets_for(capacity, "ClhtLf"), kLive)) {}
  BasicClhtLf(const BasicClhtLf&) = delete;
  BasicClhtLf& operator=(const BasicClhtLf&) = delete;

  std::optional<std::uint64_t> find(std::uint64_t key) const {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    const Table& table = *tables_.current();
    const Bucket& head = table.head(h);
    for (;;) {
      const std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
      if (!(s & kLive)) return find_forwarded(table, h, key);  // kept out of line: find inlines
      const std::optional<std::uint64_t> value = value_under(head, s, key);
      if (head.snapshot.load(std::memory_order_acquire) == s) return value;
    }
  }
  // contains, insert and insert_or_assign: detail::MapApi over find and put; kFull only for a
  // degenerate hash (see the header; nothing changed).

  // kOk, or kNotFound. May throw std::bad_alloc from its share of a migration, having changed
  // nothing (insert and insert_or_assign likewise).
  Status erase(std::uint64_t key) {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    help();
    for (;;) {
      Bucket& head = holder(h).second;
      std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
      if (!(s & kLive)) continue;  // frozen since: L3
      const std::optional<SlotRef> slot = find_valid(head, s, key);
      if (!slot) {
        if (head.snapshot.load(std::memory_order_acquire) == s) return Status::kNotFound;
        continue;
      }
      if (head.snapshot.compare_exchange_strong(s, changed(s, valid_bit(slot->index), 0),
                                                std::memory_order_acq_rel)) {
        slot->bucket->key[slot->lane].store(0, std::memory_order_release);  // ours: free it
        items_.add(-1);
        return Status::kOk;
      }
    }
  }

  // Exact when no update is in flight.
  std::size_t size() const noexcept { return static_cast<std::size_t>(items_.value()); }
  std::size_t bucket_count() const noexcept { return tables_.current()->buckets; }
  // Slots in the current table's head buckets (chains hold more).
  std::size_t capacity() const noexcept { return kSlots * bucket_count(); }
  // Grows the table (if needed) so that `capacity` items fit without a resize, migrating until
  // it does (with whichever threads help).
  void reserve(std::size_t capacity) {
    const std::uint64_t wanted = detail::ClhtSizing::buckets_for(capacity, "ClhtLf");
    for (Table* table = tables_.current(); table->buckets < wanted; table = tables_.current()) {
      Migration* m = table->migration.load(std::memory_order_acquire);
      if (m == nullptr) {
        if (2 * table->buckets > detail::ClhtSizing::kMaxBuckets) return;  // chains grow instead
        begin_migration(*table, /*need=*/true);
      } else if (!help(*table, *m)) {
        sync::cpu_relax();  // the chunk claimed was done
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
  // Head buckets and overflow buckets in use, of every table still held, and the map object.
  std::size_t memory_bytes() const { return tables_.memory_bytes() + sizeof(*this); }

 private:
  friend class detail::MapApi<BasicClhtLf<Hook>, std::uint64_t, std::uint64_t>;
  using Word = std::atomic<std::uint64_t>;
  static constexpr unsigned kChainSlots = kSlots * kMaxChain;  // 24 valid bits
  static constexpr std::uint64_t kValidMask = (std::uint64_t{1} << kChainSlots) - 1;
  static constexpr std::uint64_t kLive = std::uint64_t{1} << kChainSlots;
  static constexpr std::uint64_t kUnbuilt = kLive << 1;
  static constexpr std::uint64_t kVersionOne = kUnbuilt << 1;  // adding it wraps mod 2^38

  struct alignas(64) Bucket {
    Word snapshot{0};  // head buckets only
    Word key[kSlots]{};
    Word value[kSlots]{};
    std::atomic<Bucket*> next{nullptr};
  };
  static_assert(sizeof(Bucket) == 64, "one bucket, one cache line");
  static_assert(std::is_trivially_destructible_v<Bucket>, "buckets are never destroyed");

  // A slot of a chain: its bucket, its lane there and its index in the chain (3c + lane).
  struct SlotRef {
    Bucket* bucket;
    unsigned lane;
    unsigned index;
  };

  struct Table;
  // A migration of one table into one twice as large (L1-L5).
  struct Migration {
    Migration(Table* target, std::uint64_t old_buckets)
        : to(target),
          chunks((old_buckets + kChunk - 1) / kChunk),
          left(chunks),
          chunks_left(chunks) {
      for (std::uint64_t c = 0; c < chunks; ++c) {
        left[c].store(2 * (std::min(old_buckets, (c + 1) * kChunk) - c * kChunk),
                      std::memory_order_relaxed);
      }
    }
    Table* const to;  // held by tables_
    const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    const std::uint64_t chunks;
    detail::ChunkCounts left;                          // per chunk: new heads unbuilt
    alignas(64) std::atomic<std::uint64_t> claims{0};  // chunk c is claim c mod chunks
    alignas(64) std::atomic<std::uint64_t> chunks_left;
  };

  // A heap bucket a copy took when the pool was used up (L6), listed for the table's destructor.
  struct HeapBucket {
    Bucket bucket;
    HeapBucket* older = nullptr;
  };

  // One table: head buckets and the overflow pool (as many buckets again, address space only
  // until used, detail/bucket_pool.hpp), both on huge pages where the system allows
  // (detail/page_buffer.hpp).
  struct Table {
    // Heads live (a map's first table) or unbuilt (a migration's).
    Table(std::uint64_t count, std::uint64_t state)
        : buckets(count), head_storage(count * sizeof(Bucket)), pool(count) {
      auto* first = reinterpret_cast<Bucket*>(head_storage.data());
      for (std::uint64_t i = 0; i < count; ++i) new (first + i) Bucket{.snapshot{state}};
      heads = std::launder(first);
    }
    ~Table() {
      for (HeapBucket* b = heap.load(std::memory_order_relaxed); b != nullptr;) {
        delete std::exchange(b, b->older);
      }
    }
    Table(const Table&) = delete;
    Table& operator=(const Table&) = delete;

    std::uint64_t index(std::uint64_t h) const noexcept { return reduce_range(h, buckets); }
    Bucket& head(std::uint64_t h) const noexcept { return heads[index(h)]; }
    // The table this one's keys go to; only once a head of it was seen frozen (L1).
    Table* successor() const noexcept { return migration.load(std::memory_order_acquire)->to; }
    // An overflow bucket from the pool; for a copy, from the heap once the pool is used up (L6).
    Bucket* overflow_bucket(bool copy) {
      Bucket* b = pool.allocate();
      if (b != nullptr || !copy) return b;
      auto* added = new HeapBucket;
      added->older = heap.load(std::memory_order_relaxed);
      while (!heap.compare_exchange_weak(added->older, added, std::memory_order_relaxed)) {
      }
      heap_buckets.fetch_add(1, std::memory_order_relaxed);
      return &added->bucket;
    }
    std::size_t memory_bytes() const noexcept {
      const std::size_t heap_bytes =
          heap_buckets.load(std::memory_order_relaxed) * sizeof(HeapBucket);
      if (retired.load(std::memory_order_relaxed)) return heap_bytes;
      return head_storage.reserved_bytes() + pool.memory_bytes() + heap_bytes;
    }

    std::uint64_t buckets;
    detail::PageBuffer head_storage;
    Bucket* heads;  // in head_storage
    detail::BucketPool<Bucket> pool;
    std::atomic<HeapBucket*> heap{nullptr};
    std::atomic<std::uint64_t> heap_buckets{0};
    // Set once, by a CAS, when a migration of this table begins (release: L1).
    std::atomic<Migration*> migration{nullptr};
    std::unique_ptr<Migration> owned_migration;  // set by the thread whose CAS installed it
    std::atomic<bool> beginning{false};          // a thread is allocating a migration (L1)
    std::atomic<bool> retired{false};            // its pages handed back (L6)
  };

  static void check(std::uint64_t key) { detail::ClhtSizing::check(key, "ClhtLf"); }
  static constexpr std::uint64_t valid_bit(unsigned index) noexcept {
    return std::uint64_t{1} << index;
  }
  static constexpr bool unbuilt(std::uint64_t s) noexcept { return (s & kUnbuilt) != 0; }
  // s with the valid bits `clear` cleared and `set` set, and its version raised.
  static constexpr std::uint64_t changed(std::uint64_t s, std::uint64_t clear,
                                         std::uint64_t set) noexcept {
    return ((s & ~clear) | set) + kVersionOne;
  }

  // The slot valid in snapshot s that holds `key` (by (I), what it held when s was current).
  static std::optional<SlotRef> find_valid(const Bucket& head, std::uint64_t s, std::uint64_t key) {
    std::uint64_t valid = s & kValidMask;
    auto* bucket = const_cast<Bucket*>(&head);
    // (A null bucket: the chain of a retired table, read as zeros, L6.)
    for (unsigned c = 0; valid != 0 && bucket != nullptr; ++c, valid >>= kSlots) {
      for (unsigned lane = 0; lane < kSlots; ++lane) {
        if ((valid >> lane & 1) != 0 && bucket->key[lane].load(std::memory_order_acquire) == key) {
          return SlotRef{bucket, lane, c * kSlots + lane};
        }
      }
      // A valid slot further on lies in a bucket linked before it was published.
      bucket = bucket->next.load(std::memory_order_acquire);
    }
    return std::nullopt;
  }

  // The key's value among the slots valid in snapshot s (acquire: before s is read again).
  static std::optional<std::uint64_t> value_under(const Bucket& head, std::uint64_t s,
                                                  std::uint64_t key) {
    const std::optional<SlotRef> slot = find_valid(head, s, key);
    if (!slot) return std::nullopt;
    return slot->bucket->value[slot->lane].load(std::memory_order_acquire);
  }

  // find from a head of `table` that is frozen (or retired, L6): L4, table after table.
  [[gnu::noinline]] static std::optional<std::uint64_t> find_forwarded(const Table& from,
                                                                       std::uint64_t h,
                                                                       std::uint64_t key) {
    for (const Table* table = &from;;) {
      const Bucket& head = table->head(h);
      const std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
      const std::optional<std::uint64_t> value = value_under(head, s, key);
      if (s & kLive) {
        if (head.snapshot.load(std::memory_order_acquire) != s) continue;
      } else {  // a lookup never meets an unbuilt head (L4)
        const Table* next = table->successor();
        if (!unbuilt(next->head(h).snapshot.load(std::memory_order_acquire))) {
          table = next;
          continue;
        }
      }
      return value;
    }
  }

  // Reserves a free slot of the chain for (key, value): its key CAS'd 0 -> key and its value
  // written, or an overflow bucket linked with the pair in slot 0. nullopt: the chain is full or
  // the pool is used up (for a copy, never the pool: L6). `chained` is set when a bucket was
  // linked.
  static std::optional<SlotRef> reserve_slot(Table& table, Bucket& head, std::uint64_t key,
                                             std::uint64_t value, bool copy, bool& chained) {
    Bucket* bucket = &head;
    unsigned c = 0;
    for (;;) {
      for (unsigned lane = 0; lane < kSlots; ++lane) {
        std::uint64_t expected = 0;
        if (bucket->key[lane].load(std::memory_order_relaxed) == 0 &&
            bucket->key[lane].compare_exchange_strong(expected, key, std::memory_order_acq_rel)) {
          bucket->value[lane].store(value, std::memory_order_release);
          return SlotRef{bucket, lane, c * kSlots + lane};
        }
      }
      if (Bucket* next = bucket->next.load(std::memory_order_acquire)) {
        bucket = next;
        ++c;
        continue;
      }
      if (c + 1 >= kMaxChain) return std::nullopt;
      Bucket* added = table.overflow_bucket(copy);
      if (added == nullptr) return std::nullopt;
      added->key[0].store(key, std::memory_order_relaxed);
      added->value[0].store(value, std::memory_order_relaxed);
      Bucket* expected = nullptr;
      // Release: the pair is in the bucket before anyone can reach it.
      if (bucket->next.compare_exchange_strong(expected, added, std::memory_order_release,
                                               std::memory_order_acquire)) {
        chained = true;
        return SlotRef{added, 0, (c + 1) * kSlots};
      }
      // Another insert linked a bucket first: ours stays unused; go on in theirs.
      bucket = expected;
      ++c;
    }
  }

  Status put(std::uint64_t key, std::uint64_t value, bool assign) {
    // A failed insert writes nothing (ASCY 3): a key find sees present is refused at that
    // moment, without reserving a slot (a write to the chain's line) and releasing it.
    if (!assign && find(key)) return Status::kExists;
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    help();
    for (;;) {
      auto [table, head] = holder(h);
      bool chained = false;
      const std::optional<SlotRef> reserved =
          reserve_slot(*table, head, key, value, /*copy=*/false, chained);
      if (!reserved) {
        // No room in the chain. A larger table makes room -- unless the hash is degenerate
        // (see the header): then the table is not even half as full as the resize threshold.
        const bool crowded = table->pool.exhausted() ||
                             2 * size() >= detail::ClhtSizing::kItemsPerBucket * table->buckets;
        if (!crowded || !grow(*table))
          return !assign && find(key) ? Status::kExists : Status::kFull;
        continue;
      }
      const std::optional<Status> status = publish(head, *reserved, key, assign, kLive);
      if (!status) continue;  // the chain was frozen: L3
      if (*status == Status::kOk) {
        items_.add(1);
        if (chained && size() > detail::ClhtSizing::kItemsPerBucket * table->buckets) {
          try {
            begin_migration(*table, /*need=*/false);
          } catch (const std::bad_alloc&) {
            // The item is stored; the next insert that chains a bucket tries again.
          }
        }
      }
      return *status;
    }
  }

  // Makes the reserved slot valid (kOk), or replaces the key's valid slot with it (assign;
  // kExists), or releases it (kExists), in a head in state `want` (kLive, or kUnbuilt for a
  // copy). nullopt: the head has left that state (the slot is released).
  static std::optional<Status> publish(Bucket& head, const SlotRef& reserved, std::uint64_t key,
                                       bool assign, std::uint64_t want) {
    for (;;) {
      std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
      if ((s & (kLive | kUnbuilt)) != want) {
        release(reserved);
        return std::nullopt;
      }
      const std::optional<SlotRef> present = find_valid(head, s, key);
      if (present && !assign) {
        if (head.snapshot.load(std::memory_order_acquire) != s) continue;  // not proven yet
        release(reserved);
        return Status::kExists;
      }
      const std::uint64_t clear = present ? valid_bit(present->index) : 0;
      // Release: the reserved pair before its valid bit.
      if (head.snapshot.compare_exchange_strong(s, changed(s, clear, valid_bit(reserved.index)),
                                                std::memory_order_acq_rel)) {
        if (!present) return Status::kOk;
        release(*present);  // replaced: the old slot is ours to free
        return Status::kExists;
      }
    }
  }

  static void release(const SlotRef& slot) noexcept {
    slot.bucket->key[slot.lane].store(0, std::memory_order_release);
  }

  // The live head of h's chain in the table that holds h's keys, building it first if it is
  // unbuilt (L2, L3).
  std::pair<Table*, Bucket&> holder(std::uint64_t h) {
    for (Table* table = tables_.current();;) {
      Bucket& head = table->head(h);
      const std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
      if (s & kLive) return {table, head};
      // Frozen, or retired (L6): a current table's heads, and those a frozen head leads to once
      // built, are never unbuilt.
      Table* next = table->successor();
      if (unbuilt(next->head(h).snapshot.load(std::memory_order_acquire))) {
        build(*table, table->index(h), s, next->index(h));
      }
      table = next;
    }
  }

  // Room for an insert that found its chain full in a crowded table: a migration of the table
  // begun, or helped. False at the table limit (the chain stays full: kFull).
  bool grow(Table& table) {
    if (tables_.current() == &table && table.migration.load(std::memory_order_acquire) == nullptr) {
      if (2 * table.buckets > detail::ClhtSizing::kMaxBuckets) return false;
      begin_migration(table, /*need=*/true);
    }
    help();
    return true;
  }

  // An update's share of a migration under way (L3).
  void help() {
    Table& table = *tables_.current();
    if (Migration* m = table.migration.load(std::memory_order_acquire)) help(table, *m);
  }
  // One chunk, or the publication once every head is built (L5). False if there was nothing to
  // do.
  bool help(Table& from, Migration& m) {
    // Acquire: a count at zero was taken there by the last build, which saw every build before.
    if (m.chunks_left.load(std::memory_order_acquire) == 0) {
      finish(from, m);
      return true;
    }
    return migrate_chunk(from, m);
  }

  // (L1) Begins doubling `from` if it is current and its doubling has not begun. Without `need`,
  // not if another thread is beginning it (it goes on); with it (an insert that has no room
  // otherwise), alongside that thread: one CAS installs a migration, the other's table is freed.
  // A std::bad_alloc (the new table, the counters) begins nothing.
  void begin_migration(Table& from, bool need) {
    if (tables_.current() != &from || from.migration.load(std::memory_order_acquire) != nullptr ||
        2 * from.buckets > detail::ClhtSizing::kMaxBuckets) {
      return;
    }
    const bool first = !from.beginning.exchange(true, std::memory_order_relaxed);
    if (!first && !need) return;
    try {
      auto to = std::make_unique<Table>(2 * from.buckets, kUnbuilt);
      auto migration = std::make_unique<Migration>(to.get(), from.buckets);
      Table* kept = tables_.keep(std::move(to));
      Migration* expected = nullptr;
      // Release: whoever loads the migration sees its table and counters initialised.
      if (!from.migration.compare_exchange_strong(
              expected, migration.get(), std::memory_order_release, std::memory_order_relaxed)) {
        tables_.drop(kept);  // another thread's began: ours was never reachable
        return;
      }
      from.owned_migration = std::move(migration);
    } catch (...) {
      if (first) from.beginning.store(false, std::memory_order_relaxed);  // a later insert tries
      throw;
    }
  }

  // Claims one chunk of `from`'s heads (L3): freezes each and builds its two new heads. False if
  // the chunk claimed was done.
  bool migrate_chunk(Table& from, Migration& m) {
    // Relaxed: a claim only spreads helpers over the chunks; each step is its own CAS.
    const std::uint64_t c = m.claims.fetch_add(1, std::memory_order_relaxed) % m.chunks;
    if (m.left[c].load(std::memory_order_acquire) == 0) return false;
    const std::uint64_t last = std::min(from.buckets, (c + 1) * kChunk);
    for (std::uint64_t i = c * kChunk; i < last; ++i) {
      detail::ClhtSizing::prefetch_chain_ahead(from.heads, i, last);
      const std::uint64_t s = freeze(from.heads[i]);
      if constexpr (requires { Hook::on_frozen(i); }) Hook::on_frozen(i);
      build(from, i, s, 2 * i);
      build(from, i, s, 2 * i + 1);
    }
    return true;
  }

  // Freezes a head (once: a second freeze finds it frozen); its frozen snapshot.
  static std::uint64_t freeze(Bucket& head) {
    std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
    while ((s & kLive) && !head.snapshot.compare_exchange_weak(s, (s & ~kLive) + kVersionOne,
                                                               std::memory_order_acq_rel,
                                                               std::memory_order_acquire)) {
    }
    return (s & kLive) ? (s & ~kLive) + kVersionOne : s;
  }

  // (L2) Builds new head j of from's successor out of old head i, frozen with snapshot s: its
  // pairs that belong to j, then the CAS that makes j live. Returns at once if j is built.
  void build(Table& from, std::uint64_t i, std::uint64_t s, std::uint64_t j) {
    Migration& m = *from.migration.load(std::memory_order_acquire);
    Table& to = *m.to;
    Bucket& target = to.heads[j];
    const Bucket* bucket = &from.heads[i];
    for (std::uint64_t valid = s & kValidMask; valid != 0; valid >>= kSlots) {
      if (bucket == nullptr) return;  // a retired table read as zeros: j is built (L6)
      for (unsigned lane = 0; lane < kSlots; ++lane) {
        if ((valid >> lane & 1) == 0) continue;
        // Acquire: the frozen snapshot's acquire load (or CAS) ordered the pair before it, and a
        // zero read here orders the new head's next look after the retirement (L6).
        const std::uint64_t key = bucket->key[lane].load(std::memory_order_acquire);
        if (key == 0) return;  // likewise
        if (to.index(detail::ClhtSizing::hash(key)) != j) continue;
        if (!copy(to, target, key, bucket->value[lane].load(std::memory_order_relaxed))) return;
      }
      bucket = bucket->next.load(std::memory_order_acquire);
    }
    std::uint64_t t = target.snapshot.load(std::memory_order_acquire);
    while (unbuilt(t)) {
      if (target.snapshot.compare_exchange_weak(t, ((t & ~kUnbuilt) | kLive) + kVersionOne,
                                                std::memory_order_acq_rel,
                                                std::memory_order_acquire)) {
        // (L5) acq_rel: the thread that takes the last count to zero has seen every build.
        const std::uint64_t c = i / kChunk;
        if (m.left[c].fetch_sub(1, std::memory_order_acq_rel) == 1 &&
            m.chunks_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          if constexpr (requires { Hook::on_last_build(); }) Hook::on_last_build();
          finish(from, m);
        }
        return;
      }
    }
  }

  // Makes (key, value) valid in unbuilt head `target` unless it is there (true), or finds the
  // head built (false). Waits only for a chain with no free slot (L6).
  static bool copy(Table& to, Bucket& target, std::uint64_t key, std::uint64_t value) {
    for (;;) {
      const std::uint64_t s = target.snapshot.load(std::memory_order_acquire);
      if (!unbuilt(s)) return false;
      // Pairs only become valid in an unbuilt head: one valid under s is valid until it is built.
      if (find_valid(target, s, key)) return true;
      bool chained = false;
      const std::optional<SlotRef> reserved =
          reserve_slot(to, target, key, value, /*copy=*/true, chained);
      if (!reserved) {
        sync::cpu_relax();  // other copiers' reservations fill the chain for now
        continue;
      }
      const std::optional<Status> status = publish(target, *reserved, key, false, kUnbuilt);
      if (!status) return false;
      return true;
    }
  }

  // (L5) Makes the migration's table current, if `from` still is, and retires `from`.
  void finish(Table& from, Migration& m) noexcept {
    if (tables_.publish_if(&from, m.to, m.start)) retire(from);
  }

  // (L6) Hands an old table's heads and pool back once its successor is published. Heads under
  // 64 KiB come from the heap (detail/page_buffer.hpp) and are kept.
  static void retire(Table& old) noexcept {
    if (!old.head_storage.discard()) return;
    old.pool.discard();
    old.retired.store(true, std::memory_order_relaxed);  // statistics
  }

  detail::TableGenerations<Table> tables_;
  detail::ShardedCounter items_;
};

using ClhtLf = BasicClhtLf<>;

}  // namespace ccf
