// The ccf concurrent filters (lock-based and lock-free): the coarse filter under every lock and RTM
// elision policy, COP, the striped filter in both read modes, and the lock-free filter.
// --fp-bits picks the fingerprint width: 12 or 16 (lock-based), 8 or 12 (lock-free).
#include <ccf/concurrent/coarse_cuckoo_filter.hpp>
#include <ccf/concurrent/cop_cuckoo_filter.hpp>
#include <ccf/concurrent/striped_cuckoo_filter.hpp>
#include <ccf/lockfree/lock_free_cuckoo_filter.hpp>
#include <ccf/sync/htm.hpp>
#include <ccf/sync/phase_fair_lock.hpp>
#include <ccf/sync/rw_lock.hpp>
#include <ccf/sync/spin_locks.hpp>
#include <stdexcept>
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
template <class Lock>
using GlobalLock = sync::LockOnly<sync::ReaderWriterLock<Lock>>;
template <template <class, class, unsigned, class> class Elision, unsigned Retries = 10>
using Elided =
    Elision<sync::ReaderWriterLock<sync::McsLock>, sync::RtmBackend, Retries, sync::NoElisionStats>;

template <unsigned F>
using Cop = ccf::CopCuckooFilter<F, 4>;
template <unsigned F>
using Striped = ccf::StripedCuckooFilter<F, 4, ccf::ReadMode::kOptimistic>;
template <unsigned F>
using StripedLocking = ccf::StripedCuckooFilter<F, 4, ccf::ReadMode::kLocking>;

// The lock-free filter with growth off, so that "fill until the first failure" ends.
template <unsigned F>
class FixedLockFree : public ccf::LockFreeCuckooFilter<F> {
 public:
  FixedLockFree(std::size_t capacity, ccf::FilterOptions options)
      : ccf::LockFreeCuckooFilter<F>(capacity, {.filter = options, .grow = false}) {}
};

template <template <unsigned> class Filter, unsigned... Widths>
void add(Registry& r, std::string name, std::string description) {
  const std::string captured = name;
  r.add({std::move(name), std::move(description), filter_traits<Filter<12>>(/*thread_safe=*/true),
         [captured](const StructureConfig& c) {
           return make_with_width<Filter, Widths...>(c, captured);
         }});
}

}  // namespace

void register_ccf_concurrent_filters(Registry& r) {
  const std::string rtm = sync::rtm_available() ? "Intel RTM present: speculative"
                                                : "NO RTM on this CPU: runs the lock fallback only";
  add<Coarse<GlobalLock<sync::TasLock>>::type, 12, 16>(
      r, "ccf-global-tas", "coarse cuckoo filter, one reader-writer lock over a TAS spin lock");
  add<Coarse<GlobalLock<sync::TtasLock>>::type, 12, 16>(
      r, "ccf-global-ttas", "coarse cuckoo filter, one reader-writer lock over a TTAS spin lock");
  add<Coarse<GlobalLock<sync::McsLock>>::type, 12, 16>(
      r, "ccf-global-mcs", "coarse cuckoo filter, one reader-writer lock over an MCS queue lock");
  add<Coarse<GlobalLock<sync::ClhLock>>::type, 12, 16>(
      r, "ccf-global-clh", "coarse cuckoo filter, one reader-writer lock over a CLH queue lock");
  add<Coarse<sync::LockOnly<sync::PhaseFairLock>>::type, 12, 16>(
      r, "ccf-global-pf", "coarse cuckoo filter, one phase-fair reader-writer ticket lock");
  add<Coarse<Elided<sync::RetryElision>>::type, 12, 16>(
      r, "ccf-rtm-retry", "coarse, RTM lock elision, retry <= 10 (" + rtm + ")");
  add<Coarse<Elided<sync::RetryElision, 5>>::type, 12, 16>(
      r, "ccf-rtm-retry5", "coarse, RTM lock elision, retry <= 5 (" + rtm + ")");
  add<Coarse<Elided<sync::RetryElision, 20>>::type, 12, 16>(
      r, "ccf-rtm-retry20", "coarse, RTM lock elision, retry <= 20 (" + rtm + ")");
  add<Coarse<Elided<sync::SlrElision>>::type, 12, 16>(
      r, "ccf-rtm-slr", "coarse, RTM software-assisted lock removal (" + rtm + ")");
  add<Coarse<Elided<sync::ScmElision>>::type, 12, 16>(
      r, "ccf-rtm-scm", "coarse, RTM software-assisted conflict management (" + rtm + ")");
  add<Coarse<Elided<sync::MixElision>>::type, 12, 16>(r, "ccf-rtm-mix",
                                                      "coarse, RTM SLR + SCM (" + rtm + ")");
  add<Cop, 12, 16>(r, "ccf-cop",
                   "consistency-oblivious cuckoo filter: plan unsynchronized, verify+complete "
                   "in a short transaction (" +
                       rtm + ")");
  add<Striped, 12, 16>(r, "ccf-striped",
                       "fine-grained: striped seqlocks, store-free optimistic lookups, BFS path "
                       "search without locks");
  add<StripedLocking, 12, 16>(r, "ccf-striped-locking",
                              "fine-grained: striped locks, lookups lock their two stripes");
  add<FixedLockFree, 8, 12>(r, "lf-cuckoo-filter",
                            "lock-free: K-CAS migrations along BFS paths, "
                            "removal-counter-checked lookups (growth off)");
}

}  // namespace chtbench
