#include "service/model/ip_network.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

TEST(IpNetwork, ParsesAddressesAsInetPton) {
  std::optional<IpAddress> a = ParseIpAddress("10.1.2.3");
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->v6);
  EXPECT_EQ(WordsOf(*a).high, 0x0A010203u);
  EXPECT_EQ(WordsOf(*a).low, 0u);
  a = ParseIpAddress("2001:db8::ff:1");
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->v6);
  EXPECT_EQ(WordsOf(*a).high, 0x20010DB800000000u);
  EXPECT_EQ(WordsOf(*a).low, 0x0000000000FF0001u);
  a = ParseIpAddress("::ffff:10.0.0.1");  // IPv6, though it holds IPv4
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->v6);
  for (const char* bad :
       {"", "10.1.2", "10.1.2.3.4", "010.1.2.3", "10.1.2.256", " 10.1.2.3",
        "10.1.2.3 ", "0x0a.1.2.3", "fe80::1%eth0", "1:2:3:4:5:6:7:8:9",
        "2001:db8:::1", "host.example", "10.1.2.3/8"}) {
    EXPECT_FALSE(ParseIpAddress(bad).has_value()) << bad;
  }
}

TEST(IpNetwork, ParsesNetworks) {
  std::optional<IpNetwork> n = ParseIpNetwork("10.1.2.3/8");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->prefix_length, 8);
  EXPECT_EQ(ParseIpNetwork("10.1.2.3")->prefix_length, 32);
  EXPECT_EQ(ParseIpNetwork("::/0")->prefix_length, 0);
  EXPECT_EQ(ParseIpNetwork("2001:db8::/128")->prefix_length, 128);
  for (const char* bad : {"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/-1",
                          "10.0.0.0/+8", "10.0.0.0/ 8", "10.0.0.0/8/8",
                          "::/129", "::/0128", "10.0.0/8", "/8"}) {
    EXPECT_FALSE(ParseIpNetwork(bad).has_value()) << bad;
  }
}

TEST(IpNetwork, MembershipComparesThePrefixBits) {
  const IpNetwork n8 = *ParseIpNetwork("10.1.2.3/8");
  EXPECT_TRUE(InNetwork(*ParseIpAddress("10.255.0.1"), n8));
  EXPECT_FALSE(InNetwork(*ParseIpAddress("11.0.0.0"), n8));
  EXPECT_FALSE(InNetwork(*ParseIpAddress("::ffff:10.0.0.1"), n8));
  const IpNetwork n23 = *ParseIpNetwork("192.168.2.0/23");
  EXPECT_TRUE(InNetwork(*ParseIpAddress("192.168.3.255"), n23));
  EXPECT_FALSE(InNetwork(*ParseIpAddress("192.168.4.0"), n23));
  const IpNetwork all4 = *ParseIpNetwork("1.2.3.4/0");
  EXPECT_TRUE(InNetwork(*ParseIpAddress("255.255.255.255"), all4));
  EXPECT_FALSE(InNetwork(*ParseIpAddress("::"), all4));
  const IpNetwork n70 = *ParseIpNetwork("2001:db8:0:0:fe00::/70");
  EXPECT_TRUE(InNetwork(*ParseIpAddress("2001:db8::fdff:ffff:ffff:ffff"),
                        *ParseIpNetwork("2001:db8::/64")));
  EXPECT_TRUE(InNetwork(*ParseIpAddress("2001:db8::fc00:0:0:1"), n70));
  EXPECT_FALSE(InNetwork(*ParseIpAddress("2001:db8::f800:0:0:1"), n70));
  EXPECT_FALSE(InNetwork(*ParseIpAddress("10.0.0.1"), n70));
}

}  // namespace
}  // namespace service
}  // namespace cohort
