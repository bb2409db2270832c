// Bloom-family baselines for the space / false-positive comparison with the cuckoo filters
// (Bloom, CACM 1970).
//
// ccf::BloomFilter -- the standard Bloom filter. m bits, n items, k hash functions:
//   k   = round(ln2 * m / n), clamped to [1, 32]             (the optimum for that m / n)
//   FPR = (1 - e^{-kn/m})^k                                   (at the optimum ~ 0.6185^{m/n})
//   m/n = -ln(eps) / ln^2(2) = 1.44 * log2(1/eps) bits/item   (for a target FPR eps)
// The k bit positions come from ONE 64-bit key hash h by double hashing (Kirsch and
// Mitzenmacher): g_i = h1 + i * h2 (mod 2^64), bit_i = reduce_range(g_i, m), where h1 = h and
// h2 is a remix of h, forced odd. reduce_range keeps the high bits of g_i * m, so the
// positions walk around the bit array in steps of the real number m * h2 / 2^64: no two keys
// share a probe pattern merely because they share bit_0 and bit_1, and no division is needed.
// Each of the k probes is a cache miss on a large filter; a lookup stops at the first clear
// bit, so a negative lookup costs about 2 misses on average.
//
// ccf::BlockedBloomFilter -- a cache-blocked Bloom filter (Putze, Sanders, Singler 2007):
//
//   bit array:  | block 0 | block 1 | ... | block B-1 |     B = ceil(m / 512)
//                 '-- 512 bits = 8 words = one 64-byte, 64-byte-aligned cache line
//   block   = reduce_range(h, B)                              (high bits of h)
//   bit_i   = 9-bit fields of remixes mix64(h, salt_j): independent of the block and each other
//
// An insert sets, and a lookup tests, its k bits within ONE cache line, branch-free: one cache
// miss per operation on a filter larger than the cache, where the standard filter pays k
// misses per insert and positive lookup and about 2 per negative one. (Measured on a 62 MB
// filter, 10 bits/item, on a 2-vCPU EPYC VM: blocked 55-60 ns per op for everything; standard
// 60-75 ns per negative lookup, 70-110 ns per insert. With many independent operations in
// flight the bound is the reorder buffer as much as the miss count: the ~80 instructions of a
// blocked operation stay in it for a whole memory latency, so fewer instructions per bit would
// be the next win.) The price is accuracy: the load of a block varies (binomial, mean
// 512 * n / m items) and an overfull block answers "maybe" far more often than the average
// one gains in accuracy, so
//   FPR = E_l[(1 - (1 - 1/512)^{k l})^k],  l ~ Binomial(n, 1/B)
// is above the standard filter's at the same m / n: 1.01x at 4 bits/item, 1.07x at 8, 1.17x
// at 10, 1.3x at 12, 1.8x at 16, 2.9x at 20 (the gap widens as the target FPR falls;
// expected_fpr() evaluates the sum). k is the k in [1, 32] that minimizes this sum at
// n = capacity: the ln2 rule's value at 10-12 bits/item, one to four below it at 8 and 16+
// (fewer bits per key suit the fuller blocks).
//
// ccf::CountingBloomFilter -- the Bloom filter that can delete (Fan, Cao, Almeida, Broder 2000,
// "Summary cache"): the standard layout's k positions over m / 4 four-bit counters, 16 to a
// 64-bit word. insert adds 1 to each of the key's k counters, erase subtracts 1, contains tests
// that all k are non-zero. A counter at 15 is saturated: it stays 15 for good (neither insert
// nor erase changes it), which can only make lookups say "maybe" more often, never lose an
// item; saturations() counts the increments that met one (overflow is about 1e-15 per counter
// at the optimal k, but 15 inserts of one key saturate its counters). The price of deletion
// is space: at the same bits per item it has a quarter of the positions, so its rate is that
// of a standard filter with a quarter of the bits.
//
// All three: size them with (capacity, bits_per_item) -- memory bits, counters included -- or
// for_fpr(capacity, eps); insert, contains and erase are noexcept and allocate nothing. Not
// thread-safe for writes: concurrent const calls are safe, any call concurrent with insert /
// erase / clear is a data race. Movable, not copyable; a moved-from filter may only be
// destroyed or assigned to.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "ccf/detail/page_buffer.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf {
namespace detail {

inline constexpr unsigned kBloomMaxHashes = 32;
inline constexpr double kBloomMaxBitsPerItem = 64.0;
inline constexpr std::uint64_t kBloomMaxBytes = std::uint64_t{1} << 46;
inline constexpr double kLn2 = 0.69314718055994530942;

// Salts for the remixes that derive further hash values from the key hash.
inline constexpr std::uint64_t kBloomStepSalt = 0xd6e8feb86659fd93ULL;
inline constexpr std::uint64_t kBloomBlockSalt = 0xa0761d6478bd642fULL;

// The optimum number of hash functions of a standard Bloom filter: k = ln2 * m / n.
inline unsigned ln2_hash_count(double bits_per_item) noexcept {
  const double k = std::round(kLn2 * bits_per_item);
  if (!(k >= 1.0)) return 1;
  return k >= kBloomMaxHashes ? kBloomMaxHashes : static_cast<unsigned>(k);
}

// The standard filter's false-positive rate (1 - e^{-kn/m})^k.
inline double standard_bloom_fpr(double items, double bits, unsigned hashes) noexcept {
  const double k = hashes;
  return std::pow(-std::expm1(-k * items / bits), k);
}

// Double hashing: the i-th probe of a key is reduce_range(h1 + i * h2, range).
class ProbeSequence {
 public:
  explicit ProbeSequence(std::uint64_t hash) noexcept
      : base_(hash), step_(mix64(hash, kBloomStepSalt) | 1) {}

