// Breadth-first search for a cuckoo path: the shortest chain of displacements that frees a
// slot in one of an item's two full candidate buckets.
//
//   level 0:  i1            i2                 (both full)
//   level 1:  alt(i1, fp_s) for each slot s of i1, the same for i2     (2b buckets)
//   level 2:  the alternates of every fingerprint of level 1           (2b^2 buckets) ...
//
// The search stops at the first bucket with an empty slot. A path is then executed back to
// front: the last fingerprint moves into the empty slot, the one before it into the slot just
// vacated, ..., and finally the root slot is free for the new item.
//
// Why breadth-first rather than the reference design's random walk: a random walk is a chain of
// DEPENDENT cache misses (each kick must read the bucket it lands in before choosing the next).
// Here the children of up to 8 buckets of a level are prefetched before any of them is read, so
// such a round costs about one memory latency however many children it has, and the path
// found is the shortest (fewest moves). Near 95% load most inserts finish within one or two
// levels; a deeper level is read in rounds, because one of its first few dozen buckets usually
// has room, and prefetching all of it (512 buckets at depth 4, b = 4) cost more than the
// latencies the rounds add (batched tail inserts 1.09x (striped) and 1.13x (lock-free) faster
// with rounds, docs/benchmarks.md).
//
// A path never visits a bucket twice (children already on their own ancestor chain are not
// expanded), so executing a path moves each fingerprint exactly once and every move takes a
// fingerprint to its own alternate bucket.
//
// The search reads the table only through read(bucket, slot) (or fingerprints(bucket)),
// has_empty(bucket) and prefetch(bucket), so the concurrent filters reuse it for their lock-free
// discovery phase.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

namespace ccf::detail {

// Deepest level searched by default: about 1000 buckets in all for every bucket size.
template <unsigned Slots>
constexpr unsigned kDefaultPathDepth = Slots == 2   ? 8
                                       : Slots == 4 ? 4
                                                    : 3;
// The concurrent filters search one level deeper: they have no random-walk fallback and no
// victim slot, and so reach the sequential filter's load only with the deeper search.
template <unsigned Slots>
constexpr unsigned kConcurrentPathDepth = kDefaultPathDepth<Slots> + 1;

// Depth of the searches a batch of inserts runs together (detail/key_api.hpp): near 95% load
// nearly every search ends within two levels; the rest take the filter's own, deeper search.
constexpr unsigned kGroupSearchDepth = 2;

template <unsigned Slots, unsigned MaxDepth>
struct CuckooPathLimits {
  static constexpr unsigned kMaxDepth = MaxDepth;
  static constexpr std::size_t nodes() {
    std::size_t level = 2, total = 0;
    for (unsigned depth = 0; depth <= kMaxDepth; ++depth, level *= Slots) total += level;
    return total;
  }
  static constexpr std::size_t kMaxNodes = nodes();
};

struct CuckooPathStep {
  std::uint64_t bucket;
  // The slot whose fingerprint moves to the next step's bucket, and that fingerprint as the
  // search saw it (concurrent filters re-validate it). Unused on the last step.
  unsigned slot;
  std::uint32_t fp;
};

template <unsigned Slots, unsigned MaxDepth = kDefaultPathDepth<Slots>>
struct CuckooPath {
  static constexpr unsigned kMaxDepth = MaxDepth;
  static constexpr unsigned kSlotBits = std::bit_width(Slots - 1);  // 2 for b = 4
  static_assert(1 + kSlotBits * MaxDepth <= 32, "the compressed path must fit 32 bits");

  // steps[0].bucket is i1 or i2; steps[length - 1].bucket has an empty slot.
  std::array<CuckooPathStep, MaxDepth + 1> steps;
  unsigned length = 0;
  // The same path compressed into one integer (the lock-free filter's representation, Algorithm 3
  // of the lock-free cuckoo filter paper): bit 0 says which candidate it starts at (0: i1, 1: i2),
  // then kSlotBits per step give the slot whose fingerprint moves: slot of step k at bits
  // [1 + k*w, 1 + (k+1)*w).
  std::uint32_t code = 0;

