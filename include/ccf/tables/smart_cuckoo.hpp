// SmartCuckooTable: cuckoo hashing that knows before it kicks whether an insertion can succeed,
// after Sun, Hua, Feng, Yang, Zuo, Cao and Xie, "SmartCuckoo: A Fast and Cost-Efficient
// Hashing Index Scheme for Cloud Storage Systems" (USENIX ATC 2017). Sequential (one thread
// at a time). Benchmark: `chtbench smart`; docs/smart_cuckoo.md.
//
// Layout: d = 2 tables of m one-slot buckets, bucket ids 0 .. m-1 (table 1) and m .. 2m-1
// (table 2). A key k has h1(k) in table 1 and h2(k) in table 2, both from one 64-bit hash of
// the user's Hash (mixed with mix64). An optional stash of s slots holds keys the tables
// refused (the "cuckoo hashing with a stash" baseline, CHS); lookups check it too.
//
// The cuckoo graph: vertex = bucket, edge = stored key, directed from the bucket holding it to
// its other candidate. A one-slot bucket holds at most one key, so every vertex has out-degree
// at most 1 and every connected component (subgraph) has edges <= vertices: it is a tree
// (edges = vertices - 1, exactly one empty bucket, which every directed walk reaches) or has
// exactly one cycle (edges = vertices: every bucket full). The latter is MAXIMAL: no key whose
// two candidates both lie in it can ever be placed, however long one kicks.
//
// Accounting (Insertion::kSmart): union-find over the 2m buckets (union by size, path
// halving), each root keeping its component's vertex and edge counts, and each component's
// members on a circular list (union splices the two lists in O(1)). Every bucket starts as a
// component of one vertex and no edge.
//   insert k, candidates a, b (the paper's cases: v+2 when neither bucket has been touched --
//   both are edgeless singletons --, v+1 when one has, v+0 when both have):
//     a or b empty          store there.
//     same component        maximal: refuse WITHOUT a kick; else kick from a.
//     different components  both maximal: refuse WITHOUT a kick; else kick from the bucket
//                           whose component is a tree.
//   then union(a, b) and count one more edge. A kick sequence started in a tree follows the
//   out-edges to the tree's empty bucket: it always succeeds, in fewer kicks than the tree has
//   vertices, and it only reverses the direction of the edges it walks, so the undirected graph
//   (and every count) is the same as before plus the new edge.
//   erase k: its edge goes, and its component may split in two. The members of the component
//   are reset to singletons and the remaining edges among them (the keys stored in them) are
//   united again: afterwards the union-find is exactly what it would be had k never been
//   inserted. The cost is the size of that one component (small below the load limit; the
//   table counts it).
// Invariant, after every operation: the union-find partition equals the connected components of
// the graph of the stored keys (stash excluded), and every root's counts are its component's
// vertex and edge numbers (tests/smart_cuckoo_test.cpp recounts by brute force after every
// operation). Consequently "refused without a kick" is exact: a refused key had no placement
// reachable by kicking, and an accepted one needs no retry.
//
// Baselines, the same table with another insertion (no accounting is kept for them):
//   Insertion::kMaxLoop  the textbook random walk: put the key in a, move the evicted key to its
//                        other bucket, and so on, at most max_loop kicks; then the homeless key
//                        goes to the stash, or every kick is undone and insert returns kFull.
//   Insertion::kBfs      search first: walk the chains out of a and out of b side by side
//                        (with one slot per bucket each is a single chain) for at most max_loop
//                        steps each, reading only; then move along the shorter chain that ends
//                        in an empty bucket, if any.
// After an erase from the tables, stash entries are offered to the tables again.
// Options::grow: an insert that the tables and the stash refuse doubles m and rehashes every key
// (doubling again if the rehash itself meets a refusal), then stores; without it the insert
// returns kFull and changes nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ccf/detail/map_api.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf {

