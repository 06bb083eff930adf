// The address policy every relayed address passes: geth's LAN set, its special-purpose ranges (v4
// and v6), IPv4-mapped addresses unmapped first, and the relay rule (no loopback or LAN node named
// by a sender outside it).

#include "disc/address_policy.hpp"

#include <gtest/gtest.h>

namespace headerd::disc {
namespace {

using boost::asio::ip::make_address;

TEST(AddressPolicy, LanSetIsGeths) {
    for (const char* lan : {"127.0.0.1", "127.0.0.2", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
                            "169.254.1.1", "::1", "fd00::1", "fe80::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1"}) {
        EXPECT_TRUE(is_lan(make_address(lan))) << lan;
    }
    // Shared address space (carrier-grade NAT) is not LAN in geth either.
    for (const char* wan : {"8.8.8.8", "172.32.0.1", "100.64.0.1", "2a00:1450::1", "::ffff:8.8.8.8"}) {
        EXPECT_FALSE(is_lan(make_address(wan))) << wan;
    }
}

TEST(AddressPolicy, SpecialRangesAreRefusedAsGethDoes) {
    for (const char* special :
         {"0.1.2.3",          "192.0.0.5",    "192.0.0.9",       "192.0.0.170",  "192.0.0.171",   "192.0.2.10",
          "192.31.196.1",     "192.52.193.1", "192.88.99.1",     "192.175.48.1", "198.18.0.1",    "198.19.255.255",
          "198.51.100.7",     "203.0.113.9",  "255.255.255.255", "224.0.0.1",    "239.1.1.1",     "100::1",
          "2001::1",          "2001:1::1",    "2001:2::1",       "2001:3::1",    "2001:4:112::1", "2001:5::1",
          "2001:10::1",       "2001:20::1",   "2001:db8::1",     "2002::1",      "ff02::1",       "::ffff:192.0.2.1",
          "::ffff:198.18.3.4"}) {
        EXPECT_TRUE(is_special(make_address(special))) << special;
        EXPECT_TRUE(is_unroutable(make_address(special))) << special;
        EXPECT_EQ(check_relay(make_address("127.0.0.1"), make_address(special)), AddressVerdict::kSpecial) << special;
    }
    // Just outside the ranges.
    for (const char* ok : {"1.0.0.1", "192.0.0.8", "192.0.1.1", "198.17.255.255", "198.20.0.1", "203.0.114.1",
                           "2001:1::2", "2001:4:113::1", "2001:db9::1", "2003::1", "2a00:1450::1"}) {
        EXPECT_FALSE(is_special(make_address(ok))) << ok;
    }
    EXPECT_TRUE(is_unroutable(make_address("0.0.0.0")));
    EXPECT_TRUE(is_unroutable(make_address("::")));
    EXPECT_TRUE(is_unroutable(make_address("::ffff:0.0.0.0")));
}

TEST(AddressPolicy, RelayRule) {
    const auto lo = make_address("127.0.0.1");
    const auto lan = make_address("192.168.0.2");
    const auto wan = make_address("93.184.216.34");
    EXPECT_EQ(check_relay(lo, lo), AddressVerdict::kAllowed);
    EXPECT_EQ(check_relay(wan, lo), AddressVerdict::kLoopback);  // a public node may not point us at loopback
    EXPECT_EQ(check_relay(lan, lo), AddressVerdict::kLoopback);
    EXPECT_EQ(check_relay(lan, lan), AddressVerdict::kAllowed);
    EXPECT_EQ(check_relay(wan, lan), AddressVerdict::kLan);  // nor into our LAN
    EXPECT_EQ(check_relay(wan, wan), AddressVerdict::kAllowed);
    EXPECT_EQ(check_relay(lo, lan), AddressVerdict::kAllowed);
    EXPECT_EQ(check_relay(lo, wan), AddressVerdict::kAllowed);
    EXPECT_EQ(check_relay(lo, make_address("0.0.0.0")), AddressVerdict::kUnspecified);
    // Mapped addresses are judged as the IPv4 address they carry, on both sides.
    EXPECT_EQ(check_relay(wan, make_address("::ffff:127.0.0.1")), AddressVerdict::kLoopback);
    EXPECT_EQ(check_relay(make_address("::ffff:93.184.216.34"), make_address("::ffff:10.0.0.1")), AddressVerdict::kLan);
    EXPECT_EQ(check_relay(make_address("::ffff:127.0.0.1"), lo), AddressVerdict::kAllowed);
    // An unknown sender (unspecified: a DNS list from the system's resolver) names public nodes only.
    EXPECT_EQ(check_relay(make_address("0.0.0.0"), lo), AddressVerdict::kLoopback);
    EXPECT_EQ(check_relay(make_address("0.0.0.0"), wan), AddressVerdict::kAllowed);
    EXPECT_EQ(unmapped(make_address("::ffff:1.2.3.4")), make_address("1.2.3.4"));
    EXPECT_EQ(unmapped(make_address("2a00::1")), make_address("2a00::1"));
}

}  // namespace
}  // namespace headerd::disc
