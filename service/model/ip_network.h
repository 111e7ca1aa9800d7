// IP addresses and networks for OP_CIDR (issue 44): Event Ruler's and
// SNS's "cidr". An address is the text inet_pton(3) reads: IPv4 in dotted
// decimal ("10.1.2.3"; no leading zeros, no other forms) or IPv6 in any of
// RFC 4291's forms ("2001:db8::1", "::ffff:10.1.2.3"; no zone "%eth0"). A
// network is an address, "/" and a prefix length in decimal (0 to 32 or 0
// to 128), or an address alone (all of its bits). Bits past the prefix
// length may be set ("10.1.2.3/8" is 10.0.0.0/8). IPv4 and IPv6 are
// apart: an IPv4 network holds no IPv6 address, "::ffff:10.1.2.3" included.
//
// Thread safety: pure functions.
#ifndef COHORT_SERVICE_MODEL_IP_NETWORK_H_
#define COHORT_SERVICE_MODEL_IP_NETWORK_H_

#include <array>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

struct IpAddress {
  bool v6 = false;
  // Network byte order: 4 bytes of IPv4 (the rest 0), or 16 of IPv6.
  std::array<uint8_t, 16> bytes{};
};

struct IpNetwork {
  IpAddress address;
  int prefix_length = 0;  // 0 to 32 (IPv4) or 0 to 128 (IPv6)
};

std::optional<IpAddress> ParseIpAddress(absl::string_view text);
std::optional<IpNetwork> ParseIpNetwork(absl::string_view text);

// True iff `address` is of `network`'s family and its first prefix_length
// bits are the network's.
bool InNetwork(const IpAddress& address, const IpNetwork& network);

// The address as big-endian numbers: IPv4 in the low 32 bits of `high`
// (`low` 0); IPv6 as its first and last 8 bytes.
struct IpWords {
  uint64_t high;
  uint64_t low;
};
IpWords WordsOf(const IpAddress& address);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_IP_NETWORK_H_
