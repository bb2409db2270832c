// `ccf build | query | info | erase | merge`: cuckoo filter files from the shell.
//
// build reads every key first (one per line, or 8-byte little-endian integers with
// --binary-u64) and drops repeats, so that the capacity can be the number of distinct keys when
// none is given, then inserts them from --threads threads into the concurrent
// StripedCuckooFilter (shapes it does not take: the sequential filter, one thread, said so) and
// saves it (output_file.hpp: a new temporary renamed over the output; a failed build leaves
// nothing).
// The other commands load a file of any shape (AnyCuckooFilter). Files are the library's format
// (docs/file-format.md): every ccf filter loads them.
#include "filter_commands.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "output_file.hpp"
#include "progress.hpp"

namespace ccf_tool {
namespace {

namespace fs = std::filesystem;

struct FilterArgs {
  std::vector<std::string> inputs;  // key files; "-" or none: standard input
  std::string file;                 // the filter file (query, info, erase)
  std::string output;               // build -o
  unsigned fp_bits = 12;
  unsigned bucket = 4;
  std::uint64_t capacity = 0;  // 0: the number of keys
  unsigned threads = 0;        // 0: every core
  bool semi_sorted = false;
  bool binary = false;
  bool count = false;
  bool json = false;
};

// The keys of a command: text lines or 64-bit integers.
struct Keys {
  std::vector<std::string> text;
  std::vector<std::uint64_t> binary;
  std::size_t size() const { return text.size() + binary.size(); }
};

void read_stream(std::istream& in, const std::string& name, bool binary, Keys& keys) {
  if (binary) {
    std::uint64_t key = 0;
    while (in.read(reinterpret_cast<char*>(&key), sizeof key)) keys.binary.push_back(key);
    if (in.bad()) throw ToolError(name + ": read error");
    if (in.gcount() != 0) {
      throw ToolError(name + ": " + std::to_string(in.gcount()) +
                      " bytes left over: --binary-u64 input is a whole number of 8-byte keys");
    }
    return;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    keys.text.push_back(std::move(line));
  }
  if (in.bad()) throw ToolError(name + ": read error");
}

Keys read_keys(const std::vector<std::string>& inputs, bool binary) {
  Keys keys;
  if (inputs.empty() || (inputs.size() == 1 && inputs[0] == "-")) {
    if (::fcntl(0, F_GETFD) < 0) {
      throw ToolError("standard input is closed: name key files, or pipe the keys in");
    }
    read_stream(std::cin, "standard input", binary, keys);
    return keys;
  }
  for (const std::string& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    if (!in || fs::is_directory(input)) throw ToolError(input + ": cannot open for reading");
    read_stream(in, input, binary, keys);
  }
  return keys;
}

ccf::AnyCuckooFilter load_filter(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in || fs::is_directory(file)) throw ToolError(file + ": cannot open for reading");
  try {
    ccf::AnyCuckooFilter filter = ccf::AnyCuckooFilter::load(in);
    // A file is one filter: bytes after its checksummed payload mean it was not written whole
    // by a ccf tool (appended to, or two files joined).
    in.peek();
    if (!in.eof()) {
      in.clear();
      const std::streamoff at = in.tellg();
      in.seekg(0, std::ios::end);
      throw ToolError(fmt::format(
          "{}: not a usable ccf filter file: {} bytes after the filter's payload (it ends at "
          "byte {})",
          file, static_cast<std::streamoff>(in.tellg()) - at, at));
    }
    return filter;
  } catch (const ccf::FormatError& error) {
    throw ToolError(file + ": not a usable ccf filter file: " + error.what());
  }
}

template <class Filter>
void save_filter(const Filter& filter, const std::string& file) {
  OutputFile out(file);
  try {
    filter.save(out.stream());
  } catch (const std::exception&) {
    if (!out.write_failed()) throw;  // the library names a stream error only as "iostream error"
  }
  out.commit();  // names the write error, if any, and removes the temporary
}

// A table that cannot be allocated, named with its size (the table's bytes alone; the filter's
// other state is small).
[[noreturn]] void unallocatable(std::uint64_t capacity, unsigned fp_bits) {
  const double bytes = static_cast<double>(capacity) * fp_bits / 8;
  throw ToolError(fmt::format(
      "--capacity {}: the filter's table needs at least {:.0f} bytes ({:.1f} GiB), which could "
      "not be allocated; give a smaller --capacity",
      capacity, bytes, bytes / (1u << 30)));
}

// An exclusive lock on the filter file for a read-modify-write (erase): concurrent erases of
// one file are applied one after another. A rewrite renames a new inode over the path, so a
// waiter that wakes holding the old inode's lock takes the new one's instead.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    for (;;) {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw ToolError(path + ": cannot open for reading: " + std::strerror(errno));
      struct stat held, named;
      int locked;
      while ((locked = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
      }
      if (locked != 0) {
        const int error = errno;
        ::close(fd_);
        throw ToolError(path + ": cannot lock: " + std::strerror(error));
      }
      if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
          held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
        return;
      }
      ::close(fd_);
    }
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// The shapes the concurrent filter builds: StripedCuckooFilter<F, b>, F * b <= 64.
template <unsigned F, unsigned B>
struct Shape {};
using BuildShapes =
    std::tuple<Shape<4, 2>, Shape<4, 4>, Shape<4, 8>, Shape<8, 2>, Shape<8, 4>, Shape<8, 8>,
               Shape<12, 2>, Shape<12, 4>, Shape<16, 2>, Shape<16, 4>, Shape<32, 2>>;

