// The fine-grained ccf cuckoo filters: COP and the striped filter in both read modes.
// --fp-bits picks the fingerprint width: 12 or 16.
#include <ccf/concurrent/cop_cuckoo_filter.hpp>
#include <ccf/concurrent/striped_cuckoo_filter.hpp>
#include <ccf/sync/htm.hpp>
#include <string>

#include "adapters/filter_adapter.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

template <unsigned F>
using Cop = ccf::CopCuckooFilter<
    F, 4,
    ccf::sync::CopExecutor<ccf::sync::ReaderWriterLock<ccf::sync::McsLock>, ccf::sync::RtmBackend,
                           ccf::sync::kDefaultMaxRetries, ccf::sync::ElisionStats>>;
template <unsigned F>
using Striped = ccf::StripedCuckooFilter<F, 4, ccf::ReadMode::kOptimistic>;
template <unsigned F>
using StripedLocking = ccf::StripedCuckooFilter<F, 4, ccf::ReadMode::kLocking>;

}  // namespace

void register_ccf_concurrent_filters(Registry& r) {
  const std::string rtm(ccf::sync::describe(ccf::sync::rtm_support()));
  add_concurrent_filter<Cop, 12, 16>(
      r, "ccf-cop",
      "consistency-oblivious cuckoo filter: plan unsynchronized, verify+complete "
      "in a short transaction (" +
          rtm + ")");
  add_concurrent_filter<Striped, 12, 16>(
      r, "ccf-striped",
      "fine-grained: striped seqlocks, store-free optimistic lookups, BFS path "
      "search without locks");
  add_concurrent_filter<StripedLocking, 12, 16>(
      r, "ccf-striped-locking", "fine-grained: striped locks, lookups lock their two stripes");
}

}  // namespace chtbench
