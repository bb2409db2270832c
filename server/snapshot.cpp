#include "server/snapshot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ccf/hash.hpp"

namespace ccf::serve {
namespace {

constexpr std::string_view kMagic = "CCFSNAP1";
constexpr std::uint8_t kCuckooEntry = 1, kStringEntry = 2, kBloomEntry = 3;
static_assert(std::endian::native == std::endian::little, "snapshots are little-endian");

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw SnapshotError("snapshot " + file.string() + ": " + what);
}

// Writes through one file descriptor, checksumming what it writes.
class Writer {
 public:
  explicit Writer(const std::filesystem::path& file) : file_(file) {
    // A NAME.tmp left by a crash (or planted: a link) is removed, not opened: the new one is
    // created exclusively and never through a link, so a save writes no other file.
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
      fail(file_, std::string("cannot remove the old temporary: ") + std::strerror(errno));
    }
    fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(file_, std::string("cannot create: ") + std::strerror(errno));
    XXH3_INITSTATE(&state_);
    XXH3_64bits_reset(&state_);
  }
  ~Writer() {
    if (fd_ >= 0) ::close(fd_);
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void bytes(std::string_view data) {
    XXH3_64bits_update(&state_, data.data(), data.size());
    raw(data);
  }
  template <class T>
  void value(T v) {
    bytes(std::string_view(reinterpret_cast<const char*>(&v), sizeof v));
  }
  void sized(std::string_view data) {
    value<std::uint64_t>(data.size());
    bytes(data);
  }
  // The checksum, then fsync and close.
  void finish() {
    const std::uint64_t sum = XXH3_64bits_digest(&state_);
    raw(std::string_view(reinterpret_cast<const char*>(&sum), sizeof sum));
    if (::fsync(fd_) != 0) fail(file_, std::string("fsync: ") + std::strerror(errno));
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail(file_, std::string("close: ") + std::strerror(errno));
  }

 private:
  void raw(std::string_view data) {
    while (!data.empty()) {
      const ssize_t written = ::write(fd_, data.data(), data.size());
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) fail(file_, std::string("write: ") + std::strerror(errno));
      data.remove_prefix(static_cast<std::size_t>(written));
    }
  }

  std::filesystem::path file_;
  int fd_ = -1;
  XXH3_state_t state_;
};

void fsync_directory(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(directory, std::string("cannot open its directory: ") + std::strerror(errno));
  const int synced = ::fsync(fd);
  ::close(fd);
  if (synced != 0) fail(directory, std::string("fsync of the directory: ") + std::strerror(errno));
}

// Reads a snapshot's fields in order; every read is checked against what is left.
class Reader {
 public:
  Reader(std::string_view data, const std::filesystem::path& file) : data_(data), file_(file) {}
  template <class T>
  T value() {
    T v;
    std::memcpy(&v, take(sizeof v).data(), sizeof v);
    return v;
  }
  std::string_view sized() { return take(value<std::uint64_t>()); }
  bool done() const noexcept { return data_.empty(); }

 private:
  std::string_view take(std::uint64_t size) {
    if (size > data_.size()) fail(file_, "truncated entry");
    const std::string_view part = data_.substr(0, size);
    data_.remove_prefix(size);
    return part;
  }
  std::string_view data_;
  const std::filesystem::path& file_;
};

}  // namespace

