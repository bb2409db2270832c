// Zero-initialised, 64-byte aligned storage for large tables, backed by transparent huge pages
// where the system allows.
//
// Random probes into a table larger than the TLB reach pay a page walk each; 2 MiB pages make
// those walks shorter and rarer (measured here: random two-line probes over 128 MiB about 15%
// faster). Buffers of at least 2 MiB are mmap'ed at a 2 MiB-aligned address and advised with
// MADV_HUGEPAGE, which works when /sys/kernel/mm/transparent_hugepage/enabled is "always" or
// "madvise"; elsewhere the advice is ignored and the buffer simply uses normal pages. Buffers
// under 64 KiB come from the heap instead, rounded only to the cache line: a page each would
// cost a small filter (a scalable Bloom filter's first sub-filters, a server's many small keys)
// up to 64 times its size.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace ccf::detail {

class PageBuffer {
 public:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static constexpr std::size_t kHeapBelow = std::size_t{64} << 10;

  PageBuffer() = default;
  explicit PageBuffer(std::size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    if (bytes < kHeapBelow) {
      mapped_size_ = (bytes + kLine - 1) & ~(kLine - 1);
      data_ = static_cast<std::byte*>(::operator new (mapped_size_, std::align_val_t{kLine}));
      std::memset(data_, 0, mapped_size_);
      return;
    }
    if (bytes < kHugePage) {
      mapped_size_ = (bytes + 4095) & ~std::size_t{4095};
      map(mapped_size_);
      data_ = static_cast<std::byte*>(mapping_);
      return;
    }
    // Over-map by one huge page, then unmap the unaligned head and tail.
    const std::size_t rounded = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    map(rounded + kHugePage);
    const auto raw = reinterpret_cast<std::uintptr_t>(mapping_);
    const std::uintptr_t aligned = (raw + kHugePage - 1) & ~(std::uintptr_t{kHugePage} - 1);
    const std::size_t head = aligned - raw;
    const std::size_t tail = kHugePage - head;
    if (head != 0) ::munmap(mapping_, head);
    if (tail != 0) ::munmap(reinterpret_cast<void*>(aligned + rounded), tail);
    mapping_ = reinterpret_cast<void*>(aligned);
    mapped_size_ = rounded;
    data_ = static_cast<std::byte*>(mapping_);
    huge_ = ::madvise(mapping_, mapped_size_, MADV_HUGEPAGE) == 0;
  }

  PageBuffer(PageBuffer&& other) noexcept { swap(other); }
  PageBuffer& operator=(PageBuffer&& other) noexcept {
    PageBuffer(std::move(other)).swap(*this);
    return *this;
  }
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  ~PageBuffer() {
    if (mapping_ != nullptr) {
      ::munmap(mapping_, mapped_size_);
    } else if (data_ != nullptr) {
      ::operator delete (data_, std::align_val_t{kLine});
    }
  }

  void swap(PageBuffer& other) noexcept {
    std::swap(mapping_, other.mapping_);
    std::swap(mapped_size_, other.mapped_size_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(huge_, other.huge_);
  }

  std::byte* data() noexcept { return data_; }
  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  // Bytes actually reserved: whole pages, or whole cache lines of the heap.
  std::size_t reserved_bytes() const noexcept { return mapped_size_; }
  // True when the kernel accepted the huge-page advice for this buffer.
  bool huge_pages_advised() const noexcept { return huge_; }

  // Hands the pages back to the system and keeps the address range, which reads as zeros from now
  // on (MADV_DONTNEED on a private anonymous mapping): for a table whose late readers may still
  // load from it (tables/basic_clht.hpp, M6). False, changing nothing, for a buffer from the heap.
  bool discard() noexcept {
    return mapping_ != nullptr && ::madvise(mapping_, mapped_size_, MADV_DONTNEED) == 0;
  }

  void clear() noexcept {
    if (data_ != nullptr) std::memset(data_, 0, size_);
  }

 private:
  void map(std::size_t bytes) {
    mapping_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping_ == MAP_FAILED) {
      mapping_ = nullptr;
      throw std::bad_alloc();
    }
  }

