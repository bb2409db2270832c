#include "keys.hpp"

#include <fmt/format.h>

#include <ccf/hash.hpp>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace chtbench {

Rng::Rng(std::uint64_t seed) {
  // splitmix64 expands the seed into a state that is never all zero.
  for (auto& word : s_) {
    seed += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    word = z ^ (z >> 31);
  }
}

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t purpose, std::uint64_t thread) {
  return ccf::mix64(ccf::mix64(seed, purpose) ^ thread);
}

KeyDist KeyDist::parse(std::string_view text) {
  if (text == "uniform") return {};
  constexpr std::string_view kZipf = "zipf:";
  if (text.starts_with(kZipf)) {
    const std::string_view number = text.substr(kZipf.size());
    double theta = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), theta);
    if (ec == std::errc{} && end == number.data() + number.size() && theta > 0 && theta <= 10) {
      return {Kind::kZipf, theta};
    }
  }
  throw std::invalid_argument(fmt::format(
      "bad key distribution '{}': expected 'uniform' or 'zipf:THETA' with 0 < THETA <= 10 "
      "(e.g. zipf:0.99)",
      text));
}

std::string KeyDist::to_string() const {
  return kind == Kind::kUniform ? "uniform" : fmt::format("zipf:{}", theta);
}

namespace {
// log1p(x)/x and expm1(x)/x, accurate near 0.
double helper1(double x) {
  return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}
double helper2(double x) {
  return std::abs(x) > 1e-8 ? std::expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}
}  // namespace

KeyGenerator::KeyGenerator(KeyDist dist, std::uint64_t n)
    : n_(n), zipf_(dist.kind == KeyDist::Kind::kZipf) {
  if (n == 0) throw std::invalid_argument("key range must not be empty");
  if (!zipf_) return;
  theta_ = dist.theta;
  h_integral_x1_ = h_integral(1.5) - 1;
  h_integral_n_ = h_integral(static_cast<double>(n) + 0.5);
  s_ = 2 - h_integral_inverse(h_integral(2.5) - h(2));
}

// h(x) = x^-theta; H is its integral, chosen so that H(x) - H(x-1) bounds h from above.
double KeyGenerator::h(double x) const {
  return std::exp(-theta_ * std::log(x));
}
double KeyGenerator::h_integral(double x) const {
  const double log_x = std::log(x);
  return helper2((1 - theta_) * log_x) * log_x;
}
double KeyGenerator::h_integral_inverse(double x) const {
  double t = x * (1 - theta_);
  if (t < -1) t = -1;  // rounding guard
  return std::exp(helper1(t) * x);
}

std::uint64_t KeyGenerator::zipf(Rng& rng) const {
  const double n = static_cast<double>(n_);
  for (;;) {
    const double u = h_integral_n_ + rng.unit() * (h_integral_x1_ - h_integral_n_);
    const double x = h_integral_inverse(u);
    double k = std::floor(x + 0.5);
    if (k < 1) k = 1;
    if (k > n) k = n;
    // Accept if inside the squeeze, or under h at k.
    if (k - x <= s_ || u >= h_integral(k + 0.5) - h(k)) return static_cast<std::uint64_t>(k);
  }
}

}  // namespace chtbench