void save_snapshot(const Keyspace& keyspace, const std::filesystem::path& file) {
  std::vector<std::pair<std::string, Value>> entries;
  for (std::uint64_t cursor = 0;;) {
    Keyspace::ScanStep step = *keyspace.scan(cursor);
    for (auto& entry : step.entries) entries.push_back(std::move(entry));
    if ((cursor = step.next) == 0) break;
  }
  std::filesystem::path temporary = file;
  temporary += ".tmp";
  {
    Writer out(temporary);
    out.bytes(kMagic);
    out.value<std::uint64_t>(entries.size());
    for (const auto& entry : entries) {
      const std::string& key = entry.first;
      const Value& value = entry.second;
      // A filter: its dump's header, then its blobs as one data field.
      const auto filter_entry = [&](std::uint8_t type, const auto& dump) {
        out.value<std::uint8_t>(type);
        out.sized(key);
        out.sized(dump->header);
        std::uint64_t data_size = 0;
        for (const std::string& blob : dump->blobs) data_size += blob.size();
        out.value<std::uint64_t>(data_size);
        for (const std::string& blob : dump->blobs) out.bytes(blob);
      };
      if (const auto* filter = std::get_if<std::shared_ptr<CfFilter>>(&value)) {
        filter_entry(kCuckooEntry, (*filter)->dump(CfFilter::DumpUse::kSnapshot));
      } else if (const auto* bloom = std::get_if<std::shared_ptr<BfFilter>>(&value)) {
        filter_entry(kBloomEntry, (*bloom)->dump());
      } else {
        out.value<std::uint8_t>(kStringEntry);
        out.sized(key);
        out.sized(*std::get<std::shared_ptr<const std::string>>(value));
      }
    }
    out.finish();
  }
  std::error_code error;
  std::filesystem::rename(temporary, file, error);
  if (error) fail(file, "rename from " + temporary.string() + ": " + error.message());
  const std::filesystem::path directory = file.parent_path().empty() ? "." : file.parent_path();
  fsync_directory(directory);
}

bool load_snapshot(Keyspace& keyspace, const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(file)) return false;
    fail(file, "cannot be read");
  }
  // Read in blocks: a character at a time (istreambuf_iterator) cost a sanitizer build over
  // 10 s of start-up on a 128 MiB snapshot.
  std::string bytes;
  std::array<char, 1 << 16> block;
  while (in.read(block.data(), block.size()) || in.gcount() > 0) {
    bytes.append(block.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) fail(file, "read error");
  load_snapshot_bytes(keyspace, bytes, file);
  return true;
}

void load_snapshot_bytes(Keyspace& keyspace, std::string_view bytes,
                         const std::filesystem::path& file) {
  if (bytes.size() < kMagic.size() + 16 || bytes.substr(0, 8) != kMagic) {
    fail(file, "not a ccf snapshot (bad magic or too short)");
  }
  const std::string_view body(bytes.data(), bytes.size() - 8);
  std::uint64_t stored;
  std::memcpy(&stored, bytes.data() + body.size(), sizeof stored);
  if (XXH3_64bits(body.data(), body.size()) != stored) fail(file, "checksum mismatch (damaged)");
  Reader reader(body.substr(kMagic.size()), file);
  const std::uint64_t count = reader.value<std::uint64_t>();
  // Every entry takes at least 17 bytes: a count beyond that is a lie, not a reservation.
  if (count > body.size() / 17) fail(file, "entry count " + std::to_string(count) + " too large");
  std::vector<std::pair<std::string, Value>> entries;
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto type = reader.value<std::uint8_t>();
    std::string key(reader.sized());
    // A filter entry: its dump's header and data, restored by the family's own loader.
    const auto restored = [&](auto restore) -> Value {
      const std::string_view header = reader.sized();
      const std::string_view data = reader.sized();
      auto filter = restore(header, data);
      if (!filter) fail(file, "filter '" + key + "' does not load");
      return std::shared_ptr(std::move(filter));
    };
    if (type == kCuckooEntry) {
      entries.emplace_back(std::move(key), restored(&CfFilter::restore));
    } else if (type == kBloomEntry) {
      entries.emplace_back(std::move(key), restored(&BfFilter::restore));
    } else if (type == kStringEntry) {
      entries.emplace_back(std::move(key), std::make_shared<const std::string>(reader.sized()));
    } else {
      fail(file, "unknown entry type " + std::to_string(type));
    }
  }
  if (!reader.done()) fail(file, "bytes after the last entry");
  keyspace.clear();
  for (auto& [key, value] : entries) keyspace.set(key, std::move(value));
}

}  // namespace ccf::serve
