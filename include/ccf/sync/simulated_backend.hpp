// A scripted, single-threaded stand-in for the RTM hardware, so that every path of the elision
// policies (htm.hpp) runs in tests on machines without TSX. See htm.hpp, "Testing without RTM".
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ccf/sync/tx_status.hpp"

namespace ccf::sync {

// A scripted, single-threaded stand-in for the hardware (htm.hpp, "Testing without RTM").
class SimulatedBackend {
 public:
  // begin() returns `outcomes` in order, then `then` forever.
  void script(std::vector<TxStatus> outcomes, TxStatus then = TxStatus::begun()) {
    outcomes_ = std::move(outcomes);
    next_ = 0;
    then_ = then;
  }
  void set_available(bool available) noexcept { available_ = available; }

  bool available() const noexcept { return available_; }

  TxStatus begin() {
    if (inside_) throw std::logic_error("SimulatedBackend: begin() inside a transaction");
    ++begins_;
    const TxStatus outcome = next_ < outcomes_.size() ? outcomes_[next_++] : then_;
    inside_ = outcome.started();
    return outcome;
  }

  void end() {
    if (!inside_) throw std::logic_error("SimulatedBackend: end() outside a transaction");
    inside_ = false;
    ++commits_;
  }

  template <std::uint8_t Code>
  TxStatus abort() {
    if (!inside_) throw std::logic_error("SimulatedBackend: abort() outside a transaction");
    inside_ = false;
    ++explicit_aborts_;
    return TxStatus::aborted_explicit(Code);
  }

  bool in_transaction() const noexcept { return inside_; }

  unsigned begins() const noexcept { return begins_; }
  unsigned commits() const noexcept { return commits_; }
  unsigned explicit_aborts() const noexcept { return explicit_aborts_; }

 private:
  std::vector<TxStatus> outcomes_;
  std::size_t next_ = 0;
  TxStatus then_ = TxStatus::begun();
  bool available_ = true;
  bool inside_ = false;
  unsigned begins_ = 0;
  unsigned commits_ = 0;
  unsigned explicit_aborts_ = 0;
};

}  // namespace ccf::sync
