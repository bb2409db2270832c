// The coarse ccf cuckoo filter under every lock and RTM elision policy. --fp-bits picks the
// fingerprint width: 12 or 16. (One translation unit per filter family: in one unit with all
// of them, GCC's unit-growth limit left the filters' hot steps out of line.)
#include <ccf/concurrent/coarse_cuckoo_filter.hpp>
#include <ccf/sync/htm.hpp>
#include <ccf/sync/phase_fair_lock.hpp>
#include <ccf/sync/rw_lock.hpp>
#include <ccf/sync/spin_locks.hpp>
#include <string>

#include "adapters/filter_adapter.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

namespace sync = ccf::sync;

template <class Sync>
struct Coarse {
  template <unsigned F>
  using type = ccf::CoarseCuckooFilter<ccf::PackedTable<F, 4>, Sync>;
};
// Every policy counts its events (adapters/elision_events.hpp; --elision-stats off measures
// what counting costs): the lock-only ones their fallbacks, the elided ones their transactions.
template <class Lock>
using GlobalLock = sync::LockOnly<sync::ReaderWriterLock<Lock>, sync::ElisionStats>;
template <template <class, class, unsigned, class> class Elision, unsigned Retries = 10>
using Elided =
    Elision<sync::ReaderWriterLock<sync::McsLock>, sync::RtmBackend, Retries, sync::ElisionStats>;

}  // namespace

void register_ccf_coarse_filters(Registry& r) {
  const std::string rtm(sync::describe(sync::rtm_support()));
  add_concurrent_filter<Coarse<GlobalLock<sync::TasLock>>::type, 12, 16>(
      r, "ccf-global-tas", "coarse cuckoo filter, one reader-writer lock over a TAS spin lock");
  add_concurrent_filter<Coarse<GlobalLock<sync::TtasLock>>::type, 12, 16>(
      r, "ccf-global-ttas", "coarse cuckoo filter, one reader-writer lock over a TTAS spin lock");
  add_concurrent_filter<Coarse<GlobalLock<sync::McsLock>>::type, 12, 16>(
      r, "ccf-global-mcs", "coarse cuckoo filter, one reader-writer lock over an MCS queue lock");
  add_concurrent_filter<Coarse<GlobalLock<sync::ClhLock>>::type, 12, 16>(
      r, "ccf-global-clh", "coarse cuckoo filter, one reader-writer lock over a CLH queue lock");
  add_concurrent_filter<Coarse<sync::LockOnly<sync::PhaseFairLock>>::type, 12, 16>(
      r, "ccf-global-pf", "coarse cuckoo filter, one phase-fair reader-writer ticket lock");
  add_concurrent_filter<Coarse<Elided<sync::RetryElision>>::type, 12, 16>(
      r, "ccf-rtm-retry", "coarse, RTM lock elision, retry <= 10 (" + rtm + ")");
  add_concurrent_filter<Coarse<Elided<sync::RetryElision, 5>>::type, 12, 16>(
      r, "ccf-rtm-retry5", "coarse, RTM lock elision, retry <= 5 (" + rtm + ")");
  add_concurrent_filter<Coarse<Elided<sync::RetryElision, 20>>::type, 12, 16>(
      r, "ccf-rtm-retry20", "coarse, RTM lock elision, retry <= 20 (" + rtm + ")");
  add_concurrent_filter<Coarse<Elided<sync::SlrElision>>::type, 12, 16>(
      r, "ccf-rtm-slr", "coarse, RTM software-assisted lock removal (" + rtm + ")");
  add_concurrent_filter<Coarse<Elided<sync::ScmElision>>::type, 12, 16>(
      r, "ccf-rtm-scm", "coarse, RTM software-assisted conflict management (" + rtm + ")");
  add_concurrent_filter<Coarse<Elided<sync::MixElision>>::type, 12, 16>(
      r, "ccf-rtm-mix", "coarse, RTM SLR + SCM (" + rtm + ")");
  add_concurrent_filter<Coarse<Elided<sync::AdaptiveElision>>::type, 12, 16>(
      r, "ccf-rtm-adaptive",
      "coarse, RTM retry <= 10 whose speculation adapts to its aborts (" + rtm + ")");
}

}  // namespace chtbench