  static constexpr std::size_t kLine = 64;

  void* mapping_ = nullptr;  // null for a buffer from the heap
  std::size_t mapped_size_ = 0;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool huge_ = false;
};

// How a table's buckets come to be (zeroed_buckets): written at once, or on first use.
enum class BucketPages { kWritten, kOnFirstUse };

// A table's buckets in `storage`, `count` objects of T (an aggregate of atomics, trivially
// destructible, whose empty state is all zero bytes: a hash table's bucket). kWritten: each is
// constructed now, so every page is written before the table is used (a table made for a
// capacity: its first inserts take no page faults). kOnFirstUse: the buffer's zero bytes are the
// buckets' initial values -- an aggregate is an implicit-lifetime class, so its objects need no
// constructor call -- and each page is first written by whichever operation reaches it: a
// migration's new table is then faulted in by the threads that fill it, not all by the thread
// that allocates it while the others wait for the table to exist.
template <class T>
T* zeroed_buckets(PageBuffer& storage, std::size_t count, BucketPages pages) {
  static_assert(std::is_aggregate_v<T> && std::is_trivially_destructible_v<T>);
  auto* first = reinterpret_cast<T*>(storage.data());
  if (pages == BucketPages::kWritten) {
    for (std::size_t i = 0; i < count; ++i) new (first + i) T;
  }
  return std::launder(first);
}

// Address space reserved up front and committed piece by piece: a filter that grows by levels
// reserves the range of every level it may ever have at construction (PROT_NONE: no memory,
// no commit charge) and commits a level when it grows into it. Committing is idempotent
// (mprotect + huge-page advice), so threads that race to grow all call it and none waits for
// another or allocates a throw-away copy. Fresh pages read as zero; memory is used only as
// pages are touched.
class ReservedRegion {
 public:
  ReservedRegion() = default;
  // Reserves `bytes`, starting on a 2 MiB boundary. Throws std::bad_alloc if the address
  // space cannot be had.
  explicit ReservedRegion(std::size_t bytes) {
    if (bytes == 0) return;
    size_ = bytes + PageBuffer::kHugePage;
    mapping_ =
        ::mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapping_ == MAP_FAILED) {
      mapping_ = nullptr;
      throw std::bad_alloc();
    }
    const auto raw = reinterpret_cast<std::uintptr_t>(mapping_);
    base_ = reinterpret_cast<std::byte*>((raw + PageBuffer::kHugePage - 1) &
                                         ~(std::uintptr_t{PageBuffer::kHugePage} - 1));
  }
  ReservedRegion(ReservedRegion&& other) noexcept { swap(other); }
  ReservedRegion& operator=(ReservedRegion&& other) noexcept {
    ReservedRegion(std::move(other)).swap(*this);
    return *this;
  }
  ReservedRegion(const ReservedRegion&) = delete;
  ReservedRegion& operator=(const ReservedRegion&) = delete;
  ~ReservedRegion() {
    if (mapping_ != nullptr) ::munmap(mapping_, size_);
  }

  void swap(ReservedRegion& other) noexcept {
    std::swap(mapping_, other.mapping_);
    std::swap(size_, other.size_);
    std::swap(base_, other.base_);
  }

  std::byte* base() const noexcept { return base_; }

  // Makes [offset, offset + bytes) readable and writable (offset page aligned). Safe to call
  // from several threads at once and again on a committed range: it changes no contents.
  // False if the system refuses the memory.
  bool commit(std::size_t offset, std::size_t bytes) const noexcept {
    if (::mprotect(base_ + offset, bytes, PROT_READ | PROT_WRITE) != 0) return false;
    if (bytes >= PageBuffer::kHugePage) ::madvise(base_ + offset, bytes, MADV_HUGEPAGE);
    return true;
  }

 private:
  void* mapping_ = nullptr;
  std::size_t size_ = 0;
  std::byte* base_ = nullptr;
};

}  // namespace ccf::detail