  static constexpr unsigned slot_in(std::uint32_t code, unsigned step) noexcept {
    return (code >> (1 + step * kSlotBits)) & ((1u << kSlotBits) - 1);
  }
};

// The fingerprints of `bucket`, slot by slot: through the table's fingerprints(bucket) where it
// has one (the lock-free filter's view: one read of the bucket's words instead of one per slot),
// else read(bucket, slot) for each slot.
template <class Table>
std::array<std::uint32_t, Table::kSlots> bucket_fingerprints(const Table& table,
                                                             std::uint64_t bucket) {
  if constexpr (requires { table.fingerprints(bucket); }) {
    return table.fingerprints(bucket);
  } else {
    std::array<std::uint32_t, Table::kSlots> fps;
    for (unsigned slot = 0; slot < Table::kSlots; ++slot) fps[slot] = table.read(bucket, slot);
    return fps;
  }
}

// One breadth-first search, expanded in steps: expand() reads buckets of the level being
// expanded and prefetches their children, scan() looks for room among the children not yet
// scanned. find_cuckoo_path alternates the two, a few parents at a time, so a deep level's
// children are prefetched in small rounds and a search that finds room early stops early;
// find_cuckoo_paths_together runs several searches in lockstep rounds, each expanding a share
// of the round's parents, so that the children of all of them are in flight at once (one memory
// latency per round for the whole group instead of one per round per search). Either way the
// path found is the first child with room in breadth-first order: the shortest. Nodes live in the
// object (MaxDepth 5, b = 4: 2,730 nodes, 87 KiB): a search that may go deep belongs on one
// thread's stack once, a group of shallow ones (MaxDepth 2: 42 nodes) is small.
template <class Table, class Addressing, unsigned MaxDepth>
class CuckooPathSearch {
 public:
  static constexpr unsigned kMaxDepth = MaxDepth;

  CuckooPathSearch() = default;
  CuckooPathSearch(const Table& table, const Addressing& addressing, std::uint64_t i1,
                   std::uint64_t i2) {
    start(table, addressing, i1, i2);
  }

  void start(const Table& table, const Addressing& addressing, std::uint64_t i1, std::uint64_t i2) {
    if constexpr (kHeldByValue) {
      table_ = table;
    } else {
      table_ = &table;
    }
    addressing_ = &addressing;
    count_ = 0;
    nodes_[count_++] = {i1, -1, 0, 0, 0, 0};
    if (i2 != i1) nodes_[count_++] = {i2, -1, 0, 0, 0, 1};
    next_ = level_end_ = 0;
    scanned_ = count_;  // the roots are full: the caller found no room in them
    depth_ = 0;
  }

  // Expands up to `parents` more nodes of the level being expanded, prefetching their
  // children; a level's last node done, the next call starts on the level below. False when
  // nothing is left to expand within kMaxDepth (nothing was read).
  bool expand(std::size_t parents = std::numeric_limits<std::size_t>::max()) {
    if (next_ == level_end_) {  // the level is done: go down one
      if (depth_ == kMaxDepth || level_end_ == count_) return false;
      ++depth_;
      level_end_ = count_;
    }
    const std::size_t end = next_ + std::min(parents, level_end_ - next_);
    for (; next_ < end; ++next_) {
      const std::size_t n = next_;
      const auto fps = bucket_fingerprints(table(), nodes_[n].bucket);
      for (unsigned slot = 0; slot < Table::kSlots; ++slot) {
        const std::uint32_t fp = fps[slot];
        if (fp == 0) continue;  // only in a table that changed under a concurrent search
        const std::uint64_t child = addressing_->alternate(nodes_[n].bucket, fp);
        if (on_chain(static_cast<std::int32_t>(n), child)) continue;
        table().prefetch(child);
        const std::uint32_t code = nodes_[n].code | slot << (1 + (depth_ - 1) * kSlotBits);
        nodes_[count_++] = {child,
                            static_cast<std::int32_t>(n),
                            fp,
                            static_cast<std::uint8_t>(slot),
                            static_cast<std::uint8_t>(depth_),
                            code};
      }
    }
    return true;
  }

  // Looks for room among the children not scanned yet, in the order they were made; fills
  // `path` (of any depth at least this search's) and returns true at the first.
  template <unsigned PathDepth>
  bool scan(CuckooPath<Table::kSlots, PathDepth>& path) {
    static_assert(PathDepth >= MaxDepth, "the path must hold the search's deepest path");
    for (; scanned_ < count_; ++scanned_) {
      const std::size_t n = scanned_;
      if (!table().has_empty(nodes_[n].bucket)) continue;
      path.length = nodes_[n].depth + 1u;
      path.code = nodes_[n].code;
      for (std::int32_t at = static_cast<std::int32_t>(n); at >= 0; at = nodes_[at].parent) {
        const unsigned step = nodes_[at].depth;
        path.steps[step].bucket = nodes_[at].bucket;
        if (step > 0) {
          path.steps[step - 1].slot = nodes_[at].slot;
          path.steps[step - 1].fp = nodes_[at].fp;
        }
      }
      return true;
    }
    return false;
  }

 private:
  using Limits = CuckooPathLimits<Table::kSlots, MaxDepth>;
  static constexpr unsigned kSlotBits = CuckooPath<Table::kSlots, MaxDepth>::kSlotBits;
  struct Node {
    std::uint64_t bucket;
    std::int32_t parent;  // index into nodes_, -1 for a root
    std::uint32_t fp;     // the parent's fingerprint that leads here
    std::uint8_t slot;    // the parent's slot holding it
    std::uint8_t depth;
    std::uint32_t code;  // the path from the root, compressed (CuckooPath::code)
  };

