// The sequential ccf filters: cuckoo filters of run-time shape and the Bloom
// baselines. For the Bloom filters, StructureConfig::fp_bits is the space budget in bits per
// item, so one --fp-bits sweep compares the families at equal space.
#include <ccf/ccf.hpp>

#include "adapters/filter_adapter.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

template <bool kSemiSorted>
std::unique_ptr<Structure> make_cuckoo(const StructureConfig& c) {
  return std::make_unique<FilterAdapter<ccf::AnyCuckooFilter>>(
      ccf::FilterParams{.capacity = c.capacity,
                        .fp_bits = c.fp_bits,
                        .slots_per_bucket = 4,
                        .semi_sorted = kSemiSorted,
                        .options = {.seed = c.seed}});
}

template <class Bloom>
std::unique_ptr<Structure> make_bloom(const StructureConfig& c) {
  return std::make_unique<FilterAdapter<Bloom>>(c.capacity, static_cast<double>(c.fp_bits), c.seed);
}

}  // namespace

void register_ccf_filters(Registry& r) {
  const auto cuckoo = filter_traits<ccf::AnyCuckooFilter>(/*thread_safe=*/false);
  r.add({"cuckoo-filter", "ccf cuckoo filter, b = 4, fingerprint bits from --fp-bits (sequential)",
         cuckoo, make_cuckoo<false>});
  r.add({"cuckoo-filter-semisorted",
         "ccf cuckoo filter, b = 4, semi-sorted buckets: 1 bit per item saved (sequential)", cuckoo,
         make_cuckoo<true>});
  r.add({"bloom", "ccf standard Bloom filter, --fp-bits bits per item (sequential, no erase)",
         filter_traits<ccf::BloomFilter>(false), make_bloom<ccf::BloomFilter>});
  r.add({"blocked-bloom",
         "ccf cache-blocked Bloom filter, --fp-bits bits per item (sequential, no erase)",
         filter_traits<ccf::BlockedBloomFilter>(false), make_bloom<ccf::BlockedBloomFilter>});
}

}  // namespace chtbench
