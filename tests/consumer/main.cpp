// A program built against the *installed* ccf package: proves the exported target, the
// package config and the installed headers are complete.
#include <ccf/ccf.hpp>
#include <cstdio>

int main() {
  ccf::CuckooFilter<ccf::PackedTable<12, 4>> filter(1000);
  for (std::uint64_t key = 1; key <= 900; ++key) {
    if (filter.insert(key) != ccf::Status::kOk) return 1;
  }
  for (std::uint64_t key = 1; key <= 900; ++key) {
    if (!filter.contains(key)) return 2;
  }
  std::printf("consumer ok: %zu items, %.2f bits/item\n", filter.size(), filter.bits_per_item());
  return 0;
}
