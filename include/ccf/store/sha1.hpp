// SHA-1 content keys for the log store, from OpenSSL's libcrypto (Debian: libssl-dev; link
// the ccf::log_store target, which brings OpenSSL::Crypto). SHA-1 names content here, as in the
// seed design and in git; it is not used for any security property.
#pragma once

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ccf::store {

using Sha1Digest = std::array<unsigned char, 20>;

inline Sha1Digest sha1(std::string_view data) {
  Sha1Digest digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha1(), nullptr) != 1 ||
      length != digest.size()) {
    throw std::runtime_error("SHA-1 from libcrypto failed");
  }
  return digest;
}

// The digest's 20 bytes as a key of the log store.
inline std::string_view as_key(const Sha1Digest& digest) noexcept {
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

inline std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  return out;
}

// The bytes that `hex` (an even number of hex digits, either case) spells; nullopt otherwise.
inline std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int high = digit(hex[2 * i]);
    const int low = digit(hex[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out[i] = static_cast<char>(high * 16 + low);
  }
  return out;
}

}  // namespace ccf::store