  // A view of a table (a handle that declares `static constexpr bool kIsView = true`, as the
  // lock-free filter's view of one level) is kept by value, so a caller may pass a temporary;
  // a table itself by address.
  static constexpr bool kHeldByValue = [] {
    if constexpr (requires { Table::kIsView; }) {
      return Table::kIsView;
    } else {
      return false;
    }
  }();
  const Table& table() const noexcept {
    if constexpr (kHeldByValue) {
      return table_;
    } else {
      return *table_;
    }
  }

  bool on_chain(std::int32_t index, std::uint64_t bucket) const {
    for (; index >= 0; index = nodes_[index].parent) {
      if (nodes_[index].bucket == bucket) return true;
    }
    return false;
  }

  std::conditional_t<kHeldByValue, Table, const Table*> table_{};
  const Addressing* addressing_ = nullptr;
  std::size_t count_ = 0;
  std::size_t next_ = 0;       // the next node to expand
  std::size_t level_end_ = 0;  // the end of its level
  std::size_t scanned_ = 0;    // nodes before it were scanned (or are roots)
  unsigned depth_ = 0;         // of the children expand() makes now
  std::array<Node, Limits::kMaxNodes> nodes_;
};

// Parents expanded per round, by a single search or shared by a group's: their children (up
// to 8b) are one round of misses in flight, about what a core's miss buffers hold. Near full a
// level usually has room among its first few dozen buckets, so a whole level at once (32
// buckets at depth 2, b = 4) mostly fetches buckets that are never needed.
inline constexpr std::size_t kParentsPerRound = 8;

// Returns true and fills `path` if some bucket within MaxDepth displacements of i1 or i2 has
// an empty slot.
template <class Table, class Addressing, unsigned MaxDepth>
bool find_cuckoo_path(const Table& table, const Addressing& addressing, std::uint64_t i1,
                      std::uint64_t i2, CuckooPath<Table::kSlots, MaxDepth>& path) {
  CuckooPathSearch<Table, Addressing, MaxDepth> search(table, addressing, i1, i2);
  while (search.expand(kParentsPerRound)) {
    if (search.scan(path)) return true;
  }
  return false;
}

// Runs searches[i] (each start()ed; at most 64) in lockstep rounds: every search still going
// expands its share of kParentsPerRound parents (at least one), so that the children of all
// are in flight together, then each scans them. found[i] says whether paths[i] holds
// searches[i]'s shortest path. A search's share grows as the others finish: a round keeps
// about as many misses in flight whether 8 searches are going or 1.
template <class Search, class Path>
void find_cuckoo_paths_together(std::span<Search> searches, std::span<Path> paths,
                                std::span<bool> found) {
  assert(searches.size() <= 64);
  std::fill(found.begin(), found.begin() + searches.size(), false);
  std::uint64_t going =
      searches.size() == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << searches.size()) - 1;
  const auto for_each_going = [&](auto&& step) {
    for (std::uint64_t left = going; left != 0; left &= left - 1) {
      const auto i = static_cast<std::size_t>(std::countr_zero(left));
      if (step(i)) going &= ~(std::uint64_t{1} << i);  // done: found, or nothing left
    }
  };
  while (going != 0) {
    const std::size_t share =
        std::max<std::size_t>(1, kParentsPerRound / static_cast<std::size_t>(std::popcount(going)));
    for_each_going([&](std::size_t i) { return !searches[i].expand(share); });
    for_each_going([&](std::size_t i) { return found[i] = searches[i].scan(paths[i]); });
  }
}

// True if `path` can still be carried out: every step's slot still holds the fingerprint the
// search saw, and the last bucket still has room (concurrent filters check this before moving,
// inside the section that moves).
template <class Table, unsigned MaxDepth>
bool path_intact(const Table& table, const CuckooPath<Table::kSlots, MaxDepth>& path) {
  for (unsigned step = 0; step + 1 < path.length; ++step) {
    const CuckooPathStep& from = path.steps[step];
    if (table.read(from.bucket, from.slot) != from.fp) return false;
  }
  return table.has_empty(path.steps[path.length - 1].bucket);
}

// Carries out an intact `path` in one go, back to front, and stores `fp` in the root bucket's
// freed slot. Precondition: nothing else writes the path's buckets meanwhile.
template <class Table, unsigned MaxDepth>
void move_along(Table& table, const CuckooPath<Table::kSlots, MaxDepth>& path, std::uint32_t fp) {
  for (unsigned step = path.length - 1; step > 0; --step) {
    const CuckooPathStep& from = path.steps[step - 1];
    table.try_insert(path.steps[step].bucket, table.exchange(from.bucket, from.slot, 0));
  }
  table.try_insert(path.steps[0].bucket, fp);
}

}  // namespace ccf::detail
