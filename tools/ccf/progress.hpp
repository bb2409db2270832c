// Shared by the ccf subcommands: the error a user can act on, checked writes to standard
// output, and a progress line.
#pragma once

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace ccf_tool {

// A store, file or input that cannot be used: reported with exit code 3.
class ToolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes to standard output; a failed write is a ToolError with the system's reason (main()
// also checks stdout at exit, for what fmt::print left buffered).
inline void write_stdout(std::string_view bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) {
    throw ToolError(std::string("writing standard output failed: ") + std::strerror(errno));
  }
}

// Progress on stderr, only when stderr is a terminal, at most five times a second.
class Progress {
 public:
  Progress(std::string what, std::uint64_t total, std::string unit)
      : what_(std::move(what)), unit_(std::move(unit)), total_(total), tty_(::isatty(2) == 1) {}

  void update(std::uint64_t done, bool last = false) {
    if (!tty_) return;
    const auto now = Clock::now();
    if (!last && now - shown_ < std::chrono::milliseconds(200)) return;
    shown_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
    const double eta = rate > 0 ? static_cast<double>(total_ - std::min(done, total_)) / rate : 0;
    fmt::print(stderr, "\r{}: {} of {} {} ({:.0f}%), {:.1f} {}/s, ETA {:.0f} s   ", what_, done,
               total_, unit_,
               total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0,
               rate, unit_, eta);
    if (last) fmt::print(stderr, "\n");
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string what_;
  std::string unit_;
  std::uint64_t total_;
  bool tty_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point shown_{};
};

}  // namespace ccf_tool
