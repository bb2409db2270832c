// line_local_bench: would a layout whose two candidate buckets share a cache line make plain,
// one-at-a-time filter lookups faster, and what load would it cost? The Vacuum filter (Wang et
// al., VLDB 2020) keeps a fingerprint's alternate bucket within a small range of its primary;
// here a share p of the fingerprints (chosen by a hash of the fingerprint) keep it within an
// aligned group of 8 buckets (48 bytes at F = 12, b = 4), the rest anywhere in the table, as
// detail::Addressing does. p = 0 is ccf's layout. On the library's own pieces
// (PackedTable<12, 4>, the concurrent filters' breadth-first path search, path moves), for each
// p: fill to the first refusal; report that load, bits per item, the share of stored keys whose
// two buckets lie in one 64-byte line, the false-positive rate, and the median over repetitions
// of the ns per plain positive and negative lookup (both buckets probed, no prefetch, as
// BasicCuckooFilter::contains does) and of the in-run limit: two random bucket reads per
// operation, prefetched 16 operations ahead.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/key_api.hpp"
#include "ccf/hash.hpp"
#include "ccf/packed_table.hpp"
#include "path_insert.hpp"

namespace {

constexpr unsigned kFpBits = 12;
constexpr unsigned kSlots = 4;
constexpr std::uint64_t kGroup = 8;  // buckets of an aligned group: 48 bytes
using Table = ccf::PackedTable<kFpBits, kSlots>;

// Partial-key addressing where a share of the fingerprints have their alternate in the
// primary's group of kGroup buckets (an XOR with a non-zero offset: an involution inside the
// group); the others use detail::Addressing's rule. The bucket count is a multiple of kGroup.
class LineLocalAddressing {
 public:
  LineLocalAddressing(std::uint64_t buckets, double local_share)
      : global_(buckets),
        local_below_(static_cast<std::uint64_t>(local_share * static_cast<double>(1u << 24))) {}

  std::uint64_t buckets() const noexcept { return global_.buckets(); }
  std::uint64_t index(std::uint64_t hash) const noexcept { return global_.index(hash); }
  static std::uint32_t fingerprint(std::uint64_t hash) noexcept {
    return ccf::detail::Addressing<kFpBits>::fingerprint(hash);
  }
  std::uint64_t alternate(std::uint64_t bucket, std::uint32_t fp) const noexcept {
    const std::uint64_t h = ccf::mix64(fp);
    if ((h >> 40) < local_below_) return bucket ^ (1 + (h & 0xffff) % (kGroup - 1));
    return global_.alternate(bucket, fp);
  }

 private:
  ccf::detail::Addressing<kFpBits> global_;
  std::uint64_t local_below_;
};

bool one_line(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t first = std::min(a, b) * Table::kBucketBytes;
  const std::uint64_t last = std::max(a, b) * Table::kBucketBytes + Table::kBucketBytes - 1;
  return first / 64 == last / 64;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Timed {
  double ns;
  std::uint64_t hits;
};

// Plain lookups, one at a time.
Timed lookups(const Table& table, const LineLocalAddressing& addressing,
              const std::vector<std::uint64_t>& keys) {
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t hits = 0;
  for (const std::uint64_t key : keys) {
    const ccf::detail::Location at = ccf::detail::locate(addressing, ccf::hash_key(key));
    hits += ccf::detail::found_in_either(table.contains(at.primary, at.fp),
                                         table.contains(at.alternate, at.fp));
  }
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return {took.count() / static_cast<double>(keys.size()), hits};
}

// Two random bucket reads per operation, prefetched 16 operations ahead.
Timed limit(const Table& table, const std::vector<std::uint64_t>& buckets) {
  constexpr std::size_t kAhead = 32;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t hits = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (i + kAhead < buckets.size()) table.prefetch(buckets[i + kAhead]);
    hits += table.contains(buckets[i], 1);
  }
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  asm volatile("" : : "r"(hits));  // the loads count as used
  return {took.count() / static_cast<double>(buckets.size() / 2), hits};
}

void run(unsigned log2_items, double share, unsigned repeat, std::uint64_t probes) {
  // Room for 2^log2_items at load 0.95, in whole groups.
  const auto wanted =
      static_cast<std::uint64_t>(static_cast<double>(1ull << log2_items) / 0.95 / kSlots);
  const std::uint64_t buckets = (wanted + kGroup - 1) / kGroup * kGroup;
  Table table(buckets);
  const LineLocalAddressing addressing(buckets, share);
  std::uint64_t items = 0;
  while (bench::insert_along_path(table, addressing, items + 1)) ++items;

  std::vector<std::uint64_t> present(probes), absent(probes), random_buckets(2 * probes);
  std::uint64_t one_line_pairs = 0;
  for (std::uint64_t i = 0; i < probes; ++i) {
    present[i] = 1 + ccf::mix64(i, 1) % items;
    absent[i] = (std::uint64_t{1} << 62) + i;
    const ccf::detail::Location at = ccf::detail::locate(addressing, ccf::hash_key(present[i]));
    one_line_pairs += one_line(at.primary, at.alternate);
  }
  for (std::uint64_t i = 0; i < 2 * probes; ++i) {
    random_buckets[i] = ccf::mix64(i, 2) % buckets;
  }
  std::vector<double> positive, negative, limits;
  std::uint64_t false_positives = 0;
  for (unsigned r = 0; r < repeat; ++r) {
    const Timed p = lookups(table, addressing, present);
    const Timed n = lookups(table, addressing, absent);
    const Timed l = limit(table, random_buckets);
    if (p.hits != probes) fmt::print(stderr, "missed {} present keys\n", probes - p.hits);
    false_positives = n.hits;
    positive.push_back(p.ns);
    negative.push_back(n.ns);
    limits.push_back(l.ns);
  }
  const double slots = static_cast<double>(buckets * kSlots);
  const double lim = median(limits);
  fmt::print(
      "{:>5.3f} {:>8.4f} {:>9.2f} {:>8.3f} {:>7.3f}% {:>7.1f} {:>7.1f} {:>7.1f} {:>8.2f} "
      "{:>8.2f}\n",
      share, static_cast<double>(items) / slots,
      static_cast<double>(table.memory_bytes()) * 8 / static_cast<double>(items),
      static_cast<double>(one_line_pairs) / static_cast<double>(probes),
      100.0 * static_cast<double>(false_positives) / static_cast<double>(probes), median(positive),
      median(negative), lim, median(positive) / lim, median(negative) / lim);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"line-local alternates against ccf's layout: load, space, FPR, plain lookups"};
  unsigned log2_items = 26;
  std::vector<double> shares{0, 0.125, 0.25, 0.5, 1};
  unsigned repeat = 5;
  std::uint64_t probes = std::uint64_t{1} << 22;
  app.add_option("--log2-items", log2_items, "table sized for 2^N items at load 0.95")
      ->check(CLI::Range(10u, 30u))
      ->capture_default_str();
  app.add_option("--shares", shares, "shares p of fingerprints with a line-local alternate")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--repeat", repeat, "timed repetitions (medians reported)")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--probes", probes, "lookups per timed pass")
      ->check(CLI::Range(std::uint64_t{1024}, std::uint64_t{1} << 26))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  fmt::print("# line_local_bench --log2-items {} --repeat {} --probes {}\n", log2_items, repeat,
             probes);
  fmt::print(
      "#  p     load  bits/item one-line     FPR  pos_ns  neg_ns limit_ns pos/lim  neg/lim\n");
  for (const double share : shares) run(log2_items, share, repeat, probes);
}