template <unsigned F, unsigned B>
int build_as(const FilterArgs& a, const Keys& keys) {
  const std::uint64_t capacity = a.capacity ? a.capacity : keys.size();
  std::optional<ccf::StripedCuckooFilter<F, B>> made;
  try {
    made.emplace(capacity);
  } catch (const std::bad_alloc&) {
    unallocatable(capacity, F);
  }
  auto& filter = *made;
  const unsigned threads =
      a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> full{false};
  Progress progress("build", keys.size(), "keys");
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::size_t begin = keys.size() * t / threads;
      const std::size_t end = keys.size() * (t + 1) / threads;
      for (std::size_t i = begin; i < end && !full.load(std::memory_order_relaxed); ++i) {
        const ccf::Status status =
            keys.text.empty() ? filter.insert(keys.binary[i]) : filter.insert(keys.text[i]);
        if (status == ccf::Status::kFull) full.store(true, std::memory_order_relaxed);
        done.fetch_add(1, std::memory_order_relaxed);
        if (t == 0 && (i - begin) % 65536 == 0)
          progress.update(done.load(std::memory_order_relaxed));
      }
    });
  }
  for (auto& worker : workers) worker.join();
  if (full) {
    throw ToolError("the filter filled up after about " + std::to_string(filter.size()) + " of " +
                    std::to_string(keys.size()) + " keys (capacity " + std::to_string(capacity) +
                    "): give a larger --capacity; nothing was written");
  }
  progress.update(keys.size(), true);
  save_filter(filter, a.output);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr,
             "built {} ({}): {} keys, capacity {} ({}), load {:.3f}, {:.2f} bits/item, "
             "{:.2f} M keys/s on {} threads\n",
             a.output, filter.shape(), filter.size(), capacity,
             a.capacity ? "given" : "the number of keys, counted in a first pass",
             filter.load_factor(), filter.bits_per_item(),
             static_cast<double>(keys.size()) / seconds / 1e6, threads);
  return 0;
}

// Sorts the keys and drops repeats: a filter holds a set (inserting a key twice would store two
// fingerprints, and more than 2b copies of one key cannot be stored at all).
template <class Key>
std::size_t drop_repeats(std::vector<Key>& keys) {
  std::sort(keys.begin(), keys.end());
  const std::size_t before = keys.size();
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return before - keys.size();
}

// Shapes the concurrent filter does not take (F * b > 64, or semi-sorted): the sequential filter
// on one thread, said so.
int build_sequentially(const FilterArgs& a, const Keys& keys) {
  const std::uint64_t capacity = a.capacity ? a.capacity : keys.size();
  std::optional<ccf::AnyCuckooFilter> filter;
  try {
    filter.emplace(ccf::FilterParams{.capacity = capacity,
                                     .fp_bits = a.fp_bits,
                                     .slots_per_bucket = a.bucket,
                                     .semi_sorted = a.semi_sorted});
  } catch (const std::invalid_argument& error) {
    throw CLI::ValidationError("--fp-bits/--bucket/--semi-sorted", error.what());
  } catch (const std::bad_alloc&) {
    unallocatable(capacity, a.fp_bits);
  }
  fmt::print(stderr,
             "build: the concurrent filter does not take this shape; building on one "
             "thread with the sequential filter\n");
  Progress progress("build", keys.size(), "keys");
  std::size_t done = 0;
  const auto insert_all = [&](const auto& list) {
    for (const auto& key : list) {
      if (filter->insert(key) != ccf::Status::kOk) return false;
      if ((++done & 0xffff) == 0) progress.update(done);
    }
    return true;
  };
  if (!insert_all(keys.text) || !insert_all(keys.binary)) {
    throw ToolError("the filter filled up after " + std::to_string(done) + " of " +
                    std::to_string(keys.size()) + " keys (capacity " + std::to_string(capacity) +
                    "): give a larger --capacity; nothing was written");
  }
  progress.update(done, true);
  save_filter(*filter, a.output);
  fmt::print(stderr, "built {} ({}): {} keys, load {:.3f}, {:.2f} bits/item\n", a.output,
             filter->shape(), filter->size(), filter->load_factor(), filter->bits_per_item());
  return 0;
}

