// predetermination_bench: would SmartCuckoo's "refuse without kicking" pay for the (2,4)
// cuckoo filter? docs/smart_cuckoo.md shows that for 4-slot buckets only one half of it is
// sound: a connected component whose edges number 4 x its buckets has no free slot, so a key
// whose two candidate buckets both lie in such components can be refused without a search.
// This measures that half against the bounded search the concurrent filters use, on the
// library's own pieces (PackedTable<12, 4>, Addressing, the breadth-first path search at the
// concurrent filters' depth, path moves):
//   - the load at the first refusal;
//   - then, for inserts of fresh keys until R refusals: how many were refused, how many of
//     those the sound half would have caught (both candidates in full components, checked on a
//     union-find built from the table as it is at that refusal), and the median time of a
//     refused and of an accepted insert (the cost of the bounded search).
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/hash.hpp"
#include "ccf/packed_table.hpp"
#include "path_insert.hpp"

namespace {

constexpr unsigned kFpBits = 12;
constexpr unsigned kSlots = 4;
using Table = ccf::PackedTable<kFpBits, kSlots>;
using Addressing = ccf::detail::Addressing<kFpBits>;

// The cuckoo graph's components (vertex = bucket, edge = stored fingerprint, joining its bucket
// and its alternate), and which of them are full (edges = kSlots x vertices).
class Components {
 public:
  Components(const Table& table, const Addressing& addressing)
      : parent_(table.bucket_count()),
        vertices_(table.bucket_count(), 1),
        edges_(table.bucket_count(), 0) {
    std::iota(parent_.begin(), parent_.end(), std::uint64_t{0});
    for (std::uint64_t bucket = 0; bucket < table.bucket_count(); ++bucket) {
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        const std::uint32_t fp = table.read(bucket, slot);
        if (fp == 0) continue;
        const std::uint64_t a = root(bucket);
        const std::uint64_t b = root(addressing.alternate(bucket, fp));
        if (a != b) {
          const auto [big, small] =
              vertices_[a] >= vertices_[b] ? std::pair{a, b} : std::pair{b, a};
          parent_[small] = big;
          vertices_[big] += vertices_[small];
          edges_[big] += edges_[small];
        }
        ++edges_[root(bucket)];
      }
    }
  }

  bool full(std::uint64_t bucket) {
    const std::uint64_t r = root(bucket);
    return edges_[r] == kSlots * vertices_[r];
  }

 private:
  std::uint64_t root(std::uint64_t v) {
    while (parent_[v] != v) v = parent_[v] = parent_[parent_[v]];  // path halving
    return v;
  }
  std::vector<std::uint64_t> parent_;
  std::vector<std::uint64_t> vertices_;
  std::vector<std::uint64_t> edges_;
};

double median_ns(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void run(std::uint64_t buckets, std::uint64_t refusals_wanted, std::uint64_t seed) {
  Table table(buckets);
  const Addressing addressing(buckets);
  std::uint64_t key = seed << 40;
  std::uint64_t items = 0;
  while (bench::insert_along_path(table, addressing, ++key)) ++items;
  const double first_refusal_load =
      static_cast<double>(items) / static_cast<double>(buckets * kSlots);

  std::uint64_t accepted = 0;
  std::uint64_t refused = 0;
  std::uint64_t caught = 0;
  std::vector<double> refused_ns;
  std::vector<double> accepted_ns;
  bool changed = true;
  std::optional<Components> components;
  using Clock = std::chrono::steady_clock;
  while (refused < refusals_wanted) {
    ++key;
    const auto start = Clock::now();
    const bool ok = bench::insert_along_path(table, addressing, key);
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    if (ok) {
      ++accepted;
      accepted_ns.push_back(ns);
      changed = true;
      continue;
    }
    ++refused;
    refused_ns.push_back(ns);
    if (changed) components.emplace(table, addressing);
    changed = false;
    const ccf::detail::Location at = ccf::detail::locate(addressing, ccf::hash_key(key));
    caught += components->full(at.primary) && components->full(at.alternate);
  }
  // How much of the table the sound half could ever speak for: buckets in full components.
  Components end(table, addressing);
  std::uint64_t in_full = 0;
  for (std::uint64_t bucket = 0; bucket < buckets; ++bucket) in_full += end.full(bucket);
  fmt::print(
      "{:>9} {:>5} {:>13.4f} {:>9} {:>8} {:>8.4f} {:>13} {:>11.0f} {:>11.0f} {:>10.4f} {:>12}\n",
      buckets, seed, first_refusal_load, accepted, refused,
      static_cast<double>(refused) / static_cast<double>(refused + accepted), caught,
      median_ns(refused_ns), median_ns(accepted_ns),
      static_cast<double>(items + accepted) / static_cast<double>(buckets * kSlots), in_full);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::uint64_t> buckets{1 << 14, 1 << 16, 1 << 18};
  std::uint64_t refusals = 1000;
  std::uint64_t seeds = 3;
  CLI::App app{
      "predetermination_bench: the sound half of SmartCuckoo's pre-determination on "
      "the (2,4) cuckoo filter, against its bounded path search"};
  app.add_option("--buckets", buckets, "Table sizes in buckets of 4 slots")
      ->check(CLI::Range(16, 1 << 24));
  app.add_option("--refusals", refusals, "Refused inserts to collect after the first")
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--seeds", seeds, "Runs per size (different keys)")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  fmt::print("F = {}, b = {}, path search depth {} (the concurrent filters')\n", kFpBits, kSlots,
             ccf::detail::kConcurrentPathDepth<kSlots>);
  fmt::print("{:>9} {:>5} {:>13} {:>9} {:>8} {:>8} {:>13} {:>11} {:>11} {:>10}\n", "buckets",
             "seed", "load@refusal", "accepted", "refused", "ref/all", "sound-half", "refused ns",
             "accepted ns", "end load", "full-buckets");
  for (const std::uint64_t m : buckets) {
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) run(m, refusals, seed);
  }
  return 0;
}
