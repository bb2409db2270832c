// Writes the seed corpus of the loader targets (fuzz/corpus/<target>/): small valid files of
// every shape saved by the library itself, files with a victim entry, and malformed files
// (bad magic, truncated header and payload, bad header and payload checksums); and client byte
// streams for the RESP parser. The output is deterministic.
// Usage: make_fuzz_corpus DIRECTORY   (normally fuzz/corpus)
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <variant>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/bloom_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/detail/filter_format.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "ccf/scalable_bloom_filter.hpp"
#include "ccf/store/log_store.hpp"

namespace {

namespace fs = std::filesystem;
using ccf::CuckooFilter;
using ccf::PackedTable;
using ccf::SemiSortedTable;

constexpr ccf::FilterOptions kOptions{.seed = 0x5eed, .max_kicks = 50};

template <class Filter>
std::string saved(const Filter& filter) {
  std::ostringstream out;
  filter.save(out);
  return std::move(out).str();
}

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// "packed-12x4" or "semi-sorted-8x4".
template <class Filter>
std::string shape_name() {
  return std::string(Filter::table_type::kLayout) + "-" + std::to_string(Filter::kFpBits) + "x" +
         std::to_string(Filter::kSlots);
}

// The file of a filter for 24 items holding 12.
template <class Filter, class Options = ccf::FilterOptions>
std::string half_full(const Options& options = kOptions) {
  Filter filter(24, options);
  for (std::uint64_t key = 1; key <= 12; ++key) static_cast<void>(filter.insert(key));
  return saved(filter);
}

// A sequential filter filled until an insert parks a fingerprint in the victim slot.
template <class Filter>
std::string with_victim() {
  Filter filter(8, kOptions);
  for (std::uint64_t key = 1; !filter.victim_used(); ++key) static_cast<void>(filter.insert(key));
  return saved(filter);
}

// Malformed variants of a valid file, named with `prefix`.
void write_malformed(const fs::path& dir, const std::string& valid,
                     const std::string& prefix = "") {
  constexpr std::size_t kHeader = ccf::detail::FilterHeader::kEncodedSize;
  std::string bad_magic = valid;
  bad_magic[0] = 'X';
  write(dir / (prefix + "bad-magic.ccf"), bad_magic);
  write(dir / (prefix + "truncated-header.ccf"), valid.substr(0, kHeader / 2));
  write(dir / (prefix + "truncated-payload.ccf"),
        valid.substr(0, kHeader + (valid.size() - kHeader) / 2));
  std::string bad_header = valid;
  bad_header[40] ^= 1;  // items stored
  write(dir / (prefix + "bad-header-checksum.ccf"), bad_header);
  std::string bad_payload = valid;
  bad_payload[kHeader] ^= 0x10;
  write(dir / (prefix + "bad-payload-checksum.ccf"), bad_payload);
}

// One file for every shape AnyCuckooFilter holds (the alternatives of its variant).
template <std::size_t... I>
void write_sequential(const fs::path& dir, std::index_sequence<I...>) {
  using Shapes = ccf::detail::AnyFilterVariant;
  ((write(dir / (shape_name<std::variant_alternative_t<I, Shapes>>() + ".ccf"),
          half_full<std::variant_alternative_t<I, Shapes>>())),
   ...);
}

void cuckoo_filter_corpus(const fs::path& dir) {
  write_sequential(dir,
                   std::make_index_sequence<std::variant_size_v<ccf::detail::AnyFilterVariant>>());
  write(dir / "victim-packed-8x2.ccf", with_victim<CuckooFilter<PackedTable<8, 2>>>());
  write(dir / "victim-semi-sorted-12x4.ccf", with_victim<CuckooFilter<SemiSortedTable<12>>>());
  write_malformed(dir, half_full<CuckooFilter<PackedTable<12, 4>>>());
}

template <class... Filters>
void write_striped(const fs::path& dir) {
  (write(dir / ("striped-" + std::to_string(Filters::kFpBits) + "x" +
                std::to_string(Filters::kSlots) + ".ccf"),
         half_full<Filters>()),
   ...);
}

void striped_filter_corpus(const fs::path& dir) {
  using ccf::StripedCuckooFilter;
  write_striped<StripedCuckooFilter<4, 2>, StripedCuckooFilter<4, 4>, StripedCuckooFilter<4, 8>,
                StripedCuckooFilter<8, 2>, StripedCuckooFilter<8, 4>, StripedCuckooFilter<8, 8>,
                StripedCuckooFilter<12, 2>, StripedCuckooFilter<12, 4>, StripedCuckooFilter<16, 2>,
                StripedCuckooFilter<16, 4>, StripedCuckooFilter<32, 2>>(dir);
  write(dir / "victim-packed-8x4.ccf", with_victim<CuckooFilter<PackedTable<8, 4>>>());
  write_malformed(dir, half_full<StripedCuckooFilter<12, 4>>());
}

template <unsigned F>
std::string lock_free_file() {
  using Filter = ccf::LockFreeCuckooFilter<F>;
  return half_full<Filter>(typename Filter::Options{.filter = kOptions, .grow = true});
}

// A lock-free filter for 8 items grown to 3 levels (format version 2), 6 of the 7 buckets' worth
// filled then 3 items erased, so its words have gaps.
template <unsigned F>
std::string grown_lock_free_file() {
  using Filter = ccf::LockFreeCuckooFilter<F>;
  Filter filter(8, typename Filter::Options{.filter = kOptions, .grow = true});
  std::uint64_t key = 1;
  while (filter.levels() < 3) static_cast<void>(filter.insert(key++));
  for (std::uint64_t erased = 1; erased <= 3; ++erased) static_cast<void>(filter.erase(erased));
  return saved(filter);
}

void lock_free_filter_corpus(const fs::path& dir) {
  write(dir / "lock-free-4.ccf", lock_free_file<4>());
  write(dir / "lock-free-8.ccf", lock_free_file<8>());
  write(dir / "lock-free-12.ccf", lock_free_file<12>());
  write(dir / "victim-packed-12x4.ccf", with_victim<CuckooFilter<PackedTable<12, 4>>>());
  write_malformed(dir, lock_free_file<12>());
  write(dir / "grown-4.ccf", grown_lock_free_file<4>());
  write(dir / "grown-8.ccf", grown_lock_free_file<8>());
  write(dir / "grown-12.ccf", grown_lock_free_file<12>());
  write_malformed(dir, grown_lock_free_file<12>(), "grown-");
}

// Log store files (store/log_format.hpp): puts, tombstones, a key stored again after its
// delete, content keys, a torn tail, a zero tail, a corrupt middle entry.
void log_store_corpus(const fs::path& dir) {
  using ccf::store::LogStore;
  const fs::path scratch = fs::temp_directory_path() / "ccf-make-corpus-log";
  auto log_of = [&](auto&& fill) {
    fs::remove_all(scratch);
    {
      ccf::store::LogStoreOptions options;
      options.sync = ccf::store::SyncPolicy::kNone;
      LogStore store(scratch, options);
      fill(store);
    }
    std::ifstream in(scratch / LogStore::kLogFileName, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  write(dir / "empty.log", log_of([](LogStore&) {}));
  const std::string mixed = log_of([](LogStore& store) {
    for (int i = 0; i < 6; ++i) store.put("key" + std::to_string(i), std::string(i * 3, 'v'));
    store.erase("key2");
    store.erase("key4");
    store.put("key2", "again");
    store.put("content-addressed data");
  });
  write(dir / "mixed.log", mixed);
  write(dir / "torn-tail.log", mixed.substr(0, mixed.size() - 5));
  write(dir / "zero-tail.log", mixed + std::string(40, '\0'));
  std::string corrupt = mixed;
  corrupt[ccf::store::kFileHeaderBytes + 17] ^= 1;
  write(dir / "corrupt-middle.log", corrupt);
  write(dir / "header-prefix.log", mixed.substr(0, 7));
  fs::remove_all(scratch);
}

// Client byte streams for the RESP parser of `ccf serve` (server/resp.hpp): arrays of
// bulk strings, pipelined filter commands, a binary argument, inline commands with quotes and
// escapes, empty commands and blank lines, a partial command, and malformed requests.
void resp_corpus(const fs::path& dir) {
  using namespace std::string_literals;
  write(dir / "ping.resp", "*1\r\n$4\r\nPING\r\n");
  write(dir / "ping-arg.resp", "*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n");
  write(dir / "hello-3.resp", "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n");
  write(dir / "pipelined.resp",
        "*3\r\n$6\r\nCF.ADD\r\n$1\r\nf\r\n$5\r\nitem1\r\n"
        "*3\r\n$9\r\nCF.EXISTS\r\n$1\r\nf\r\n$5\r\nitem1\r\n"
        "*4\r\n$10\r\nCF.MEXISTS\r\n$1\r\nf\r\n$5\r\nitem1\r\n$5\r\nitem2\r\n");
  write(dir / "binary.resp", "*3\r\n$6\r\nCF.ADD\r\n$1\r\nf\r\n$6\r\na\r\nb\0c\r\n"s);
  write(dir / "inline-quotes.resp", "CF.ADD \"my f\" 'it\\'s'\r\nX \"\\x41\\n\\t\\\"\"\nPING\n");
  write(dir / "empty-commands.resp", "*0\r\n*-1\r\n\r\n  \n*1\r\n$4\r\nPING\r\n");
  write(dir / "partial.resp", "*2\r\n$4\r\nPING\r\n$10\r\nhal");
  write(dir / "bad-bulk-length.resp", "*2\r\n$4\r\nPING\r\n$-5\r\nxx\r\n");
  write(dir / "bad-multibulk-length.resp", "*1x\r\n$4\r\nPING\r\n");
  write(dir / "expected-dollar.resp", "*1\r\n:4\r\nPING\r\n");
  write(dir / "unbalanced-quotes.resp", "CF.ADD \"f x\r\n");
}

// One small filter of each Bloom kind, a scalable filter grown to 3 sub-filters, its bare
// header (from_header's input), and the same damaged as write_malformed damages a cuckoo file.
void bloom_filter_corpus(const fs::path& dir) {
  const auto fill = [](auto filter) {
    for (std::uint64_t key = 1; key <= 12; ++key) filter.insert(key);
    return saved(filter);
  };
  write(dir / "standard.bloom", fill(ccf::BloomFilter(24, 8)));
  write(dir / "blocked.bloom", fill(ccf::BlockedBloomFilter(24, 8)));
  const std::string counting = fill(ccf::CountingBloomFilter(24, 16));
  write(dir / "counting.bloom", counting);
  ccf::ScalableBloomFilter scalable({4, 0.01, 2});
  for (std::uint64_t key = 1; key <= 20; ++key) scalable.add(key);
  write(dir / "scalable.bloom", saved(scalable));
  write(dir / "scalable-header.bloom", scalable.header());
  std::string bad_magic = counting;
  bad_magic[0] = 'X';
  write(dir / "bad-magic.bloom", bad_magic);
  write(dir / "truncated-header.bloom", counting.substr(0, 40));
  write(dir / "truncated-payload.bloom", counting.substr(0, counting.size() - 12));
  std::string bad_payload = counting;
  bad_payload[90] ^= 1;
  write(dir / "bad-payload-checksum.bloom", bad_payload);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  const std::tuple<const char*, void (*)(const fs::path&)> targets[] = {
      {"cuckoo_filter", cuckoo_filter_corpus},   {"bloom_filter", bloom_filter_corpus},
      {"striped_filter", striped_filter_corpus}, {"lock_free_filter", lock_free_filter_corpus},
      {"log_store", log_store_corpus},           {"resp", resp_corpus}};
  for (const auto& [name, make] : targets) {
    const fs::path dir = root / name;
    fs::create_directories(dir);
    make(dir);
  }
  return 0;
}
