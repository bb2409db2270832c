// ccf::ScalableBloomFilter -- a Bloom filter that grows (Almeida, Baquero, Preguica, Hutchison
// 2007, "Scalable Bloom Filters"), in RedisBloom's model: a chain of sub-filters, each a
// concurrent blocked Bloom filter (bloom_filter.hpp); only the newest receives new items, a
// lookup asks all of them.
//
//   sub-filter i:  capacity c_i = capacity * expansion^i,  error e_i = e_0 / 2^i,
//                  e_0 = error_rate / 2 (scaling) or error_rate (non-scaling, one sub-filter)
//   chain:         [0] <-older- [1] <-older- ... <-older- [n-1] <- newest_
//                  (and -newer-> the other way: ownership only, for the destructor)
//
// Sizing. The blocked layout's rate is above the standard formula's, so a sub-filter is sized
// by searching bits per item upward from -ln(e_i) / ln^2(2) in steps of 2.5% until its
// expected FPR at c_i items (the layout's exact sum, BlockedBloomLayout::fpr) is at most e_i.
// The blocked layout's rate has a floor, set by how unevenly items fall into blocks: 64 bits
// per item reach 8.2e-9 (k = 20) in a sub-filter of more than a few blocks. A sub-filter whose
// e_i is below what the blocked layout reaches within 64 bits per item takes the standard
// layout instead (k up to 32 probes spread over the whole array; StandardBloomLayout), sized
// by the same search against (1 - e^{-kn/m})^k: a 1% filter's e_i falls there at i = 20 or 21
// (e_i = 0.005 / 2^i), which takes 20 sub-filters of one size at expansion 1, or when a rate
// below about 1e-8 is asked for. The search stops at 1024 bits per item, which reach 4.6e-49
// (k = 32): past about 140 halvings of a 1% filter's e_0 a sub-filter keeps that rate, reports
// it as its error_rate, and the compound bound becomes the sum of the sub-filters'
// error_rates, above error_rate by at most 4.6e-49 per such sub-filter. Never a false
// negative; memory at most 1024 bits per item (plus one block of rounding) per sub-filter;
// expected_fpr() says the truth.
//
// The compound rate: a non-member is reported present if any sub-filter says so, so the rate
// at the current fill is 1 - prod_i (1 - fpr_i(items_i)) <= sum_i e_i < error_rate (while no
// sub-filter is capped as above). expected_fpr() evaluates the product.
//
// Concurrency (every member function but the move operations may run in any threads at once):
//   1. contains / contains_many take no lock and store nothing: an acquire load of newest_,
//      then the chain through the immutable `older` pointers, with relaxed loads of the words
//      (bloom_filter.hpp, top, 2). Wait-free for a given chain length.
//   2. add reserves a slot in the newest sub-filter by CAS on its item count (so a sub-filter
//      never holds more than its capacity, and a non-scaling filter never more than
//      `capacity` items), then ORs its bits in (wait-free). Only an add that finds the newest
//      full takes grow_, a mutex around the allocation of the next sub-filter, which is then
//      published by a release store; adds into a sub-filter with room and all lookups never
//      wait for it. Sub-filters are freed only by the destructor.
//   3. No false negative: once add(x) has returned kAdded, every contains(x) that starts
//      afterwards answers true -- add found its sub-filter by a load of newest_ (never through
//      `newer`), so by read-read coherence every later load of newest_ returns that sub-filter
//      or a newer one, whose `older` chain reaches it; and its bits are only ever set. (Were
//      the sub-filter taken from `newer`, the store to newest_ publishing it could still be
//      pending when add returned, and a lookup could start from the sub-filter before it.) kPresent
//      means x tested present in some sub-filter; if that was a false positive, x's bits were NOT
//      set, yet x stays reported present for good, since bits are never cleared (RedisBloom's rule
//      too). A contains(x) concurrent with add(x) may answer either.
//   4. Two concurrent adds of one new item may both answer kAdded (both found it absent):
//      callers that need one kAdded per item serialize adds of that item. An add checks
//      presence in the sub-filters that exist when it starts; if it then moves on to a newer
//      sub-filter it sets its bits there.
//   5. Sequentially, at most one sub-filter is added per add, and filter_count() is always the
//      fewest sub-filters whose capacities cover size() (1 when empty). Concurrently a
//      sub-filter is still only appended once the newest is full, but an add may append one,
//      see it filled by others and append another.
//   6. size(), the counts in sub_filters() and expected_fpr() are exact when no add is in
//      flight, approximate while some are (a slot counts from its reservation on).
//   7. write_data is atomic per 64-bit word (a CAS each): safe beside add and contains, but it
//      replaces bits, so keys added before may then be missed -- it restores dumps.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <istream>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ccf/bloom_filter.hpp"
#include "ccf/detail/bloom_format.hpp"
#include "ccf/detail/software_pipeline.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf {

struct ScalableBloomOptions {
  std::uint64_t capacity = 100;  // items of sub-filter 0, >= 1
  double error_rate = 0.01;      // (0, 1): the bound on the whole filter's false-positive rate
  std::uint32_t expansion = 2;   // 0: non-scaling (one sub-filter forever); else the growth factor
};

enum class BloomAddResult { kAdded, kPresent, kFull, kNoMemory };

namespace detail {

// The most bits per item a blocked sub-filter gets, and a standard one (see the top of this
// file, Sizing).
inline constexpr double kBlockedMaxBitsPerItem = kBloomMaxBitsPerItem;
inline constexpr double kSubFilterMaxBitsPerItem = 1024;
// The largest bit arrays a scalable filter (all sub-filters together) may describe.
inline constexpr std::uint64_t kScalableMaxBytes = kBloomMaxBytes;
// Sub-filter i > 0 hashes mix64(h, kSubFilterSalt + i): the sub-filters' bits are independent
// even where two have the same number of blocks (expansion 1).
inline constexpr std::uint64_t kSubFilterSalt = 0x8bb84b93962eacc9ULL;

struct SubFilterShape {
  std::uint64_t capacity = 0;
  double error = 0.0;  // e_i, the target
  std::uint64_t bits = 0;
  unsigned hashes = 0;
  double fpr_at_capacity = 0.0;  // the layout's rate at `capacity` items: <= error unless capped
  bool blocked = true;           // BlockedBloomLayout, else StandardBloomLayout
};

// f(layout) with the layout object of that shape (an empty tag whose statics f calls).
template <class F>
decltype(auto) with_layout(const SubFilterShape& shape, F&& f) {
  return shape.blocked ? f(BlockedBloomLayout{}) : f(StandardBloomLayout{});
}

// Layout's shape for `capacity` items at `error`: bits per item searched upward (Sizing) up to
// `most_bits_per_item`, where the search stops (capped); nullopt past kScalableMaxBytes.
template <class Layout>
std::optional<SubFilterShape> sized_in(std::uint64_t capacity, double error,
                                       double most_bits_per_item) {
  double bits_per_item = std::max(1.0, -std::log(error) / (kLn2 * kLn2));
  for (;;) {
    const bool capped = !(bits_per_item < most_bits_per_item);  // also for e = 0 (inf)
    if (capped) bits_per_item = most_bits_per_item;
    const double raw = std::ceil(static_cast<double>(capacity) * bits_per_item);
    if (raw / 8.0 > static_cast<double>(kScalableMaxBytes)) return std::nullopt;
    const std::uint64_t bits = (static_cast<std::uint64_t>(raw) + Layout::kGrainBits - 1) /
                               Layout::kGrainBits * Layout::kGrainBits;
    const unsigned hashes = Layout::hash_count(bits, capacity);
    const double fpr = Layout::fpr(bits, hashes, capacity);
    if (fpr <= error || capped) {
      return SubFilterShape{capacity, error, bits,
                            hashes,   fpr,   std::is_same_v<Layout, BlockedBloomLayout>};
    }
    bits_per_item *= 1.025;
  }
}

// The shape of a sub-filter of `capacity` items and error `error`: blocked where that layout
// reaches `error` within kBlockedMaxBitsPerItem, else standard. nullopt when it would take more
// than kScalableMaxBytes. Deterministic: from_header checks a header against it.
inline std::optional<SubFilterShape> sub_filter_shape(std::uint64_t capacity, double error) {
  const std::optional<SubFilterShape> blocked =
      sized_in<BlockedBloomLayout>(capacity, error, kBlockedMaxBitsPerItem);
  if (!blocked || blocked->fpr_at_capacity <= error) return blocked;
  return sized_in<StandardBloomLayout>(capacity, error, kSubFilterMaxBitsPerItem);
}

// The shape after `s` in a filter of growth factor `expansion`; nullopt when its capacity
// overflows or it is too large.
inline std::optional<SubFilterShape> next_sub_filter_shape(const SubFilterShape& s,
                                                           std::uint32_t expansion) {
  if (s.capacity > std::numeric_limits<std::uint64_t>::max() / expansion) return std::nullopt;
  return sub_filter_shape(s.capacity * expansion, s.error / 2);
}

// What is wrong with `options`, or nullptr.
inline const char* scalable_options_problem(const ScalableBloomOptions& options) {
  if (options.capacity == 0) return "capacity must be at least 1";
  if (!(options.error_rate > 0.0 && options.error_rate < 1.0)) {
    return "error_rate must be in (0, 1)";
  }
  return nullptr;
}

}  // namespace detail

