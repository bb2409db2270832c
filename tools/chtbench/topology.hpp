// Thread placement from the real machine topology (hwloc), as in the thesis's CHTBench:
//   default   leave placement to the OS;
//   compact   fill one package first, core after core, a core's hyperthreads together;
//   balanced  spread over packages, one hardware thread per core first, hyperthreads last.
// Thread i gets the i-th processing unit of the chosen order (wrapping when there are more
// threads than processing units).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct hwloc_topology;
struct hwloc_obj;

namespace chtbench {

enum class Pin { kDefault, kCompact, kBalanced };

Pin parse_pin(std::string_view text);  // throws std::invalid_argument
std::string_view to_string(Pin pin);

// The CPU's model name (/proc/cpuinfo), which every result names: "unknown CPU" if unreadable.
const std::string& cpu_model();

class Topology {
 public:
  // The machine's topology, loaded once.
  static const Topology& get();

  unsigned processing_units() const { return static_cast<unsigned>(compact_.size()); }
  unsigned cores() const { return cores_; }
  // OS indices of the processing units in placement order.
  std::vector<unsigned> order(Pin pin) const;
  // Binds the calling thread to the PU for thread `index` (no-op for Pin::kDefault).
  // Returns false if the binding failed.
  bool pin_current_thread(Pin pin, unsigned index) const;

 private:
  Topology();
  struct Deleter {
    void operator()(hwloc_topology* t) const;
  };
  std::unique_ptr<hwloc_topology, Deleter> topo_;
  std::vector<hwloc_obj*> compact_;  // processing units, owned by topo_
  std::vector<hwloc_obj*> balanced_;
  unsigned cores_ = 0;
};

}  // namespace chtbench
