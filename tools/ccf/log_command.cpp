// `ccf log`: import a file into the log store as content-addressed chunks, export it back byte
// for byte, get / delete single entries, report statistics, compact.
//
// An imported file is its chunks (each stored under its SHA-1, so a chunk that repeats is
// stored once) plus a manifest entry under the user key "file:NAME" listing the chunks' keys in
// order. Manifest data: "CCFMANI1" | u64 file bytes | u32 chunk bytes | u32 0 | 20-byte keys.
#include "log_command.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ccf/store/log_store.hpp"
#include "output_file.hpp"
#include "progress.hpp"

namespace ccf_tool {
namespace {

namespace fs = std::filesystem;
using ccf::Status;
using ccf::store::LogStore;
using ccf::store::LogStoreOptions;
using ccf::store::SyncPolicy;

constexpr std::string_view kManifestPrefix = "file:";
constexpr std::string_view kManifestMagic = "CCFMANI1";
constexpr std::size_t kManifestHeader = 24;
constexpr std::size_t kKeyBytes = 20;

struct LogArgs {
  std::string dir;
  std::string fsync = "none";
  std::uint64_t sync_every = 64;
  // import
  std::string input;
  std::string name;
  std::uint64_t chunk = 4096;
  // export / get
  std::string output = "-";
  // get / delete
  std::string key;
  bool user_key = false;
  bool json = false;
};

LogStoreOptions options_for(const LogArgs& a, bool read_only) {
  LogStoreOptions options;
  options.read_only = read_only;
  options.create = !read_only;
  options.sync = a.fsync == "every"  ? SyncPolicy::kEveryEntry
                 : a.fsync == "none" ? SyncPolicy::kNone
                                     : SyncPolicy::kEveryN;
  if (options.sync == SyncPolicy::kEveryN) options.sync_every = std::stoull(a.fsync);
  return options;
}

// The store key named on the command line: 40 hex digits (a content key), or with --user the
// bytes as given.
std::string store_key(const LogArgs& a) {
  if (a.user_key) return a.key;
  const auto bytes = ccf::store::from_hex(a.key);
  if (!bytes || bytes->size() != kKeyBytes) {
    throw CLI::ValidationError("KEY", "'" + a.key +
                                          "' is not a content key (40 hex digits); use --user "
                                          "for a key of your own");
  }
  return *bytes;
}

std::string manifest_data(std::uint64_t file_bytes, std::uint32_t chunk, const std::string& keys) {
  std::string data(kManifestHeader, '\0');
  std::memcpy(data.data(), kManifestMagic.data(), kManifestMagic.size());
  std::memcpy(data.data() + 8, &file_bytes, 8);
  std::memcpy(data.data() + 16, &chunk, 4);
  return data + keys;
}

int import_file(const LogArgs& a) {
  std::ifstream in(a.input, std::ios::binary);
  if (!in || !fs::is_regular_file(a.input)) {
    throw ToolError(a.input + ": cannot open for reading (missing, or not a regular file)");
  }
  const std::uint64_t file_bytes = fs::file_size(a.input);
  const std::string name = a.name.empty() ? fs::path(a.input).filename().string() : a.name;
  const std::string manifest_key = std::string(kManifestPrefix) + name;
  LogStore store(a.dir, options_for(a, false));
  if (store.contains(manifest_key)) {
    throw ToolError("a file named '" + name + "' is imported already (delete it or pick --name)");
  }
  Progress progress("import", file_bytes, "bytes");
  const auto start = std::chrono::steady_clock::now();
  std::string chunk(a.chunk, '\0');
  std::string keys;
  std::uint64_t read = 0;
  std::uint64_t fresh = 0;
  std::uint64_t repeated = 0;
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    const std::string_view piece(chunk.data(), static_cast<std::size_t>(in.gcount()));
    const auto put = store.put(piece);
    (put.status == Status::kOk ? fresh : repeated) += 1;
    keys.append(ccf::store::as_key(put.key));
    read += piece.size();
    progress.update(read);
  }
  if (read != file_bytes) throw ToolError(a.input + ": changed while being read");
  store.put(manifest_key, manifest_data(read, static_cast<std::uint32_t>(a.chunk), keys));
  store.sync();
  progress.update(read, true);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(
      "imported '{}': {} bytes in {} chunks ({} new, {} already stored), {:.1f} MB/s, "
      "{:.0f} entries/s\n",
      name, read, fresh + repeated, fresh, repeated, static_cast<double>(read) / seconds / 1e6,
      static_cast<double>(fresh + repeated + 1) / seconds);
  return 0;
}

// Names of the imported files, in import order.
std::vector<std::string> imported_names(const LogStore& store) {
  std::vector<std::string> names;
  store.for_each([&](std::string_view key, std::uint64_t) {
    if (key.starts_with(kManifestPrefix)) names.emplace_back(key.substr(kManifestPrefix.size()));
  });
  return names;
}

int export_file(const LogArgs& a) {
  LogStoreOptions options = options_for(a, true);
  const LogStore store(a.dir, options);
  std::string name = a.name;
  if (name.empty()) {
    const auto names = imported_names(store);
    if (names.size() != 1) {
      throw ToolError("the store holds " + std::to_string(names.size()) +
                      " imported files; name the one to export");
    }
    name = names.front();
  }
  const auto manifest = store.get(std::string(kManifestPrefix) + name);
  if (!manifest) {
    fmt::print(stderr, "ccf: no imported file named '{}'\n", name);
    return 1;
  }
  std::uint64_t file_bytes = 0;
  if (manifest->size() < kManifestHeader ||
      manifest->compare(0, kManifestMagic.size(), kManifestMagic) != 0 ||
      (manifest->size() - kManifestHeader) % kKeyBytes != 0) {
    throw ToolError("the manifest of '" + name + "' is malformed");
  }
  std::memcpy(&file_bytes, manifest->data() + 8, 8);
  std::optional<OutputFile> file;
  if (a.output != "-") file.emplace(a.output);
  std::ostream& out = file ? file->stream() : std::cout;
  Progress progress("export", file_bytes, "bytes");
  std::uint64_t written = 0;
  for (std::size_t at = kManifestHeader; at < manifest->size(); at += kKeyBytes) {
    const std::string_view key(manifest->data() + at, kKeyBytes);
    const auto chunk = store.get(key);
    if (!chunk)
      throw ToolError("chunk " + ccf::store::to_hex(key) + " of '" + name + "' is missing");
    if (ccf::store::as_key(ccf::store::sha1(*chunk)) != key) {
      throw ToolError("chunk " + ccf::store::to_hex(key) + " does not hash to its key");
    }
    out.write(chunk->data(), static_cast<std::streamsize>(chunk->size()));
    written += chunk->size();
    progress.update(written);
  }
  if (written != file_bytes) {
    throw ToolError("'" + name + "' came to " + std::to_string(written) + " bytes, not the " +
                    std::to_string(file_bytes) + " imported");
  }
  if (file) {
    file->commit();
  } else if (!out.flush()) {
    throw ToolError("writing standard output failed");
  }
  progress.update(written, true);
  if (a.output != "-")
    fmt::print(stderr, "exported '{}': {} bytes to {}\n", name, written, a.output);
  return 0;
}

int get_entry(const LogArgs& a) {
  const LogStore store(a.dir, options_for(a, true));
  const auto data = store.get(store_key(a));
  if (!data) {
    fmt::print(stderr, "ccf: {} not found\n", a.key);
    return 1;
  }
  if (a.output == "-") {
    write_stdout(*data);
  } else {
    OutputFile file(a.output);
    file.stream() << *data;
    file.commit();
  }
  return 0;
}

int delete_entry(const LogArgs& a) {
  LogStore store(a.dir, options_for(a, false));
  if (store.erase(store_key(a)) != Status::kOk) {
    fmt::print(stderr, "ccf: {} not found\n", a.key);
    return 1;
  }
  store.sync();
  return 0;
}

int show_stats(const LogArgs& a) {
  const LogStore store(a.dir, options_for(a, true));
  const auto s = store.stats();
  const auto& r = store.recovery();
  const double per_entry =
      s.live_entries ? static_cast<double>(s.index_bytes) / static_cast<double>(s.live_entries) : 0;
  const auto files = imported_names(store).size();
  if (a.json) {
    fmt::print(
        "{{\"live_entries\": {}, \"dead_entries\": {}, \"log_bytes\": {}, \"live_bytes\": {}, "
        "\"imported_files\": {}, \"index_buckets\": {}, \"index_bytes\": {}, \"index_load\": "
        "{:.4f}, \"index_bytes_per_entry\": {:.2f}, \"recovery_seconds\": {:.6f}, "
        "\"torn_tail_bytes\": {}}}\n",
        s.live_entries, s.dead_entries, s.log_bytes, s.live_bytes, files, s.index_buckets,
        s.index_bytes, s.index_load, per_entry, r.seconds, r.torn_tail_bytes);
    return 0;
  }
  fmt::print("log            {} ({} bytes, {} of them live)\n", store.log_path().string(),
             s.log_bytes, s.live_bytes);
  fmt::print("entries        {} live, {} dead (compaction reclaims {} bytes)\n", s.live_entries,
             s.dead_entries, s.log_bytes - s.live_bytes);
  fmt::print("imported files {}\n", files);
  fmt::print("index          {} buckets x 4 slots, load {:.3f}, {} bytes ({:.2f} per entry)\n",
             s.index_buckets, s.index_load, s.index_bytes, per_entry);
  fmt::print("recovery       {} puts and {} tombstones replayed in {:.3f} s; torn tail {} bytes\n",
             r.puts, r.tombstones, r.seconds, r.torn_tail_bytes);
  return 0;
}

int compact_log(const LogArgs& a) {
  LogStore store(a.dir, options_for(a, false));
  Progress progress("compact", store.stats().live_entries, "entries");
  const auto report =
      store.compact([&](std::uint64_t done, std::uint64_t) { progress.update(done); });
  progress.update(report.entries, true);
  fmt::print("compacted: {} live entries, {} -> {} bytes\n", report.entries, report.bytes_before,
             report.bytes_after);
  return 0;
}

}  // namespace

