// LogIndex: the log store's in-memory cuckoo index (after the flash-log index of Sun et al.,
// "SmartCuckoo", USENIX ATC 2017, section 4). It maps a key's 64-bit hash to the offsets of
// log entries whose tag matches; the log store reads an entry to confirm the key itself.
//
// Layout: m buckets of kSlots slots, one 64-bit word a slot:
//
//   bits 0-1  state: available (never used) / occupied / deleted
//   bits 2-17 tag: 16 bits of the key's hash
//   bits 18-  offset of the entry in the log (46 bits: logs up to 64 TiB)
//
// Addressing is partial-key cuckoo hashing (detail/addressing.hpp): a key's buckets are
// i1 = index(h) and i2 = alternate(i1, tag), so a slot can be kicked to its other bucket from
// its tag alone, without reading the log.
//
// Invariants: every live entry of the log has exactly one occupied slot, in one of its key's
// two buckets, holding its tag and offset; a deleted entry's slot is marked deleted (the state
// is reusable: insert treats it as free). A lookup checks the tags of both buckets, so at most
// 2 * kSlots log reads verify a key, and a key that is absent costs a log read only on a tag
// collision (probability about 2 * kSlots * load / 2^16).
//
// Insertion kicks (a random walk, as in the cuckoo filter) at most kMaxKicks times. Past the
// bound the entry in hand is handed back homeless and the caller rebuilds a larger index from
// the log (a slot's tag cannot place it in a bigger table: the new bucket needs more of the
// hash, hence the key). Not thread-safe: the log store serializes writers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "ccf/detail/addressing.hpp"

namespace ccf::store {

class LogIndex {
 public:
  static constexpr unsigned kSlots = 4;
  static constexpr unsigned kTagBits = 16;
  static constexpr unsigned kMaxKicks = 512;
  static constexpr std::uint64_t kMaxOffset = (std::uint64_t{1} << 46) - 1;

  enum class SlotState : std::uint8_t { kAvailable = 0, kOccupied = 1, kDeleted = 2 };

  // An entry the index could not place within kMaxKicks kicks.
  struct Homeless {
    std::uint64_t offset;
  };

  // Throws std::invalid_argument for 0 buckets.
  explicit LogIndex(std::uint64_t buckets)
      : addressing_(checked(buckets)), slots_(buckets * kSlots) {}

  std::uint64_t buckets() const noexcept { return addressing_.buckets(); }
  std::uint64_t occupied() const noexcept { return occupied_; }
  std::uint64_t kicks() const noexcept { return kicks_; }
  std::uint64_t memory_bytes() const noexcept { return slots_.size() * sizeof(std::uint64_t); }
  double load() const noexcept {
    return static_cast<double>(occupied_) / static_cast<double>(slots_.size());
  }

  // The slot of the first occupied entry with the key's tag for which is_key(offset) holds.
  template <class IsKey>
  std::optional<std::size_t> find(std::uint64_t hash, IsKey&& is_key) const {
    const detail::Location at = detail::locate(addressing_, hash);
    for (const std::uint64_t bucket : {at.primary, at.alternate}) {
      for (std::size_t s = bucket * kSlots; s < (bucket + 1) * kSlots; ++s) {
        if (state(slots_[s]) == SlotState::kOccupied && tag(slots_[s]) == at.fp &&
            is_key(offset(slots_[s]))) {
          return s;
        }
      }
      if (at.alternate == at.primary) break;
    }
    return std::nullopt;
  }

  std::uint64_t offset_at(std::size_t slot) const noexcept { return offset(slots_[slot]); }

  void mark_deleted(std::size_t slot) noexcept {
    slots_[slot] =
        (slots_[slot] & ~std::uint64_t{3}) | static_cast<std::uint64_t>(SlotState::kDeleted);
    --occupied_;
  }

  // Stores the entry at `entry_offset` under `hash`. Returns nullopt when stored, or the entry
  // left without a slot (maybe another one, kicked out) after kMaxKicks kicks: the index then
  // holds every other entry, and the caller must place the homeless one in a rebuilt index.
  std::optional<Homeless> insert(std::uint64_t hash, std::uint64_t entry_offset) {
    if (entry_offset > kMaxOffset) throw std::length_error("log store: log offset beyond 64 TiB");
    const detail::Location at = detail::locate(addressing_, hash);
    std::uint64_t word = pack(at.fp, entry_offset);
    if (place(at.primary, word) || place(at.alternate, word)) return std::nullopt;
    std::uint64_t bucket = (next_random() & 1) ? at.primary : at.alternate;
    for (unsigned kick = 0; kick < kMaxKicks; ++kick) {
      const std::size_t victim = bucket * kSlots + next_random() % kSlots;
      std::swap(word, slots_[victim]);
      ++kicks_;
      bucket = addressing_.alternate(bucket, tag(word));
      if (place(bucket, word)) return std::nullopt;
    }
    return Homeless{offset(word)};
  }

  // Calls f(offset) for every occupied slot.
  template <class F>
  void for_each_offset(F&& f) const {
    for (const std::uint64_t word : slots_) {
      if (state(word) == SlotState::kOccupied) f(offset(word));
    }
  }

 private:
  static std::uint64_t checked(std::uint64_t buckets) {
    if (buckets == 0) throw std::invalid_argument("log index: bucket count must be positive");
    if (buckets > (std::uint64_t{1} << 40)) {
      throw std::invalid_argument("log index: more than 2^40 buckets");
    }
    return buckets;
  }
  static SlotState state(std::uint64_t word) noexcept { return static_cast<SlotState>(word & 3); }
  static std::uint32_t tag(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>((word >> 2) & 0xffff);
  }
  static std::uint64_t offset(std::uint64_t word) noexcept { return word >> 18; }
  static std::uint64_t pack(std::uint32_t fp, std::uint64_t entry_offset) noexcept {
    return (entry_offset << 18) | (std::uint64_t{fp} << 2) |
           static_cast<std::uint64_t>(SlotState::kOccupied);
  }

  // Stores word in a free (available or deleted) slot of bucket, if there is one.
  bool place(std::uint64_t bucket, std::uint64_t word) noexcept {
    for (std::size_t s = bucket * kSlots; s < (bucket + 1) * kSlots; ++s) {
      if (state(slots_[s]) != SlotState::kOccupied) {
        slots_[s] = word;
        ++occupied_;
        return true;
      }
    }
    return false;
  }

  std::uint64_t next_random() noexcept {  // xorshift64*
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return rng_ * 0x2545f4914f6cdd1dULL;
  }

  detail::Addressing<kTagBits> addressing_;
  std::vector<std::uint64_t> slots_;
  std::uint64_t occupied_ = 0;
  std::uint64_t kicks_ = 0;
  std::uint64_t rng_ = 0x853c49e6748fea9bULL;
};

}  // namespace ccf::store
