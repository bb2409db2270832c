// The ccf hash tables (include/ccf/tables/), used as sets: a key maps to itself.
//   clht-lb     ClhtLb: one cache line per bucket, lock-free lookups, per-bucket locks, resize
//   clht-lf     ClhtLf: one cache line per bucket, CAS updates on a snapshot word, cooperative
//               resize
//   htm-clht-<scheme>  HtmClht: one global lock elided with RTM by one of the thesis's six
//                schemes (mcs, slr-mcs, htm-retry, scm-ttas-mcs, slr-scm-mcs, scm-ttas-opt), or
//                by the adaptive policy (adaptive)
//   htm-clht-fine  HtmClhtFine: the bucket locks, each elided with RTM
// The HTM-CLHT variants are the library's (tables/htm_clht.hpp) with ElisionStats: they count
// their transactions and fallbacks (adapters/elision_events.hpp).
//   hopscotch, hopscotch-64  HopscotchMap<32 / 64>: neighbourhoods with hop bitmaps, segment
//                seqlocks, store-free lookups, resize
//   (cuckoo-map: ccf_cuckoo_map.cpp)
#include <ccf/tables/clht_lb.hpp>
#include <ccf/tables/clht_lf.hpp>
#include <ccf/tables/hopscotch_map.hpp>
#include <ccf/tables/htm_clht.hpp>
#include <string>

#include "adapters/table_set.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

namespace sync = ccf::sync;
using Counted = sync::ElisionStats;
template <template <class, class, unsigned, class> class Elision, class Lock>
using Global = ccf::HtmClht<Elision<Lock, sync::RtmBackend, sync::kDefaultMaxRetries, Counted>>;

}  // namespace

void register_ccf_tables(Registry& r) {
  add_table<ccf::ClhtLb>(
      r, "clht-lb",
      "ccf ClhtLb: one cache line per bucket, store-free lookups, bucket locks, resize");
  add_table<ccf::ClhtLf>(
      r, "clht-lf",
      "ccf ClhtLf: one cache line per bucket, lock-free CAS updates, store-free lookups, "
      "cooperative resize");
  // Without RTM every HTM-CLHT runs its fallback lock only: the description says which.
  const std::string rtm(ccf::sync::describe(ccf::sync::rtm_support()));
  const auto global = [&](const char* scheme) {
    return std::string("ccf HTM-CLHT, one global lock, ") + scheme + " (" + rtm + ")";
  };
  add_table<ccf::HtmClht<sync::LockOnly<sync::McsLock, Counted>>>(r, "htm-clht-mcs",
                                                                  global("MCS lock, no elision"));
  add_table<Global<sync::SlrElision, sync::McsLock>>(r, "htm-clht-slr-mcs", global("SLR over MCS"));
  add_table<Global<sync::RetryElision, sync::McsLock>>(r, "htm-clht-htm-retry",
                                                       global("retry <= 10, then MCS"));
  add_table<Global<sync::ScmElision, sync::TtasLock>>(r, "htm-clht-scm-ttas-mcs",
                                                      global("SCM over TTAS, MCS aux lock"));
  add_table<Global<sync::MixElision, sync::McsLock>>(r, "htm-clht-slr-scm-mcs",
                                                     global("SLR + SCM over MCS"));
  add_table<Global<sync::MixElision, sync::TtasLock>>(r, "htm-clht-scm-ttas-opt",
                                                      global("SCM, lazy subscription, over TTAS"));
  add_table<Global<sync::AdaptiveElision, sync::McsLock>>(
      r, "htm-clht-adaptive", global("retry <= 10 adapting to its aborts, then MCS"));
  add_table<
      ccf::BasicClht<ccf::clht::BucketElided<sync::RtmBackend, sync::kDefaultMaxRetries, Counted>>>(
      r, "htm-clht-fine", "ccf HTM-CLHT, bucket locks each elided with RTM (" + rtm + ")");
  add_table<ccf::HopscotchMap<32>>(
      r, "hopscotch",
      "ccf HopscotchMap<32>: hop bitmaps, segment seqlocks, store-free lookups, resize");
  add_table<ccf::HopscotchMap<64>>(r, "hopscotch-64",
                                   "ccf HopscotchMap<64>: the same, 64-bucket neighbourhoods");
}

}  // namespace chtbench