  std::uint64_t operator()(unsigned i, std::uint64_t range) const noexcept {
    return reduce_range(base_ + i * step_, range);
  }

 private:
  std::uint64_t base_;
  std::uint64_t step_;
};

inline void set_bit(std::uint64_t* words, std::uint64_t bit) noexcept {
  words[bit / 64] |= std::uint64_t{1} << (bit % 64);
}

inline bool test_bit(const std::uint64_t* words, std::uint64_t bit) noexcept {
  return (words[bit / 64] >> (bit % 64)) & 1;
}

// E[f(l)] for the load l ~ Binomial(items, 1 / blocks) of one block. The probabilities are
// built by the ratio recurrence outward from the mode and normalized by their sum, over the
// mode +- 12 sigma (all of the mass that a double can see); no lgamma, which is not
// thread-safe in glibc.
template <class F>
double expect_over_block_load(std::uint64_t items, std::uint64_t blocks, F f) {
  if (items == 0 || blocks == 1) return f(items);
  const double p = 1.0 / static_cast<double>(blocks);
  const double n = static_cast<double>(items);
  const double mean = n * p;
  const double sigma = std::sqrt(mean * (1.0 - p));
  // Relative spread below 1e-5: the load is as good as constant.
  if (sigma > 1e5) return f(static_cast<std::uint64_t>(std::llround(mean)));
  const double span = 12.0 * sigma + 12.0;
  const double hi = std::min(n, mean + span);
  const double lo = std::max(0.0, mean - span);
  const double odds = p / (1.0 - p);
  const auto mode = static_cast<std::uint64_t>(std::floor((n + 1.0) * p));
  double weight = 1.0;
  double total = 0.0;
  double sum = 0.0;
  for (std::uint64_t l = mode;; ++l) {  // P(l + 1) / P(l) = (n - l) / (l + 1) * p / (1 - p)
    total += weight;
    sum += weight * f(l);
    if (static_cast<double>(l) >= hi) break;
    weight *= (n - static_cast<double>(l)) / static_cast<double>(l + 1) * odds;
  }
  weight = 1.0;
  for (std::uint64_t l = mode; l > 0 && static_cast<double>(l) > lo; --l) {
    weight *= static_cast<double>(l) / (n - static_cast<double>(l) + 1.0) / odds;
    total += weight;
    sum += weight * f(l - 1);
  }
  return sum / total;
}

// The layouts: how a key hash becomes bits. Each is stateless; BasicBloomFilter holds the
// storage, sizes it and validates arguments for all.
//   kGrainBits      the bit array is a whole number of these
//   kPositionBits   bits per position: 1 (a bit), 4 (a counter)
//   hash_count      k for `bits` bits sized for `capacity` items
//   insert/contains set / test the key's k positions (a counting layout's insert returns the
//                   saturated counters it met, and it has erase)
//   fpr             the theoretical false-positive rate at `items` items

struct StandardBloomLayout {
  static constexpr std::string_view kName = "ccf::BloomFilter";
  static constexpr std::uint64_t kGrainBits = 64;
  static constexpr unsigned kPositionBits = 1;

