// The log store keeps every acknowledged entry and serves nothing corrupt: a model-based test
// with colliding hashes (reopen and compaction included), torn tails cut at every byte,
// corruption refused, a writer killed with SIGKILL at random points, readers beside a writer.
#include "ccf/store/log_store.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sanitizer_scale.hpp"

namespace {

namespace fs = std::filesystem;
using ccf::Status;
using ccf::store::LogError;
using ccf::store::LogStore;
using ccf::store::LogStoreOptions;
using ccf::store::SyncPolicy;

// A fresh directory under the system's temporary directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* test = testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("ccf-log-" + std::string(test->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path log() const { return path_ / LogStore::kLogFileName; }

 private:
  fs::path path_;
};

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_file(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// Deterministic data of varying length for entry i.
std::string data_for(std::uint64_t i, std::size_t max_bytes = 300) {
  std::mt19937_64 rng(i * 7919 + 1);
  std::string data(rng() % max_bytes, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  return data;
}

// n, or n / 4 under a sanitizer.
std::uint64_t scaled(std::uint64_t n) {
  return ccf::testing::scaled<std::uint64_t>(n, 4);
}

std::string key_for(std::uint64_t i) {
  return "key-" + std::to_string(i);
}

LogStoreOptions fast_options() {
  LogStoreOptions options;
  options.sync = SyncPolicy::kNone;
  return options;
}

TEST(LogStore, ContentKeysAreSha1AndDuplicatesAreRefusedBeforeWriting) {
  TempDir dir;
  LogStore store(dir.path(), fast_options());
  const auto first = store.put("abc");
  EXPECT_EQ(first.status, Status::kOk);
  EXPECT_EQ(ccf::store::to_hex(ccf::store::as_key(first.key)),
            "a9993e364706816aba3e25717850c26c9cd0d89d");  // FIPS 180 test vector
  const std::uint64_t bytes = store.stats().log_bytes;
  EXPECT_EQ(store.put("abc").status, Status::kExists);
  EXPECT_EQ(store.put("user key", "v1"), Status::kOk);
  EXPECT_EQ(store.put("user key", "v2"), Status::kExists);
  EXPECT_EQ(store.stats().log_bytes, bytes + 16 + 8 + 2);  // only the user key's entry
  EXPECT_EQ(store.get("user key"), "v1");
  EXPECT_EQ(store.get(ccf::store::as_key(first.key)), "abc");
  EXPECT_EQ(store.erase("user key"), Status::kOk);
  EXPECT_EQ(store.erase("user key"), Status::kNotFound);
  EXPECT_FALSE(store.get("user key"));
  EXPECT_EQ(store.put("user key", "v3"), Status::kOk);  // a deleted key may be stored again
  EXPECT_EQ(store.get("user key"), "v3");
  EXPECT_EQ(store.put("empty", ""), Status::kOk);
  EXPECT_EQ(store.get("empty"), "");
}

// Weak hash for the model test: 1023 distinct tags, so tag matches between different keys
// (which must be told apart by reading the log) are common in a tiny index.
std::uint64_t colliding_hash(std::string_view key) {
  return ccf::hash_key(key) & ~0xfc00ULL;
}

TEST(LogStore, MatchesAModelThroughCollisionsGrowthReopenAndCompaction) {
  TempDir dir;
  LogStoreOptions options = fast_options();
  options.initial_buckets = 1;
  options.key_hash = colliding_hash;
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(42);
  const std::uint64_t steps = scaled(60'000);
  auto store = std::make_unique<LogStore>(dir.path(), options);
  std::uint64_t doublings = 0;
  for (std::uint64_t step = 0; step < steps; ++step) {
    const std::string key = key_for(rng() % 2000);
    const unsigned action = static_cast<unsigned>(rng() % 100);
    if (action < 55) {
      const std::string data = data_for(step, 40);
      const bool fresh = !model.count(key);
      ASSERT_EQ(store->put(key, data), fresh ? Status::kOk : Status::kExists) << step;
      if (fresh) model[key] = data;
    } else if (action < 85) {
      ASSERT_EQ(store->erase(key), model.erase(key) ? Status::kOk : Status::kNotFound) << step;
    } else if (action < 99) {
      const auto found = store->get(key);
      const auto expected = model.find(key);
      ASSERT_EQ(found.has_value(), expected != model.end()) << step;
      if (found) {
        ASSERT_EQ(*found, expected->second) << step;
      }
    } else if (action == 99 && rng() % 8 == 0) {
      if (rng() % 2) {
        store->compact();
        ASSERT_EQ(store->stats().log_bytes, store->stats().live_bytes);
      } else {
        doublings += store->stats().index_doublings;  // a reopened index starts presized
        store.reset();
        store = std::make_unique<LogStore>(dir.path(), options);
        ASSERT_EQ(store->recovery().torn_tail_bytes, 0u);
      }
    }
    if (step % 5000 == 0 || step + 1 == steps) {
      const auto stats = store->stats();
      ASSERT_EQ(stats.live_entries, model.size()) << step;
      std::uint64_t listed = 0;
      store->for_each([&](std::string_view k, std::uint64_t data_bytes) {
        ++listed;
        const auto it = model.find(std::string(k));
        ASSERT_NE(it, model.end());
        ASSERT_EQ(data_bytes, it->second.size());
      });
      ASSERT_EQ(listed, model.size());
      for (const auto& [k, v] : model) ASSERT_EQ(store->get(k), v) << step;
    }
  }
  const auto stats = store->stats();
  EXPECT_GT(doublings + stats.index_doublings, 3u);  // from 1 bucket
  EXPECT_GT(stats.false_tag_matches, 0u);
  EXPECT_GT(stats.kicks, 0u);
}

TEST(LogStore, GrowsTheIndexFromTheLogWhenKicksRunOut) {
  TempDir dir;
  LogStoreOptions options = fast_options();
  options.initial_buckets = 4;
  LogStore store(dir.path(), options);
  const std::uint64_t n = scaled(50'000);
  for (std::uint64_t i = 0; i < n; ++i)
    ASSERT_EQ(store.put(key_for(i), data_for(i, 24)), Status::kOk);
  const auto stats = store.stats();
  EXPECT_GE(stats.index_doublings, 10u);
  EXPECT_EQ(stats.live_entries, n);
  EXPECT_GT(stats.index_load, 0.45);  // doubling happens near full, not early
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(store.get(key_for(i)), data_for(i, 24));
  EXPECT_FALSE(store.get("absent"));
}

TEST(LogStore, CompactionKeepsLiveEntriesAndShrinksTheLog) {
  TempDir dir;
  {
    LogStore store(dir.path(), fast_options());
    for (std::uint64_t i = 0; i < 2000; ++i) store.put(key_for(i), data_for(i));
    for (std::uint64_t i = 0; i < 2000; i += 2) ASSERT_EQ(store.erase(key_for(i)), Status::kOk);
    const auto before = store.stats();
    EXPECT_EQ(before.dead_entries, 2000u);
    std::uint64_t last_done = 0;
    const auto report = store.compact([&](std::uint64_t done, std::uint64_t total) {
      EXPECT_EQ(total, 1000u);
      last_done = done;
    });
    EXPECT_EQ(last_done, 1000u);
    EXPECT_EQ(report.entries, 1000u);
    EXPECT_EQ(report.bytes_before, before.log_bytes);
    EXPECT_EQ(report.bytes_after, before.live_bytes);
    EXPECT_EQ(fs::file_size(dir.log()), report.bytes_after);
    EXPECT_EQ(store.stats().dead_entries, 0u);
    EXPECT_EQ(store.put(key_for(1), "x"), Status::kExists);
    EXPECT_EQ(store.put(key_for(0), "again"), Status::kOk);  // appended after compaction
  }
  write_file(dir.path() / LogStore::kCompactFileName, "left over by a crash");
  LogStore store(dir.path(), fast_options());
  EXPECT_FALSE(fs::exists(dir.path() / LogStore::kCompactFileName));
  EXPECT_EQ(store.get(key_for(0)), "again");
  for (std::uint64_t i = 1; i < 2000; ++i) {
    ASSERT_EQ(store.get(key_for(i)), i % 2 ? std::optional(data_for(i)) : std::nullopt) << i;
  }
}

// Writes five entries and returns the log's size before the last one.
std::uint64_t five_entries(const fs::path& dir) {
  LogStore store(dir, fast_options());
  for (std::uint64_t i = 0; i < 4; ++i) store.put(key_for(i), data_for(i));
  const std::uint64_t before_last = store.stats().log_bytes;
  store.put(key_for(4), "the last entry, which a crash may tear");
  return before_last;
}

TEST(LogStore, ATornTailIsIgnoredAtEveryCutAndCutOffWhenWritable) {
  TempDir dir;
  const std::uint64_t before_last = five_entries(dir.path());
  const std::string whole = read_file(dir.log());
  for (std::uint64_t cut = before_last + 1; cut < whole.size(); ++cut) {
    write_file(dir.log(), whole.substr(0, cut));
    {
      LogStoreOptions read_only = fast_options();
      read_only.read_only = true;
      LogStore reader(dir.path(), read_only);
      EXPECT_EQ(reader.recovery().torn_tail_bytes, cut - before_last);
      EXPECT_FALSE(reader.get(key_for(4)));
      EXPECT_EQ(fs::file_size(dir.log()), cut);  // read-only: the file is not touched
    }
    LogStore store(dir.path(), fast_options());
    EXPECT_EQ(fs::file_size(dir.log()), before_last) << cut;
    for (std::uint64_t i = 0; i < 4; ++i) ASSERT_EQ(store.get(key_for(i)), data_for(i));
    EXPECT_FALSE(store.get(key_for(4)));
  }
  // A complete last entry with a bad byte, and zeros after the last entry, are torn tails too.
  std::string flipped = whole;
  flipped.back() = static_cast<char>(flipped.back() ^ 1);
  write_file(dir.log(), flipped);
  EXPECT_FALSE(LogStore(dir.path(), fast_options()).get(key_for(4)));
  write_file(dir.log(), whole + std::string(4096, '\0'));
  LogStore store(dir.path(), fast_options());
  EXPECT_EQ(store.recovery().torn_tail_bytes, 4096u);
  EXPECT_EQ(store.get(key_for(4)), "the last entry, which a crash may tear");
}

TEST(LogStore, CorruptionBeforeTheTailIsRefusedAndLeavesTheFileAlone) {
  TempDir dir;
  five_entries(dir.path());
  std::string bytes = read_file(dir.log());
  bytes[ccf::store::kFileHeaderBytes + 20] ^= 0x40;  // inside the first entry's key
  write_file(dir.log(), bytes);
  try {
    LogStore store(dir.path(), fast_options());
    FAIL() << "a corrupt log was opened";
  } catch (const LogError& error) {
    EXPECT_NE(std::string(error.what()).find("corrupt entry at offset 16"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(read_file(dir.log()), bytes);
}

TEST(LogStore, AnEntryCorruptedAfterOpeningIsNeverServed) {
  TempDir dir;
  LogStore store(dir.path(), fast_options());
  store.put("k", std::string(100, 'a'));
  {
    std::fstream file(dir.log(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(ccf::store::kFileHeaderBytes + 16 + 1 + 50));
    file.put('b');
  }
  EXPECT_THROW(store.get("k"), LogError);
  EXPECT_TRUE(store.contains("k"));  // the key itself is intact; its data is not served
}

TEST(LogStore, ForeignMissingLockedAndOtherVersionLogsGetClearErrors) {
  TempDir dir;
  auto error_of = [&](LogStoreOptions options) -> std::string {
    try {
      LogStore store(dir.path(), options);
    } catch (const LogError& error) {
      return error.what();
    }
    return "opened";
  };
  LogStoreOptions read_only;
  read_only.read_only = true;
  EXPECT_NE(error_of(read_only).find("no log store here"), std::string::npos);
  LogStoreOptions no_create;
  no_create.create = false;
  EXPECT_NE(error_of(no_create).find("no log store here"), std::string::npos);

  fs::create_directories(dir.path());
  write_file(dir.log(), "hello, I am a text file and no log at all\n");
  EXPECT_NE(error_of({}).find("not a ccf log"), std::string::npos);
  write_file(dir.log(), "hi");
  EXPECT_NE(error_of({}).find("too short"), std::string::npos);

  auto header = ccf::store::encode_file_header();
  const std::uint32_t version = 2;
  std::memcpy(header.data() + 8, &version, 4);
  const auto check = static_cast<std::uint32_t>(XXH3_64bits(header.data(), 12));
  std::memcpy(header.data() + 12, &check, 4);
  write_file(dir.log(), std::string(header.data(), header.size()));
  EXPECT_NE(error_of({}).find("version 2"), std::string::npos);
  header[13] ^= 1;
  write_file(dir.log(), std::string(header.data(), header.size()));
  EXPECT_NE(error_of({}).find("checksum"), std::string::npos);

  // An interrupted creation (a prefix of the header) is finished by a writer, not a reader.
  const auto fresh = ccf::store::encode_file_header();
  write_file(dir.log(), std::string(fresh.data(), 5));
  EXPECT_NE(error_of(read_only).find("incomplete"), std::string::npos);
  {
    LogStore writer(dir.path(), fast_options());
    EXPECT_EQ(fs::file_size(dir.log()), ccf::store::kFileHeaderBytes);
    EXPECT_NE(error_of({}).find("in use by a writer"), std::string::npos);
    EXPECT_NE(error_of(read_only).find("in use by a writer"), std::string::npos);
    writer.put("k", "v");
  }
  LogStore reader_a(dir.path(), read_only);
  LogStore reader_b(dir.path(), read_only);  // readers share
  EXPECT_EQ(reader_b.get("k"), "v");
  EXPECT_THROW(reader_a.put("k2", "v"), LogError);
  EXPECT_THROW(reader_a.erase("k"), LogError);
}

TEST(LogStore, BadArgumentsAreRefusedAndChangeNothing) {
  TempDir dir;
  LogStoreOptions options = fast_options();
  options.sync_every = 0;
  EXPECT_THROW(LogStore(dir.path(), options), std::invalid_argument);
  options = fast_options();
  options.initial_buckets = 0;
  EXPECT_THROW(LogStore(dir.path(), options), std::invalid_argument);
  EXPECT_FALSE(fs::exists(dir.path()));  // refused before touching the disk
  LogStore store(dir.path(), fast_options());
  const std::uint64_t bytes = store.stats().log_bytes;
  EXPECT_THROW(store.put("", "v"), std::invalid_argument);
  EXPECT_THROW(store.put(std::string(ccf::store::kMaxKeyBytes + 1, 'k'), "v"),
               std::invalid_argument);
  EXPECT_THROW(store.erase(""), std::invalid_argument);
  EXPECT_EQ(store.stats().log_bytes, bytes);
  EXPECT_EQ(store.put(std::string(ccf::store::kMaxKeyBytes, 'k'), "v"), Status::kOk);
}

TEST(LogStore, EverySyncPolicyKeepsEntriesAcrossReopen) {
  for (const SyncPolicy policy :
       {SyncPolicy::kEveryEntry, SyncPolicy::kEveryN, SyncPolicy::kNone}) {
    TempDir dir;
    LogStoreOptions options;
    options.sync = policy;
    options.sync_every = 8;
    std::uint64_t syncs = 0;
    {
      LogStore store(dir.path(), options);
      const std::uint64_t at_creation = store.stats().syncs;
      for (std::uint64_t i = 0; i < 64; ++i) store.put(key_for(i), data_for(i));
      syncs = store.stats().syncs - at_creation;
    }
    EXPECT_EQ(syncs, policy == SyncPolicy::kEveryEntry ? 64u
                     : policy == SyncPolicy::kEveryN   ? 8u
                                                       : 0u);
    LogStore store(dir.path(), options);
    EXPECT_EQ(store.recovery().puts, 64u);
    for (std::uint64_t i = 0; i < 64; ++i) ASSERT_EQ(store.get(key_for(i)), data_for(i));
  }
}

// One entry in seven is large, so that kills often land inside a write.
std::string writer_data(std::uint64_t i) {
  return data_for(i, i % 7 == 0 ? 100'000 : 2000);
}

// A writer in a child process acknowledges each put on a pipe; the parent kills it with
// SIGKILL at a random moment, then every acknowledged entry must be found intact, the one in
// flight may or may not be, and no later one exists.
TEST(LogStore, EveryAcknowledgedEntrySurvivesSigkillAtRandomPoints) {
  TempDir dir;
  std::mt19937_64 rng(7);
  const int rounds = static_cast<int>(scaled(24));
  std::uint64_t first = 0;  // entries are numbered across rounds
  int torn_rounds = 0;
  int in_flight_rounds = 0;
  for (int round = 0; round < rounds; ++round) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      LogStoreOptions options;
      options.sync = static_cast<SyncPolicy>(round % 3);
      options.initial_buckets = 16;  // index doublings happen during the run
      LogStore store(dir.path(), options);
      for (std::uint64_t i = first;; ++i) {
        if (store.put(key_for(i), writer_data(i)) != Status::kOk) {
          ::_exit(3);
        }
        if (::write(pipe_fds[1], &i, sizeof i) != sizeof i) ::_exit(4);
      }
    }
    ::close(pipe_fds[1]);
    std::uint64_t acked = first;  // one past the last acknowledged
    const auto kill_at =
        std::chrono::steady_clock::now() + std::chrono::microseconds(2000 + rng() % 40'000);
    auto drain = [&](int timeout_ms) {
      pollfd poll_fd{pipe_fds[0], POLLIN, 0};
      while (::poll(&poll_fd, 1, timeout_ms) > 0) {
        std::uint64_t i = 0;
        const ssize_t got = ::read(pipe_fds[0], &i, sizeof i);
        if (got != sizeof i) break;
        ASSERT_EQ(i, acked);
        acked = i + 1;
      }
    };
    while (std::chrono::steady_clock::now() < kill_at) drain(1);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself: " << status;
    drain(0);
    ::close(pipe_fds[0]);

    LogStore store(dir.path(), fast_options());
    for (std::uint64_t i = first; i < acked; ++i) {
      ASSERT_EQ(store.get(key_for(i)), writer_data(i))
          << "round " << round << " acknowledged entry " << i;
    }
    const auto in_flight = store.get(key_for(acked));
    if (in_flight) {
      EXPECT_EQ(*in_flight, writer_data(acked));
    }
    EXPECT_FALSE(store.contains(key_for(acked + 1)));
    EXPECT_EQ(store.stats().live_entries, acked + (in_flight ? 1 : 0));
    first = acked + (in_flight ? 1 : 0);
    torn_rounds += store.recovery().torn_tail_bytes > 0;
    in_flight_rounds += in_flight.has_value();
  }
  // Where the kills landed (informative: the checks above hold wherever they land).
  std::printf("kills: %d rounds, %d left a torn tail, %d an unacknowledged intact entry\n", rounds,
              torn_rounds, in_flight_rounds);
}

TEST(LogStore, ReadersRunBesideAWriter) {
  TempDir dir;
  LogStore store(dir.path(), fast_options());
  for (std::uint64_t i = 0; i < 500; ++i) store.put(key_for(i), data_for(i));
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  std::atomic<std::uint64_t> reads{0};
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t));
      while (!done.load(std::memory_order_acquire)) {
        const std::uint64_t i = rng() % 500;
        ASSERT_EQ(store.get(key_for(i)), data_for(i));
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (std::uint64_t i = 500; i < 500 + scaled(5000); ++i) {
    ASSERT_EQ(store.put(key_for(i), data_for(i)), Status::kOk);
    if (i % 3 == 0) {
      ASSERT_EQ(store.erase(key_for(i)), Status::kOk);
    }
    if (i % 1000 == 0) store.compact();
  }
  done.store(true, std::memory_order_release);
  for (auto& reader : readers) reader.join();
  EXPECT_GT(reads.load(), 0u);
}

}  // namespace