std::function<int()> add_log_command(CLI::App& app) {
  auto a = std::make_shared<LogArgs>();
  auto chosen = std::make_shared<std::function<int(const LogArgs&)>>();
  CLI::App* log = app.add_subcommand("log", "The cuckoo-indexed append-only log store");
  log->require_subcommand(1);
  log->add_option("--log", a->dir, "Directory of the store (its log is DIR/ccf.log)")->required();
  log->footer(
      "Examples:\n"
      "  ccf log --log store import /usr/share/dict/words\n"
      "  ccf log --log store export words -o words.copy\n"
      "  ccf log --log store get --user file:words | head -c 100 | xxd\n"
      "  ccf log --log store stats --json");
  auto add = [&](const char* name, const char* help, int (*run)(const LogArgs&)) {
    CLI::App* sub = log->add_subcommand(name, help);
    sub->callback([chosen, run] { *chosen = run; });
    return sub;
  };
  CLI::App* import = add("import", "Store FILE as content-addressed chunks", import_file);
  import->add_option("FILE", a->input, "File to import")->required();
  import->add_option("--name", a->name, "Name to export it by (default: FILE's base name)");
  import->add_option("--chunk", a->chunk, "Chunk bytes")->check(CLI::Range(1, 1 << 24));
  import->add_option("--fsync", a->fsync,
                     "every | N (every N entries) | none (default: one sync at the end)")
      ->check([](const std::string& value) {
        if (value == "every" || value == "none") return std::string();
  const bool digits = !value.empty() && value.size() <= 7 &&
                      value.find_first_not_of("0123456789") == std::string::npos;
  return digits && std::stoull(value) >= 1 && std::stoull(value) <= (1u << 20)
             ? std::string()
             : "--fsync takes every, none or a count in [1, 1048576], not '" + value + "'";
});
CLI::App* exp = add("export", "Write an imported file back, byte for byte", export_file);
exp->add_option("NAME", a->name, "Imported file (may be left out when there is one)");
exp->add_option("-o,--output", a->output, "Output file ('-': standard output)")->required();
CLI::App* get = add("get", "Print the data stored under KEY", get_entry);
get->add_option("KEY", a->key, "40 hex digits, or with --user the key itself")->required();
get->add_flag("--user", a->user_key, "KEY is a user key (e.g. file:NAME), not a SHA-1");
get->add_option("-o,--output", a->output, "Output file ('-': standard output)");
CLI::App* del = add("delete", "Delete the entry under KEY (appends a tombstone)", delete_entry);
del->add_option("KEY", a->key, "40 hex digits, or with --user the key itself")->required();
del->add_flag("--user", a->user_key, "KEY is a user key, not a SHA-1");
CLI::App* stats = add("stats", "Entries, bytes, index size and recovery time", show_stats);
stats->add_flag("--json", a->json, "One JSON object");
add("compact", "Rewrite the log without deleted entries (atomic switch)", compact_log);
return [a, chosen] { return *chosen ? (*chosen)(*a) : -1; };
}  // namespace ccf_tool

}  // namespace ccf_tool