  static unsigned hash_count(std::uint64_t bits, std::uint64_t capacity) noexcept {
    return ln2_hash_count(static_cast<double>(bits) / static_cast<double>(capacity));
  }

  static void insert(std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                     std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    for (unsigned i = 0; i < hashes; ++i) set_bit(words, probe(i, bits));
  }

  static bool contains(const std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                       std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    // Stop at the first clear bit: on a large filter every probe is a likely cache miss.
    for (unsigned i = 0; i < hashes; ++i) {
      if (!test_bit(words, probe(i, bits))) return false;
    }
    return true;
  }

  static double fpr(std::uint64_t bits, unsigned hashes, std::uint64_t items) noexcept {
    return standard_bloom_fpr(static_cast<double>(items), static_cast<double>(bits), hashes);
  }
};

struct BlockedBloomLayout {
  static constexpr std::string_view kName = "ccf::BlockedBloomFilter";
  static constexpr std::uint64_t kGrainBits = 512;  // one 64-byte cache line
  static constexpr unsigned kPositionBits = 1;
  static constexpr std::size_t kBlockWords = kGrainBits / 64;

  // k minimizing the block-load-averaged FPR at n = capacity. The FPR is unimodal in k, so
  // the search stops at the first increase (one or two steps at small bits/item).
  static unsigned hash_count(std::uint64_t bits, std::uint64_t capacity) {
    unsigned best = 1;
    double best_fpr = fpr(bits, 1, capacity);
    for (unsigned k = 2; k <= kBloomMaxHashes; ++k) {
      const double value = fpr(bits, k, capacity);
      if (!(value < best_fpr)) break;
      best = k;
      best_fpr = value;
    }
    return best;
  }

  static void insert(std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                     std::uint64_t hash) noexcept {
    std::uint64_t* block = words + block_index(bits, hash) * kBlockWords;
    for_each_bit(hashes, hash, [block](std::uint64_t bit) { set_bit(block, bit); });
  }

  // No early exit: after the first word the rest of the line is in L1, and a data-dependent
  // branch would cost more than the few loads it saves.
  static bool contains(const std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                       std::uint64_t hash) noexcept {
    const std::uint64_t* block = words + block_index(bits, hash) * kBlockWords;
    std::uint64_t all = 1;
    for_each_bit(hashes, hash, [block, &all](std::uint64_t bit) { all &= test_bit(block, bit); });
    return all != 0;
  }

  static double fpr(std::uint64_t bits, unsigned hashes, std::uint64_t items) {
    // A block holding l items has each bit clear with probability (1 - 1/512)^{k l}.
    const double log_clear =
        static_cast<double>(hashes) * std::log1p(-1.0 / static_cast<double>(kGrainBits));
    return expect_over_block_load(items, bits / kGrainBits, [&](std::uint64_t load) {
      return std::pow(-std::expm1(log_clear * static_cast<double>(load)), hashes);
    });
  }

 private:
  static std::uint64_t block_index(std::uint64_t bits, std::uint64_t hash) noexcept {
    return reduce_range(hash, bits / kGrainBits);
  }

