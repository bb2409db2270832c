// The commands of `ccf serve`: RedisBloom's CF.* commands and the generic commands clients
// send (the contract, with ccf's differences, is docs/server.md). execute() runs one command
// for one client on the calling I/O thread and appends its reply to `out`; it touches shared state
// only through the Keyspace and the filters, so commands of many clients run in parallel.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/keyspace.hpp"
#include "server/resp.hpp"

namespace ccf::serve {

struct ServerState {
  Keyspace keyspace;
  std::string password;  // empty: no AUTH needed
  std::atomic<std::uint64_t> next_client_id{1};
  std::atomic<std::uint64_t> connected_clients{0};
  // Clients' input and output buffers (the bytes they hold allocated), summed over every
  // client, and the bound on that sum (server.cpp closes the largest clients past it).
  std::atomic<std::uint64_t> client_buffer_bytes{0};
  std::uint64_t max_client_memory = 0;
  std::atomic<std::uint64_t> evicted_clients{0};

  // Snapshots (snapshot.hpp); an empty path: SAVE and BGSAVE are refused.
  std::filesystem::path snapshot_file;
  std::atomic<std::uint64_t> changes{0};  // write commands run since the last snapshot began
  std::atomic<std::int64_t> last_save_unix{0};
  std::mutex save_mutex;  // one snapshot at a time
  std::mutex background_mutex;
  std::thread background;  // the last BGSAVE (joined before the next and at shutdown)
  std::atomic<bool> background_running{false};
  // The last snapshot attempt, of any kind (INFO persistence): its outcome, what went wrong,
  // and how long the last BGSAVE took (-1: none yet).
  std::atomic<bool> last_save_ok{true};
  std::atomic<std::int64_t> last_bgsave_seconds{-1};
  std::mutex last_save_error_mutex;
  std::string last_save_error;  // empty after a snapshot that succeeded
};

// Writes a snapshot now (SAVE, BGSAVE's thread, `--save`, shutdown) and records the outcome
// for INFO. Throws SnapshotError.
void save_now(ServerState& server);
// Joins a BGSAVE still running (at shutdown).
void finish_background_save(ServerState& server);

struct ClientState {
  std::uint64_t id = 0;
  int proto = 2;
  bool authenticated = false;
  std::string name;
  bool close_after_reply = false;  // QUIT
  Keyspace::Memo memo;             // the last filter its commands found (Keyspace::Memo)
};

void execute(ServerState& server, ClientState& client, const std::vector<std::string>& args,
             std::string& out);

// Runs a client's pipelined commands in order, with the replies execute() gives each, except
// that a run of consecutive `CF.EXISTS key item` (or of `BF.EXISTS key item`) on one key is
// looked up as one batch (the filter's contains_many): the items' cache misses overlap, where
// commands run one at a time
// pay each alone. The run is held back until a command that is not part of it, flush(), or
// kMaxRun items; the caller flushes before it sends the replies.
class Pipeline {
 public:
  static constexpr std::size_t kMaxRun = 64;

  // Runs `args` now, or holds it in the current run (it may take args' strings).
  void run(ServerState& server, ClientState& client, std::vector<std::string>& args,
           std::string& out);
  // Answers the commands held back.
  void flush(ServerState& server, ClientState& client, std::string& out);

 private:
  std::string key_;
  bool bloom_ = false;              // the run is of BF.EXISTS
  std::vector<std::string> items_;  // items_[0, held_): the run's items (capacity kept)
  std::size_t held_ = 0;
};

}  // namespace ccf::serve
