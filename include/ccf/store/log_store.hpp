// LogStore: a crash-safe key-value store whose values live in an append-only log and whose
// index is an in-memory cuckoo table of tags (the flash-log design of Sun et al.,
// "SmartCuckoo", USENIX ATC 2017, section 4). docs/log_store.md has the design, the recovery
// rules and measured figures; `ccf log` (tools/ccf) is its command-line front end.
//
//   DIR/ccf.log   the log (store/log_format.hpp): a header, then checksummed entries
//   index         store/log_index.hpp: slots {tag, state, offset}, two buckets a key
//
// put(data) keys the entry by SHA-1(data) (store/sha1.hpp); put(key, data) by a key of the
// caller's. A key already present is refused (Status::kExists) before anything is written, so
// the log never holds two live entries for one key. get compares tags in memory and reads the
// log only to confirm a tag match and to return the data, whose checksum it verifies: a corrupt
// entry is never served (LogError instead). erase appends a tombstone and marks the slot
// deleted. When an insertion kicks more than LogIndex::kMaxKicks times, the index doubles and
// is rebuilt by reading each live entry's key from the log.
//
// Durability. An operation is acknowledged when it returns. Every entry is written with one
// positioned write before the index changes, so a process that dies (SIGKILL included) loses
// no acknowledged entry: the kernel holds what was written. Against power loss the SyncPolicy
// decides: fdatasync after every entry (the default), after every N, or only at sync(),
// compact() and close. Recovery (the constructor) replays the log: puts enter the index,
// tombstones remove them. The bytes after the last intact entry are a torn tail, ignored (and
// cut off when the store is opened for writing), when they cannot hold a later intact entry:
// an incomplete last entry, a last entry whose checksum fails, or zeros to the end of the file.
// A bad entry with more data after it is corruption, not a torn write: opening fails with a
// LogError naming the offset, and the file is left as it was.
//
// Concurrency: get / contains / stats from many threads at once; put / erase / compact / sync
// one at a time, excluding readers (sync/phase_fair_lock.hpp: a stream of readers cannot starve
// the writer, as it can with glibc's std::shared_mutex; the log store is a component built on
// the cuckoo index, not one of the library's concurrent structures). Between processes, an
// advisory lock (flock) admits one writer or many read-only openers.
//
// Compaction copies the live entries, in log order, to DIR/ccf.log.compact, syncs it and
// renames it over DIR/ccf.log (atomic): a crash leaves either the old log or the new one, and
// a leftover DIR/ccf.log.compact is removed at the next writable open.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <shared_mutex>  // std::shared_lock
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ccf/hash.hpp"
#include "ccf/status.hpp"
#include "ccf/store/log_format.hpp"
#include "ccf/store/log_index.hpp"
#include "ccf/store/sha1.hpp"
#include "ccf/sync/phase_fair_lock.hpp"

