// `urcu-hash-table`: liburcu's lock-free resizable hash table (rculfhash) with the membarrier
// RCU flavour, used as a set.
//
// Lookups run inside an RCU read-side critical section; erase unlinks with cds_lfht_del and
// frees the node through call_rcu once every reader that may still see it has left. Each thread
// that touches the table registers with RCU (thread_enter / thread_exit, reference counted so
// nested scopes on one thread are fine). The table is sized for the configured capacity and may
// grow (CDS_LFHT_AUTO_RESIZE) if overfilled.
#include <urcu/urcu-memb.h>  // the flavour must come before rculfhash.h
//
#include <urcu/rculfhash.h>

#include <algorithm>
#include <bit>
#include <ccf/hash.hpp>
#include <stdexcept>
#include <vector>

#include "adapters/counting_allocator.hpp"
#include "registry.hpp"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace chtbench {
namespace {

// Registers the calling thread with RCU on first entry, unregisters on last exit.
class RcuThread {
 public:
  static void enter() {
    if (depth()++ == 0) urcu_memb_register_thread();
  }
  static void exit() {
    if (--depth() == 0) urcu_memb_unregister_thread();
  }

 private:
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
};

// ThreadSanitizer does not see liburcu's synchronization (the library is not instrumented): a
// node freed after a grace period would look like a race with every access made to it inside a
// read-side section, and TSan's handling of those reports slows the run by orders of magnitude.
// What the grace period guarantees is stated to TSan instead: every read-side section that ended
// before a callback runs happens-before it (one sync address for all sections: an
// over-approximation, for this adapter of a third-party table only).
#if defined(__SANITIZE_THREAD__)
int grace_period_sync;
void read_section_ends() {
  __tsan_release(&grace_period_sync);
}
void grace_period_ends() {
  __tsan_acquire(&grace_period_sync);
}
#else
void read_section_ends() {}
void grace_period_ends() {}
#endif

class ReadLock {
 public:
  ReadLock() { urcu_memb_read_lock(); }
  ~ReadLock() {
    read_section_ends();
    urcu_memb_read_unlock();
  }
  ReadLock(const ReadLock&) = delete;
  ReadLock& operator=(const ReadLock&) = delete;
};

struct Node {
  cds_lfht_node link;
  std::uint64_t key;
  rcu_head rcu;
};

int match(cds_lfht_node* node, const void* key) {
  return caa_container_of(node, Node, link)->key == *static_cast<const std::uint64_t*>(key);
}

void free_node(rcu_head* head) {
  grace_period_ends();
  delete caa_container_of(head, Node, rcu);
}

class UrcuHashTable final : public StructureBase<UrcuHashTable> {
 public:
  explicit UrcuHashTable(const StructureConfig& config)
      : capacity_(config.capacity),
        buckets_(std::bit_ceil(std::max<std::size_t>(config.capacity, 1))),
        seed_(config.seed),
        table_(cds_lfht_new_flavor(buckets_, buckets_, 0,
                                   CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, &urcu_memb_flavor,
                                   nullptr)) {
    if (table_ == nullptr) throw std::bad_alloc();
  }

  ~UrcuHashTable() override {
    RcuThread::enter();
    std::vector<Node*> nodes;
    {
      ReadLock lock;
      cds_lfht_iter iter;
      cds_lfht_node* node;
      cds_lfht_for_each(table_, &iter, node) {
        if (cds_lfht_del(table_, node) == 0) nodes.push_back(caa_container_of(node, Node, link));
      }
    }
    urcu_memb_synchronize_rcu();
    grace_period_ends();
    for (Node* n : nodes) delete n;
    urcu_memb_barrier();  // runs the call_rcu frees still pending from erase()
    cds_lfht_destroy(table_, nullptr);
    RcuThread::exit();
  }

  void thread_enter() override { RcuThread::enter(); }
  void thread_exit() override { RcuThread::exit(); }

  bool insert(std::uint64_t key) override {
    auto* node = new Node{};
    node->key = key;
    cds_lfht_node_init(&node->link);
    cds_lfht_node* existing;
    {
      ReadLock lock;
      existing = cds_lfht_add_unique(table_, hash(key), match, &key, &node->link);
    }
    if (existing != &node->link) {
      delete node;  // never published: no reader can hold it
      return false;
    }
    meter_.add(sizeof(Node));
    return true;
  }

  bool contains(std::uint64_t key) const override {
    ReadLock lock;
    cds_lfht_iter iter;
    cds_lfht_lookup(table_, hash(key), match, &key, &iter);
    return cds_lfht_iter_get_node(&iter) != nullptr;
  }

  bool erase(std::uint64_t key) override {
    ReadLock lock;
    cds_lfht_iter iter;
    cds_lfht_lookup(table_, hash(key), match, &key, &iter);
    cds_lfht_node* node = cds_lfht_iter_get_node(&iter);
    if (node == nullptr || cds_lfht_del(table_, node) != 0) return false;
    // Counted as freed once unlinked; the memory itself goes back after a grace period.
    meter_.add(-static_cast<std::int64_t>(sizeof(Node)));
    urcu_memb_call_rcu(&caa_container_of(node, Node, link)->rcu, free_node);
    return true;
  }

  std::size_t size() const override {
    RcuThread::enter();
    long before = 0, after = 0;
    unsigned long count = 0;
    {
      ReadLock lock;
      cds_lfht_count_nodes(table_, &before, &count, &after);
    }
    RcuThread::exit();
    return count;
  }

  std::size_t capacity() const override { return capacity_; }

  // Nodes are counted exactly; the bucket index (one cds_lfht_node per bucket) is estimated
  // from the initial size, as liburcu does not report it.
  std::size_t memory_bytes() const override {
    return sizeof(*this) + meter_.total() + buckets_ * sizeof(cds_lfht_node);
  }

 private:
  unsigned long hash(std::uint64_t key) const { return ccf::mix64(key, seed_); }

  std::size_t capacity_;
  std::size_t buckets_;
  std::uint64_t seed_;
  cds_lfht* table_;
  MemoryMeter meter_;
};

}  // namespace

void register_urcu_hash_table(Registry& r) {
  r.add({"urcu-hash-table",
         "liburcu lock-free resizable RCU hash table (rculfhash), as a set",
         {.filter = false, .thread_safe = true, .peer = true},
         [](const StructureConfig& c) { return std::make_unique<UrcuHashTable>(c); }});
}

}  // namespace chtbench

#if defined(__SANITIZE_THREAD__)
// liburcu is not built with ThreadSanitizer: its publication (rcu_assign_pointer and friends,
// in the .so) and its call_rcu thread's frees are invisible to TSan, which then reports races
// on every node it hands out. Those reports say nothing about chtbench, so they are suppressed
// for frames inside liburcu; races in the harness itself are still reported.
extern "C" const char* __tsan_default_suppressions() {
  return "race:liburcu-cds.so\n"
         "race:liburcu-memb.so\n"
         "called_from_lib:liburcu-cds.so\n"
         "called_from_lib:liburcu-memb.so\n"
         "called_from_lib:liburcu-common.so\n";
}
#endif
