// What a synchronized section does: read only, or write. Locks, elision policies, the COP
// executor and the filter core's policies all take it.
#pragma once

namespace ccf::sync {

enum class Access { kRead, kWrite };

}  // namespace ccf::sync