namespace ccf::store {

enum class SyncPolicy : std::uint8_t {
  kEveryEntry,  // fdatasync before each put / erase returns
  kEveryN,      // fdatasync after every sync_every entries
  kNone,        // only at sync(), compact() and close
};

struct LogStoreOptions {
  SyncPolicy sync = SyncPolicy::kEveryEntry;
  std::uint64_t sync_every = 64;         // kEveryN: 1 .. 2^20
  std::uint64_t initial_buckets = 1024;  // index buckets before the first doubling: 1 .. 2^30
  bool read_only = false;                // no writes; others may read at the same time
  bool create = true;                    // make DIR and an empty log when there is none
  // The index's key hash; null = XXH3 (ccf::hash_key). Tests pass weak hashes so that tags and
  // buckets collide often.
  std::uint64_t (*key_hash)(std::string_view key) = nullptr;
};

struct RecoveryReport {
  std::uint64_t puts = 0;
  std::uint64_t tombstones = 0;
  std::uint64_t torn_tail_bytes = 0;  // after the last intact entry; cut off when writable
  double seconds = 0;                 // opening: scan, checksums and index build
};

struct LogStoreStats {
  std::uint64_t live_entries = 0;
  std::uint64_t dead_entries = 0;  // erased puts and their tombstones, until compaction
  std::uint64_t log_bytes = 0;
  std::uint64_t live_bytes = 0;  // header + live entries: the log's size after compaction
  std::uint64_t index_buckets = 0;
  std::uint64_t index_bytes = 0;
  double index_load = 0;
  std::uint64_t index_doublings = 0;
  std::uint64_t kicks = 0;
  std::uint64_t verify_reads = 0;       // log reads that confirmed or refuted a tag match
  std::uint64_t false_tag_matches = 0;  // of those, the ones that were another key
  std::uint64_t syncs = 0;
};

namespace detail {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const noexcept { return fd_; }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

[[noreturn]] inline void fail(const std::filesystem::path& file, const std::string& what,
                              int error = 0) {
  std::string message = file.string() + ": " + what;
  if (error != 0) message += " (" + std::string(std::strerror(error)) + ")";
  throw LogError(message);
}

// Reads up to n bytes at offset; fewer only at the end of the file.
inline std::size_t read_at(const std::filesystem::path& file, int fd, char* out, std::size_t n,
                           std::uint64_t offset) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(file, "read failed at offset " + std::to_string(offset + done), errno);
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

// Writes the pieces contiguously at offset, all of them or a LogError.
inline void write_at(const std::filesystem::path& file, int fd,
                     std::initializer_list<std::string_view> pieces, std::uint64_t offset) {
  std::array<iovec, 4> vec{};
  std::size_t count = 0;
  std::size_t total = 0;
  for (const std::string_view piece : pieces) {
    vec[count++] = {const_cast<char*>(piece.data()), piece.size()};
    total += piece.size();
  }
  std::size_t done = 0;
  while (done < total) {
    // Skip what is written already, then write the rest of the pieces.
    std::size_t skip = done;
    std::size_t first = 0;
    while (skip >= vec[first].iov_len) skip -= vec[first++].iov_len;
    std::array<iovec, 4> rest{};
    for (std::size_t i = first; i < count; ++i) rest[i - first] = vec[i];
    rest[0].iov_base = static_cast<char*>(rest[0].iov_base) + skip;
    rest[0].iov_len -= skip;
    const ssize_t put = ::pwritev(fd, rest.data(), static_cast<int>(count - first),
                                  static_cast<off_t>(offset + done));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) fail(file, "write failed at offset " + std::to_string(offset + done), errno);
    done += static_cast<std::size_t>(put);
  }
}

inline void sync_directory(const std::filesystem::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0) fail(dir, "cannot sync the directory", errno);
}

}  // namespace detail

class LogStore {
 public:
  static constexpr std::string_view kLogFileName = "ccf.log";
  static constexpr std::string_view kCompactFileName = "ccf.log.compact";

