// libcds peers (Debian libcds-dev 2.3.3): four concurrent hash maps of Maxim Khizhinsky's
// "Concurrent Data Structures" library, each used as a set of uint64 keys (a key maps to an empty
// value) with the library's documented defaults and std::hash as a user would write them:
//
//   `libcds-michael-map`     cds::container::MichaelHashMap over MichaelKVList, gc::HP: a fixed
//                            array of lock-free sorted-list buckets (M. M. Michael, "High
//                            performance dynamic lock-free hash tables and list-based sets", SPAA
//                            2002). Sized with nMaxItemCount = capacity and load factor 1.
//   `libcds-split-list-map`  cds::container::SplitListMap over michael_list, gc::HP: one lock-free
//                            list in split order whose bucket index grows with the item count
//                            (O. Shalev, N. Shavit, "Split-ordered lists: lock-free extensible hash
//                            tables", JACM 2006). Sized with nItemCount = capacity, load factor 1.
//   `libcds-feldman-map`     cds::container::FeldmanHashMap, gc::HP: a wait-free multi-level array
//                            indexed by the bits of a fixed-size hash (S. Feldman, P. LaBorde,
//                            D. Dechev, "Concurrent multi-level arrays: wait-free extensible hash
//                            maps", SAMOS 2013). The fixed-size hash is the 64-bit key itself: the
//                            library's default for a fixed-size key (no hash functor); std::hash
//                            would give the same bits, being the identity on integers in
//                            libstdc++.
//   `libcds-cuckoo-map`      cds::container::CuckooMap: lock-striped concurrent cuckoo hashing
//                            with probe sets (M. Herlihy, N. Shavit, M. Tzafrir, "Concurrent cuckoo
//                            hashing", 2007; "The Art of Multiprocessor Programming" ch. 13). Its
//                            default striping policy (std::recursive_mutex, one lock array per
//                            table, as large as the initial table) and list probe sets (size 4,
//                            threshold 3). It needs two hash functors: std::hash and, as the
//                            second, MurmurHash3's 64-bit finalizer (ccf::mix64), so that a key's
//                            two candidate buckets are independent.
//
// libcds's rules (cds/init.h, cds/gc/hp.h, cds/threading/model.h): cds::Initialize() once per
// process, then one Hazard Pointer GC singleton (cds::gc::HP) before any HP-based container is
// used; every thread that touches such a container attached (cds::threading::Manager::
// attachThread) and detached afterwards. Here the first libcds structure built creates both
// (LibcdsRuntime, a function-local static, torn down at exit), and every thread -- the harness's
// workers through thread_enter / thread_exit, its main thread around construction, size() and
// destruction -- is attached, reference counted per thread as the RCU table does it. CuckooMap is
// lock-based and needs neither.
//
// Memory: libcds containers take an allocator type, never an allocator object -- they build
// temporaries (cds::details::Allocator<T, A>(), and the GC's disposers free retired nodes through
// one) -- so the project's CountingAllocator, which points at a per-structure meter, does not fit.
// LibcdsAllocator is stateless instead and charges one meter per map kind; the harness holds one
// structure at a time, and the destructor lets the GC free every retired node, so a kind's meter
// is that structure's bytes. Not charged: the per-thread hazard-pointer records (process-wide,
// shared by every HP map, allocated by libcds itself).
//
// ThreadSanitizer builds differ in three places, each explained where it is made: frees through
// the allocator are not recorded (the GC's scan runs inside the uninstrumented libcds.so), the
// lock-free maps use libcds's sequential_consistent memory model, and the cuckoo map's stripes
// are a spin lock TSan does not treat as a mutex.
#include <cstring>  // first: cds/intrusive/cuckoo_set.h calls memcpy without including it
//
#if defined(__SANITIZE_THREAD__) && !defined(NDEBUG)
// The TSan preset keeps assertions, and one of libcds's races itself: SplitListSet's bucket
// setter asserts on a bucket slot read through a relaxed load of a segment pointer that another
// thread may just have published (cds/intrusive/details/split_list_base.h). Under TSan libcds's
// headers are compiled without assertions, as in the release build the benchmark runs.
#define NDEBUG
#define CHTBENCH_LIBCDS_NDEBUG
#endif
#include <cds/container/cuckoo_map.h>
#include <cds/container/feldman_hashmap_hp.h>
#include <cds/container/michael_kvlist_hp.h>
#include <cds/container/michael_list_hp.h>
#include <cds/container/michael_map.h>
#include <cds/container/split_list_map.h>
#include <cds/gc/hp.h>
#include <cds/init.h>
#if defined(CHTBENCH_LIBCDS_NDEBUG)
#undef NDEBUG
#undef CHTBENCH_LIBCDS_NDEBUG
#include <cassert>  // assert() as before for the rest of this file
#endif
#include <malloc.h>  // malloc_usable_size