  // Calls visit(bit) for the key's k bits within its block: 9-bit fields of remixes of hash,
  // 7 fields per remix. The block index used the high bits of hash itself; each remix
  // avalanches all of its bits, so the positions are independent of the block and of each
  // other. (Double hashing, as in the standard filter, is NOT good enough here: in a range of
  // only 512 a key's k positions are an arithmetic progression, keys with nearby (start, step)
  // share most of their bits, and the measured FPR came out 1.2x the theory at 12 bits/item
  // and 1.7x at 16.) The bits are set / tested in place rather than gathered into a 512-bit
  // mask first: building the mask in memory and reading it back as one vector defeats
  // store-to-load forwarding, which serializes the cache misses of consecutive operations.
  template <class Visit>
  static void for_each_bit(unsigned hashes, std::uint64_t hash, Visit visit) noexcept {
    constexpr unsigned kFieldBits = 9;  // log2(kGrainBits)
    constexpr unsigned kFieldsPerRemix = 64 / kFieldBits;
    for (unsigned first = 0; first < hashes; first += kFieldsPerRemix) {
      std::uint64_t fields = mix64(hash, kBloomBlockSalt + first);
      const unsigned last = std::min(hashes, first + kFieldsPerRemix);
      for (unsigned i = first; i < last; ++i, fields <<= kFieldBits) {
        visit(fields >> (64 - kFieldBits));
      }
    }
  }
};

struct CountingBloomLayout {
  static constexpr std::string_view kName = "ccf::CountingBloomFilter";
  static constexpr std::uint64_t kGrainBits = 64;  // 16 counters
  static constexpr unsigned kPositionBits = 4;
  static constexpr unsigned kSaturated = 15;

  static std::uint64_t counters(std::uint64_t bits) noexcept { return bits / kPositionBits; }

  static unsigned hash_count(std::uint64_t bits, std::uint64_t capacity) noexcept {
    return ln2_hash_count(static_cast<double>(counters(bits)) / static_cast<double>(capacity));
  }

  // Returns how many of the key's counters were saturated (and so left at 15).
  static std::uint64_t insert(std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                              std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    std::uint64_t saturated = 0;
    for (unsigned i = 0; i < hashes; ++i) {
      const std::uint64_t at = probe(i, counters(bits));
      const unsigned count = get(words, at);
      if (count == kSaturated) {
        ++saturated;
      } else {
        set(words, at, count + 1);
      }
    }
    return saturated;
  }

  static bool contains(const std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                       std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    for (unsigned i = 0; i < hashes; ++i) {
      if (get(words, probe(i, counters(bits))) == 0) return false;
    }
    return true;
  }

  // Subtracts the key's 1 from each of its unsaturated counters. False, and nothing changed,
  // when some counter holds less than the key put there (a position the key probes twice got 2):
  // the key is certainly not in the filter.
  static bool erase(std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                    std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    std::uint64_t at[kBloomMaxHashes];
    for (unsigned i = 0; i < hashes; ++i) at[i] = probe(i, counters(bits));
    std::sort(at, at + hashes);
    for (unsigned i = 0; i < hashes;) {
      unsigned times = 1;
      while (i + times < hashes && at[i + times] == at[i]) ++times;
      const unsigned count = get(words, at[i]);
      if (count != kSaturated && count < times) return false;
      i += times;
    }
    for (unsigned i = 0; i < hashes; ++i) {
      const unsigned count = get(words, at[i]);
      if (count != kSaturated) set(words, at[i], count - 1);
    }
    return true;
  }

  static double fpr(std::uint64_t bits, unsigned hashes, std::uint64_t items) noexcept {
    return standard_bloom_fpr(static_cast<double>(items), static_cast<double>(counters(bits)),
                              hashes);
  }

