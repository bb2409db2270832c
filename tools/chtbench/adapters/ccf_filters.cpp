// The sequential ccf filters: cuckoo filters (one compiled filter per fingerprint width) and
// the Bloom baselines (standard, blocked, counting). For the Bloom filters,
// StructureConfig::fp_bits is the space budget in bits per item (counters included), so one
// --fp-bits sweep compares the families at equal space, and shows what deletion costs a Bloom
// filter.
#include <ccf/ccf.hpp>

#include "adapters/filter_adapter.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

template <unsigned F>
using Packed = ccf::CuckooFilter<ccf::PackedTable<F, 4>>;
template <unsigned F>
using SemiSorted = ccf::CuckooFilter<ccf::SemiSortedTable<F>>;

template <class Bloom>
std::unique_ptr<Structure> make_bloom(const StructureConfig& c) {
  return std::make_unique<FilterAdapter<Bloom>>(c.capacity, static_cast<double>(c.fp_bits), c.seed);
}

}  // namespace

void register_ccf_filters(Registry& r) {
  r.add({"cuckoo-filter", "ccf cuckoo filter, b = 4, fingerprint bits from --fp-bits (sequential)",
         filter_traits<Packed<12>>(/*thread_safe=*/false), [](const StructureConfig& c) {
           return make_with_width<Packed, 4, 8, 12, 16, 32>(c, "cuckoo-filter");
         }});
  r.add({"cuckoo-filter-semisorted",
         "ccf cuckoo filter, b = 4, semi-sorted buckets: 1 bit per item saved (sequential)",
         filter_traits<SemiSorted<12>>(/*thread_safe=*/false), [](const StructureConfig& c) {
           return make_with_width<SemiSorted, 8, 12, 16>(c, "cuckoo-filter-semisorted");
         }});
  r.add({"bloom", "ccf standard Bloom filter, --fp-bits bits per item (sequential, no erase)",
         filter_traits<ccf::BloomFilter>(false), make_bloom<ccf::BloomFilter>});
  r.add({"blocked-bloom",
         "ccf cache-blocked Bloom filter, --fp-bits bits per item (sequential, no erase)",
         filter_traits<ccf::BlockedBloomFilter>(false), make_bloom<ccf::BlockedBloomFilter>});
  r.add({"counting-bloom",
         "ccf counting Bloom filter (4-bit counters: deletes), --fp-bits bits per item "
         "(sequential)",
         filter_traits<ccf::CountingBloomFilter>(false), make_bloom<ccf::CountingBloomFilter>});
}

}  // namespace chtbench
