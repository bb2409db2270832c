// Hostile input to every filter's load, read from streams that cannot seek: a real pipe (with a
// writer thread) and a non-seekable streambuf. Forged headers with valid checksums announce
// 64 TiB, 32 GiB or 2 GiB with little or nothing behind them; payloads end early, lose their
// checksum or fail it. Each must give a FormatError with the exact message, hold no more memory
// than the bytes delivered plus one payload chunk -- counted three ways: operator new (replaced
// below, in unsanitized builds), and address space and resident memory sampled every time the
// load pulls bytes from the stream, which also catches a table mmap'ed before its payload is
// read. (Every load is a static factory: a failed one leaves nothing behind to check.) Good files
// still load through both streams.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <istream>
#include <memory>
#include <new>
#include <sstream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/detail/filter_format.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "saved_bytes.hpp"
#include "test_keys.hpp"

// As in sanitizer_scale.hpp: the sanitizer runtimes bring their own operator new.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CCF_COUNT_HEAP 0
#else
#define CCF_COUNT_HEAP 1
#endif

#if CCF_COUNT_HEAP
// Global operator new / delete, counting the bytes live (malloc_usable_size) and their peak.
namespace {
std::atomic<std::size_t> g_heap_now{0};
std::atomic<std::size_t> g_heap_peak{0};

void* counted(void* p) noexcept {
  if (p == nullptr) return p;
  const std::size_t size = malloc_usable_size(p);
  const std::size_t now = g_heap_now.fetch_add(size, std::memory_order_relaxed) + size;
  std::size_t peak = g_heap_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_heap_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return p;
}
void* try_allocate(std::size_t n) noexcept {
  return counted(std::malloc(std::max<std::size_t>(n, 1)));
}
void* try_allocate(std::size_t n, std::align_val_t align) noexcept {
  void* p = nullptr;
  const std::size_t alignment = std::max(static_cast<std::size_t>(align), sizeof(void*));
  return posix_memalign(&p, alignment, std::max<std::size_t>(n, 1)) == 0 ? counted(p) : nullptr;
}
template <class... Align>
void* allocate(std::size_t n, Align... align) {
  if (void* p = try_allocate(n, align...)) return p;
  throw std::bad_alloc();
}
void release(void* p) noexcept {
  if (p == nullptr) return;
  g_heap_now.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

void* operator new(std::size_t n) {
  return allocate(n);
}
void* operator new[](std::size_t n) {
  return allocate(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate(n, a);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return try_allocate(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return try_allocate(n);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return try_allocate(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return try_allocate(n, a);
}
void operator delete(void* p) noexcept {
  release(p);
}
void operator delete[](void* p) noexcept {
  release(p);
}
void operator delete(void* p, std::size_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  release(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  release(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  release(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  release(p);
}
#endif

namespace {

using ccf::FormatError;
using ccf::Status;
using ccf::detail::FilterHeader;
using ccf::detail::HeaderCodec;
using ccf::detail::kMaxTableBytes;
using ccf::detail::kPayloadChunkBytes;
using ccf::testing::member_keys;

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
// Allowed beyond the bytes delivered and one payload chunk: messages, the chunk list, the
// exception (heap); allocator and page granularity (address space, resident memory).
constexpr std::uint64_t kHeapSlack = 64 << 10;
constexpr std::uint64_t kMappedSlack = 8 * kMiB;
// ThreadSanitizer keeps shadow memory for every byte touched, resident beside it.
#if defined(__SANITIZE_THREAD__)
constexpr std::uint64_t kResidentPerByte = 8;
#else
constexpr std::uint64_t kResidentPerByte = 1;
#endif

// ---- memory while a load runs -----------------------------------------------------------------

// Address space and resident bytes of this process (/proc/self/statm), read without allocating.
struct MemoryNow {
  std::uint64_t mapped = 0;
  std::uint64_t resident = 0;

  static MemoryNow read() {
    std::array<char, 256> text{};
    const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    const ssize_t length = fd < 0 ? -1 : ::read(fd, text.data(), text.size() - 1);
    if (fd >= 0) ::close(fd);
    MemoryNow now;
    if (length <= 0) return now;
    const char* end = text.data() + length;
    const auto pages = std::from_chars(text.data(), end, now.mapped);
    std::from_chars(pages.ptr + 1, end, now.resident);
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    now.mapped *= page;
    now.resident *= page;
    return now;
  }
};

// Peaks over one load, as growth over its start: the streams call sample() whenever the load
// asks them for more bytes.
class Watch {
 public:
  struct Peaks {
    std::uint64_t heap = 0;  // 0 where operator new is not counted
    std::uint64_t mapped = 0;
    std::uint64_t resident = 0;
  };

  Watch() : start_(MemoryNow::read()), peak_(start_) {
#if CCF_COUNT_HEAP
    heap_start_ = g_heap_now.load();
    g_heap_peak.store(heap_start_);
#endif
    active_ = this;
  }
  ~Watch() {
    active_ = nullptr;
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  static void sample() {
    if (active_ == nullptr) return;
    const MemoryNow now = MemoryNow::read();
    active_->peak_.mapped = std::max(active_->peak_.mapped, now.mapped);
    active_->peak_.resident = std::max(active_->peak_.resident, now.resident);
  }

  Peaks peaks() const {
    sample();
    Peaks p;
#if CCF_COUNT_HEAP
    p.heap = g_heap_peak.load() - heap_start_;
#endif
    p.mapped = peak_.mapped - start_.mapped;
    p.resident = peak_.resident > start_.resident ? peak_.resident - start_.resident : 0;
    return p;
  }

 private:
  static inline Watch* active_ = nullptr;
  MemoryNow start_;
  MemoryNow peak_;
  std::size_t heap_start_ = 0;
};

// ---- streams that cannot seek -----------------------------------------------------------------

// Reads a file descriptor; no seekoff/seekpos, so tellg() is -1 as on a pipe or socket.
class FdStreambuf : public std::streambuf {
 public:
  explicit FdStreambuf(int fd) : fd_(fd), buffer_(64 << 10) {}

 protected:
  int_type underflow() override {
    Watch::sample();
    const ssize_t got = ::read(fd_, buffer_.data(), buffer_.size());
    if (got <= 0) return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + got);
    return traits_type::to_int_type(buffer_[0]);
  }

 private:
  int fd_;
  std::vector<char> buffer_;
};

// Serves `head`, then `zeros` zero bytes, in pieces; cannot seek.
class SourceStreambuf : public std::streambuf {
 public:
  SourceStreambuf(std::string head, std::uint64_t zeros)
      : head_(std::move(head)), zeros_(zeros), piece_(256 << 10) {}

 protected:
  int_type underflow() override {
    Watch::sample();
    std::size_t size = 0;
    if (head_at_ < head_.size()) {
      size = std::min(piece_.size(), head_.size() - head_at_);
      std::copy_n(head_.data() + head_at_, size, piece_.data());
      head_at_ += size;
    } else if (zeros_ > 0) {
      size = static_cast<std::size_t>(std::min<std::uint64_t>(piece_.size(), zeros_));
      std::fill_n(piece_.data(), size, '\0');
      zeros_ -= size;
    } else {
      return traits_type::eof();
    }
    setg(piece_.data(), piece_.data(), piece_.data() + size);
    return traits_type::to_int_type(piece_[0]);
  }

 private:
  std::string head_;
  std::size_t head_at_ = 0;
  std::uint64_t zeros_;
  std::vector<char> piece_;
};

// `head` then `zeros` zero bytes through a pipe(2), written by a thread that allocates nothing
// once started; the load reads it through FdStreambuf.
class PipeFeed {
 public:
  PipeFeed(const std::string& head, std::uint64_t zeros) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    read_fd_ = fds[0];
    writer_ = std::thread([this, fd = fds[1], &head, zeros] {
      started_.store(true);
      static const std::array<char, 64 << 10> kZeros{};
      bool open = write_all(fd, head.data(), head.size());
      for (std::uint64_t left = zeros; open && left > 0;) {
        const std::size_t size =
            static_cast<std::size_t>(std::min<std::uint64_t>(left, kZeros.size()));
        open = write_all(fd, kZeros.data(), size);
        left -= size;
      }
      ::close(fd);
    });
    while (!started_.load()) std::this_thread::yield();
  }
  // Closing the read end unblocks a writer the load stopped reading from (EPIPE).
  ~PipeFeed() {
    ::close(read_fd_);
    writer_.join();
  }
  PipeFeed(const PipeFeed&) = delete;
  PipeFeed& operator=(const PipeFeed&) = delete;

  int fd() const { return read_fd_; }

 private:
  static bool write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
      const ssize_t put = ::write(fd, data, size);
      if (put <= 0) return false;
      data += put;
      size -= static_cast<std::size_t>(put);
    }
    return true;
  }

  int read_fd_ = -1;
  std::atomic<bool> started_{false};
  std::thread writer_;
};

// ---- the loads ----------------------------------------------------------------------------------

// One filter type's load and the shape of the files it reads.
struct Loader {
  std::string name;
  FilterHeader shape;  // layout, fingerprint bits, slots
  std::uint64_t (*payload_bytes)(std::uint64_t buckets);
  // Loads from the stream; throws what the load throws.
  std::function<void(std::istream&)> load;
  // Saves a filter of this type holding `keys`, and checks a loaded one finds them all.
  std::function<std::string(const std::vector<std::uint64_t>&)> save_with;
  std::function<bool(std::istream&, const std::vector<std::uint64_t>&)> load_finds;
};

template <class Table>
std::uint64_t payload_of(std::uint64_t buckets) {
  return Table::payload_bytes(buckets);
}

using ccf::testing::saved;

template <class Filter>
bool finds_all(const Filter& filter, const std::vector<std::uint64_t>& keys) {
  return std::all_of(keys.begin(), keys.end(), [&](std::uint64_t k) { return filter.contains(k); });
}

// Good files are this large (a payload of several chunks) and hold few keys (quick to make).
constexpr std::size_t kGoodCapacity = 1'500'000;

template <class Filter>
std::string saved_with(const std::vector<std::uint64_t>& keys) {
  Filter filter(kGoodCapacity);
  for (const std::uint64_t key : keys) {
    if (filter.insert(key) != Status::kOk) throw std::runtime_error("insert failed");
  }
  return saved(filter);
}

// Every filter's load is a static factory, so a failed load has nothing to change; the file is
// read through its table shape.
template <class Filter, class Table>
Loader static_loader(const std::string& name) {
  return {name,
          ccf::detail::shape_of<Table>(),
          payload_of<Table>,
          [](std::istream& in) { static_cast<void>(Filter::load(in)); },
          saved_with<Filter>,
          [](std::istream& in, const std::vector<std::uint64_t>& keys) {
            return finds_all(*Filter::load(in), keys);
          }};
}

template <class Table>
Loader sequential() {
  return static_loader<ccf::CuckooFilter<Table>, Table>(
      "CuckooFilter<" + ccf::detail::shape_of<Table>().shape() + ">");
}

Loader striped() {
  using Filter = ccf::StripedCuckooFilter<12, 4>;
  return static_loader<Filter, Filter::table_type>("StripedCuckooFilter<12, 4>");
}

Loader lock_free() {
  using Filter = ccf::LockFreeCuckooFilter<12>;
  return static_loader<Filter, Filter::FileTable>("LockFreeCuckooFilter<12>");
}

template <class Table>
Loader any_shape() {
  using Filter = ccf::CuckooFilter<Table>;
  return {"AnyCuckooFilter (" + ccf::detail::shape_of<Table>().shape() + ")",
          ccf::detail::shape_of<Table>(),
          payload_of<Table>,
          [](std::istream& in) { ccf::AnyCuckooFilter::load(in); },
          saved_with<Filter>,
          [](std::istream& in, const std::vector<std::uint64_t>& keys) {
            const ccf::AnyCuckooFilter loaded = ccf::AnyCuckooFilter::load(in);
            return std::all_of(keys.begin(), keys.end(),
                               [&](std::uint64_t k) { return loaded.contains(k); });
          }};
}

std::vector<Loader> all_loaders() {
  std::vector<Loader> loaders;
  loaders.push_back(sequential<ccf::PackedTable<12, 4>>());
  loaders.push_back(sequential<ccf::PackedTable<32, 8>>());
  loaders.push_back(sequential<ccf::SemiSortedTable<12>>());
  loaders.push_back(striped());
  loaders.push_back(lock_free());
  loaders.push_back(any_shape<ccf::PackedTable<16, 2>>());
  loaders.push_back(any_shape<ccf::SemiSortedTable<8>>());
  return loaders;
}

// ---- hostile inputs -----------------------------------------------------------------------------

// A header for `loader`'s shape announcing the most buckets whose payload fits in `claimed`
// bytes (whole groups of 64 buckets), with a valid header checksum.
FilterHeader forged(const Loader& loader, std::uint64_t claimed, std::uint64_t items = 0) {
  FilterHeader h = loader.shape;
  h.buckets = claimed / loader.payload_bytes(64) * 64;
  h.payload_bytes = loader.payload_bytes(h.buckets);
  h.capacity = h.buckets;
  h.items = items;
  h.seed = 7;
  h.max_kicks = 500;
  return h;
}

std::string encoded(const FilterHeader& h) {
  const auto bytes = HeaderCodec::encode(h);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// What is fed to a load: `head`, then `zeros` zero bytes.
struct Hostile {
  std::string name;
  std::string head;
  std::uint64_t zeros = 0;
  std::string message;  // the FormatError's exact text

  std::uint64_t delivered() const { return head.size() + zeros; }
};

std::string truncated_payload(std::uint64_t announced, std::uint64_t present) {
  return "truncated cuckoo filter payload: " + std::to_string(announced) + " bytes announced, " +
         std::to_string(present) + " present";
}

std::vector<Hostile> hostile_inputs(const Loader& loader) {
  std::vector<Hostile> inputs;
  const FilterHeader tib64 = forged(loader, kMaxTableBytes);
  inputs.push_back({"64 TiB announced, no payload", encoded(tib64), 0,
                    truncated_payload(tib64.payload_bytes, 0)});
  const FilterHeader gib32 = forged(loader, 32 * kGiB);
  inputs.push_back({"32 GiB announced, no payload", encoded(gib32), 0,
                    truncated_payload(gib32.payload_bytes, 0)});
  const FilterHeader gib2 = forged(loader, 2 * kGiB);
  inputs.push_back({"2 GiB announced, 8 MiB of zeros", encoded(gib2), 8 * kMiB,
                    truncated_payload(gib2.payload_bytes, 8 * kMiB)});
  const FilterHeader beyond = forged(loader, kMaxTableBytes + loader.payload_bytes(64));
  inputs.push_back({"beyond 64 TiB announced", encoded(beyond), 0,
                    "payload of " + std::to_string(beyond.payload_bytes) +
                        " bytes exceeds the 64 TiB table size limit"});
  // A payload of 2.5 MiB: whole chunks and a partial one.
  const FilterHeader small = forged(loader, 5 * kMiB / 2);
  inputs.push_back({"2.5 MiB of zeros, zero checksum", encoded(small), small.payload_bytes + 8,
                    "cuckoo filter payload checksum mismatch (corrupted file)"});
  inputs.push_back({"2.5 MiB of zeros, no checksum", encoded(small), small.payload_bytes,
                    "truncated cuckoo filter: the payload checksum is missing"});
  inputs.push_back({"header cut at 60 bytes", encoded(small).substr(0, 60), 0,
                    "truncated cuckoo filter header"});
  // Zeros with their true checksum: the table is built, and its contents contradict the header.
  const FilterHeader one_item = forged(loader, 5 * kMiB / 2, 1);
  const std::vector<char> zero_payload(one_item.payload_bytes);
  const std::uint64_t checksum = XXH3_64bits(zero_payload.data(), zero_payload.size());
  inputs.push_back({"2.5 MiB of zeros, true checksum, 1 item claimed",
                    encoded(one_item) + std::string(zero_payload.begin(), zero_payload.end()) +
                        std::string(reinterpret_cast<const char*>(&checksum), sizeof checksum),
                    0, "item count does not match the table contents"});
  return inputs;
}

enum class Channel { kPipe, kStreambuf };

const char* name_of(Channel channel) {
  return channel == Channel::kPipe ? "pipe" : "streambuf";
}

// Runs `run` on an istream over `head` + `zeros` zero bytes, delivered through `channel`.
template <class Run>
void through(Channel channel, const std::string& head, std::uint64_t zeros, Run run) {
  if (channel == Channel::kPipe) {
    PipeFeed feed(head, zeros);
    FdStreambuf buffer(feed.fd());
    std::istream in(&buffer);
    run(in);
  } else {
    SourceStreambuf buffer(head, zeros);
    std::istream in(&buffer);
    run(in);
  }
}

// Offers `input` through `channel` to load(stream) and checks the outcome: a FormatError with
// the expected message, and memory within what was delivered plus a chunk, whatever the header
// claims. Returns the message and the peaks.
template <class Load>
std::pair<std::string, Watch::Peaks> expect_refused_within_bounds(Channel channel,
                                                                  const Hostile& input, Load load) {
  std::string message = "(no FormatError)";
  Watch::Peaks peaks;
  through(channel, input.head, input.zeros, [&](std::istream& in) {
    Watch watch;
    try {
      load(in);
    } catch (const FormatError& error) {
      message = error.what();
    } catch (const std::exception& error) {
      message = std::string("wrong exception: ") + error.what();
    }
    peaks = watch.peaks();
  });
  EXPECT_EQ(message, input.message);
  const std::uint64_t bound = input.delivered() + kPayloadChunkBytes;
  if (CCF_COUNT_HEAP) {
    EXPECT_LE(peaks.heap, bound + kHeapSlack);
  }
  EXPECT_LE(peaks.mapped, bound + kMappedSlack);
  EXPECT_LE(peaks.resident, kResidentPerByte * (bound + kMappedSlack));
  return {message, peaks};
}

class HostileLoad : public ::testing::TestWithParam<Channel> {
 protected:
  static void SetUpTestSuite() {
    ::signal(SIGPIPE, SIG_IGN);  // writers see EPIPE instead
    // One malloc arena: glibc gives a new thread (the pipe's writer) an arena of its own on its
    // first allocation, a 64 MiB mapping that would land, or not, inside a load's watched peak.
    ::mallopt(M_ARENA_MAX, 1);
  }
};

TEST_P(HostileLoad, EveryHostileInputIsAFormatErrorWithinTheBytesDelivered) {
  for (const Loader& loader : all_loaders()) {
    for (const Hostile& input : hostile_inputs(loader)) {
      SCOPED_TRACE(loader.name + ", " + input.name + ", " + name_of(GetParam()));
      const auto [message, peaks] = expect_refused_within_bounds(
          GetParam(), input, [&](std::istream& in) { loader.load(in); });
      std::printf("[ hostile  ] %-9s %-44s %-52s heap %10llu  mapped %10llu  resident %10llu  %s\n",
                  name_of(GetParam()), loader.name.c_str(), input.name.c_str(),
                  static_cast<unsigned long long>(peaks.heap),
                  static_cast<unsigned long long>(peaks.mapped),
                  static_cast<unsigned long long>(peaks.resident), message.c_str());
    }
  }
}

// Format version 2 (a grown lock-free filter): a forged header with a valid checksum announcing
// 8 levels of 32 GiB or 64 TiB in all, then level 0's record (valid, as the header implies) and
// a part of its payload, or nothing: a FormatError naming what is missing, within the bytes
// delivered plus a chunk, as for one table.
TEST_P(HostileLoad, GrownFileHeadersAreRefusedWithinTheBytesDelivered) {
  using Filter = ccf::LockFreeCuckooFilter<12>;
  using Image = ccf::lockfree::KcasTableImage<12>;
  using UpperImage = ccf::lockfree::KcasTableImage<Filter::kUpperFpBits>;
  const auto grown = [](std::uint64_t claimed) {
    FilterHeader h;
    h.version = ccf::detail::kLevelsFormatVersion;
    h.layout = ccf::detail::TableLayout::kKcasWords;
    h.fp_bits = 12;
    h.slots = 4;
    h.levels = 8;
    h.upper_fp_bits = Filter::kUpperFpBits;
    h.seed = 7;
    h.max_kicks = 500;
    // About `claimed` payload bytes in all: level k costs about 2^k of level 0's buckets at
    // 16 bits per slot, level 0 at 12.8.
    h.buckets = claimed / (UpperImage::payload_bytes(255 * 64) / 64);
    for (unsigned k = 0; k < 8; ++k) {
      h.payload_bytes +=
          k == 0 ? Image::payload_bytes(h.buckets) : UpperImage::payload_bytes(h.buckets << k);
    }
    h.capacity = h.buckets;
    return h;
  };
  const auto level0_record = [](const FilterHeader& h) {
    const ccf::detail::LevelRecord r{12, 4, h.buckets, 0, Image::payload_bytes(h.buckets)};
    const auto bytes = r.encode();
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  const FilterHeader gib32 = grown(32 * kGiB);
  const FilterHeader tib64 = grown(kMaxTableBytes - kGiB);
  const std::vector<Hostile> inputs = {
      {"grown: 32 GiB announced, level 0's record, 8 MiB of zeros",
       encoded(gib32) + level0_record(gib32), 8 * kMiB,
       truncated_payload(Image::payload_bytes(gib32.buckets), 8 * kMiB)},
      {"grown: 64 TiB announced, nothing after the header", encoded(tib64), 0,
       "truncated cuckoo filter: the record of level 0 is missing"},
  };
  for (const Hostile& input : inputs) {
    SCOPED_TRACE(input.name + ", " + name_of(GetParam()));
    expect_refused_within_bounds(GetParam(), input,
                                 [](std::istream& in) { static_cast<void>(Filter::load(in)); });
  }
}

TEST(GoodFiles, LoadThroughEveryStream) {
  const std::vector<std::uint64_t> keys = member_keys(100'000, 3);
  for (const Loader& loader : all_loaders()) {
    const std::string file = loader.save_with(keys);
    ASSERT_GT(file.size(), kPayloadChunkBytes + 96) << "the payload spans several chunks";
    for (const Channel channel : {Channel::kPipe, Channel::kStreambuf}) {
      SCOPED_TRACE(loader.name + ", " + name_of(channel));
      bool found = false;
      through(channel, file, 0, [&](std::istream& in) { found = loader.load_finds(in, keys); });
      EXPECT_TRUE(found);
    }
  }
}

// A seekable stream's length is checked up front, so its payload is read straight into the
// table: no chunk copies on the heap (the table itself is page-mapped), one copy in all.
TEST(GoodFiles, SeekableStreamIsReadStraightIntoTheTable) {
  if (!CCF_COUNT_HEAP) GTEST_SKIP() << "heap peaks are counted in the Release build only";
  using Filter = ccf::CuckooFilter<ccf::PackedTable<12, 4>>;
  Filter source(1 << 22);
  for (const std::uint64_t key : member_keys(1 << 21, 5))
    ASSERT_EQ(source.insert(key), Status::kOk);
  const std::string file = saved(source);
  ASSERT_GT(file.size(), 4 * kPayloadChunkBytes);
  std::istringstream in(file);
  Watch watch;
  const auto target = Filter::load(in);
  const Watch::Peaks peaks = watch.peaks();
  EXPECT_EQ(target->size(), source.size());
  EXPECT_LT(peaks.heap, kPayloadChunkBytes) << "the payload went through heap chunks";
  EXPECT_LT(peaks.mapped, file.size() + 8 * kMiB) << "more than one copy of the payload";
}

INSTANTIATE_TEST_SUITE_P(Streams, HostileLoad,
                         ::testing::Values(Channel::kPipe, Channel::kStreambuf),
                         [](const ::testing::TestParamInfo<Channel>& channel) {
                           return std::string(name_of(channel.param));
                         });

TEST(HeapCounting, SeesAnAllocation) {
  if (!CCF_COUNT_HEAP) {
    GTEST_SKIP() << "sanitizer runtimes bring their own operator new, so heap peaks are not "
                    "counted here; address space and resident memory still are";
  }
  Watch watch;
  const auto block = std::make_unique<std::byte[]>(kMiB);
  EXPECT_GE(watch.peaks().heap, kMiB);
}

}  // namespace