namespace smart_cuckoo {

enum class Insertion : std::uint8_t {
  kSmart,    // pre-determination by the pseudoforest accounting (the paper's)
  kMaxLoop,  // kick up to max_loop times (the textbook baseline)
  kBfs,      // search both chains before moving (breadth-first over one-slot buckets)
};

struct Options {
  Insertion insertion = Insertion::kSmart;
  unsigned max_loop = 500;  // kMaxLoop: kicks per insert; kBfs: steps per chain
  std::size_t stash = 0;    // stash slots (0: none)
  std::uint64_t seed = kDefaultSeed;
  bool grow = false;  // an insert refused (stash full) doubles m and rehashes, then stores
};

struct Stats {
  std::uint64_t inserted = 0;            // inserts that stored their key (tables or stash)
  std::uint64_t kicks = 0;               // keys moved to make room, undone ones included
  std::uint64_t refused_unkicked = 0;    // kSmart: inserts refused without a single kick
  std::uint64_t failed_after_kicks = 0;  // kMaxLoop / kBfs: inserts that found no room
  std::uint64_t futile_kicks = 0;        // kicks made (and undone) by inserts that found no room
  std::uint64_t stashed = 0;             // keys put into the stash
  std::uint64_t case_v2 = 0, case_v1 = 0, case_v0 = 0;  // kSmart: the paper's insertion cases
  std::uint64_t recomputed_buckets = 0;                 // kSmart: buckets re-united after erases
  std::uint64_t resizes = 0;                            // Options::grow: doublings of m
};

}  // namespace smart_cuckoo

template <class Key = std::uint64_t, class Value = std::uint64_t, class Hash = std::hash<Key>,
          class KeyEqual = std::equal_to<Key>>
