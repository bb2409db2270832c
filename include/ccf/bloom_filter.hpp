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
// for_fpr(capacity, eps); insert, contains and erase are noexcept and allocate nothing;
// insert_many / contains_many hash ahead and prefetch (detail/software_pipeline.hpp), so the
// cache misses of consecutive keys overlap; save / load use the checksummed format of
// detail/bloom_format.hpp (docs/file-format.md). Movable, not copyable; a moved-from filter may
// only be destroyed or assigned to.
//
// Sequential (BloomFilter, BlockedBloomFilter, CountingBloomFilter): plain loads and stores.
// Concurrent const calls are safe; any call concurrent with insert / erase / clear is a data
// race.
//
// Concurrent (ConcurrentBloomFilter, ConcurrentBlockedBloomFilter,
// ConcurrentCountingBloomFilter): the same layouts and code over std::atomic_ref on the words
// (AtomicWordAccess below). insert, contains, erase, the batches, size() and save() may run in
// any threads at once; clear() and load() may not run beside anything.
//   1. Progress. insert of the standard and blocked filters is wait-free: per word of the key's
//      positions one relaxed load and, only where some of its bits are still clear, one
//      fetch_or (the blocked filter gathers a key's bits into per-word masks first, so at most
//      8 RMWs, one cache line). contains is wait-free and store-free: relaxed loads only, no
//      RMW, no lock, so lookups never take a line away from another core. The counting filter
//      updates each counter by a CAS loop on its 64-bit word: lock-free. The price is in the
//      locked ORs: ~5 per insert while a blocked filter fills, each a full barrier on x86, so
//      its batched inserts run at about 0.3 of the memory limit where the sequential filter's
//      reach 0.8-1.0 (docs/benchmarks.md); its lookups are the sequential machine code.
//   2. No false negative. Once insert(x) has returned, every contains(x) that starts
//      afterwards (happens-after the return: a join, a release/acquire handshake, a mutex) in
//      any thread answers true -- for the counting filter, until x is erased. Why relaxed is
//      enough: bits are only ever set, and by read-read / write-read coherence a load that
//      happens after the fetch_or (or after the load that found the bits already set) reads
//      that value or a later one in the word's modification order, which holds the bits too.
//   3. A contains(x) concurrent with insert(x) may answer either; it answers true once it reads
//      every word after the insert's update of it. A true answer publishes nothing: it
//      establishes no happens-before with any insert (an insert that found its bits set wrote
//      nothing), so do not use a Bloom filter to hand over data.
//   4. Counting filter: insert and erase change each counter atomically but a key's k counters
//      one by one, so a contains(x) concurrent with erase(x) or insert(x) may answer either,
//      and contains(y) for a key y inserted and not erased stays true throughout (an erase of
//      an inserted x takes away only x's own increments). A saturated counter (15) stays 15:
//      inserts and erases leave it alone, as in the sequential filter. Concurrent erases that
//      together take more from a counter than it holds -- only possible when some key is erased
//      that was not inserted -- refuse (kNotFound) and put back what they had taken.
//   5. size() (and saturations()) are sharded counters (detail/sharded_counter.hpp): exact when
//      no insert or erase is in flight, approximate while some are.
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
#include <new>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ccf/detail/bloom_format.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/prefetch.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/detail/software_pipeline.hpp"
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

// How the layouts read and write their words: load, set_bits (OR a mask in) and update (a
// read-modify-write whose next(old) returns the new word, or nullopt to leave it).
//
// PlainWordAccess: the sequential filters' plain loads and stores.
struct PlainWordAccess {
  static constexpr bool kConcurrent = false;
  static std::uint64_t load(const std::uint64_t* word) noexcept { return *word; }
  static void set_bits(std::uint64_t* word, std::uint64_t mask) noexcept { *word |= mask; }
  template <class Next>
  static void update(std::uint64_t* word, Next next) noexcept {
    if (const std::optional<std::uint64_t> value = next(*word)) *word = *value;
  }
};

