// Byte accounting for the external peers, which do not report their own memory.
//
// Every container gets a std::allocator wrapper that charges a MemoryMeter. The meter keeps one
// counter per thread slot on its own cache line, so concurrent inserts do not bounce a shared
// counter (which would slow the peers down and make the comparison unfair). Frees may happen
// on another thread (RCU reclamation), so slots are signed and only their sum is meaningful.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace chtbench {

class MemoryMeter {
 public:
  void add(std::int64_t bytes) noexcept {
    // Relaxed: the total is read only after the threads that allocate have been joined.
    slots_[slot()].bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  std::size_t total() const noexcept {
    std::int64_t sum = 0;
    for (const auto& s : slots_) sum += s.bytes.load(std::memory_order_relaxed);
    return sum > 0 ? static_cast<std::size_t>(sum) : 0;
  }

 private:
  static constexpr std::size_t kSlots = 64;
  struct alignas(64) Slot {
    std::atomic<std::int64_t> bytes{0};
  };
  static std::size_t slot() noexcept {
    static std::atomic<std::size_t> next{0};  // relaxed: only uniqueness matters
    thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed) % kSlots;
    return mine;
  }
  std::array<Slot, kSlots> slots_{};
};

template <class T>
class CountingAllocator {
 public:
  using value_type = T;

  explicit CountingAllocator(MemoryMeter* meter) noexcept : meter_(meter) {}
  template <class U>
  CountingAllocator(const CountingAllocator<U>& other) noexcept : meter_(other.meter()) {}

  T* allocate(std::size_t n) {
    meter_->add(static_cast<std::int64_t>(n * sizeof(T)));
    return std::allocator<T>{}.allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    meter_->add(-static_cast<std::int64_t>(n * sizeof(T)));
    std::allocator<T>{}.deallocate(p, n);
  }

  MemoryMeter* meter() const noexcept { return meter_; }
  template <class U>
  bool operator==(const CountingAllocator<U>& other) const noexcept {
    return meter_ == other.meter();
  }

 private:
  MemoryMeter* meter_;
};

}  // namespace chtbench
