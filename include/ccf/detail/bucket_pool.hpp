// BucketPool<Bucket>: the overflow buckets of one CLHT table (tables/basic_clht.hpp,
// tables/clht_lf.hpp), taken from address space reserved with the table.
//
// A table reserves room for `capacity` buckets (address space only: memory is used as buckets
// are touched) on huge pages where the system allows (detail/page_buffer.hpp), and hands them
// out with one atomic bump: allocate() never throws and never blocks, so an update may take a
// bucket inside its critical section -- or inside a lock-free CAS loop -- where a heap
// allocation could throw with a lock held, or take the allocator's lock. Buckets are never
// returned one by one; they go with their table.
//
// Why not the heap: an overflow bucket from `new` sits on an ordinary 4 KiB page among other
// allocations, so a lookup that walks into it pays a page walk of its own on top of its miss,
// and an aligned allocation costs an insert more than the rest of its work. docs/benchmarks.md
// has what the pool bought CLHT-lb.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "ccf/detail/page_buffer.hpp"

namespace ccf::detail {

template <class Bucket>
class BucketPool {
  static_assert(std::is_trivially_destructible_v<Bucket>, "pool buckets are never destroyed");

 public:
  // Throws std::bad_alloc if the address space cannot be reserved.
  explicit BucketPool(std::uint64_t capacity)
      : capacity_(capacity),
        storage_(capacity * sizeof(Bucket)),
        first_(reinterpret_cast<Bucket*>(storage_.data())) {}

  // A fresh, value-initialised bucket, or nullptr when all `capacity` are taken.
  Bucket* allocate() noexcept {
    // Relaxed: the index only has to be unique; the caller publishes the bucket itself (a
    // release store of the link to it).
    const std::uint64_t index = used_.fetch_add(1, std::memory_order_relaxed);
    return index < capacity_ ? ::new (first_ + index) Bucket : nullptr;
  }
  bool exhausted() const noexcept { return used_.load(std::memory_order_relaxed) >= capacity_; }
  // Whether `bucket` came from this pool (a table may chain heap buckets once it is exhausted).
  bool owns(const Bucket* bucket) const noexcept {
    return bucket >= first_ && bucket < first_ + capacity_;
  }
  // Buckets handed out so far.
  std::uint64_t used() const noexcept {
    return std::min(used_.load(std::memory_order_relaxed), capacity_);
  }
  std::size_t memory_bytes() const noexcept { return used() * sizeof(Bucket); }
  // Hands the buckets' pages back (PageBuffer::discard): they read as zeros from now on. For a
  // table no thread updates any more, whose late readers cope with zeros.
  bool discard() noexcept { return storage_.discard(); }

 private:
  std::uint64_t capacity_;
  PageBuffer storage_;
  Bucket* first_;  // in storage_; bucket i constructed when handed out
  std::atomic<std::uint64_t> used_{0};
};

}  // namespace ccf::detail
