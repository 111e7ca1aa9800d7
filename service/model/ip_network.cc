#include "service/model/ip_network.h"

#include <arpa/inet.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace cohort {
namespace service {

std::optional<IpAddress> ParseIpAddress(absl::string_view text) {
  // inet_pton reads a NUL-terminated string; an address is short.
  if (text.empty() || text.size() > 45) return std::nullopt;
  const std::string s(text);
  IpAddress a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) return a;
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
    a.v6 = true;
    return a;
  }
  return std::nullopt;
}

std::optional<IpNetwork> ParseIpNetwork(absl::string_view text) {
  const size_t slash = text.find('/');
  std::optional<IpAddress> address = ParseIpAddress(text.substr(0, slash));
  if (!address.has_value()) return std::nullopt;
  const int bits = address->v6 ? 128 : 32;
  IpNetwork network{*address, bits};
  if (slash == absl::string_view::npos) return network;
  const absl::string_view digits = text.substr(slash + 1);
  if (digits.empty() || digits.size() > 3) return std::nullopt;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
  }
  int length = 0;
  if (!absl::SimpleAtoi(digits, &length) || length > bits) return std::nullopt;
  network.prefix_length = length;
  return network;
}

bool InNetwork(const IpAddress& address, const IpNetwork& network) {
  if (address.v6 != network.address.v6) return false;
  for (int bit = 0; bit < network.prefix_length; ++bit) {
    const int byte = bit / 8;
    const int mask = 0x80 >> (bit % 8);
    if ((address.bytes[byte] & mask) != (network.address.bytes[byte] & mask)) {
      return false;
    }
  }
  return true;
}

IpWords WordsOf(const IpAddress& address) {
  const auto word = [&](int from, int n) {
    uint64_t w = 0;
    for (int i = 0; i < n; ++i) w = (w << 8) | address.bytes[from + i];
    return w;
  };
  if (!address.v6) return {word(0, 4), 0};
  return {word(0, 8), word(8, 8)};
}

}  // namespace service
}  // namespace cohort
