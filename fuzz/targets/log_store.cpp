// LogStore recovery (its constructor) on arbitrary log files: the bytes as given and, when they
// differ, with the file header's and every whole entry's checksum recomputed (else nearly every
// mutation ends at a checksum and the replay logic behind it is never reached).
//
// Properties: opening either succeeds or throws ccf::store::LogError; a read-only open and a
// writable open agree (a writable open may also finish a file shorter than a header, an
// interrupted creation); an opened store serves every key it lists with data of the listed
// length; compacting and reopening serves exactly the same keys and data.
#include "ccf/store/log_store.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "harness.hpp"

namespace {

namespace fs = std::filesystem;
using ccf::fuzz::require;
using ccf::store::LogError;
using ccf::store::LogStore;
using ccf::store::LogStoreOptions;

using Contents = std::map<std::string, std::string>;

// This process's scratch directory, removed after each input.
const fs::path& scratch() {
  static const fs::path dir = [] {
    // tmpfs where there is one: compaction's fsyncs cost nothing there.
    const fs::path base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path();
    return base / ("ccf-fuzz-log-" + std::to_string(::getpid()));
  }();
  return dir;
}

void write_log(const std::string& bytes) {
  fs::remove_all(scratch());
  fs::create_directories(scratch());
  std::ofstream(scratch() / LogStore::kLogFileName, std::ios::binary) << bytes;
}

// Every key the store lists, with its data; nullopt when the store does not open.
std::optional<Contents> contents(bool read_only) {
  LogStoreOptions options;
  options.read_only = read_only;
  options.create = false;
  options.sync = ccf::store::SyncPolicy::kNone;
  try {
    const LogStore store(scratch(), options);
    Contents out;
    store.for_each([&](std::string_view key, std::uint64_t data_bytes) {
      const auto data = store.get(key);
      require(data.has_value(), "a listed key is not found");
      require(data->size() == data_bytes, "a listed entry's data has another length");
      require(out.emplace(key, *data).second, "a key is listed twice");
    });
    require(store.stats().live_entries == out.size(), "live_entries differs from the listing");
    return out;
  } catch (const LogError&) {
    return std::nullopt;
  }
}

void check(const std::string& bytes) {
  write_log(bytes);
  const auto read_only = contents(true);
  const auto writable = contents(false);  // may cut a torn tail or finish a header
  const bool short_file = bytes.size() < ccf::store::kFileHeaderBytes;
  require(read_only.has_value() == writable.has_value() || (short_file && writable),
          "read-only and writable opens disagree");
  if (!writable) return;
  if (read_only)
    require(*read_only == *writable, "read-only and writable opens serve different data");
  {
    LogStoreOptions options;
    options.sync = ccf::store::SyncPolicy::kNone;
    LogStore store(scratch(), options);
    store.compact();
  }
  require(contents(false) == writable, "compaction changed what is served");
}

// bytes with the header's and each whole entry's checksum recomputed.
std::string with_checksums_fixed(std::string bytes) {
  using namespace ccf::store;
  if (bytes.size() < kFileHeaderBytes) return bytes;
  if (std::memcmp(bytes.data(), kLogMagic.data(), kLogMagic.size()) == 0) {
    const auto check_bits = static_cast<std::uint32_t>(XXH3_64bits(bytes.data(), 12));
    std::memcpy(bytes.data() + 12, &check_bits, 4);
  }
  for (std::size_t at = kFileHeaderBytes; at + kEntryHeaderBytes <= bytes.size();) {
    std::uint16_t key_bytes = 0;
    std::uint32_t data_bytes = 0;
    std::memcpy(&key_bytes, bytes.data() + at + 10, 2);
    std::memcpy(&data_bytes, bytes.data() + at + 12, 4);
    const std::uint64_t end = at + kEntryHeaderBytes + key_bytes + std::uint64_t{data_bytes};
    if (end > bytes.size()) break;
    const std::string_view key(bytes.data() + at + kEntryHeaderBytes, key_bytes);
    const std::string_view data(key.data() + key_bytes, data_bytes);
    const std::uint64_t sum = entry_checksum(bytes.data() + at + 8, key, data);
    std::memcpy(bytes.data() + at, &sum, 8);
    at = static_cast<std::size_t>(end);
  }
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  check(bytes);
  const std::string fixed = with_checksums_fixed(bytes);
  if (fixed != bytes) check(fixed);
  fs::remove_all(scratch());
  return 0;
}