// AtomicWordAccess: std::atomic_ref on the same words (the storage is 64-byte aligned, above
// what atomic_ref asks). Every order is relaxed: the words publish nothing but their own bits,
// and the no-false-negative guarantee rests on coherence alone (see the top of this file, 2).
struct AtomicWordAccess {
  static constexpr bool kConcurrent = true;
  using Ref = std::atomic_ref<std::uint64_t>;
  static_assert(Ref::is_always_lock_free);
  static_assert(Ref::required_alignment <= alignof(std::uint64_t));

  // The words live in writable heap memory, so viewing a const word through atomic_ref (which
  // takes no const T before C++26) only loads.
  static std::uint64_t load(const std::uint64_t* word) noexcept {
    return Ref(*const_cast<std::uint64_t*>(word)).load(std::memory_order_relaxed);
  }
  // Skips the RMW when the bits are already there: a load keeps the line shared among cores,
  // a locked OR would take it exclusive (and cost ~20 cycles) for nothing.
  static void set_bits(std::uint64_t* word, std::uint64_t mask) noexcept {
    if ((load(word) & mask) != mask) or_bits(word, mask);
  }
  static void or_bits(std::uint64_t* word, std::uint64_t mask) noexcept {
    Ref(*word).fetch_or(mask, std::memory_order_relaxed);
  }
  // next may run several times (once per failed CAS); it must not count its calls.
  template <class Next>
  static void update(std::uint64_t* word, Next next) noexcept {
    Ref ref(*word);
    std::uint64_t old = ref.load(std::memory_order_relaxed);
    while (const std::optional<std::uint64_t> value = next(old)) {
      if (ref.compare_exchange_weak(old, *value, std::memory_order_relaxed)) return;
    }
  }
};

template <class Access>
void set_bit(std::uint64_t* words, std::uint64_t bit) noexcept {
  Access::set_bits(words + bit / 64, std::uint64_t{1} << (bit % 64));
}

