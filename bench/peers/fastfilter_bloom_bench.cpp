// fastfilter_cpp's blocked Bloom filter (SimdBlockFilterFixed: 256-bit buckets, 8 bits per key,
// AVX2) beside ccf's blocked Bloom filters at the same memory, one thread: ns per build insert
// (plain, and batched: their AddAll, our insert_many), per lookup of a random non-member
// (plain, and our contains_many; they have no batched lookup) and the measured FPR. Built by
// bench/peers/fastfilter_bloom.sh against their checkout; their code is not part of ccf.
//   fastfilter_bloom_bench [log2 items = 26] [rounds = 3]
// clang-format off
// Their header expects its includer to have brought in these, and `vector` unqualified.
#include <climits>
#include <cstring>
#include <stdexcept>
#include <vector>
using std::vector;
#include <bloom/simd-block-fixed-fpp.h>
// clang-format on

#include <algorithm>
#include <ccf/bloom_filter.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

template <class Body>
double ns_per_op(std::size_t ops, Body&& body) {
  const auto start = Clock::now();
  body();
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
         static_cast<double>(ops);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Figures {
  std::vector<double> insert, insert_batched, lookup, lookup_batched;
  double fpr = 0, bits_per_item = 0;
};

void print(const char* name, const Figures& f) {
  const auto cell = [](const std::vector<double>& v) {
    return v.empty() ? std::string("     -") : std::to_string(median(v)).substr(0, 6);
  };
  std::printf("%-34s %6.2f %8.4f%% | %s %s | %s %s\n", name, f.bits_per_item, 100 * f.fpr,
              cell(f.insert).c_str(), cell(f.insert_batched).c_str(), cell(f.lookup).c_str(),
              cell(f.lookup_batched).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned log2_items = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 26;
  const unsigned rounds = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 3;
  const std::size_t n = std::size_t{1} << log2_items;
  std::vector<std::uint64_t> members(n), others(n);
  for (std::size_t i = 0; i < n; ++i) {
    members[i] = ccf::mix64(2 * i, 12345);
    others[i] = ccf::mix64(2 * i + 1, 12345);
  }
  const std::unique_ptr<bool[]> out(new bool[n]);
  std::uint64_t sink = 0;

  Figures theirs, ours, ours_concurrent;
  for (unsigned r = 0; r < rounds; ++r) {
    {
      SimdBlockFilterFixed<> plain(static_cast<int>(n));
      theirs.insert.push_back(ns_per_op(n, [&] {
        for (const std::uint64_t key : members) plain.Add(key);
      }));
      SimdBlockFilterFixed<> batched(static_cast<int>(n));
      theirs.insert_batched.push_back(ns_per_op(n, [&] { batched.AddAll(members.data(), 0, n); }));
      std::size_t hits = 0;
      theirs.lookup.push_back(ns_per_op(n, [&] {
        for (const std::uint64_t key : others) hits += batched.Find(key);
      }));
      theirs.fpr = static_cast<double>(hits) / static_cast<double>(n);
      theirs.bits_per_item =
          8.0 * static_cast<double>(batched.SizeInBytes()) / static_cast<double>(n);
      sink += hits;
    }
    const auto run = [&](auto filter_tag, Figures& f) {
      using Filter = decltype(filter_tag);
      // Their memory: 32 bytes per 24 items.
      const double bits = 8.0 * 32.0 * static_cast<double>(n / 24) / static_cast<double>(n);
      Filter plain(n, bits);
      f.insert.push_back(ns_per_op(n, [&] {
        for (const std::uint64_t key : members) plain.insert(key);
      }));
      Filter batched(n, bits);
      f.insert_batched.push_back(
          ns_per_op(n, [&] { batched.insert_many(std::span<const std::uint64_t>(members)); }));
      std::size_t hits = 0;
      f.lookup.push_back(ns_per_op(n, [&] {
        for (const std::uint64_t key : others) hits += batched.contains(key);
      }));
      std::size_t batched_hits = 0;
      f.lookup_batched.push_back(ns_per_op(n, [&] {
        batched_hits = batched.contains_many(std::span<const std::uint64_t>(others),
                                             std::span<bool>(out.get(), n));
      }));
      f.fpr = static_cast<double>(hits) / static_cast<double>(n);
      f.bits_per_item = batched.bits_per_item();
      sink += hits + batched_hits;
    };
    run(ccf::BlockedBloomFilter(1, 1.0), ours);
    run(ccf::ConcurrentBlockedBloomFilter(1, 1.0), ours_concurrent);
  }
  std::printf("%zu items, one thread, medians of %u rounds (ns per operation)\n", n, rounds);
  std::printf("%-34s %6s %9s | %6s %6s | %6s %6s\n", "filter", "bits", "FPR", "insert", "batch",
              "lookup", "batch");
  print("fastfilter SimdBlockFilterFixed", theirs);
  print("ccf BlockedBloomFilter", ours);
  print("ccf ConcurrentBlockedBloomFilter", ours_concurrent);
  return sink == 42 ? 1 : 0;  // consumes the answers
}
