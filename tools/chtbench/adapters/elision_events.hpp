// The counters of an RTM-elided structure (ccf/sync/elision_stats.hpp) as the harness's event
// counts, which every report carries: the table's event line (with the speculative share), the
// JSON's "events" object and the CSV's events.* columns (docs/chtbench.md, "Elision events").
#pragma once

#include <ccf/sync/elision_stats.hpp>
#include <vector>

#include "structure.hpp"

namespace chtbench {

inline void add_elision_events(const ccf::sync::ElisionCounters& c,
                               std::vector<EventCount>& events) {
  events.insert(events.end(), {{"tx_started", c.started},
                               {"tx_committed", c.committed},
                               {"aborts_conflict", c.aborts_conflict},
                               {"aborts_capacity", c.aborts_capacity},
                               {"aborts_was_locked", c.aborts_was_locked},
                               {"aborts_bad_rop", c.aborts_bad_rop},
                               {"aborts_explicit", c.aborts_explicit},
                               {"aborts_other", c.aborts_other},
                               {"retries_exhausted", c.retries_exhausted},
                               {"skipped", c.skipped},
                               {"lock_fallbacks", c.fallbacks},
                               {"aux_acquired", c.aux_acquisitions}});
}

}  // namespace chtbench