class ScalableBloomFilter {
  using Access = detail::AtomicWordAccess;

 public:
  // std::invalid_argument with a message naming the field for bad options; std::bad_alloc.
  explicit ScalableBloomFilter(const ScalableBloomOptions& options)
      : options_(options), grow_(std::make_unique<std::mutex>()) {
    if (const char* problem = detail::scalable_options_problem(options)) {
      throw std::invalid_argument(std::string("ScalableBloomFilter: ") + problem + " (capacity " +
                                  std::to_string(options.capacity) + ", error_rate " +
                                  std::to_string(options.error_rate) + ")");
    }
    const auto shape = detail::sub_filter_shape(options.capacity, first_error());
    if (!shape) {
      throw std::invalid_argument(
          "ScalableBloomFilter: capacity " + std::to_string(options.capacity) + " at error_rate " +
          std::to_string(options.error_rate) + " needs more than 2^46 bytes");
    }
    oldest_ = new SubFilter(*shape, 0, 0, nullptr);
    newest_.store(oldest_, std::memory_order_relaxed);  // published by the constructor's end
  }

  ScalableBloomFilter(ScalableBloomFilter&& other) noexcept
      : options_(other.options_),
        seed_(other.seed_),
        oldest_(std::exchange(other.oldest_, nullptr)),
        newest_(other.newest_.exchange(nullptr, std::memory_order_relaxed)),
        grow_(std::move(other.grow_)) {}
  ScalableBloomFilter& operator=(ScalableBloomFilter&& other) noexcept {
    ScalableBloomFilter moved(std::move(other));
    std::swap(options_, moved.options_);
    std::swap(seed_, moved.seed_);
    std::swap(oldest_, moved.oldest_);
    const SubFilter* const newest = newest_.load(std::memory_order_relaxed);
    newest_.store(moved.newest_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    moved.newest_.store(const_cast<SubFilter*>(newest), std::memory_order_relaxed);
    std::swap(grow_, moved.grow_);
    return *this;
  }
  ScalableBloomFilter(const ScalableBloomFilter&) = delete;
  ScalableBloomFilter& operator=(const ScalableBloomFilter&) = delete;
  ~ScalableBloomFilter() {
    for (SubFilter* s = oldest_; s != nullptr;) delete std::exchange(s, s->newer);
  }

  // kPresent: the item tests present in some sub-filter (nothing changes); kFull: non-scaling
  // and the (only) sub-filter holds `capacity` items; kNoMemory: a new sub-filter could not be
  // allocated (nothing added). Otherwise the item's bits are set in the newest sub-filter,
  // whose item count (and the total) goes up by one, growing first if the newest is full.
  BloomAddResult add(std::string_view item) { return add_hash(hash_key(item, seed_)); }
  BloomAddResult add(std::uint64_t item) { return add_hash(hash_key(item, seed_)); }

  bool contains(std::string_view item) const noexcept {
    return contains_from(newest(), hash_key(item, seed_));
  }
  bool contains(std::uint64_t item) const noexcept {
    return contains_from(newest(), hash_key(item, seed_));
  }

  // out[i] = contains(items[i]); out.size() >= items.size() (else std::invalid_argument). Every
  // lookup of the batch asks the sub-filters that existed when the batch began. Pipelined:
  // item i + 8 is hashed and its block in every sub-filter prefetched before item i is probed.
  void contains_many(std::span<const std::string_view> items, std::span<bool> out) const {
    contains_batch(items, out);
  }
  void contains_many(std::span<const std::uint64_t> items, std::span<bool> out) const {
    contains_batch(items, out);
  }

  // Adds that answered kAdded.
  std::uint64_t size() const noexcept {
    std::uint64_t items = 0;
    for (const SubFilter* s = newest(); s != nullptr; s = s->older) items += s->count();
    return items;
  }
  // The sum of the sub-filters' capacities.
  std::uint64_t capacity() const noexcept {
    std::uint64_t total = 0;
    for (const SubFilter* s = newest(); s != nullptr; s = s->older) total += s->shape.capacity;
    return total;
  }
  std::size_t filter_count() const noexcept { return newest()->index + 1; }
  // Every byte the filter holds on the heap: bit arrays, sub-filter records, the growth mutex.
  std::size_t memory_bytes() const noexcept {
    std::size_t bytes = sizeof(std::mutex);
    for (const SubFilter* s = newest(); s != nullptr; s = s->older) {
      bytes += sizeof(SubFilter) + s->words.bytes();
    }
    return bytes;
  }
  // Memory bits per added item (per item of capacity while empty).
  double bits_per_item() const noexcept {
    const std::uint64_t items = size();
    return 8.0 * static_cast<double>(memory_bytes()) /
           static_cast<double>(items != 0 ? items : capacity());
  }
  // The compound rate at the current fill, 1 - prod_i (1 - fpr_i(items_i)): each fpr_i the
  // layout's expected rate, the sub-filters independent (their hashes are remixed apart).
  double expected_fpr() const {
    double none = 1.0;
    for (const SubFilter* s = newest(); s != nullptr; s = s->older) {
      none *= 1.0 - detail::with_layout(s->shape, [&](auto layout) {
                return decltype(layout)::fpr(s->shape.bits, s->shape.hashes, s->count());
              });
    }
    return 1.0 - none;
  }
  const ScalableBloomOptions& options() const noexcept { return options_; }
  bool scaling() const noexcept { return options_.expansion != 0; }

  struct SubFilterInfo {
    std::uint64_t capacity, items, bytes, bits;
    unsigned hashes;
    double error_rate;  // e_i, or the rate 64 bits/item reach where that is above it
  };
  // Oldest first.
  std::vector<SubFilterInfo> sub_filters() const {
    std::vector<SubFilterInfo> infos;
    for (const SubFilter* s = newest(); s != nullptr; s = s->older) {
      infos.push_back({s->shape.capacity, s->count(), s->words.bytes(), s->shape.bits,
                       s->shape.hashes, std::max(s->shape.error, s->shape.fpr_at_capacity)});
    }
    std::reverse(infos.begin(), infos.end());
    return infos;
  }

  // Options, seed, and every sub-filter's capacity, items, bits and hash count; versioned and
  // checksummed (docs/file-format.md, kind 4).
  std::string header() const { return header_of(chain()); }

  // A filter with the header's options, counters and sub-filters, all bits clear. nullptr for
  // a header that is not one of this format, fails its checksum or describes sub-filters this
  // build would not have made. Allocates what the header describes (at most 2^46 bytes), after
  // every check. std::bad_alloc may escape.
  static std::unique_ptr<ScalableBloomFilter> from_header(std::string_view header) {
    std::string why;
    const auto parsed = parse_header(header, why);
    if (!parsed) return nullptr;
    return build(*parsed);
  }

  // The bit arrays' bytes, concatenated, sub-filter 0 first.
  std::uint64_t data_bytes() const noexcept {
    const SubFilter* s = newest();
    return s->offset + s->words.bytes();
  }
  // Where sub-filter k starts in that concatenation (data_bytes() for k >= filter_count()).
  std::uint64_t sub_filter_offset(std::size_t k) const noexcept {
    const SubFilter* s = newest();
    if (k > s->index) return s->offset + s->words.bytes();
    while (s->index != k) s = s->older;
    return s->offset;
  }

  // Copies bytes [offset, offset + out.size()) of the concatenation (each word read
  // atomically); false if the range leaves one sub-filter.
  bool read_data(std::uint64_t offset, std::span<std::byte> out) const {
    const SubFilter* s = holding(offset, out.size());
    if (s == nullptr) return false;
    copy_out(*s, offset - s->offset, out);
    return true;
  }
  // Overwrites bytes [offset, offset + data.size()) (any alignment; a CAS per covering word,
  // so safe beside concurrent add / contains); false if the range leaves one sub-filter.
  // Counters untouched.
  bool write_data(std::uint64_t offset, std::span<const std::byte> data) {
    SubFilter* s = const_cast<SubFilter*>(holding(offset, data.size()));
    if (s == nullptr) return false;
    const std::uint64_t at = offset - s->offset;
    for (std::uint64_t done = 0; done < data.size();) {
      const std::uint64_t word = (at + done) / 8;
      const auto first = static_cast<std::size_t>((at + done) % 8);
      const auto count =
          static_cast<std::size_t>(std::min<std::uint64_t>(8 - first, data.size() - done));
      std::uint64_t value = 0;
      std::memcpy(reinterpret_cast<std::byte*>(&value) + first, data.data() + done, count);
      const std::uint64_t mask =
          (count == 8 ? ~std::uint64_t{0} : ((std::uint64_t{1} << (8 * count)) - 1)) << (8 * first);
      Access::update(s->words.data() + word,
                     [&](std::uint64_t old) -> std::optional<std::uint64_t> {
                       return (old & ~mask) | (value & mask);
                     });
      done += count;
    }
    return true;
  }

  // header(), the data (data_bytes() of it, read atomically) and its XXH3-64. Safe beside adds
  // (the file then holds some of the concurrent ones). Throws std::ios_base::failure.
  void save(std::ostream& out) const {
    const std::vector<const SubFilter*> subs = chain();
    const std::string head = header_of(subs);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    const SubFilter* last = subs.back();
    detail::write_bloom_payload(out, last->offset + last->words.bytes(),
                                [&](std::uint64_t at, std::span<std::byte> buffer) {
                                  while (!buffer.empty()) {
                                    const SubFilter* s = holding_in(subs, at);
                                    const std::uint64_t from = at - s->offset;
                                    const auto size =
                                        static_cast<std::size_t>(std::min<std::uint64_t>(
                                            buffer.size(), s->words.bytes() - from));
                                    copy_out(*s, from, buffer.first(size));
                                    buffer = buffer.subspan(size);
                                    at += size;
                                  }
                                });
  }

  // Reads what save() wrote. FormatError naming what was wrong for any malformed input
  // (docs/file-format.md); memory follows the bytes the stream holds, whatever it announces.
  static ScalableBloomFilter load(std::istream& in) {
    std::string head = detail::read_up_to(in, kFixedHeaderBytes);
    const std::uint32_t kind = detail::check_bloom_prefix(head);
    if (kind != static_cast<std::uint32_t>(detail::BloomKind::kScalable)) {
      throw FormatError(
          "the file holds " + detail::bloom_kind_name(kind) + "; this filter is " +
          detail::bloom_kind_name(static_cast<std::uint32_t>(detail::BloomKind::kScalable)));
    }
    if (head.size() != kFixedHeaderBytes)
      throw FormatError("truncated scalable Bloom filter header");
    const std::uint64_t count =
        detail::ByteReader(std::string_view(head).substr(36)).get<std::uint32_t>();
    if (count == 0 || count > kMaxSubFilters) {
      throw FormatError("corrupted sub-filter count " + std::to_string(count) + " (1 to " +
                        std::to_string(kMaxSubFilters) + ")");
    }
    const std::uint64_t rest = count * kRecordBytes + 8;
    detail::require_bloom_bytes(in, rest, "the sub-filter records");
    // In chunks of a record each at most 1 MiB: memory follows what the stream delivers.
    for (std::uint64_t done = 0; done < rest;) {
      const std::string chunk = detail::read_up_to(
          in,
          static_cast<std::size_t>(std::min<std::uint64_t>(rest - done, std::uint64_t{1} << 20)));
      if (chunk.empty()) throw FormatError("truncated scalable Bloom filter header");
      head += chunk;
      done += chunk.size();
    }
    std::string why;
    const auto parsed = parse_header(head, why);
    if (!parsed) throw FormatError(why);
    std::unique_ptr<ScalableBloomFilter> filter = detail::load_bloom_payload(
        in, parsed->data_bytes, [&] { return build(*parsed); },
        [](std::unique_ptr<ScalableBloomFilter>& f, std::uint64_t at,
           std::span<const std::byte> chunk) {
          while (!chunk.empty()) {  // not shared yet: plain copies
            SubFilter* s = const_cast<SubFilter*>(f->holding(at, 1));
            const std::uint64_t from = at - s->offset;
            const auto size = static_cast<std::size_t>(
                std::min<std::uint64_t>(chunk.size(), s->words.bytes() - from));
            std::memcpy(reinterpret_cast<std::byte*>(s->words.data()) + from, chunk.data(), size);
            chunk = chunk.subspan(size);
            at += size;
          }
        });
    return std::move(*filter);
  }

 private:
  // header(): magic, version, kind (16), capacity (8), error_rate (8, IEEE-754 bits), expansion
  // (4), sub-filter count (4), seed (8); then per sub-filter capacity, items, bits (8 each),
  // hashes (4), reserved (4); then XXH3-64 of all of that.
  static constexpr std::size_t kFixedHeaderBytes = 48;
  static constexpr std::uint64_t kRecordBytes = 32;
  // A header describes at most this many sub-filters (a 32 MiB header).
  static constexpr std::uint64_t kMaxSubFilters = std::uint64_t{1} << 20;

  struct SubFilter {
    SubFilter(const detail::SubFilterShape& s, std::size_t i, std::uint64_t at, SubFilter* prev)
        : shape(s), words(s.bits / 8), index(i), offset(at), older(prev) {}

    std::uint64_t hash_of(std::uint64_t hash) const noexcept {
      return index == 0 ? hash : mix64(hash, detail::kSubFilterSalt + index);
    }
    // Each dispatches on the shape's layout: a branch that every lookup of a sub-filter takes
    // the same way.
    bool contains(std::uint64_t hash) const noexcept {
      return detail::with_layout(shape, [&](auto layout) {
        return decltype(layout)::template contains<Access>(words.data(), shape.bits, shape.hashes,
                                                           hash_of(hash));
      });
    }
    void insert(std::uint64_t hash) noexcept {
      detail::with_layout(shape, [&](auto layout) {
        decltype(layout)::template insert<Access>(words.data(), shape.bits, shape.hashes,
                                                  hash_of(hash));
      });
    }
    void prefetch(std::uint64_t hash) const noexcept {
      detail::with_layout(shape, [&](auto layout) {
        decltype(layout)::prefetch(words.data(), shape.bits, shape.hashes, hash_of(hash), false);
      });
    }
    // Relaxed: a count; the bits it stands for are reached through the chain, not through it.
    std::uint64_t count() const noexcept { return items.load(std::memory_order_relaxed); }

    const detail::SubFilterShape shape;
    detail::BloomWords words;
    const std::size_t index;
    const std::uint64_t offset;  // in the concatenation of the bit arrays
    SubFilter* const older;      // immutable: set before the sub-filter is published
    std::atomic<std::uint64_t> items{0};
    SubFilter* newer = nullptr;  // written under grow_, read by the destructor alone
  };

  struct Parsed {
    ScalableBloomOptions options;
    std::uint64_t seed = 0;
    std::vector<detail::SubFilterShape> shapes;
    std::vector<std::uint64_t> items;
    std::uint64_t data_bytes = 0;
  };

  double first_error() const noexcept {
    return scaling() ? options_.error_rate / 2 : options_.error_rate;
  }

  // (A) Acquire: pairs with the release stores in grow (B), so the sub-filter read here and
  // every older one (reached through `older`, set before publication) are fully constructed.
  const SubFilter* newest() const noexcept { return newest_.load(std::memory_order_acquire); }
  SubFilter* mutable_newest() noexcept { return newest_.load(std::memory_order_acquire); }

  static bool contains_from(const SubFilter* s, std::uint64_t hash) noexcept {
    for (; s != nullptr; s = s->older) {
      if (s->contains(hash)) return true;
    }
    return false;
  }

  template <class Item>
  void contains_batch(std::span<const Item> items, std::span<bool> out) const {
    if (out.size() < items.size()) throw std::invalid_argument("contains_many: output too short");
    const SubFilter* top = newest();
    detail::software_pipeline(
        items.size(),
        [&](std::size_t i) {
          const std::uint64_t hash = hash_key(items[i], seed_);
          for (const SubFilter* s = top; s != nullptr; s = s->older) s->prefetch(hash);
          return hash;
        },
        [&](std::size_t i, std::uint64_t hash) {
          out[i] = contains_from(top, hash);
          return true;
        });
  }

  BloomAddResult add_hash(std::uint64_t hash) {
    SubFilter* top = mutable_newest();
    if (contains_from(top, hash)) return BloomAddResult::kPresent;
    for (;;) {
      // Relaxed: the count only reserves a slot; the bits are published by the chain (A, B).
      std::uint64_t items = top->items.load(std::memory_order_relaxed);
      while (items < top->shape.capacity) {
        if (top->items.compare_exchange_weak(items, items + 1, std::memory_order_relaxed)) {
          top->insert(hash);
          return BloomAddResult::kAdded;
        }
      }
      if (!scaling()) return BloomAddResult::kFull;
      top = grow(top);
      if (top == nullptr) return BloomAddResult::kNoMemory;
    }
  }

  // The newest sub-filter, made after `full` if `full` is still the newest; nullptr if it
  // cannot be made. Reads newest_ only (3): newest_ only moves forward, so a value other than
  // `full` is newer than `full`.
  SubFilter* grow(SubFilter* full) {
    if (SubFilter* now = mutable_newest(); now != full) return now;
    const std::lock_guard lock(*grow_);
    if (SubFilter* now = mutable_newest(); now != full) return now;
    const auto shape = detail::next_sub_filter_shape(full->shape, options_.expansion);
    if (!shape ||
        full->offset + full->words.bytes() + shape->bits / 8 > detail::kScalableMaxBytes) {
      return nullptr;
    }
    SubFilter* fresh = nullptr;
    try {
      fresh = new SubFilter(*shape, full->index + 1, full->offset + full->words.bytes(), full);
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
    // (B) Release: publishes the new sub-filter's construction (its zeroed words, shape and
    // `older`) to every acquire load of newest_ (A) that reads it.
    full->newer = fresh;
    newest_.store(fresh, std::memory_order_release);
    return fresh;
  }

  // The sub-filters, oldest first, as they are now.
  std::vector<const SubFilter*> chain() const {
    std::vector<const SubFilter*> subs;
    for (const SubFilter* s = newest(); s != nullptr; s = s->older) subs.push_back(s);
    std::reverse(subs.begin(), subs.end());
    return subs;
  }

  static const SubFilter* holding_in(const std::vector<const SubFilter*>& subs,
                                     std::uint64_t at) noexcept {
    const auto it =
        std::upper_bound(subs.begin(), subs.end(), at,
                         [](std::uint64_t x, const SubFilter* s) { return x < s->offset; });
    return *(it - 1);
  }

  // The sub-filter holding all of [offset, offset + size), or nullptr.
  const SubFilter* holding(std::uint64_t offset, std::uint64_t size) const noexcept {
    for (const SubFilter* s = newest(); s != nullptr; s = s->older) {
      if (offset >= s->offset) {
        const std::uint64_t end = s->offset + s->words.bytes();
        return offset <= end && size <= end - offset ? s : nullptr;
      }
    }
    return nullptr;
  }

  static void copy_out(const SubFilter& s, std::uint64_t from, std::span<std::byte> out) noexcept {
    for (std::size_t done = 0; done < out.size();) {
      const std::uint64_t word = (from + done) / 8;
      const auto first = static_cast<std::size_t>((from + done) % 8);
      const std::size_t count = std::min<std::size_t>(8 - first, out.size() - done);
      const std::uint64_t value = Access::load(s.words.data() + word);
      std::memcpy(out.data() + done, reinterpret_cast<const std::byte*>(&value) + first, count);
      done += count;
    }
  }

  std::string header_of(const std::vector<const SubFilter*>& subs) const {
    std::string bytes(detail::kBloomMagic.data(), detail::kBloomMagic.size());
    detail::ByteWriter writer(bytes);
    writer.put(detail::kBloomFormatVersion);
    writer.put(static_cast<std::uint32_t>(detail::BloomKind::kScalable));
    writer.put(options_.capacity);
    writer.put(std::bit_cast<std::uint64_t>(options_.error_rate));
    writer.put(options_.expansion);
    writer.put(static_cast<std::uint32_t>(subs.size()));
    writer.put(seed_);
    for (const SubFilter* s : subs) {
      writer.put(s->shape.capacity);
      writer.put(s->count());
      writer.put(s->shape.bits);
      writer.put(static_cast<std::uint32_t>(s->shape.hashes));
      writer.put(std::uint32_t{0});
    }
    writer.put_checksum();
    return bytes;
  }

  // Checks a header completely; on failure says why and returns nullopt. Allocates nothing but
  // the description (bounded by the header's length).
  static std::optional<Parsed> parse_header(std::string_view bytes, std::string& why) {
    try {
      if (detail::check_bloom_prefix(bytes) !=
          static_cast<std::uint32_t>(detail::BloomKind::kScalable)) {
        why = "not a scalable Bloom filter header (kind)";
        return std::nullopt;
      }
    } catch (const FormatError& error) {
      why = error.what();
      return std::nullopt;
    }
    if (bytes.size() < kFixedHeaderBytes + kRecordBytes + 8 ||
        (bytes.size() - kFixedHeaderBytes - 8) % kRecordBytes != 0) {
      why = "truncated scalable Bloom filter header";
      return std::nullopt;
    }
    detail::ByteReader reader(bytes.substr(16));
    Parsed p;
    p.options.capacity = reader.get<std::uint64_t>();
    p.options.error_rate = std::bit_cast<double>(reader.get<std::uint64_t>());
    p.options.expansion = reader.get<std::uint32_t>();
    const std::uint64_t count = reader.get<std::uint32_t>();
    p.seed = reader.get<std::uint64_t>();
    if (count != (bytes.size() - kFixedHeaderBytes - 8) / kRecordBytes) {
      why = "scalable Bloom filter header length does not match its sub-filter count";
      return std::nullopt;
    }
    if (XXH3_64bits(bytes.data(), bytes.size() - 8) !=
        detail::ByteReader(bytes.substr(bytes.size() - 8)).get<std::uint64_t>()) {
      why = "scalable Bloom filter header checksum mismatch (corrupted)";
      return std::nullopt;
    }
    if (const char* problem = detail::scalable_options_problem(p.options)) {
      why = std::string("corrupted options: ") + problem;
      return std::nullopt;
    }
    if (p.options.expansion == 0 && count != 1) {
      why = "a non-scaling filter with " + std::to_string(count) + " sub-filters";
      return std::nullopt;
    }
    std::optional<detail::SubFilterShape> expected = detail::sub_filter_shape(
        p.options.capacity,
        p.options.expansion != 0 ? p.options.error_rate / 2 : p.options.error_rate);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::string at = "sub-filter " + std::to_string(i);
      if (i > 0 && expected)
        expected = detail::next_sub_filter_shape(*expected, p.options.expansion);
      if (!expected || p.data_bytes + expected->bits / 8 > detail::kScalableMaxBytes) {
        why = at + " would take more than 2^46 bytes in all";
        return std::nullopt;
      }
      const auto capacity = reader.get<std::uint64_t>();
      const auto items = reader.get<std::uint64_t>();
      const auto bits = reader.get<std::uint64_t>();
      const auto hashes = reader.get<std::uint32_t>();
      const auto reserved = reader.get<std::uint32_t>();
      if (capacity != expected->capacity || bits != expected->bits || hashes != expected->hashes ||
          reserved != 0) {
        why = at + " is not the one these options make (capacity " + std::to_string(capacity) +
              ", " + std::to_string(bits) + " bits, " + std::to_string(hashes) +
              " hashes where this build makes " + std::to_string(expected->capacity) + ", " +
              std::to_string(expected->bits) + ", " + std::to_string(expected->hashes) + ")";
        return std::nullopt;
      }
      // Only the newest sub-filter may have room: a sub-filter is appended once the one
      // before is full.
      if (items > capacity || (i + 1 < count && items != capacity)) {
        why = at + " holds " + std::to_string(items) + " items of " + std::to_string(capacity) +
              (i + 1 < count ? " (all but the newest must be full)" : "");
        return std::nullopt;
      }
      p.shapes.push_back(*expected);
      p.items.push_back(items);
      p.data_bytes += expected->bits / 8;
    }
    return p;
  }

  static std::unique_ptr<ScalableBloomFilter> build(const Parsed& p) {
    auto filter = std::make_unique<ScalableBloomFilter>(p.options);
    filter->seed_ = p.seed;
    SubFilter* s = filter->oldest_;
    s->items.store(p.items[0], std::memory_order_relaxed);
    for (std::size_t i = 1; i < p.shapes.size(); ++i) {
      SubFilter* next = new SubFilter(p.shapes[i], i, s->offset + s->words.bytes(), s);
      s->newer = next;
      next->items.store(p.items[i], std::memory_order_relaxed);
      s = next;
    }
    filter->newest_.store(s, std::memory_order_relaxed);
    return filter;
  }

  ScalableBloomOptions options_;
  std::uint64_t seed_ = kDefaultSeed;
  SubFilter* oldest_ = nullptr;  // owns the chain, through `newer`
  std::atomic<SubFilter*> newest_{nullptr};
  std::unique_ptr<std::mutex> grow_;  // on the heap: the filter stays movable
};

}  // namespace ccf