int build(const FilterArgs& a) {
  check_output_target("--output", a.output);
  Keys keys = read_keys(a.inputs, a.binary);
  if (keys.size() == 0) throw ToolError("no keys in the input: nothing to build");
  const std::size_t repeats = drop_repeats(keys.text) + drop_repeats(keys.binary);
  if (repeats > 0) fmt::print(stderr, "build: {} repeated keys dropped\n", repeats);
  int result = -1;
  std::apply(
      [&](auto... shapes) {
        const auto try_shape = [&]<unsigned F, unsigned B>(Shape<F, B>) {
          if (result < 0 && !a.semi_sorted && F == a.fp_bits && B == a.bucket) {
            result = build_as<F, B>(a, keys);
          }
        };
        (try_shape(shapes), ...);
      },
      BuildShapes{});
  return result >= 0 ? result : build_sequentially(a, keys);
}

// Keys are looked up 4096 at a time through the batched pipeline.
template <class Key, class Each>
std::size_t query_keys(const ccf::AnyCuckooFilter& filter, const std::vector<Key>& keys,
                       Each&& each) {
  constexpr std::size_t kChunk = 4096;
  const auto found = std::make_unique<bool[]>(kChunk);
  std::size_t hits = 0;
  for (std::size_t at = 0; at < keys.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, keys.size() - at);
    bool* const out = found.get();
    hits +=
        filter.contains_many(std::span<const Key>(keys.data() + at, n), std::span<bool>(out, n));
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i]) each(keys[at + i]);
    }
  }
  return hits;
}

int query(const FilterArgs& a) {
  const ccf::AnyCuckooFilter filter = load_filter(a.file);
  const Keys keys = read_keys(a.inputs, a.binary);
  std::string out;
  const auto print = [&](const auto& key) {
    if (a.count) return;
    if constexpr (std::is_same_v<std::decay_t<decltype(key)>, std::string>) {
      out += key;
    } else {
      out += std::to_string(key);
    }
    out += '\n';
    if (out.size() > (1 << 16)) {
      write_stdout(out);
      out.clear();
    }
  };
  const std::size_t hits = keys.text.empty() ? query_keys(filter, keys.binary, print)
                                             : query_keys(filter, keys.text, print);
  if (a.count) out += std::to_string(hits) + '\n';
  write_stdout(out);
  if (keys.size() == 0) fmt::print(stderr, "query: no keys read, so none hit\n");
  return hits > 0 ? 0 : 1;
}

int info(const FilterArgs& a) {
  const ccf::AnyCuckooFilter filter = load_filter(a.file);
  // False-positive rate at this load: a lookup compares 2b slots, each occupied with
  // probability `load` and then matching with probability 2^-F.
  const double load = filter.load_factor();
  const double fpr =
      1.0 - std::pow(1.0 - load * std::ldexp(1.0, -static_cast<int>(filter.fp_bits())),
                     2.0 * filter.slots_per_bucket());
  if (a.json) {
    // A file name is any bytes: invalid UTF-8 is replaced, not refused.
    const nlohmann::ordered_json report = {{"file", a.file},
                                           {"shape", filter.shape()},
                                           {"fp_bits", filter.fp_bits()},
                                           {"slots_per_bucket", filter.slots_per_bucket()},
                                           {"items", filter.size()},
                                           {"capacity", filter.capacity()},
                                           {"load", load},
                                           {"bits_per_item", filter.bits_per_item()},
                                           {"expected_fpr", fpr},
                                           {"memory_bytes", filter.memory_bytes()},
                                           {"victim_used", filter.victim_used()}};
    fmt::print("{}\n", report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  }
  fmt::print(
      "file          {}\nshape         {}\nitems         {}\ncapacity      {} slots\n"
      "load          {:.4f}\nbits per item {:.2f}\nexpected FPR  {:.4g} ({:.4f}%)\n"
      "memory        {} bytes\n",
      a.file, filter.shape(), filter.size(), filter.capacity(), load, filter.bits_per_item(), fpr,
      100 * fpr, filter.memory_bytes());
  return 0;
}

int erase(const FilterArgs& a) {
  check_output_target("FILE", a.file);
  const Keys keys = read_keys(a.inputs, a.binary);
  const FileLock lock(a.file);
  ccf::AnyCuckooFilter filter = load_filter(a.file);
  std::size_t erased = 0;
  for (const std::string& key : keys.text) erased += filter.erase(key) == ccf::Status::kOk;
  for (const std::uint64_t key : keys.binary) erased += filter.erase(key) == ccf::Status::kOk;
  save_filter(filter, a.file);
  fmt::print(stderr, "erased {} of {} keys ({} had no fingerprint in the filter)\n", erased,
             keys.size(), keys.size() - erased);
  return erased == keys.size() ? 0 : 1;
}

int merge(const FilterArgs& a) {
  if (a.inputs.size() != 2) throw CLI::ValidationError("merge", "takes two filter files");
  check_output_target("--output", a.output);
  ccf::AnyCuckooFilter merged = load_filter(a.inputs[0]);
  const ccf::AnyCuckooFilter other = load_filter(a.inputs[1]);
  const std::size_t both = merged.size() + other.size();
  ccf::Status status = ccf::Status::kOk;
  try {
    status = merged.merge(other);
  } catch (const std::invalid_argument& error) {
    throw ToolError(a.inputs[0] + " and " + a.inputs[1] + " cannot be merged: " + error.what());
  }
  if (status != ccf::Status::kOk) {
    throw ToolError("the merged filter would not hold every item of both (" +
                    std::to_string(merged.size()) + " of " + std::to_string(both) +
                    " fit): build both with a larger --capacity; nothing was written");
  }
  save_filter(merged, a.output);
  fmt::print(stderr, "merged {} and {} into {}: {} items, load {:.3f}\n", a.inputs[0], a.inputs[1],
             a.output, merged.size(), merged.load_factor());
  return 0;
}

}  // namespace