#include <algorithm>
#include <atomic>
#include <bit>
#include <ccf/hash.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>

#include "adapters/counting_allocator.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

using Key = std::uint64_t;
struct Empty {};

// ---------------------------------------------------------------------------------------------
// Allocation: a stateless allocator charging the meter of its map kind.

// One meter per map kind (the tag types below). Constant-initialized and trivially destructible,
// so it outlives the GC singleton, whose teardown at exit may still free retired nodes.
template <class Kind>
constinit MemoryMeter kind_meter{};

// Frees through LibcdsAllocator are hidden from ThreadSanitizer. The Hazard Pointer GC frees a
// retired node only after a scan of every thread's hazard pointers -- relaxed loads and fences
// inside libcds.so, which is not built with TSan -- found it unprotected (Michael, "Hazard
// pointers: safe memory reclamation for lock-free objects", IEEE TPDS 2004). TSan cannot see that
// edge, so it reports each free as racing with the last lookup that read the node. The free's write
// is not recorded; every access the harness and the maps make is still checked.
// libcds's own annotation macros (cds/compiler/feature_tsan.h) are empty without TSan.
struct ThreadSanitizerBlindFree {
  ThreadSanitizerBlindFree() { CDS_TSAN_ANNOTATE_IGNORE_WRITES_BEGIN; }
  ~ThreadSanitizerBlindFree() { CDS_TSAN_ANNOTATE_IGNORE_WRITES_END; }
  ThreadSanitizerBlindFree(const ThreadSanitizerBlindFree&) = delete;
  ThreadSanitizerBlindFree& operator=(const ThreadSanitizerBlindFree&) = delete;
};

// What an allocation is charged. kRequested: n * sizeof(T), as CountingAllocator charges the
// other peers. kUsable: malloc_usable_size of the block, for FeldmanHashMap's array nodes, which
// libcds allocates as a raw block of void* (cds::details::Allocator::NewBlock) but frees as one
// array_node (Delete(p, 1)): the sizes passed to allocate and deallocate differ, and only the
// block itself tells what was allocated.
enum class Charge { kRequested, kUsable };

template <class T, class Kind, Charge C = Charge::kRequested>
class LibcdsAllocator {
 public:
  using value_type = T;
  template <class U>
  struct rebind {  // spelled out: allocator_traits cannot rebind a non-type parameter
    using other = LibcdsAllocator<U, Kind, C>;
  };

  LibcdsAllocator() noexcept = default;
  template <class U>
  LibcdsAllocator(const LibcdsAllocator<U, Kind, C>&) noexcept {}

  // malloc / free rather than sized operator new / delete: libcds may free a block with another
  // element type and count than it allocated it with (see Charge), which sized deallocation
  // (and AddressSanitizer's new-delete-type-mismatch check) would object to.
  T* allocate(std::size_t n) {
    const std::size_t bytes = std::max<std::size_t>(n * sizeof(T), 1);
    void* p =
        alignof(T) > alignof(std::max_align_t)
            ? std::aligned_alloc(alignof(T), (bytes + alignof(T) - 1) / alignof(T) * alignof(T))
            : std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    kind_meter<Kind>.add(charge(p, n));
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    kind_meter<Kind>.add(-charge(p, n));
    [[maybe_unused]] const ThreadSanitizerBlindFree blind;
    std::free(p);
  }

  template <class U>
  bool operator==(const LibcdsAllocator<U, Kind, C>&) const noexcept {
    return true;
  }

 private:
  static std::int64_t charge(void* p, std::size_t n) noexcept {
    return static_cast<std::int64_t>(C == Charge::kUsable ? malloc_usable_size(p) : n * sizeof(T));
  }
};

// libcds rebinds an allocator of int (its CDS_DEFAULT_ALLOCATOR is std::allocator<int>).
template <class Kind, Charge C = Charge::kRequested>
using Alloc = LibcdsAllocator<int, Kind, C>;

// ---------------------------------------------------------------------------------------------
// The maps. Each Ops names its map type, how it is sized for `capacity` items, and whether it
// runs under the Hazard Pointer GC.