  // Opens (or creates) the store in dir and recovers it. Throws std::invalid_argument for bad
  // options, LogError for a log that is missing (read-only or create = false), foreign,
  // corrupt, of another version, or in use by a writer.
  explicit LogStore(const std::filesystem::path& dir, LogStoreOptions options = {})
      : options_(checked(options)), dir_(dir), file_(dir / kLogFileName), index_(1) {
    const auto start = std::chrono::steady_clock::now();
    open_log();
    recover();
    recovery_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  LogStore(const LogStore&) = delete;
  LogStore& operator=(const LogStore&) = delete;

  // Syncs what the policy left unsynced (errors are dropped here: call sync() to see them).
  ~LogStore() {
    if (!options_.read_only && unsynced_ > 0) ::fdatasync(fd_.get());
  }

  struct ContentPut {
    Status status;  // kOk, or kExists: the same content is stored already
    Sha1Digest key;
  };

  // Stores data under its SHA-1.
  ContentPut put(std::string_view data) {
    const Sha1Digest key = sha1(data);
    return {put(as_key(key), data), key};
  }

  // Stores data under key: kOk, or kExists (nothing written) when the key is present. Throws
  // std::invalid_argument for an empty key, one over kMaxKeyBytes or data over kMaxDataBytes,
  // LogError for a read-only store or a failed write (the log is then as it was).
  Status put(std::string_view key, std::string_view data) {
    check_key(key);
    if (data.size() > kMaxDataBytes) {
      throw std::invalid_argument("log store: data of " + std::to_string(data.size()) +
                                  " bytes exceeds the " + std::to_string(kMaxDataBytes) +
                                  "-byte limit");
    }
    std::unique_lock lock(mutex_);
    check_writable();
    const std::uint64_t hash = hash_of(key);
    if (find(hash, key)) return Status::kExists;
    const std::uint64_t offset = append(EntryKind::kPut, key, data);
    index(hash, offset);
    live_bytes_ += kEntryHeaderBytes + key.size() + data.size();
    after_write();
    return Status::kOk;
  }

  // The data stored under key, verified against its checksum; nullopt when absent. Throws
  // LogError when the entry fails its checksum (it is never served).
  std::optional<std::string> get(std::string_view key) const {
    std::shared_lock lock(mutex_);
    std::string entry;
    const auto slot = find(hash_of(key), key, entry);
    if (!slot) return std::nullopt;
    const EntryHeader header = complete(index_.offset_at(*slot), entry);
    return entry.substr(kEntryHeaderBytes + header.key_bytes);
  }

  bool contains(std::string_view key) const {
    std::shared_lock lock(mutex_);
    return find(hash_of(key), key).has_value();
  }

  // Deletes key: appends a tombstone, then marks the index slot. kNotFound when absent.
  Status erase(std::string_view key) {
    check_key(key);
    std::unique_lock lock(mutex_);
    check_writable();
    std::string entry;
    const auto slot = find(hash_of(key), key, entry);
    if (!slot) return Status::kNotFound;
    const EntryHeader erased = *decode_entry_header(entry.data());  // checked by find's probe
    append(EntryKind::kTombstone, key, {});
    index_.mark_deleted(*slot);
    live_bytes_ -= erased.entry_bytes();
    after_write();
    return Status::kOk;
  }

  // fdatasync now.
  void sync() {
    std::unique_lock lock(mutex_);
    check_writable();
    sync_locked();
  }

  struct CompactReport {
    std::uint64_t bytes_before = 0;
    std::uint64_t bytes_after = 0;
    std::uint64_t entries = 0;
  };

  // Rewrites the log with only its live entries (see the header comment). progress(done,
  // total) is called now and then with entries copied.
  template <class Progress>
  CompactReport compact(Progress&& progress) {
    std::unique_lock lock(mutex_);
    check_writable();
    CompactReport report{log_end_, 0, 0};
    const auto temp = dir_ / kCompactFileName;
    detail::Fd out(::open(temp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.get() < 0) detail::fail(temp, "cannot create", errno);
    if (::flock(out.get(), LOCK_EX | LOCK_NB) != 0) detail::fail(temp, "cannot lock", errno);
    const auto file_header = encode_file_header();
    detail::write_at(temp, out.get(), {{file_header.data(), file_header.size()}}, 0);

    const std::vector<std::uint64_t> offsets = live_offsets();
    std::vector<std::pair<std::uint64_t, std::uint64_t>> entries;  // (hash, new offset)
    entries.reserve(offsets.size());
    std::uint64_t end = kFileHeaderBytes;
    std::string entry;
    for (const std::uint64_t offset : offsets) {
      probe(offset, entry);
      const EntryHeader header = complete(offset, entry);
      const std::string_view key(entry.data() + kEntryHeaderBytes, header.key_bytes);
      detail::write_at(temp, out.get(), {entry}, end);
      entries.emplace_back(hash_of(key), end);
      end += entry.size();
      if (++report.entries % 4096 == 0) progress(report.entries, offsets.size());
    }
    LogIndex rebuilt = build_index(entries, index_.buckets());
    if (::fdatasync(out.get()) != 0) detail::fail(temp, "cannot sync", errno);
    if (::rename(temp.c_str(), file_.c_str()) != 0) detail::fail(temp, "cannot rename", errno);
    detail::sync_directory(dir_);
    fd_ = std::move(out);  // the old log's descriptor (and its lock) goes; this one is locked
    index_ = std::move(rebuilt);
    log_end_ = end;
    live_bytes_ = end;
    dead_entries_ = 0;
    unsynced_ = 0;
    report.bytes_after = end;
    progress(report.entries, offsets.size());
    return report;
  }
  CompactReport compact() {
    return compact([](std::uint64_t, std::uint64_t) {});
  }

  // Calls f(key, data_bytes) for every live entry, in log order.
  template <class F>
  void for_each(F&& f) const {
    std::shared_lock lock(mutex_);
    std::string key;
    for (const std::uint64_t offset : live_offsets()) {
      const EntryHeader header = read_key(offset, key);
      f(std::string_view(key), std::uint64_t{header.data_bytes});
    }
  }

  LogStoreStats stats() const {
    std::shared_lock lock(mutex_);
    LogStoreStats stats;
    stats.live_entries = index_.occupied();
    stats.dead_entries = dead_entries_;
    stats.log_bytes = log_end_;
    stats.live_bytes = live_bytes_;
    stats.index_buckets = index_.buckets();
    stats.index_bytes = index_.memory_bytes();
    stats.index_load = index_.load();
    stats.index_doublings = doublings_;
    stats.kicks = index_.kicks() + kicks_before_rebuilds_;
    stats.verify_reads = verify_reads_.load(std::memory_order_relaxed);
    stats.false_tag_matches = false_tag_matches_.load(std::memory_order_relaxed);
    stats.syncs = syncs_;
    return stats;
  }

  const RecoveryReport& recovery() const noexcept { return recovery_; }
  const std::filesystem::path& log_path() const noexcept { return file_; }

 private:
  static LogStoreOptions checked(const LogStoreOptions& options) {
    if (options.sync_every == 0 || options.sync_every > (std::uint64_t{1} << 20)) {
      throw std::invalid_argument("log store: sync_every must be in [1, 2^20], not " +
                                  std::to_string(options.sync_every));
    }
    if (options.initial_buckets == 0 || options.initial_buckets > (std::uint64_t{1} << 30)) {
      throw std::invalid_argument("log store: initial_buckets must be in [1, 2^30], not " +
                                  std::to_string(options.initial_buckets));
    }
    return options;
  }

  static void check_key(std::string_view key) {
    if (key.empty() || key.size() > kMaxKeyBytes) {
      throw std::invalid_argument("log store: a key is 1 to " + std::to_string(kMaxKeyBytes) +
                                  " bytes, not " + std::to_string(key.size()));
    }
  }

  void check_writable() const {
    if (options_.read_only) detail::fail(file_, "the store was opened read-only");
  }

  std::uint64_t hash_of(std::string_view key) const noexcept {
    return options_.key_hash ? options_.key_hash(key) : hash_key(key);
  }

  // Opens the log, locks it and checks its header; creates it when allowed.
  void open_log() {
    std::error_code error;
    const bool exists = std::filesystem::exists(file_, error);
    if (!exists && (options_.read_only || !options_.create)) {
      detail::fail(file_, "no log store here (the log file does not exist)");
    }
    if (!exists) {
      std::filesystem::create_directories(dir_, error);
      if (error) detail::fail(dir_, "cannot create the directory: " + error.message());
    }
    for (int attempt = 0;; ++attempt) {
      const int flags = options_.read_only ? O_RDONLY : O_RDWR | O_CREAT;
      fd_ = detail::Fd(::open(file_.c_str(), flags | O_CLOEXEC, 0644));
      if (fd_.get() < 0) detail::fail(file_, "cannot open", errno);
      if (::flock(fd_.get(), (options_.read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        detail::fail(
            file_,
            errno == EWOULDBLOCK ? "in use by a writer (another process holds it)" : "cannot lock",
            errno == EWOULDBLOCK ? 0 : errno);
      }
      // A compaction elsewhere may have renamed a new log over the path between open and flock.
      struct stat opened {};
      struct stat named {};
      if (::fstat(fd_.get(), &opened) == 0 && ::stat(file_.c_str(), &named) == 0 &&
          opened.st_ino == named.st_ino) {
        file_bytes_ = static_cast<std::uint64_t>(opened.st_size);
        break;
      }
      if (attempt == 3) detail::fail(file_, "the log keeps being replaced while opening");
    }
    if (!options_.read_only) std::filesystem::remove(dir_ / kCompactFileName, error);

    std::array<char, kFileHeaderBytes> header{};
    const std::size_t got = detail::read_at(file_, fd_.get(), header.data(), header.size(), 0);
    const auto fresh = encode_file_header();
    if (got < kFileHeaderBytes) {
      // Shorter than a header: a creation that was interrupted (a prefix of the header we
      // write, possibly empty) is started again; anything else is not ours.
      if (std::memcmp(header.data(), fresh.data(), got) != 0) {
        detail::fail(file_, "not a ccf log (" + std::to_string(got) + " bytes, too short)");
      }
      if (options_.read_only) detail::fail(file_, "the log's header is incomplete");
      detail::write_at(file_, fd_.get(), {{fresh.data(), fresh.size()}}, 0);
      sync_locked();
      detail::sync_directory(dir_);
      file_bytes_ = kFileHeaderBytes;
    } else if (const auto problem = file_header_problem(header.data())) {
      detail::fail(file_, *problem);
    }
  }

  // Replays every entry into the index; see the header comment for the torn-tail rule. Two
  // passes: a sequential scan checks every entry and notes (hash, offset) of each, then the
  // index, sized for the puts seen, replays them in order (no doubling, so no key re-reads).
  void recover() {
    struct Record {
      std::uint64_t hash;
      std::uint64_t offset;
      std::uint64_t bytes;
      EntryKind kind;
    };
    std::vector<Record> records;
    std::uint64_t puts = 0;
    std::vector<char> window;  // file bytes [window_start, window_start + window_bytes)
    std::uint64_t window_start = 0;
    std::size_t window_bytes = 0;
    auto bytes_at = [&](std::uint64_t at, std::size_t n) {  // n <= file_bytes_ - at
      if (at < window_start || at + n > window_start + window_bytes) {
        // 4 MiB reads, or the whole file when it is smaller (n fits: it is at most what is left).
        window.resize(
            std::max<std::size_t>(std::min<std::uint64_t>(std::uint64_t{4} << 20, file_bytes_), n));
        window_start = at;
        window_bytes =
            detail::read_at(file_, fd_.get(), window.data(),
                            std::min<std::uint64_t>(window.size(), file_bytes_ - at), at);
      }
      return window.data() + (at - window_start);
    };
    std::uint64_t offset = kFileHeaderBytes;
    while (offset < file_bytes_) {
      const std::uint64_t left = file_bytes_ - offset;
      const auto header = left < kEntryHeaderBytes
                              ? std::nullopt
                              : decode_entry_header(bytes_at(offset, kEntryHeaderBytes));
      const bool whole = header && header->entry_bytes() <= left;
      const char* entry = whole ? bytes_at(offset, header->entry_bytes()) : nullptr;
      const std::string_view key =
          whole ? std::string_view(entry + kEntryHeaderBytes, header->key_bytes) : "";
      if (!whole ||
          !entry_intact(*header, entry, key, {key.data() + key.size(), header->data_bytes})) {
        torn_tail(offset, header && header->entry_bytes() < left);
        break;
      }
      records.push_back({hash_of(key), offset, header->entry_bytes(), header->kind});
      puts += header->kind == EntryKind::kPut;
      offset += header->entry_bytes();
    }
    log_end_ = offset;
    window = {};
    const std::uint64_t wanted = puts / LogIndex::kSlots + puts / (LogIndex::kSlots * 8) + 1;
    index_ = LogIndex(std::max(options_.initial_buckets, wanted));  // about 90% full at most
    for (const Record& r : records) replay(r.kind, r.hash, r.offset, r.bytes);
  }

  // The entry at offset is not intact. It is a torn tail unless an entry may follow it.
  void torn_tail(std::uint64_t offset, bool more_after) {
    if (more_after && !zeros_to_end(offset)) {
      detail::fail(file_, "corrupt entry at offset " + std::to_string(offset) + " of " +
                              std::to_string(file_bytes_) +
                              " bytes (checksum or header mismatch with data after it); the "
                              "log is left unchanged");
    }
    recovery_.torn_tail_bytes = file_bytes_ - offset;
    log_end_ = offset;
    if (!options_.read_only) {
      if (::ftruncate(fd_.get(), static_cast<off_t>(offset)) != 0) {
        detail::fail(file_, "cannot cut off the torn tail", errno);
      }
      sync_locked();
    }
  }

  bool zeros_to_end(std::uint64_t offset) const {
    std::vector<char> chunk(1 << 16);
    while (offset < file_bytes_) {
      const std::size_t got =
          detail::read_at(file_, fd_.get(), chunk.data(),
                          std::min<std::uint64_t>(chunk.size(), file_bytes_ - offset), offset);
      if (got == 0) break;
      if (std::any_of(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(got),
                      [](char c) { return c != 0; })) {
        return false;
      }
      offset += got;
    }
    return true;
  }

  void replay(EntryKind kind, std::uint64_t hash, std::uint64_t offset, std::uint64_t bytes) {
    std::string key;  // read only when a tag matches
    std::string stored;
    const auto slot = index_.find(hash, [&](std::uint64_t candidate) {
      if (key.empty()) read_key(offset, key);
      read_key(candidate, stored);
      return stored == key;
    });
    if (kind == EntryKind::kTombstone) {
      ++recovery_.tombstones;
      ++dead_entries_;  // the tombstone, and the put it ends
      if (slot) {
        live_bytes_ -= read_header(index_.offset_at(*slot)).entry_bytes();
        index_.mark_deleted(*slot);
        ++dead_entries_;
      }
      return;
    }
    ++recovery_.puts;
    if (slot) {  // a writer refuses duplicates; a second live put is dead weight, never served
      ++dead_entries_;
      return;
    }
    index(hash, offset);
    live_bytes_ += bytes;
  }

  std::uint64_t append(EntryKind kind, std::string_view key, std::string_view data) {
    const auto header = encode_entry_header(kind, key, data);
    const std::uint64_t offset = log_end_;
    try {
      detail::write_at(file_, fd_.get(), {{header.data(), header.size()}, key, data}, offset);
    } catch (const LogError&) {
      // Leave no partial entry behind (a later append would follow it).
      [[maybe_unused]] const int ignored = ::ftruncate(fd_.get(), static_cast<off_t>(offset));
      throw;
    }
    log_end_ = offset + header.size() + key.size() + data.size();
    if (kind == EntryKind::kTombstone) dead_entries_ += 2;
    return offset;
  }

  void after_write() {
    ++unsynced_;
    if (options_.sync == SyncPolicy::kEveryEntry ||
        (options_.sync == SyncPolicy::kEveryN && unsynced_ >= options_.sync_every)) {
      sync_locked();
    }
  }

  void sync_locked() {
    if (::fdatasync(fd_.get()) != 0) detail::fail(file_, "fdatasync failed", errno);
    unsynced_ = 0;
    ++syncs_;
  }

  // Enters the entry at offset; on overflow doubles the index, rebuilt from the log.
  void index(std::uint64_t hash, std::uint64_t offset) {
    const std::optional<LogIndex::Homeless> homeless = index_.insert(hash, offset);
    if (!homeless) return;
    // index_ holds every live entry but the homeless one: hash them all again from their keys.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> entries;
    std::string key;
    for (const std::uint64_t each : live_offsets()) {
      read_key(each, key);
      entries.emplace_back(hash_of(key), each);
    }
    read_key(homeless->offset, key);
    entries.emplace_back(hash_of(key), homeless->offset);
    kicks_before_rebuilds_ += index_.kicks();
    ++doublings_;
    index_ = build_index(entries, index_.buckets() * 2);
  }

  // An index of at least `buckets` buckets holding every (hash, offset), doubled until they fit.
  LogIndex build_index(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& entries,
                       std::uint64_t buckets) {
    for (;; buckets *= 2) {
      if (buckets > (std::uint64_t{1} << 40)) {
        detail::fail(file_, "the index cannot place every entry even at 2^40 buckets");
      }
      LogIndex candidate(buckets);
      const bool all_placed = std::all_of(entries.begin(), entries.end(), [&](const auto& entry) {
        return !candidate.insert(entry.first, entry.second).has_value();
      });
      if (all_placed) return candidate;
      ++doublings_;
      kicks_before_rebuilds_ += candidate.kicks();
    }
  }

  std::vector<std::uint64_t> live_offsets() const {
    std::vector<std::uint64_t> offsets;
    offsets.reserve(index_.occupied());
    index_.for_each_offset([&](std::uint64_t offset) { offsets.push_back(offset); });
    std::sort(offsets.begin(), offsets.end());
    return offsets;
  }

  // The index slot of key, confirmed by reading each tag match's key from the log; `entry`
  // keeps what was read of the matching entry (see probe).
  std::optional<std::size_t> find(std::uint64_t hash, std::string_view key,
                                  std::string& entry) const {
    return index_.find(hash, [&](std::uint64_t offset) {
      verify_reads_.fetch_add(1, std::memory_order_relaxed);
      const EntryHeader header = probe(offset, entry);
      const bool same = std::string_view(entry).substr(kEntryHeaderBytes, header.key_bytes) == key;
      if (!same) false_tag_matches_.fetch_add(1, std::memory_order_relaxed);
      return same;
    });
  }
  std::optional<std::size_t> find(std::uint64_t hash, std::string_view key) const {
    std::string entry;
    return find(hash, key, entry);
  }

  EntryHeader read_header(std::uint64_t offset) const {
    std::array<char, kEntryHeaderBytes> head{};
    if (detail::read_at(file_, fd_.get(), head.data(), head.size(), offset) != head.size()) {
      detail::fail(file_, "entry at offset " + std::to_string(offset) + " is cut short");
    }
    const auto header = decode_entry_header(head.data());
    if (!header) detail::fail(file_, "corrupt entry header at offset " + std::to_string(offset));
    return *header;
  }

  // Reads the entry at offset into `entry` with one read of kProbeBytes: at least its header
  // and key, and all of it when it is that short.
  EntryHeader probe(std::uint64_t offset, std::string& entry) const {
    entry.resize(kProbeBytes);
    const std::size_t got = detail::read_at(file_, fd_.get(), entry.data(), entry.size(), offset);
    const auto header = got >= kEntryHeaderBytes ? decode_entry_header(entry.data()) : std::nullopt;
    if (!header) detail::fail(file_, "corrupt entry header at offset " + std::to_string(offset));
    if (got < kEntryHeaderBytes + header->key_bytes) {
      detail::fail(file_, "entry at offset " + std::to_string(offset) + " is cut short");
    }
    entry.resize(std::min<std::uint64_t>(got, header->entry_bytes()));
    return *header;
  }

  // Reads the rest of a probed entry and checks its checksum; returns its header.
  EntryHeader complete(std::uint64_t offset, std::string& entry) const {
    const EntryHeader header = *decode_entry_header(entry.data());
    const std::size_t have = entry.size();
    entry.resize(header.entry_bytes());
    if (detail::read_at(file_, fd_.get(), entry.data() + have, entry.size() - have,
                        offset + have) != entry.size() - have) {
      detail::fail(file_, "entry at offset " + std::to_string(offset) + " is cut short");
    }
    const std::string_view key(entry.data() + kEntryHeaderBytes, header.key_bytes);
    const std::string_view data(key.data() + key.size(), header.data_bytes);
    if (!entry_intact(header, entry.data(), key, data)) {
      detail::fail(file_, "entry at offset " + std::to_string(offset) +
                              " fails its checksum; it is not served");
    }
    return header;
  }

  EntryHeader read_key(std::uint64_t offset, std::string& key) const {
    std::string entry;
    const EntryHeader header = probe(offset, entry);
    key.assign(entry, kEntryHeaderBytes, header.key_bytes);
    return header;
  }

  LogStoreOptions options_;
  std::filesystem::path dir_;
  std::filesystem::path file_;
  detail::Fd fd_;
  LogIndex index_;
  mutable sync::PhaseFairLock mutex_;  // neither readers nor the writer starve
  std::uint64_t file_bytes_ = 0;       // at open
  std::uint64_t log_end_ = kFileHeaderBytes;
  std::uint64_t live_bytes_ = kFileHeaderBytes;
  std::uint64_t dead_entries_ = 0;
  std::uint64_t unsynced_ = 0;
  std::uint64_t syncs_ = 0;
  std::uint64_t doublings_ = 0;
  std::uint64_t kicks_before_rebuilds_ = 0;
  mutable std::atomic<std::uint64_t> verify_reads_{0};
  mutable std::atomic<std::uint64_t> false_tag_matches_{0};
  RecoveryReport recovery_;
};

}  // namespace ccf::store
