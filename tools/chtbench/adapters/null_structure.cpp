// Registers `null` (adapters/null_structure.hpp): the harness's own cost, runnable by name.
#include "adapters/null_structure.hpp"

#include <memory>

#include "registry.hpp"

namespace chtbench {

void register_null_structure(Registry& r) {
  r.add(
      {.name = "null",
       .description = "stores nothing, answers from the key: the harness's own cost per operation",
       .traits =
           {.filter = false, .thread_safe = true, .erase = true, .batched = false, .stores = false},
       .make = [](const StructureConfig&) { return std::make_unique<NullStructure>(); }});
}

}  // namespace chtbench
