// Deterministic key streams: the same seed gives the same keys to every structure compared.
//
// Keys are drawn from [1, n]. `uniform` is a multiply-shift reduction of a xoshiro256** word;
// `zipf:THETA` gives rank k probability proportional to k^-THETA (rank k is key k), sampled in
// O(1) by rejection-inversion (Hörmann & Derflinger 1996), which works for any THETA > 0,
// including the YCSB-style THETA < 1 that table-free methods like absl's do not support.
#pragma once

#include <ccf/hash.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace chtbench {

// xoshiro256** (Blackman & Vigna): fast, 256-bit state, seeded through splitmix64.
// Satisfies UniformRandomBitGenerator.
class Rng {
 public:
  using result_type = std::uint64_t;
  explicit Rng(std::uint64_t seed);
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }

  result_type operator()() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) (multiply-shift; bias below n / 2^64).
  std::uint64_t below(std::uint64_t n) { return ccf::reduce_range((*this)(), n); }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

// The stream seed for one (run seed, purpose, thread) triple.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t purpose, std::uint64_t thread);

struct KeyDist {
  enum class Kind { kUniform, kZipf };
  Kind kind = Kind::kUniform;
  double theta = 0;  // zipf exponent

  // "uniform" or "zipf:THETA" with 0 < THETA <= 10; throws std::invalid_argument otherwise.
  static KeyDist parse(std::string_view text);
  std::string to_string() const;
};

// Draws keys in [1, n] from a KeyDist.
class KeyGenerator {
 public:
  KeyGenerator(KeyDist dist, std::uint64_t n);
  std::uint64_t operator()(Rng& rng) const { return zipf_ ? zipf(rng) : 1 + rng.below(n_); }
  // out[i] = (*this)(rng) for every i, the distribution tested once: the uniform loop draws
  // from a local copy of the generator that nothing else can reach (zipf() is out of line), so
  // its state stays in registers.
  void fill(std::span<std::uint64_t> out, Rng& rng) const {
    if (zipf_) {
      for (std::uint64_t& key : out) key = zipf(rng);
      return;
    }
    Rng local = rng;
    for (std::uint64_t& key : out) key = 1 + local.below(n_);
    rng = local;
  }
  std::uint64_t n() const { return n_; }

 private:
  std::uint64_t zipf(Rng& rng) const;
  double h(double x) const;
  double h_integral(double x) const;
  double h_integral_inverse(double x) const;

  std::uint64_t n_;
  bool zipf_;
  double theta_ = 0;
  double h_integral_x1_ = 0;
  double h_integral_n_ = 0;
  double s_ = 0;
};

}  // namespace chtbench