template <class Access>
bool test_bit(const std::uint64_t* words, std::uint64_t bit) noexcept {
  return (Access::load(words + bit / 64) >> (bit % 64)) & 1;
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
//   kKind           the kind in the file format
//   hash_count      k for `bits` bits sized for `capacity` items
//   insert/contains set / test the key's k positions through Access (a counting layout's
//                   insert returns the saturated counters it met, and it has erase)
//   prefetch        starts loading the lines insert / contains will touch
//   fpr             the theoretical false-positive rate at `items` items

struct StandardBloomLayout {
  static constexpr std::string_view kName = "ccf::BloomFilter";
  static constexpr std::uint64_t kGrainBits = 64;
  static constexpr unsigned kPositionBits = 1;
  static constexpr BloomKind kKind = BloomKind::kStandard;
  static constexpr std::size_t kPipelineDistance = 8;  // see detail/software_pipeline.hpp

  static unsigned hash_count(std::uint64_t bits, std::uint64_t capacity) noexcept {
    return ln2_hash_count(static_cast<double>(bits) / static_cast<double>(capacity));
  }

  template <class Access>
  static void insert(std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                     std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    for (unsigned i = 0; i < hashes; ++i) set_bit<Access>(words, probe(i, bits));
  }

  template <class Access>
  static bool contains(const std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                       std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    // Stop at the first clear bit: on a large filter every probe is a likely cache miss.
    for (unsigned i = 0; i < hashes; ++i) {
      if (!test_bit<Access>(words, probe(i, bits))) return false;
    }
    return true;
  }

  // An insert touches all k lines; a lookup fetches only its first two, since a negative one
  // stops at its first clear bit (after about 2 probes at the optimal k).
  static void prefetch(const std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                       std::uint64_t hash, bool for_insert) noexcept {
    prefetch_probes(words, bits, hashes, hash, for_insert);
  }

  static double fpr(std::uint64_t bits, unsigned hashes, std::uint64_t items) noexcept {
    return standard_bloom_fpr(static_cast<double>(items), static_cast<double>(bits), hashes);
  }

  // Shared with the counting layout (position_bits 4): prefetches the words of the key's
  // positions, all k for an insert, the first two for a lookup.
  static void prefetch_probes(const std::uint64_t* words, std::uint64_t positions, unsigned hashes,
                              std::uint64_t hash, bool for_insert,
                              unsigned position_bits = 1) noexcept {
    const ProbeSequence probe(hash);
    const unsigned count = for_insert ? hashes : std::min(hashes, 2u);
    for (unsigned i = 0; i < count; ++i) {
      const std::uint64_t* word = words + probe(i, positions) * position_bits / 64;
      if (for_insert) {
        prefetch_line_for_write(word);
      } else {
        prefetch_line(word);
      }
    }
  }
};

struct BlockedBloomLayout {
  static constexpr std::string_view kName = "ccf::BlockedBloomFilter";
  static constexpr std::uint64_t kGrainBits = 512;  // one 64-byte cache line
  static constexpr unsigned kPositionBits = 1;
  static constexpr BloomKind kKind = BloomKind::kBlocked;
  // One line per key: 16 keys ahead keep as many lines in flight as a cuckoo lookup's 8.
  static constexpr std::size_t kPipelineDistance = 16;
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

  // Sequential: each bit set in place. Concurrent: the bits gathered into one mask per word
  // first, so that a word takes at most one RMW, and none where its bits are all set already.
  // Which words still lack bits is worked out without a branch per word (whether a bit is set
  // is a coin toss in a half-full filter: a branch on it mispredicts), then only those take a
  // locked OR, one loop step each.
  template <class Access>
  static void insert(std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                     std::uint64_t hash) noexcept {
    std::uint64_t* block = words + block_index(bits, hash) * kBlockWords;
    if constexpr (Access::kConcurrent) {
      std::uint64_t masks[kBlockWords] = {};
      for_each_bit(hashes, hash, [&masks](std::uint64_t bit) {
        masks[bit / 64] |= std::uint64_t{1} << bit % 64;
      });
      unsigned lacking = 0;  // bit w: word w lacks some of its bits
      for (unsigned w = 0; w < kBlockWords; ++w) {
        lacking |= static_cast<unsigned>((masks[w] & ~Access::load(block + w)) != 0) << w;
      }
      for (; lacking != 0; lacking &= lacking - 1) {
        const auto w = static_cast<unsigned>(std::countr_zero(lacking));
        Access::or_bits(block + w, masks[w]);
      }
    } else {
      for_each_bit(hashes, hash, [block](std::uint64_t bit) { set_bit<Access>(block, bit); });
    }
  }

  // No early exit: after the first word the rest of the line is in L1, and a data-dependent
  // branch would cost more than the few loads it saves.
  template <class Access>
  static bool contains(const std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                       std::uint64_t hash) noexcept {
    const std::uint64_t* block = words + block_index(bits, hash) * kBlockWords;
    std::uint64_t all = 1;
    for_each_bit(hashes, hash,
                 [block, &all](std::uint64_t bit) { all &= test_bit<Access>(block, bit); });
    return all != 0;
  }

  static void prefetch(const std::uint64_t* words, std::uint64_t bits, unsigned, std::uint64_t hash,
                       bool for_insert) noexcept {
    const std::uint64_t* block = words + block_index(bits, hash) * kBlockWords;
    if (for_insert) {
      prefetch_line_for_write(block);
    } else {
      prefetch_line(block);
    }
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
  static constexpr BloomKind kKind = BloomKind::kCounting;
  static constexpr std::size_t kPipelineDistance = 8;
  static constexpr unsigned kSaturated = 15;

  static std::uint64_t counters(std::uint64_t bits) noexcept { return bits / kPositionBits; }

  static unsigned hash_count(std::uint64_t bits, std::uint64_t capacity) noexcept {
    return ln2_hash_count(static_cast<double>(counters(bits)) / static_cast<double>(capacity));
  }

  // Returns how many of the key's counters were saturated (and so left at 15).
  template <class Access>
  static std::uint64_t insert(std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                              std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    std::uint64_t saturated = 0;
    for (unsigned i = 0; i < hashes; ++i) {
      saturated += add<Access>(words, probe(i, counters(bits)), 1) == Added::kSaturated;
    }
    return saturated;
  }

  template <class Access>
  static bool contains(const std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                       std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    for (unsigned i = 0; i < hashes; ++i) {
      const std::uint64_t at = probe(i, counters(bits));
      if (get(Access::load(words + at / 16), at) == 0) return false;
    }
    return true;
  }

  // Subtracts the key's 1 from each of its unsaturated counters. False, and nothing changed,
  // when some counter holds less than the key put there (a position the key probes twice got 2):
  // the key is certainly not in the filter. The check comes first; concurrently a counter can
  // still fall short between check and subtraction (only when keys are erased that were not
  // inserted, see the top of this file, 4), and then the counters already taken from get their
  // share back.
  template <class Access>
  static bool erase(std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                    std::uint64_t hash) noexcept {
    const ProbeSequence probe(hash);
    std::uint64_t at[kBloomMaxHashes];
    for (unsigned i = 0; i < hashes; ++i) at[i] = probe(i, counters(bits));
    std::sort(at, at + hashes);
    // Runs of equal positions: (position, times the key probes it).
    std::uint64_t where[kBloomMaxHashes];
    unsigned times[kBloomMaxHashes];
    unsigned runs = 0;
    for (unsigned i = 0; i < hashes; ++runs) {
      where[runs] = at[i];
      times[runs] = 1;
      while (i + times[runs] < hashes && at[i + times[runs]] == at[i]) ++times[runs];
      i += times[runs];
    }
    for (unsigned r = 0; r < runs; ++r) {
      const unsigned count = get(Access::load(words + where[r] / 16), where[r]);
      if (count != kSaturated && count < times[r]) return false;
    }
    for (unsigned r = 0; r < runs; ++r) {
      if (add<Access>(words, where[r], -static_cast<int>(times[r])) == Added::kShort) {
        for (unsigned back = 0; back < r; ++back) {
          add<Access>(words, where[back], static_cast<int>(times[back]));
        }
        return false;
      }
    }
    return true;
  }

  static void prefetch(const std::uint64_t* words, std::uint64_t bits, unsigned hashes,
                       std::uint64_t hash, bool for_insert) noexcept {
    StandardBloomLayout::prefetch_probes(words, counters(bits), hashes, hash, for_insert,
                                         kPositionBits);
  }

  static double fpr(std::uint64_t bits, unsigned hashes, std::uint64_t items) noexcept {
    return standard_bloom_fpr(static_cast<double>(items), static_cast<double>(counters(bits)),
                              hashes);
  }

 private:
  // Counter `at` within its word.
  static unsigned get(std::uint64_t word, std::uint64_t at) noexcept {
    return static_cast<unsigned>(word >> (at % 16 * 4)) & 0xf;
  }

  enum class Added { kDone, kSaturated, kShort };

  // Adds delta to counter `at` (clamped at 15), except that a saturated counter stays 15
  // (kSaturated) and a counter that would fall below 0 stays as it is (kShort).
  template <class Access>
  static Added add(std::uint64_t* words, std::uint64_t at, int delta) noexcept {
    const unsigned shift = static_cast<unsigned>(at % 16 * 4);
    Added outcome = Added::kDone;  // set by the last (the successful) call of the lambda
    Access::update(words + at / 16, [&](std::uint64_t word) -> std::optional<std::uint64_t> {
      const int count = static_cast<int>(get(word, at));
      outcome = count == static_cast<int>(kSaturated) ? Added::kSaturated
                : count + delta < 0                   ? Added::kShort
                                                      : Added::kDone;
      if (outcome != Added::kDone) return std::nullopt;
      const auto next =
          static_cast<std::uint64_t>(std::min(count + delta, static_cast<int>(kSaturated)));
      return (word & ~(std::uint64_t{0xf} << shift)) | (next << shift);
    });
    return outcome;
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

// The largest bit array a file may announce for `capacity` items: 64 bits per item, rounded
// up to the grain (what the constructor can make).
inline bool bloom_bits_plausible(std::uint64_t capacity, std::uint64_t bits, std::uint64_t grain) {
  return bits != 0 && bits % grain == 0 && bits / 8 <= kBloomMaxBytes &&
         static_cast<double>(bits) <=
             std::ceil(static_cast<double>(capacity) * kBloomMaxBitsPerItem) +
                 static_cast<double>(grain);
}

// Zeroed, 64-byte aligned words (so that a blocked filter's 512-bit block is one cache line):
// arrays of 2 MiB and more in a PageBuffer (huge pages), smaller ones from the heap -- a small
// filter (a scalable filter's first sub-filters, a server key) costs its bytes, not a page.
class BloomWords {
 public:
  BloomWords() = default;
  explicit BloomWords(std::size_t bytes) : bytes_(bytes) {
    if (bytes >= PageBuffer::kHugePage) {
      pages_ = PageBuffer(bytes);
      words_ = reinterpret_cast<std::uint64_t*>(pages_.data());
    } else if (bytes != 0) {
      heap_.reset(static_cast<std::uint64_t*>(::operator new(bytes, kAlign)));
      words_ = heap_.get();
      clear();
    }
  }

  std::uint64_t* data() noexcept { return words_; }
  const std::uint64_t* data() const noexcept { return words_; }
  std::size_t bytes() const noexcept { return bytes_; }
  void clear() noexcept {
    if (words_ != nullptr) std::memset(words_, 0, bytes_);
  }

 private:
  static constexpr std::align_val_t kAlign{64};
  struct Free {
    void operator()(std::uint64_t* words) const noexcept { ::operator delete(words, kAlign); }
  };

  PageBuffer pages_;
  std::unique_ptr<std::uint64_t, Free> heap_;
  std::uint64_t* words_ = nullptr;  // into pages_ or heap_, which keep it across moves
  std::size_t bytes_ = 0;
};

// The sequential filters' counters: plain integers.
class PlainCount {
 public:
  void add(std::int64_t delta) noexcept { value_ += delta; }
  std::uint64_t value() const noexcept { return static_cast<std::uint64_t>(value_); }
  void reset(std::uint64_t value) noexcept { value_ = static_cast<std::int64_t>(value); }

 private:
  std::int64_t value_ = 0;
};

// The concurrent filters' counters: a ShardedCounter (no shared hot line), on the heap so that
// the filter stays movable.
class ShardedCount {
 public:
  ShardedCount() : slots_(std::make_unique<ShardedCounter>()) {}
  void add(std::int64_t delta) noexcept { slots_->add(delta); }
  // A decrement can be summed before the increment it follows: never below 0.
  std::uint64_t value() const noexcept {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(0, slots_->value()));
  }
  void reset(std::uint64_t value) {
    slots_ = std::make_unique<ShardedCounter>();
    slots_->add(static_cast<std::int64_t>(value));
  }

 private:
  std::unique_ptr<ShardedCounter> slots_;
};

}  // namespace detail

// A Bloom filter whose bit layout is given by Layout and whose word access by Access
// (detail::PlainWordAccess: sequential; detail::AtomicWordAccess: concurrent; see the aliases
// below and the top of this file).
template <class Layout, class Access = detail::PlainWordAccess>
class BasicBloomFilter {
  static constexpr bool kCounting = Layout::kKind == detail::BloomKind::kCounting;
  using Count = std::conditional_t<Access::kConcurrent, detail::ShardedCount, detail::PlainCount>;

 public:
  // A filter sized for `capacity` items at `bits_per_item` bits each (rounded up to a whole
  // 64-bit word or 512-bit block). Throws std::invalid_argument for capacity 0, bits_per_item
  // not in (0, 64], or more than 2^46 bytes; std::bad_alloc when the memory cannot be had.
  explicit BasicBloomFilter(std::size_t capacity, double bits_per_item = 10.0,
                            std::uint64_t seed = kDefaultSeed)
      : BasicBloomFilter(
            capacity,
            detail::checked_bloom_bits(Layout::kName, capacity, bits_per_item, Layout::kGrainBits),
            seed, Shape{}) {}

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
  // every key inserted since construction or the last clear() (and, counting, not erased).
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
  Status erase(std::uint64_t key) noexcept requires kCounting {
    return erase_hash(hash_key(key, seed_));
  }
  Status erase(std::string_view key) noexcept requires kCounting {
    return erase_hash(hash_key(key, seed_));
  }
  // Counting layout only: increments that met a saturated counter (left at 15) so far.
  std::uint64_t saturations() const noexcept requires kCounting { return saturations_.value(); }

  // Inserts every key (Key: std::uint64_t or something that converts to std::string_view);
  // returns keys.size(). Pipelined: key i + d (d = 16 blocked, 8 otherwise) is hashed and its
  // lines prefetched (for writing) before key i is inserted, so the misses of consecutive
  // inserts overlap. Each insert is atomic on its own (concurrent filters), the batch is not.
  template <class Key>
  std::size_t insert_many(std::span<const Key> keys) noexcept {
    detail::software_pipeline<Layout::kPipelineDistance>(
        keys.size(), [&](std::size_t i) { return stage(keys[i], true); },
        [&](std::size_t, std::uint64_t hash) {
          insert_hash(hash);
          return true;
        });
    return keys.size();
  }

  // out[i] = contains(keys[i]); returns the number of hits. out must be at least as long as
  // keys (else std::invalid_argument). Pipelined as insert_many.
  template <class Key>
  std::size_t contains_many(std::span<const Key> keys, std::span<bool> out) const {
    if (out.size() < keys.size()) throw std::invalid_argument("contains_many: output too short");
    std::size_t hits = 0;
    detail::software_pipeline<Layout::kPipelineDistance>(
        keys.size(), [&](std::size_t i) { return stage(keys[i], false); },
        [&](std::size_t i, std::uint64_t hash) {
          out[i] = contains_hash(hash);
          hits += out[i];
          return true;
        });
    return hits;
  }

  // Inserts since construction or clear(), duplicates included, less erases.
  std::size_t size() const noexcept { return size_.value(); }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t bit_count() const noexcept { return bits_; }
  unsigned hash_count() const noexcept { return hashes_; }
  std::uint64_t seed() const noexcept { return seed_; }
  // The bit array's bytes.
  std::size_t memory_bytes() const noexcept { return words_.bytes(); }
  // Memory bits per inserted item; per item of capacity while the filter is empty, which is
  // the figure it was built for.
  double bits_per_item() const noexcept {
    const std::size_t items = size() != 0 ? size() : capacity_;
    return 8.0 * static_cast<double>(memory_bytes()) / static_cast<double>(items);
  }
  // The theoretical false-positive rate at the current size() (0 when empty).
  double expected_fpr() const { return Layout::fpr(bits_, hashes_, size()); }

  // Not concurrent with anything.
  void clear() {
    words_.clear();
    size_.reset(0);
    saturations_.reset(0);
  }

  // Writes the filter in the Bloom file format (docs/file-format.md); a sequential and a
  // concurrent filter of one layout write the same bytes. Concurrent filters may save while
  // inserts run: each word is read atomically, and the file holds some of the concurrent
  // inserts (a later load answers true for every insert that returned before save began).
  // Throws std::ios_base::failure.
  void save(std::ostream& out) const {
    detail::BloomFileHeader h;
    h.kind = Layout::kKind;
    h.capacity = capacity_;
    h.bits = bits_;
    h.hashes = hashes_;
    h.seed = seed_;
    h.items = size();
    h.saturations = kCounting ? saturations_.value() : 0;
    h.payload_bytes = bits_ / 8;
    const std::string header = h.encode();
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    detail::write_bloom_payload(out, h.payload_bytes,
                                [this](std::uint64_t at, std::span<std::byte> buffer) {
                                  const std::uint64_t* word = words_.data() + at / 8;
                                  for (std::size_t i = 0; i < buffer.size(); i += 8, ++word) {
                                    const std::uint64_t value = Access::load(word);
                                    std::memcpy(buffer.data() + i, &value, 8);
                                  }
                                });
  }

  // Reads a filter that save() wrote (by a sequential or concurrent filter of this layout).
  // Throws FormatError naming what was wrong (docs/file-format.md lists every check); memory
  // follows the bytes the stream actually holds, whatever the header announces.
  static BasicBloomFilter load(std::istream& in) {
    const detail::BloomFileHeader h = detail::BloomFileHeader::read(in, Layout::kKind);
    if (h.capacity == 0) throw FormatError("corrupted Bloom filter capacity 0");
    if (!detail::bloom_bits_plausible(h.capacity, h.bits, Layout::kGrainBits)) {
      throw FormatError("corrupted bit count " + std::to_string(h.bits) + " for capacity " +
                        std::to_string(h.capacity) + " (a positive multiple of " +
                        std::to_string(Layout::kGrainBits) + ", at most 64 bits per item)");
    }
    if (h.payload_bytes != h.bits / 8) {
      throw FormatError("payload size does not match the bit count");
    }
    if (h.hashes != Layout::hash_count(h.bits, h.capacity)) {
      throw FormatError("corrupted hash count " + std::to_string(h.hashes) + " (this build uses " +
                        std::to_string(Layout::hash_count(h.bits, h.capacity)) + " for " +
                        std::to_string(h.bits) + " bits and capacity " +
                        std::to_string(h.capacity) + ")");
    }
    // The counters are signed 64-bit (an erase subtracts).
    constexpr std::uint64_t kMaxCount = std::numeric_limits<std::int64_t>::max();
    if (h.items > kMaxCount || h.saturations > kMaxCount) {
      throw FormatError("corrupted item or saturation count (above 2^63 - 1)");
    }
    if (!kCounting && h.saturations != 0) {
      throw FormatError("corrupted saturation count (not zero in a filter without counters)");
    }
    BasicBloomFilter filter = detail::load_bloom_payload(
        in, h.payload_bytes, [&] { return BasicBloomFilter(h.capacity, h.bits, h.seed, Shape{}); },
        [](BasicBloomFilter& f, std::uint64_t at, std::span<const std::byte> chunk) {
          std::memcpy(reinterpret_cast<std::byte*>(f.words_.data()) + at, chunk.data(),
                      chunk.size());
        });
    filter.size_.reset(h.items);
    filter.saturations_.reset(h.saturations);
    return filter;
  }

 private:
  struct Shape {};  // tags the constructor that takes the bit count as it is
  BasicBloomFilter(std::uint64_t capacity, std::uint64_t bits, std::uint64_t seed, Shape)
      : capacity_(capacity),
        bits_(bits),
        hashes_(Layout::hash_count(bits_, capacity)),
        seed_(seed),
        words_(bits_ / 8) {}

  template <class Key>
  std::uint64_t stage(const Key& key, bool for_insert) const noexcept {
    const std::uint64_t hash = hash_key(key, seed_);
    Layout::prefetch(words_.data(), bits_, hashes_, hash, for_insert);
    return hash;
  }

  Status insert_hash(std::uint64_t hash) noexcept {
    if constexpr (kCounting) {
      const std::uint64_t met =
          Layout::template insert<Access>(words_.data(), bits_, hashes_, hash);
      if (met != 0) saturations_.add(static_cast<std::int64_t>(met));
    } else {
      Layout::template insert<Access>(words_.data(), bits_, hashes_, hash);
    }
    size_.add(1);
    return Status::kOk;
  }

  Status erase_hash(std::uint64_t hash) noexcept {
    if (!Layout::template erase<Access>(words_.data(), bits_, hashes_, hash)) {
      return Status::kNotFound;
    }
    size_.add(-1);
    return Status::kOk;
  }

  bool contains_hash(std::uint64_t hash) const noexcept {
    return Layout::template contains<Access>(words_.data(), bits_, hashes_, hash);
  }

  std::size_t capacity_;
  std::size_t bits_;
  unsigned hashes_;
  std::uint64_t seed_;
  Count size_;
  Count saturations_;  // counting layout: see saturations()
  detail::BloomWords words_;
};

using BloomFilter = BasicBloomFilter<detail::StandardBloomLayout>;
using BlockedBloomFilter = BasicBloomFilter<detail::BlockedBloomLayout>;
using CountingBloomFilter = BasicBloomFilter<detail::CountingBloomLayout>;

using ConcurrentBloomFilter =
    BasicBloomFilter<detail::StandardBloomLayout, detail::AtomicWordAccess>;
using ConcurrentBlockedBloomFilter =
    BasicBloomFilter<detail::BlockedBloomLayout, detail::AtomicWordAccess>;
using ConcurrentCountingBloomFilter =
    BasicBloomFilter<detail::CountingBloomLayout, detail::AtomicWordAccess>;

}  // namespace ccf
