// The breadth-first cuckoo-path search: every path it returns is a valid chain of moves
// (each fingerprint goes to its own alternate bucket), ends at a bucket with room, never
// repeats a bucket, is as short as any (an independent search agrees), and its compressed integer
// form decodes to the same slots and start; a search that finds none had none within its depth.
#include "ccf/detail/cuckoo_path.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <random>
#include <set>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ccf/detail/addressing.hpp"
#include "ccf/packed_table.hpp"

namespace {

// An independent breadth-first search over the cuckoo graph: the fewest displacements (1 to
// max_depth) after which some bucket reachable from i1 or i2 has room; 0 if none.
template <class Table, class Addressing>
unsigned shortest_depth(const Table& table, const Addressing& addressing, std::uint64_t i1,
                        std::uint64_t i2, unsigned max_depth) {
  std::unordered_set<std::uint64_t> seen{i1, i2};
  std::deque<std::pair<std::uint64_t, unsigned>> queue{{i1, 0}, {i2, 0}};
  while (!queue.empty()) {
    const auto [bucket, depth] = queue.front();
    queue.pop_front();
    if (depth == max_depth) continue;
    for (unsigned slot = 0; slot < Table::kSlots; ++slot) {
      const std::uint64_t child = addressing.alternate(bucket, table.read(bucket, slot));
      if (table.has_empty(child)) return depth + 1;
      if (seen.insert(child).second) queue.emplace_back(child, depth + 1);
    }
  }
  return 0;
}

// The same searches run in lockstep (find_cuckoo_paths_together, in rounds of shared parents) find
// exactly the paths find_cuckoo_path finds alone (a few parents at a time): the pair `roots`
// and three random pairs of full buckets, all in one group.
template <class Table, class Addressing>
void expect_group_agrees(const Table& table, const Addressing& addressing,
                         std::pair<std::uint64_t, std::uint64_t> roots, std::mt19937_64& rng) {
  using Path = ccf::detail::CuckooPath<4>;
  using Search = ccf::detail::CuckooPathSearch<Table, Addressing, Path::kMaxDepth>;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs{roots};
  while (pairs.size() < 4) {
    const std::uint64_t hash = rng();
    const std::uint64_t i1 = addressing.index(hash);
    const std::uint64_t i2 = addressing.alternate(i1, addressing.fingerprint(hash));
    if (!table.has_empty(i1) && !table.has_empty(i2)) pairs.emplace_back(i1, i2);
  }
  std::vector<Search> searches(pairs.size());
  std::vector<Path> paths(pairs.size());
  bool found[4];
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    searches[i].start(table, addressing, pairs[i].first, pairs[i].second);
  }
  ccf::detail::find_cuckoo_paths_together(std::span(searches), std::span(paths), std::span(found));
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    Path alone;
    ASSERT_EQ(found[i], ccf::detail::find_cuckoo_path(table, addressing, pairs[i].first,
                                                      pairs[i].second, alone));
    if (!found[i]) continue;
    ASSERT_EQ(paths[i].length, alone.length);
    ASSERT_EQ(paths[i].code, alone.code);
  }
}

TEST(CuckooPath, PathsAreValidShortestAndDecodable) {
  constexpr std::size_t kBuckets = 4096;
  ccf::PackedTable<12, 4> table(kBuckets);
  const ccf::detail::Addressing<12> addressing(kBuckets);
  std::mt19937_64 rng(3);
  using Path = ccf::detail::CuckooPath<4>;
  int searched = 0, found = 0, multi_step = 0, failed = 0;
  // Until the table is so full that searches fail: failures are checked too.
  for (int attempt = 0; attempt < 200'000 && (found < 2000 || failed < 100); ++attempt) {
    const std::uint64_t hash = rng();
    const std::uint64_t i1 = addressing.index(hash);
    const std::uint32_t fp = addressing.fingerprint(hash);
    const std::uint64_t i2 = addressing.alternate(i1, fp);
    if (table.try_insert(i1, fp) || table.try_insert(i2, fp)) continue;
    ++searched;
    const unsigned shortest = shortest_depth(table, addressing, i1, i2, Path::kMaxDepth);
    Path path;
    const bool has_path = ccf::detail::find_cuckoo_path(table, addressing, i1, i2, path);
    expect_group_agrees(table, addressing, {i1, i2}, rng);
    if (!has_path) {
      ASSERT_EQ(shortest, 0u) << "no path reported, but one of " << shortest << " moves exists";
      ++failed;
      continue;
    }
    ++found;
    // As short as any: the reference search finds no shorter one.
    ASSERT_EQ(path.length, shortest + 1);
    multi_step += path.length > 2;
    ASSERT_EQ(path.steps[0].bucket, (path.code & 1) ? i2 : i1);
    std::set<std::uint64_t> seen;
    for (unsigned k = 0; k + 1 < path.length; ++k) {
      const auto& step = path.steps[k];
      ASSERT_TRUE(seen.insert(step.bucket).second) << "bucket repeated";
      ASSERT_EQ(step.slot, Path::slot_in(path.code, k));
      ASSERT_EQ(table.read(step.bucket, step.slot), step.fp);
      ASSERT_EQ(addressing.alternate(step.bucket, step.fp), path.steps[k + 1].bucket);
      // Shortest: no bucket before the last has room (else the search would have stopped).
      ASSERT_FALSE(table.has_empty(step.bucket));
    }
    ASSERT_TRUE(seen.insert(path.steps[path.length - 1].bucket).second) << "bucket repeated";
    ASSERT_TRUE(table.has_empty(path.steps[path.length - 1].bucket));
    // Execute it as the sequential filter does; the item then fits.
    for (unsigned k = path.length - 1; k > 0; --k) {
      const auto& from = path.steps[k - 1];
      ASSERT_TRUE(
          table.try_insert(path.steps[k].bucket, table.exchange(from.bucket, from.slot, 0)));
    }
    ASSERT_TRUE(table.try_insert(path.steps[0].bucket, fp));
  }
  EXPECT_GE(found, 2000);
  EXPECT_GE(failed, 100);
  std::printf("%d searches, %d paths found, %d of more than one move\n", searched, found,
              multi_step);
  // Paths of several moves were checked too, not only single displacements.
  EXPECT_GT(multi_step, found / 10);
}

}  // namespace