class SmartCuckooTable
    : public detail::MapApi<SmartCuckooTable<Key, Value, Hash, KeyEqual>, Key, Value> {
 public:
  using Options = smart_cuckoo::Options;
  using Insertion = smart_cuckoo::Insertion;
  using Stats = smart_cuckoo::Stats;
  static constexpr std::uint64_t kMaxBucketsPerTable = std::uint64_t{1} << 31;

  // A component of the cuckoo graph, as the accounting sees it (kSmart only).
  struct Component {
    std::uint64_t root, vertices, edges;
    bool maximal() const noexcept { return edges == vertices; }
  };

  // m = buckets_per_table: the tables hold at most 2m keys, and about m (load 0.5) before
  // inserts start to fail. std::invalid_argument for m = 0, std::length_error above 2^31.
  explicit SmartCuckooTable(std::uint64_t buckets_per_table, Options options = {},
                            Hash hash = Hash(), KeyEqual equal = KeyEqual())
      : m_(checked(buckets_per_table)),
        options_(options),
        hash_(std::move(hash)),
        equal_(std::move(equal)),
        slots_(2 * m_) {
    if (options_.insertion == Insertion::kSmart) {
      nodes_.resize(2 * m_);
      for (std::uint32_t b = 0; b < 2 * m_; ++b) nodes_[b] = {b, b, 1, 0};
    }
    if (options_.insertion != Insertion::kSmart && options_.max_loop == 0) {
      throw std::invalid_argument("SmartCuckooTable: max_loop must be at least 1");
    }
    stash_.reserve(options_.stash);
  }

  // ---- the table's vocabulary (as the other ccf tables) ----------------------------------

  std::optional<Value> find(const Key& key) const {
    const auto [a, b] = candidates(key);
    if (holds(a, key)) return slots_[a].value;
    if (holds(b, key)) return slots_[b].value;
    for (const auto& [k, v] : stash_) {
      if (equal_(k, key)) return v;
    }
    return std::nullopt;
  }
  // contains, insert (kOk, kExists: nothing changed, kFull: no room, nothing changed) and
  // insert_or_assign (kExists: the value replaced): detail::MapApi over find and put.

  Status erase(const Key& key) {
    const auto [a, b] = candidates(key);
    for (const std::uint64_t bucket : {a, b}) {
      if (!holds(bucket, key)) continue;
      slots_[bucket].used = false;
      --size_;
      if (options_.insertion == Insertion::kSmart) recompute(bucket);
      offer_stash();
      return Status::kOk;
    }
    for (auto it = stash_.begin(); it != stash_.end(); ++it) {
      if (!equal_(it->first, key)) continue;
      stash_.erase(it);
      --size_;
      return Status::kOk;
    }
    return Status::kNotFound;
  }

  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return 2 * m_ + options_.stash; }
  double load_factor() const noexcept {
    return static_cast<double>(size_) / static_cast<double>(capacity());
  }
  std::size_t stash_size() const noexcept { return stash_.size(); }
  std::size_t memory_bytes() const noexcept {
    return sizeof(*this) + slots_.capacity() * sizeof(Slot) + nodes_.capacity() * sizeof(Node) +
           stash_.capacity() * sizeof(stash_[0]);
  }
  const Stats& stats() const noexcept { return stats_; }
  const Options& options() const noexcept { return options_; }

  // ---- the cuckoo graph, for tests and tools -----------------------------------------------

  std::uint64_t buckets() const noexcept { return 2 * m_; }
  // The key's two candidate buckets: table 1's, then table 2's.
  std::pair<std::uint64_t, std::uint64_t> candidates(const Key& key) const {
    const std::uint64_t h = mix64(static_cast<std::uint64_t>(hash_(key)), options_.seed);
    return {reduce_range(h, m_), m_ + reduce_range(mix64(h, kSecondHashSeed), m_)};
  }
  // The key stored in `bucket`, if any.
  std::optional<Key> key_in(std::uint64_t bucket) const {
    return slots_[bucket].used ? std::optional<Key>(slots_[bucket].key) : std::nullopt;
  }
  // kSmart only (std::logic_error otherwise): the component holding `bucket`.
  Component component(std::uint64_t bucket) const {
    if (options_.insertion != Insertion::kSmart) {
      throw std::logic_error("SmartCuckooTable: only Insertion::kSmart keeps components");
    }
    std::uint64_t root = bucket;
    while (nodes_[root].parent != root) root = nodes_[root].parent;
    return {root, nodes_[root].vertices, nodes_[root].edges};
  }

 private:
  friend class detail::MapApi<SmartCuckooTable, Key, Value>;
  static constexpr std::uint64_t kSecondHashSeed = 0x5bd1e9955bd1e995ULL;

  Status put(const Key& key, const Value& value, bool assign) {
    if (Value* present = value_of(key)) {
      if (assign) *present = value;
      return Status::kExists;
    }
    return place(key, value);
  }

  static std::uint64_t checked(std::uint64_t m) {
    if (m == 0) throw std::invalid_argument("SmartCuckooTable: buckets_per_table must be >= 1");
    if (m > kMaxBucketsPerTable) {
      throw std::length_error("SmartCuckooTable: buckets_per_table " + std::to_string(m) +
                              " exceeds the table limit 2^31");
    }
    return m;
  }

  bool holds(std::uint64_t bucket, const Key& key) const {
    return slots_[bucket].used && equal_(slots_[bucket].key, key);
  }
  Value* value_of(const Key& key) {
    const auto [a, b] = candidates(key);
    if (holds(a, key)) return &slots_[a].value;
    if (holds(b, key)) return &slots_[b].value;
    for (auto& [k, v] : stash_) {
      if (equal_(k, key)) return &v;
    }
    return nullptr;
  }
  std::uint64_t other(const Key& key, std::uint64_t bucket) const {
    const auto [a, b] = candidates(key);
    return bucket == a ? b : a;
  }
  void store(std::uint64_t bucket, const Key& key, const Value& value) {
    slots_[bucket] = {key, value, true};
  }

  // Stores an absent key in the tables, else in the stash, else (Options::grow) in tables
  // twice as large; kFull when none of these.
  Status place(const Key& key, const Value& value) {
    while (!into_tables(key, value, /*may_stash=*/true)) {
      if (stash_.size() < options_.stash) {
        stash_.emplace_back(key, value);
        ++stats_.stashed;
        break;
      }
      if (!options_.grow || !grow()) return Status::kFull;
    }
    ++size_;
    ++stats_.inserted;
    return Status::kOk;
  }

  // Doubles m and re-inserts every key, the stash's too; doubles again if the rebuild itself
  // meets a refusal. False, and nothing changed, at the table limit. The statistics carry on
  // (a rehash's moves are not kicks).
  bool grow() {
    Options rebuild = options_;
    rebuild.grow = false;
    for (std::uint64_t m = 2 * m_; m <= kMaxBucketsPerTable; m *= 2) {
      SmartCuckooTable bigger(m, rebuild, hash_, equal_);
      bool all = true;
      for (std::uint64_t b = 0; all && b < 2 * m_; ++b) {
        all = !slots_[b].used || bigger.insert(slots_[b].key, slots_[b].value) == Status::kOk;
      }
      for (std::size_t i = 0; all && i < stash_.size(); ++i) {
        all = bigger.insert(stash_[i].first, stash_[i].second) == Status::kOk;
      }
      if (!all) continue;
      Stats stats = stats_;
      ++stats.resizes;
      *this = std::move(bigger);
      options_.grow = true;
      stats_ = stats;
      return true;
    }
    return false;
  }

  // The insertion policy. False: the key found no room and the tables are as before.
  // (kMaxLoop with stash room left stashes the key its walk left homeless, and returns true.)
  bool into_tables(const Key& key, const Value& value, bool may_stash) {
    switch (options_.insertion) {
      case Insertion::kSmart:
        return place_smart(key, value);
      case Insertion::kMaxLoop:
        return place_max_loop(key, value, may_stash);
      case Insertion::kBfs:
        return place_bfs(key, value);
    }
    return false;
  }

  // ---- kSmart ---------------------------------------------------------------------------

  bool place_smart(const Key& key, const Value& value) {
    const auto [a, b] = candidates(key);
    const std::uint32_t ra = find_root(a), rb = find_root(b);
    const auto touched = [&](std::uint32_t root) {
      return nodes_[root].vertices > 1 || nodes_[root].edges > 0;
    };
    const unsigned seen = touched(ra) + touched(rb);
    (seen == 0 ? stats_.case_v2 : seen == 1 ? stats_.case_v1 : stats_.case_v0) += 1;

    const bool a_tree = nodes_[ra].edges < nodes_[ra].vertices;
    const bool b_tree = nodes_[rb].edges < nodes_[rb].vertices;
    if (!a_tree && !b_tree) {  // also when ra == rb: one maximal component
      ++stats_.refused_unkicked;
      return false;
    }
    // An empty candidate lies in a tree (a full component has no empty bucket).
    const bool from_a = !slots_[a].used || (slots_[b].used && a_tree);
    kick_along_tree(from_a ? a : b, nodes_[from_a ? ra : rb].vertices, key, value);
    unite_roots(ra, rb);  // the kicks changed no component
    return true;
  }

  // Puts the key into `bucket` and moves each evicted key to its other bucket until one lands
  // in an empty bucket. Precondition: `bucket` lies in a tree of `vertices` vertices, so the
  // walk follows out-edges to the tree's one empty bucket in fewer than `vertices` kicks.
  void kick_along_tree(std::uint64_t bucket, std::uint64_t vertices, Key key, Value value) {
    for (std::uint64_t step = 0;; ++step) {
      if (!slots_[bucket].used) {
        store(bucket, key, value);
        return;
      }
      if (step >= vertices) {
        throw std::logic_error("SmartCuckooTable: a kick walk left its tree (accounting broken)");
      }
      std::swap(key, slots_[bucket].key);
      std::swap(value, slots_[bucket].value);
      ++stats_.kicks;
      bucket = other(key, bucket);
    }
  }

  std::uint32_t find_root(std::uint64_t bucket) {
    auto b = static_cast<std::uint32_t>(bucket);
    while (nodes_[b].parent != b) {
      nodes_[b].parent = nodes_[nodes_[b].parent].parent;  // path halving
      b = nodes_[b].parent;
    }
    return b;
  }

  // One more edge between a and b: their components merge (if different) and count it.
  void unite(std::uint32_t a, std::uint32_t b) { unite_roots(find_root(a), find_root(b)); }
  void unite_roots(std::uint32_t ra, std::uint32_t rb) {
    if (ra != rb) {
      if (nodes_[ra].vertices < nodes_[rb].vertices) std::swap(ra, rb);
      nodes_[rb].parent = ra;
      nodes_[ra].vertices += nodes_[rb].vertices;
      nodes_[ra].edges += nodes_[rb].edges;
      std::swap(nodes_[ra].next, nodes_[rb].next);  // splices the two circular member lists
    }
    ++nodes_[ra].edges;
  }

  // The component that held `bucket` lost an edge: reset its members to singletons and unite
  // again along the keys they still hold.
  void recompute(std::uint64_t bucket) {
    members_.clear();
    const auto first = static_cast<std::uint32_t>(bucket);
    std::uint32_t b = first;
    do {
      members_.push_back(b);
      b = nodes_[b].next;
    } while (b != first);
    for (const std::uint32_t v : members_) nodes_[v] = {v, v, 1, 0};
    for (const std::uint32_t v : members_) {  // each stored key is one edge, held by one bucket
      if (slots_[v].used) unite(v, static_cast<std::uint32_t>(other(slots_[v].key, v)));
    }
    stats_.recomputed_buckets += members_.size();
  }

  // ---- kMaxLoop -------------------------------------------------------------------------

  bool place_max_loop(const Key& key, const Value& value, bool may_stash) {
    const auto [a, b] = candidates(key);
    if (!slots_[a].used || !slots_[b].used) {
      store(!slots_[a].used ? a : b, key, value);
      return true;
    }
    path_.clear();
    Key homeless = key;
    Value homeless_value = value;
    std::uint64_t bucket = a;
    for (unsigned kick = 0; kick < options_.max_loop; ++kick) {
      path_.push_back(bucket);
      std::swap(homeless, slots_[bucket].key);
      std::swap(homeless_value, slots_[bucket].value);
      ++stats_.kicks;
      bucket = other(homeless, bucket);
      if (!slots_[bucket].used) {
        store(bucket, homeless, homeless_value);
        return true;
      }
    }
    ++stats_.failed_after_kicks;
    if (may_stash && stash_.size() < options_.stash) {  // CHS: the homeless key waits there
      stash_.emplace_back(homeless, homeless_value);
      ++stats_.stashed;
      return true;
    }
    stats_.futile_kicks += options_.max_loop;
    for (auto it = path_.rbegin(); it != path_.rend(); ++it) {  // undo, last kick first
      std::swap(homeless, slots_[*it].key);
      std::swap(homeless_value, slots_[*it].value);
    }
    return false;
  }

  // ---- kBfs -----------------------------------------------------------------------------

  bool place_bfs(const Key& key, const Value& value) {
    const auto [a, b] = candidates(key);
    if (!slots_[a].used || !slots_[b].used) {
      store(!slots_[a].used ? a : b, key, value);
      return true;
    }
    // Both chains a step at a time, so the shorter one is found first; reads only.
    std::uint64_t ends[2] = {a, b};
    std::vector<std::uint64_t>* chains[2] = {&path_, &other_path_};
    path_.assign(1, a);
    other_path_.assign(1, b);
    for (unsigned step = 0; step < options_.max_loop; ++step) {
      for (unsigned side = 0; side < 2; ++side) {
        const std::uint64_t next = other(slots_[ends[side]].key, ends[side]);
        chains[side]->push_back(next);
        ends[side] = next;
        if (slots_[next].used) continue;
        // Move back to front: the key before the empty end moves into it, and so on.
        const std::vector<std::uint64_t>& chain = *chains[side];
        for (std::size_t i = chain.size() - 1; i > 0; --i) {
          store(chain[i], slots_[chain[i - 1]].key, slots_[chain[i - 1]].value);
          ++stats_.kicks;
        }
        store(chain[0], key, value);
        return true;
      }
    }
    ++stats_.failed_after_kicks;
    return false;
  }

  // After an erase: stash entries get another chance at the tables (a kSmart table wastes no
  // kick on them: the accounting refuses what cannot fit).
  void offer_stash() {
    for (std::size_t i = 0; i < stash_.size();) {
      const auto [k, v] = stash_[i];
      if (into_tables(k, v, /*may_stash=*/false)) {
        stash_[i] = stash_.back();
        stash_.pop_back();
      } else {
        ++i;
      }
    }
  }

  std::uint64_t m_;
  Options options_;
  Hash hash_;
  KeyEqual equal_;
  // A bucket's key, value and flag together: one cache miss per bucket touched.
  struct Slot {
    Key key{};
    Value value{};
    bool used = false;
  };
  std::vector<Slot> slots_;
  std::vector<std::pair<Key, Value>> stash_;
  std::size_t size_ = 0;
  Stats stats_;
  // A bucket's union-find node: parent, next on the circular member list, and (at a root) the
  // component's counts -- 16 bytes, so a find step and a root's counts cost one miss.
  struct Node {
    std::uint32_t parent, next, vertices, edges;
  };
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> members_;            // scratch of recompute()
  std::vector<std::uint64_t> path_, other_path_;  // scratch of place_max_loop(), place_bfs()
};

}  // namespace ccf
