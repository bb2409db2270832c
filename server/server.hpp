// The `ccf serve` network layer: Boost.Asio (docs/server.md says why), `threads` I/O threads,
// each running an io_context of its own, one session per client, dealt to the threads
// round-robin. A session reads, parses every complete command in what it has (pipelining), runs
// them in order on its I/O thread, writes all their replies in one write, and only then reads
// again: a client that does not read its replies stops being read (back-pressure), so no client
// can make the server buffer without bound, and the sum over all clients is bounded by
// ServerOptions::max_client_memory. A session's handlers all run on its thread; different
// clients' commands run in parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "server/resp.hpp"

namespace ccf::serve {

struct ServerOptions {
  std::string bind = "127.0.0.1";
  std::uint16_t port = 6379;  // 0: any free port (printed)
  unsigned threads = 2;
  // How long an I/O thread polls for work before it sleeps (microseconds; 0: never polls).
  unsigned busy_poll_us = 0;
  std::string password;             // empty: no AUTH
  std::size_t max_clients = 10000;  // more are told so and closed
  // Every client's input and output buffers together: past this, the clients holding the most
  // are closed until the sum is back under it (Redis's maxmemory-clients). One client alone may
  // hold RespLimits' bound on input plus its pending replies.
  std::uint64_t max_client_memory = std::uint64_t{512} << 20;
  unsigned idle_timeout_seconds = 0;  // 0: never close an idle client
  RespLimits limits;
  // Snapshots (snapshot.hpp): loaded at start, written by SAVE / BGSAVE, every
  // save_seconds when at least save_changes writes ran, and at shutdown when save_seconds is
  // set. An empty directory: no snapshots.
  std::filesystem::path directory;
  std::string file_name = "ccf.snapshot";
  unsigned save_seconds = 0;  // 0: no periodic snapshot
  std::uint64_t save_changes = 1;
};

// Loads the snapshot (if any), then serves until SIGINT or SIGTERM. Prints
// "listening ADDRESS:PORT" on stdout once the socket accepts. Throws std::system_error when the
// address cannot be bound and SnapshotError when the snapshot cannot be loaded (nothing is
// served then).
void run_server(const ServerOptions& options);

}  // namespace ccf::serve