std::function<int()> add_filter_commands(CLI::App& app) {
  auto a = std::make_shared<FilterArgs>();
  auto chosen = std::make_shared<int (*)(const FilterArgs&)>(nullptr);
  auto add = [&](const char* name, const char* help, int (*run)(const FilterArgs&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->callback([chosen, run] { *chosen = run; });
    sub->add_flag("--binary-u64", a->binary, "Keys are 8-byte little-endian integers, not lines");
    return sub;
  };
  CLI::App* b = add("build", "Build a filter file from keys (one per line)", build);
  b->add_option("KEYS", a->inputs, "Key files ('-' or none: standard input)");
  b->add_option("-o,--output", a->output, "Filter file to write")->required();
  b->add_option("--fp-bits", a->fp_bits, "Fingerprint bits: 4, 8, 12, 16 or 32");
  b->add_option("--bucket", a->bucket, "Slots per bucket: 2, 4 or 8");
  b->add_flag("--semi-sorted", a->semi_sorted,
              "Semi-sorted buckets (F - 1 bits a slot; 8, 12 or 16 bits, 4 slots; one thread)");
  b->add_option("--capacity", a->capacity, "Items to size for (default: the number of keys)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  b->add_option("--threads", a->threads, "Insert threads (default: every core)")
      ->check(CLI::Range(1, 1024));
  b->footer("Example: ccf build /usr/share/dict/words -o words.ccf --fp-bits 16");
  CLI::App* q = add("query", "Print the keys the filter may hold (exit 1 if none)", query);
  q->add_option("FILE", a->file, "Filter file")->required();
  q->add_option("KEYS", a->inputs, "Key files ('-' or none: standard input)");
  q->add_flag("--count", a->count, "Print only the number of hits");
  q->footer("Example: printf 'apple\\nzzzz\\n' | ccf query words.ccf");
  CLI::App* i =
      add("info", "Shape, items, load, bits per item, expected false-positive rate", info);
  i->add_option("FILE", a->file, "Filter file")->required();
  i->add_flag("--json", a->json, "One JSON object");
  CLI::App* e = add("erase", "Erase keys that were inserted (exit 1 if some had none)", erase);
  e->add_option("FILE", a->file, "Filter file (rewritten)")->required();
  e->add_option("KEYS", a->inputs, "Key files ('-' or none: standard input)");
  e->footer(
      "Erase only keys that were inserted: erasing another key may remove a colliding key's "
      "fingerprint.");
  CLI::App* m = add("merge", "Merge two filters of one shape, capacity and seed", merge);
  m->add_option("A B", a->inputs, "The two filter files")->required()->expected(2);
  m->add_option("-o,--output", a->output, "Merged filter file to write")->required();
  m->footer(
      "Example: ccf merge monday.ccf tuesday.ccf -o week.ccf  (both built with the same "
      "--capacity, shape and seed)");
  return [a, chosen] { return *chosen ? (*chosen)(*a) : -1; };
}

}  // namespace ccf_tool