// The memory model of the lock-free maps: libcds's default, relaxed_ordering (each operation's
// own memory order), except under ThreadSanitizer. There some of those orders fall short of
// the C++ model, though not of x86's: MichaelList unlinks a node by a CAS on its predecessor
// that is acquire only (cds/intrusive/impl/michael_list.h, unlink_node and search), so a
// lookup reading the successor it published has no happens-before with that successor's
// construction, which TSan reports. sequential_consistent, libcds's other model, makes every
// order seq_cst.
#if defined(__SANITIZE_THREAD__)
using MemoryModel = cds::opt::v::sequential_consistent;
#else
using MemoryModel = cds::opt::v::relaxed_ordering;
#endif

struct MichaelTag;
struct SplitListTag;
struct FeldmanTag;
struct CuckooTag;

// Load factor 1: the constructor's documented "average count of items per bucket", as in most
// STL hash maps (cds/container/michael_map.h); buckets = ceil2(capacity / 1).
constexpr std::size_t kLoadFactor = 1;

// The sorted lock-free list (Michael 2002) under MichaelHashMap's buckets and SplitListMap.
template <class Tag>
using ListTraits =
    cds::container::michael_list::make_traits<cds::opt::less<std::less<Key>>,
                                              cds::opt::allocator<Alloc<Tag>>,
                                              cds::opt::memory_model<MemoryModel>>::type;

struct MichaelOps {
  using Tag = MichaelTag;
  using List = cds::container::MichaelKVList<cds::gc::HP, Key, Empty, ListTraits<MichaelTag>>;
  using Map = cds::container::MichaelHashMap<
      cds::gc::HP, List,
      cds::container::michael_map::make_traits<cds::opt::hash<std::hash<Key>>,
                                               cds::opt::allocator<Alloc<MichaelTag>>>::type>;
  static constexpr bool kHazardPointers = true;
  static void build(std::optional<Map>& map, std::size_t capacity) {
    map.emplace(capacity, kLoadFactor);
  }
};

struct SplitListOps {
  using Tag = SplitListTag;
  using Map = cds::container::SplitListMap<
      cds::gc::HP, Key, Empty,
      cds::container::split_list::make_traits<
          cds::container::split_list::ordered_list<cds::container::michael_list_tag>,
          cds::container::split_list::ordered_list_traits<ListTraits<SplitListTag>>,
          cds::opt::hash<std::hash<Key>>, cds::opt::allocator<Alloc<SplitListTag>>,
          cds::opt::memory_model<MemoryModel>>::type>;
  static constexpr bool kHazardPointers = true;
  // The (default, expandable) bucket table is laid out for capacity / kLoadFactor buckets; the
  // split-ordered list starts with 2 and doubles them as items arrive, allocating bucket
  // segments on first use.
  static void build(std::optional<Map>& map, std::size_t capacity) {
    map.emplace(capacity, kLoadFactor);
  }
};

struct FeldmanOps {
  using Tag = FeldmanTag;
  // No hash functor: the key's 8 bytes are the hash (cds/container/details/
  // feldman_hashmap_base.h, traits::hash). Array nodes (head and the 2^array_bits-slot nodes the
  // map expands into) come from node_allocator, data nodes from allocator.
  using Map = cds::container::FeldmanHashMap<
      cds::gc::HP, Key, Empty,
      cds::container::feldman_hashmap::make_traits<
          cds::opt::allocator<Alloc<FeldmanTag>>,
          cds::opt::node_allocator<Alloc<FeldmanTag, Charge::kUsable>>,
          cds::opt::memory_model<MemoryModel>>::type>;
  static constexpr bool kHazardPointers = true;
  static constexpr unsigned kHashBits = 64;
  static constexpr unsigned kArrayBits = 4;  // the constructor's default array_bits
  static constexpr unsigned kMaxHeadBits = 28;
  // The head array gets about one slot per item: 2^head_bits with head_bits = ceil(log2
  // capacity), lowered to the nearest value with (64 - head_bits) a multiple of array_bits, as
  // libcds requires (it would round up instead, up to 8x larger); at most 2^28 slots (2 GiB).
  // The hash's low bits index the head, so keys that share a head slot expand into array nodes.
  static unsigned head_bits(std::size_t capacity) {
    unsigned bits =
        std::clamp(static_cast<unsigned>(std::bit_width(capacity - 1)), 4u, kMaxHeadBits);
    bits -= (kArrayBits - (kHashBits - bits) % kArrayBits) % kArrayBits;
    return std::max(bits, 4u);
  }
  static void build(std::optional<Map>& map, std::size_t capacity) {
    map.emplace(head_bits(capacity), kArrayBits);
  }
};