 private:
  static unsigned get(const std::uint64_t* words, std::uint64_t at) noexcept {
    return static_cast<unsigned>(words[at / 16] >> (at % 16 * 4)) & 0xf;
  }
  static void set(std::uint64_t* words, std::uint64_t at, unsigned count) noexcept {
    const unsigned shift = static_cast<unsigned>(at % 16 * 4);
    words[at / 16] =
        (words[at / 16] & ~(std::uint64_t{0xf} << shift)) | (std::uint64_t{count} << shift);
  }
};

inline std::string bloom_error(std::string_view filter, std::string_view what) {
  return std::string(filter) + ": " + std::string(what);
}

// The size of the bit array in bits: ceil(capacity * bits_per_item) rounded up to the grain.
inline std::uint64_t checked_bloom_bits(std::string_view filter, std::size_t capacity,
                                        double bits_per_item, std::uint64_t grain) {
  if (capacity == 0) throw std::invalid_argument(bloom_error(filter, "capacity must be positive"));
  if (!std::isfinite(bits_per_item) || bits_per_item <= 0.0 ||
      bits_per_item > kBloomMaxBitsPerItem) {
    std::ostringstream message;
    message << "bits_per_item must be in (0, " << kBloomMaxBitsPerItem << "], got "
            << bits_per_item;
    throw std::invalid_argument(bloom_error(filter, message.str()));
  }
  const double bits = std::ceil(static_cast<double>(capacity) * bits_per_item);
  if (bits > static_cast<double>(kBloomMaxBytes) * 8.0) {
    std::ostringstream message;
    message << "capacity " << capacity << " at " << bits_per_item << " bits/item needs "
            << bits / 8.0 << " bytes, more than the limit of 2^46";
    throw std::invalid_argument(bloom_error(filter, message.str()));
  }
  const auto exact = static_cast<std::uint64_t>(bits);
  return (exact + grain - 1) / grain * grain;
}

// m / n = -ln(eps) / ln^2(2) positions per item for a target false-positive rate eps, at
// `position_bits` bits per position.
inline double bloom_bits_per_item_for_fpr(std::string_view filter, double target_fpr,
                                          unsigned position_bits) {
  if (!(target_fpr > 0.0 && target_fpr < 1.0)) {
    std::ostringstream message;
    message << "target_fpr must be in (0, 1), got " << target_fpr;
    throw std::invalid_argument(bloom_error(filter, message.str()));
  }
  const double bits_per_item = -std::log(target_fpr) / (kLn2 * kLn2) * position_bits;
  if (bits_per_item > kBloomMaxBitsPerItem) {
    std::ostringstream message;
    message << "target_fpr " << target_fpr << " needs " << bits_per_item
            << " bits/item, more than the limit of " << kBloomMaxBitsPerItem;
    throw std::invalid_argument(bloom_error(filter, message.str()));
  }
  return bits_per_item;
}

}  // namespace detail

// A Bloom filter whose bit layout is given by Layout (see the two aliases below).
template <class Layout>
class BasicBloomFilter {
 public:
  // A filter sized for `capacity` items at `bits_per_item` bits each (rounded up to a whole
  // 64-bit word or 512-bit block). Throws std::invalid_argument for capacity 0, bits_per_item
  // not in (0, 64], or more than 2^46 bytes; std::bad_alloc when the memory cannot be mapped.
  explicit BasicBloomFilter(std::size_t capacity, double bits_per_item = 10.0,
                            std::uint64_t seed = kDefaultSeed)
      : capacity_(capacity),
        bits_(
            detail::checked_bloom_bits(Layout::kName, capacity, bits_per_item, Layout::kGrainBits)),
        hashes_(Layout::hash_count(bits_, capacity)),
        seed_(seed),
        buffer_(bits_ / 8) {}

  // A filter whose false-positive rate at `capacity` items is about target_fpr: 1.44 *
  // log2(1 / target_fpr) bits per item. For the blocked layout the rate is somewhat higher
  // (see the top of this file); expected_fpr() says by how much. Throws std::invalid_argument
  // for target_fpr not in (0, 1) or needing more than 64 bits per item (below about 4.4e-14).
  static BasicBloomFilter for_fpr(std::size_t capacity, double target_fpr,
                                  std::uint64_t seed = kDefaultSeed) {
    return BasicBloomFilter(
        capacity,
        detail::bloom_bits_per_item_for_fpr(Layout::kName, target_fpr, Layout::kPositionBits),
        seed);
  }

  // Always Status::kOk: a Bloom filter never refuses an item, it only grows less accurate
  // past its capacity.
  Status insert(std::uint64_t key) noexcept { return insert_hash(hash_key(key, seed_)); }
  Status insert(std::string_view key) noexcept { return insert_hash(hash_key(key, seed_)); }

