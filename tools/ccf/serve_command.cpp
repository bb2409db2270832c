#include "serve_command.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/server.hpp"

namespace ccf_tool {

std::function<int()> add_serve_command(CLI::App& app) {
  auto options = std::make_shared<ccf::serve::ServerOptions>();
  auto save_point = std::make_shared<std::vector<std::uint64_t>>();
  CLI::App* serve = app.add_subcommand(
      "serve",
      "Serve cuckoo filters over the Redis protocol (RESP2/RESP3): RedisBloom's CF.* commands "
      "from many threads.\nExample: ccf serve --port 6380 --threads 4 & redis-cli -p 6380 "
      "CF.ADD f hello");
  serve->add_option("--bind", options->bind, "address to listen on (loopback by default)")
      ->capture_default_str();
  serve->add_option("--port", options->port, "TCP port; 0 picks a free one (printed)")
      ->capture_default_str();
  serve->add_option("--threads", options->threads, "I/O threads running the commands")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  serve
      ->add_option("--busy-poll", options->busy_poll_us,
                   "microseconds an idle I/O thread polls before it sleeps (0: it sleeps at once)")
      ->check(CLI::Range(0u, 1000000u))
      ->capture_default_str();
  serve->add_option("--requirepass", options->password, "clients must AUTH with this password");
  serve->add_option("--max-clients", options->max_clients, "clients connected at once")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}))
      ->capture_default_str();
  serve
      ->add_option("--max-client-memory", options->max_client_memory,
                   "bytes all clients' buffers may hold together; past it the largest clients "
                   "are closed")
      ->check(CLI::Range(std::uint64_t{1} << 20, std::uint64_t{1} << 48))
      ->capture_default_str();
  serve
      ->add_option("--timeout", options->idle_timeout_seconds,
                   "close a client idle this many seconds (0: never)")
      ->capture_default_str();
  serve
      ->add_option("--max-bulk-bytes", options->limits.max_bulk_bytes,
                   "largest argument a client may send")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30))
      ->capture_default_str();
  serve
      ->add_option("--max-arguments", options->limits.max_array_length,
                   "most arguments in one command")
      ->check(CLI::Range(std::size_t{16}, std::size_t{1} << 24))
      ->capture_default_str();
  serve
      ->add_option("--dir", options->directory,
                   "directory of the snapshot file: loaded at start, written by SAVE/BGSAVE")
      ->check(CLI::ExistingDirectory);
  serve->add_option("--dbfilename", options->file_name, "snapshot file name in --dir")
      ->capture_default_str();
  serve
      ->add_option("--save", *save_point,
                   "SECONDS CHANGES: snapshot every SECONDS when CHANGES writes ran (and at "
                   "shutdown); needs --dir")
      ->expected(2);
  return [serve, options, save_point]() -> int {
    if (!serve->parsed()) return -1;
    if (!save_point->empty()) {
      if (options->directory.empty()) throw CLI::ValidationError("--save", "needs --dir");
      if ((*save_point)[0] == 0 || (*save_point)[0] > 86400 * 365) {
        throw CLI::ValidationError("--save", "SECONDS must be in [1, 31536000]");
      }
      options->save_seconds = static_cast<unsigned>((*save_point)[0]);
      options->save_changes = std::max<std::uint64_t>(1, (*save_point)[1]);
    }
    if (options->file_name.empty() || options->file_name.find('/') != std::string::npos) {
      throw CLI::ValidationError("--dbfilename", "a file name without '/'");
    }
    ccf::serve::run_server(*options);
    return 0;
  };
}

}  // namespace ccf_tool