// The second hash of the cuckoo map (the first is std::hash<uint64_t>, the identity).
struct Fmix64 {
  std::size_t operator()(Key key) const noexcept { return ccf::mix64(key); }
};

#if defined(__SANITIZE_THREAD__)
// Under ThreadSanitizer the stripes are this recursive spin lock on std::atomic: TSan checks
// the happens-before its acquire and release create, but does not treat it as a mutex (libcds's
// own cds::sync::reentrant_spin announces itself to TSan as one). TSan's deadlock detector would
// otherwise stop the run: it CHECK-fails when one thread holds more than 64 mutexes
// (sanitizer_deadlock_detector.h), as clear and resize do, locking a whole lock array; and it
// reports a lock-order inversion in CuckooSet::relocate, which holds the goal cell's table-1
// stripe while blocking on the displaced item's table-1 stripe (libcds 2.3.3,
// cds/intrusive/cuckoo_set.h): two such relocations crossing each other's stripes could
// deadlock. It needs two concurrent relocations, i.e. inserts that find both buckets at the
// probe-set threshold, which is rare at about one item per probe set (see build below).
class CuckooLock {
 public:
  void lock() noexcept {
    while (!try_lock()) std::this_thread::yield();
  }
  bool try_lock() noexcept {
    // Only this thread can have stored its own id: a relaxed load suffices.
    if (owner_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
      ++depth_;
      return true;
    }
    bool expected = false;
    if (!locked_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    depth_ = 1;
    return true;
  }
  void unlock() noexcept {
    if (--depth_ != 0) return;
    owner_.store(std::thread::id(), std::memory_order_relaxed);
    locked_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> locked_{false};
  std::atomic<std::thread::id> owner_{};
  unsigned depth_ = 0;  // the owner's nesting depth
};
#else
using CuckooLock = std::recursive_mutex;  // striping<>'s default
#endif

struct CuckooOps {
  using Tag = CuckooTag;
  using Map = cds::container::CuckooMap<
      Key, Empty,
      cds::container::cuckoo::make_traits<
          cds::opt::hash<std::tuple<std::hash<Key>, Fmix64>>,
          cds::opt::equal_to<std::equal_to<Key>>,  // unordered probe sets
          cds::opt::allocator<Alloc<CuckooTag>>,
          // The default policy, striping<>, with the lock arrays' allocator charged too.
          cds::opt::mutex_policy<
              cds::container::cuckoo::striping<CuckooLock, 2, Alloc<CuckooTag>>>>::type>;
  static constexpr bool kHazardPointers = false;
  // nInitialSize is the bucket (probe set) count of each of the two tables: ceil2(capacity / 2)
  // gives one probe set per item at capacity, below the threshold of 3 at which inserts start
  // relocating. Probe set size and threshold: 0 = the defaults (4 and 3).
  static void build(std::optional<Map>& map, std::size_t capacity) {
    map.emplace(std::bit_ceil(std::max<std::size_t>(capacity / 2, 1)), 0u, 0u);
  }
};

// ---------------------------------------------------------------------------------------------
// Process-wide libcds state and thread attachment.

constexpr std::size_t kHazardPointersPerThread =
    std::max({MichaelOps::Map::c_nHazardPtrCount, SplitListOps::Map::c_nHazardPtrCount,
              FeldmanOps::Map::c_nHazardPtrCount});

class LibcdsRuntime {
 public:
  static LibcdsRuntime& get() {
    static LibcdsRuntime instance;
    return instance;
  }
  std::size_t max_threads() const { return max_threads_; }

 private:
  struct Library {
    Library() { cds::Initialize(); }
    ~Library() { cds::Terminate(); }
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
  };

  // nMaxThreadCount sizes each thread's retired-node array (2 * hazard pointers * threads
  // entries; libcds's default is 100 threads): a scan must always free some of it, so the
  // attached threads may not outnumber it (enforced by LibcdsThread). Here: the default, or
  // twice the hardware threads on a larger machine.
  LibcdsRuntime()
      : max_threads_(std::max<std::size_t>(100, 2 * std::thread::hardware_concurrency())),
        hp_(kHazardPointersPerThread, max_threads_) {}

  Library library_;  // first in, last out: cds::Initialize before the GC, cds::Terminate after
  std::size_t max_threads_;
  cds::gc::HP hp_;  // its destructor detaches every thread and frees what is still retired
};

class LibcdsThread {
 public:
  static void enter() {
    if (depth()++ != 0) return;
    if (attached().fetch_add(1, std::memory_order_relaxed) >= LibcdsRuntime::get().max_threads()) {
      attached().fetch_sub(1, std::memory_order_relaxed);
      --depth();
      throw std::runtime_error("libcds: more threads than the " +
                               std::to_string(LibcdsRuntime::get().max_threads()) +
                               " its hazard-pointer GC was set up for");
    }
    cds::threading::Manager::attachThread();
  }
  static void exit() {
    if (--depth() != 0) return;
    // Detaching scans this thread's retired nodes and those left by threads already gone.
    cds::threading::Manager::detachThread();
    attached().fetch_sub(1, std::memory_order_relaxed);
  }

  class Scope {
   public:
    Scope() { enter(); }
    ~Scope() { exit(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  };

 private:
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
  static std::atomic<std::size_t>& attached() {  // relaxed: only a bound is checked
    static std::atomic<std::size_t> n{0};
    return n;
  }
};

struct NoScope {};

// ---------------------------------------------------------------------------------------------
// The adapter shared by the four maps.

template <class Ops>
class LibcdsSet final : public StructureBase<LibcdsSet<Ops>> {
  using Map = typename Ops::Map;
  using Attached = std::conditional_t<Ops::kHazardPointers, LibcdsThread::Scope, NoScope>;

 public:
  explicit LibcdsSet(const StructureConfig& config)
      : capacity_(std::max<std::size_t>(config.capacity, 1)) {
    if constexpr (Ops::kHazardPointers) LibcdsRuntime::get();  // before any thread attaches
    // The harness builds on its main thread, outside any ThreadScope.
    [[maybe_unused]] const Attached scope;
    Ops::build(map_, capacity_);
  }

  ~LibcdsSet() override {
    [[maybe_unused]] const Attached scope;
    map_.reset();  // retires every node to this thread's hazard-pointer record
    // No thread holds a hazard pointer now: free them here rather than in a later map's run.
    if constexpr (Ops::kHazardPointers) cds::gc::HP::force_dispose();
  }

  void thread_enter() override {
    if constexpr (Ops::kHazardPointers) LibcdsThread::enter();
  }
  void thread_exit() override {
    if constexpr (Ops::kHazardPointers) LibcdsThread::exit();
  }

  bool insert(std::uint64_t key) override { return map_->insert(key); }
  // libcds's lookups are not const (they take hazard pointers through the map).
  bool contains(std::uint64_t key) const override { return map_->contains(key); }
  bool erase(std::uint64_t key) override { return map_->erase(key); }

  std::size_t size() const override {
    [[maybe_unused]] const Attached scope;
    return map_->size();  // the map's item counter (libcds's default, atomicity::item_counter)
  }
  std::size_t capacity() const override { return capacity_; }
  std::size_t memory_bytes() const override {
    return sizeof(*this) + kind_meter<typename Ops::Tag>.total();
  }

  static std::unique_ptr<Structure> make(const StructureConfig& config) {
    return std::make_unique<LibcdsSet>(config);
  }

 private:
  std::size_t capacity_;
  mutable std::optional<Map> map_;  // built and destroyed while this thread is attached
};

}  // namespace

void register_libcds_maps(Registry& r) {
  constexpr StructureTraits kTraits{.filter = false, .thread_safe = true, .peer = true};
  r.add({"libcds-cuckoo-map",
         "libcds CuckooMap (lock striping, list probe sets; hashes std::hash + fmix64), as a set",
         kTraits, LibcdsSet<CuckooOps>::make});
  r.add({"libcds-feldman-map",
         "libcds FeldmanHashMap (wait-free multi-level array, key as hash; HP GC), as a set",
         kTraits, LibcdsSet<FeldmanOps>::make});
  r.add({"libcds-michael-map",
         "libcds MichaelHashMap (lock-free list buckets, MichaelKVList; HP GC), as a set", kTraits,
         LibcdsSet<MichaelOps>::make});
  r.add({"libcds-split-list-map",
         "libcds SplitListMap (lock-free split-ordered list, michael_list; HP GC), as a set",
         kTraits, LibcdsSet<SplitListOps>::make});
}

}  // namespace chtbench