  // False for a key never inserted, except with probability about expected_fpr(); true for
  // every key inserted since construction or the last clear().
  [[nodiscard]] bool contains(std::uint64_t key) const noexcept {
    return contains_hash(hash_key(key, seed_));
  }
  [[nodiscard]] bool contains(std::string_view key) const noexcept {
    return contains_hash(hash_key(key, seed_));
  }

  // Counting layout only: removes one insert of the key. The key must have been inserted and
  // not erased since (as for every filter that deletes: erasing another key that happens to
  // look present takes from the counters of the keys it collides with, a false negative for
  // them). kNotFound, and nothing changed, when the key is certainly absent.
  Status erase(std::uint64_t key) noexcept requires requires(std::uint64_t* w) {
    Layout::erase(w, 0, 0, 0);
  }
  { return erase_hash(hash_key(key, seed_)); }
  Status erase(std::string_view key) noexcept requires requires(std::uint64_t* w) {
    Layout::erase(w, 0, 0, 0);
  }
  { return erase_hash(hash_key(key, seed_)); }
  // Counting layout only: increments that met a saturated counter (left at 15) so far.
  std::uint64_t saturations() const noexcept requires requires(std::uint64_t* w) {
    Layout::erase(w, 0, 0, 0);
  }
  { return saturations_; }

  // Inserts since construction or clear(), duplicates included, less erases.
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t bit_count() const noexcept { return bits_; }
  unsigned hash_count() const noexcept { return hashes_; }
  std::uint64_t seed() const noexcept { return seed_; }
  // The bit array's bytes (the mapping behind it is rounded up to whole pages).
  std::size_t memory_bytes() const noexcept { return buffer_.size(); }
  // Memory bits per inserted item; per item of capacity while the filter is empty, which is
  // the figure it was built for.
  double bits_per_item() const noexcept {
    const std::size_t items = size_ != 0 ? size_ : capacity_;
    return 8.0 * static_cast<double>(memory_bytes()) / static_cast<double>(items);
  }
  // The theoretical false-positive rate at the current size() (0 when empty).
  double expected_fpr() const { return Layout::fpr(bits_, hashes_, size_); }

  void clear() noexcept {
    buffer_.clear();
    size_ = 0;
    saturations_ = 0;
  }

 private:
  Status insert_hash(std::uint64_t hash) noexcept {
    if constexpr (std::is_void_v<decltype(Layout::insert(words(), bits_, hashes_, hash))>) {
      Layout::insert(words(), bits_, hashes_, hash);
    } else {
      saturations_ += Layout::insert(words(), bits_, hashes_, hash);
    }
    ++size_;
    return Status::kOk;
  }

  Status erase_hash(std::uint64_t hash) noexcept {
    if (!Layout::erase(words(), bits_, hashes_, hash)) return Status::kNotFound;
    --size_;
    return Status::kOk;
  }

  bool contains_hash(std::uint64_t hash) const noexcept {
    return Layout::contains(words(), bits_, hashes_, hash);
  }

  // The buffer is page-aligned (so every 512-bit block is one cache line) and holds nothing
  // but these words.
  std::uint64_t* words() noexcept { return reinterpret_cast<std::uint64_t*>(buffer_.data()); }
  const std::uint64_t* words() const noexcept {
    return reinterpret_cast<const std::uint64_t*>(buffer_.data());
  }

  std::size_t capacity_;
  std::size_t bits_;
  unsigned hashes_;
  std::uint64_t seed_;
  std::size_t size_ = 0;
  std::uint64_t saturations_ = 0;  // counting layout: see saturations()
  detail::PageBuffer buffer_;
};

using BloomFilter = BasicBloomFilter<detail::StandardBloomLayout>;
using BlockedBloomFilter = BasicBloomFilter<detail::BlockedBloomLayout>;
using CountingBloomFilter = BasicBloomFilter<detail::CountingBloomLayout>;

}  // namespace ccf
