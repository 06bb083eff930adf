#include "p2p/inbound_limit.hpp"

#include <gtest/gtest.h>

#include <string>

#include "metrics/metrics.hpp"

namespace headerd::p2p {
namespace {

using namespace std::chrono_literals;
using Clock = InboundLimiter::Clock;
using boost::asio::ip::make_address;

// The fake clock: any point will do, the limiter only compares times.
const Clock::time_point kT0 = Clock::time_point{} + 1000h;

std::optional<InboundReject> admit(InboundLimiter& l, const std::string& a, Clock::time_point t = kT0) {
    return l.admit(make_address(a), t);
}

InboundLimits limits(size_t per_ip, size_t per_subnet, Clock::duration window = 0s, size_t burst = 0) {
    InboundLimits l;  // no exemptions
    l.max_per_ip = per_ip;
    l.max_per_subnet = per_subnet;
    l.throttle_window = window;
    l.throttle_burst = burst;
    return l;
}

TEST(InboundLimiter, DefaultsAreDocumented) {
    const InboundLimits d = InboundLimits::defaults();
    EXPECT_EQ(d.max_per_ip, 4u);
    EXPECT_EQ(d.max_per_subnet, 10u);
    EXPECT_EQ(d.throttle_window, 30s);  // go-ethereum's inboundThrottleTime
    EXPECT_EQ(d.throttle_burst, 3u);
    EXPECT_EQ(d.max_history, 16384u);
    InboundLimiter l(d);
    for (const char* lan : {"127.0.0.1", "127.9.8.7", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
                            "169.254.0.5", "::1", "fd00::1", "fe80::1", "::ffff:10.0.0.1"}) {
        EXPECT_TRUE(l.exempt(make_address(lan))) << lan;
    }
    for (const char* wan : {"8.8.8.8", "172.32.0.1", "11.0.0.1", "2001:db8::1", "::ffff:8.8.8.8", "126.255.255.255"}) {
        EXPECT_FALSE(l.exempt(make_address(wan))) << wan;
    }
}

TEST(InboundLimiter, PerAddressLimitCountsOpenConnections) {
    InboundLimiter l(limits(2, 0));
    EXPECT_FALSE(admit(l, "1.2.3.4"));
    EXPECT_FALSE(admit(l, "1.2.3.4"));
    EXPECT_EQ(admit(l, "1.2.3.4"), InboundReject::kIpLimit);
    EXPECT_FALSE(admit(l, "1.2.3.5")) << "another address of the subnet is counted apart";
    l.release(make_address("1.2.3.4"));
    EXPECT_FALSE(admit(l, "1.2.3.4")) << "a closed connection frees its slot";
    EXPECT_EQ(admit(l, "1.2.3.4"), InboundReject::kIpLimit);
    // An IPv4 peer on a dual-stack socket is the same address.
    EXPECT_EQ(admit(l, "::ffff:1.2.3.4"), InboundReject::kIpLimit);
    EXPECT_EQ(l.tracked_addresses(), 2u);
    for (int i = 0; i < 2; ++i) l.release(make_address("1.2.3.4"));
    l.release(make_address("1.2.3.5"));
    EXPECT_EQ(l.tracked_addresses(), 0u) << "nothing is kept for addresses without a connection";
    l.release(make_address("9.9.9.9"));  // never admitted: ignored
    EXPECT_EQ(l.tracked_addresses(), 0u);
}

TEST(InboundLimiter, PerSubnetLimitCountsTheSlash24) {
    InboundLimiter l(limits(0, 3));
    EXPECT_FALSE(admit(l, "127.0.1.1"));
    EXPECT_FALSE(admit(l, "127.0.1.2"));
    EXPECT_FALSE(admit(l, "127.0.1.2"));
    EXPECT_EQ(admit(l, "127.0.1.200"), InboundReject::kSubnetLimit);
    EXPECT_FALSE(admit(l, "127.0.2.1")) << "the next /24 is another subnet";
    l.release(make_address("127.0.1.1"));
    EXPECT_FALSE(admit(l, "127.0.1.250"));
}

TEST(InboundLimiter, IPv6CountsTheSlash64AsOneAddressAndTheSlash48AsOneSubnet) {
    InboundLimiter l(limits(2, 3));
    EXPECT_FALSE(admit(l, "2001:db8:1:1::1"));
    EXPECT_FALSE(admit(l, "2001:db8:1:1:ffff::2"));
    EXPECT_EQ(admit(l, "2001:db8:1:1::3"), InboundReject::kIpLimit) << "one host's /64";
    EXPECT_FALSE(admit(l, "2001:db8:1:2::1"));
    EXPECT_EQ(admit(l, "2001:db8:1:3::1"), InboundReject::kSubnetLimit) << "one site's /48";
    EXPECT_FALSE(admit(l, "2001:db8:2::1"));
}

TEST(InboundLimiter, ThrottleLetsBurstAttemptsPerWindow) {
    InboundLimiter l(limits(0, 0, 30s, 2));
    EXPECT_FALSE(admit(l, "8.8.8.8", kT0));
    EXPECT_FALSE(admit(l, "8.8.8.8", kT0 + 1s));
    EXPECT_EQ(admit(l, "8.8.8.8", kT0 + 2s), InboundReject::kThrottled);
    EXPECT_EQ(admit(l, "8.8.8.8", kT0 + 29999ms), InboundReject::kThrottled);
    EXPECT_FALSE(admit(l, "8.8.4.4", kT0 + 2s)) << "addresses are throttled apart";
    // The window starts at the first accepted attempt; rejected attempts do not extend it.
    EXPECT_FALSE(admit(l, "8.8.8.8", kT0 + 30s));
    EXPECT_FALSE(admit(l, "8.8.8.8", kT0 + 31s));
    EXPECT_EQ(admit(l, "8.8.8.8", kT0 + 32s), InboundReject::kThrottled);
    // Releasing connections does not reset the throttle.
    for (int i = 0; i < 4; ++i) l.release(make_address("8.8.8.8"));
    EXPECT_EQ(admit(l, "8.8.8.8", kT0 + 33s), InboundReject::kThrottled);
}

TEST(InboundLimiter, GethsThrottleIsBurstOneIn30s) {
    InboundLimiter l(limits(0, 0, 30s, 1));
    EXPECT_FALSE(admit(l, "8.8.8.8", kT0));
    EXPECT_EQ(admit(l, "8.8.8.8", kT0 + 1s), InboundReject::kThrottled);
    EXPECT_EQ(admit(l, "8.8.8.8", kT0 + 29s), InboundReject::kThrottled);
    EXPECT_FALSE(admit(l, "8.8.8.8", kT0 + 30s));
}

TEST(InboundLimiter, ThrottleComesFirstAndRejectedAttemptsAreNotCounted) {
    InboundLimiter l(limits(1, 0, 10s, 5));
    EXPECT_FALSE(admit(l, "8.8.8.8"));
    for (int i = 0; i < 10; ++i) EXPECT_EQ(admit(l, "8.8.8.8"), InboundReject::kIpLimit);
    l.release(make_address("8.8.8.8"));
    // Only the one admitted attempt is in the window: four more may come.
    for (int i = 0; i < 4; ++i) {
        EXPECT_FALSE(admit(l, "8.8.8.8")) << i;
        l.release(make_address("8.8.8.8"));
    }
    EXPECT_EQ(admit(l, "8.8.8.8"), InboundReject::kThrottled);
}

TEST(InboundLimiter, HistoryIsBoundedAndExpires) {
    InboundLimits lim = limits(0, 0, 30s, 1);
    lim.max_history = 100;
    InboundLimiter l(lim);
    // A flood from 1000 addresses: the throttle remembers the newest 100.
    for (int i = 0; i < 1000; ++i) {
        const std::string a = "100.64." + std::to_string(i / 256) + "." + std::to_string(i % 256);
        EXPECT_FALSE(admit(l, a, kT0 + std::chrono::milliseconds(i)));
    }
    EXPECT_EQ(l.history_size(), 100u);
    EXPECT_EQ(admit(l, "100.64.3.231", kT0 + 1s), InboundReject::kThrottled) << "address 999 is remembered";
    EXPECT_FALSE(admit(l, "100.64.0.0", kT0 + 1s)) << "address 0 was forgotten: let in early";
    // Everything expires.
    EXPECT_FALSE(admit(l, "1.1.1.1", kT0 + 40s));
    EXPECT_EQ(l.history_size(), 1u);
}

TEST(InboundLimiter, ExemptAddressesPassUncounted) {
    InboundLimits lim = limits(1, 1, 30s, 1);
    lim.exempt = *parse_ip_prefixes("127.0.0.1");
    InboundLimiter l(lim);
    for (int i = 0; i < 1000; ++i) EXPECT_FALSE(admit(l, "127.0.0.1")) << i;
    EXPECT_EQ(l.tracked_addresses(), 0u);
    EXPECT_EQ(l.history_size(), 0u);
    // The rest of 127.0.0.0/8 is limited: tests use it to look like many addresses.
    EXPECT_FALSE(admit(l, "127.0.0.2"));
    EXPECT_EQ(admit(l, "127.0.0.2"), InboundReject::kThrottled);
    l.release(make_address("127.0.0.2"));
    EXPECT_FALSE(admit(l, "127.0.0.3"));
    EXPECT_EQ(admit(l, "127.0.0.4"), InboundReject::kSubnetLimit);
}

TEST(InboundLimiter, ZeroLimitsTurnChecksOff) {
    InboundLimiter l(limits(0, 0, 0s, 1));
    for (int i = 0; i < 100; ++i) EXPECT_FALSE(admit(l, "8.8.8.8"));
    EXPECT_EQ(l.history_size(), 0u);
}

TEST(ParseIpPrefixes, WordsRangesAndErrors) {
    auto lan = parse_ip_prefixes("lan");
    ASSERT_TRUE(lan);
    EXPECT_EQ(lan->size(), 8u);
    auto loop = parse_ip_prefixes("loopback");
    ASSERT_TRUE(loop);
    EXPECT_EQ(loop->size(), 2u);
    auto none = parse_ip_prefixes("none");
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    auto mixed = parse_ip_prefixes(" 10.0.0.0/8 , 127.0.0.1,fd00::/8,2001:db8::1 ");
    ASSERT_TRUE(mixed);
    ASSERT_EQ(mixed->size(), 4u);
    EXPECT_TRUE((*mixed)[0].contains(make_address("10.200.3.4")));
    EXPECT_FALSE((*mixed)[0].contains(make_address("11.0.0.0")));
    EXPECT_TRUE((*mixed)[1].contains(make_address("127.0.0.1")));
    EXPECT_FALSE((*mixed)[1].contains(make_address("127.0.0.2")));
    EXPECT_TRUE((*mixed)[2].contains(make_address("fdff::1")));
    EXPECT_TRUE((*mixed)[3].contains(make_address("2001:db8::1")));
    EXPECT_FALSE((*mixed)[3].contains(make_address("2001:db8::2")));
    auto odd = parse_ip_prefixes("10.1.2.3/12");  // host bits are ignored
    ASSERT_TRUE(odd);
    EXPECT_TRUE((*odd)[0].contains(make_address("10.15.0.1")));
    auto all = parse_ip_prefixes("0.0.0.0/0");
    ASSERT_TRUE(all);
    EXPECT_TRUE((*all)[0].contains(make_address("200.1.1.1")));
    EXPECT_FALSE((*all)[0].contains(make_address("2001:db8::1"))) << "an IPv4 range holds no IPv6 address";

    for (const char* bad :
         {"", " , ", "10.0.0.0/33", "fd00::/129", "10.0.0.0/", "10.0.0.0/8x", "example.com", "10.0.0", "lan;none"}) {
        auto r = parse_ip_prefixes(bad);
        EXPECT_FALSE(r) << "'" << bad << "'";
    }
    EXPECT_NE(parse_ip_prefixes("10.0.0.0/33").error().message.find("10.0.0.0/33"), std::string::npos);
}

TEST(InboundMetrics, OneCounterPerReason) {
    metrics::Metrics registry("test", "0123abcd");
    InboundMetrics m(registry.registry());
    m.rejected(InboundReject::kThrottled).Increment();
    m.rejected(InboundReject::kSubnetLimit).Increment(2);
    const std::string text = registry.scrape();
    EXPECT_NE(text.find("headerd_p2p_inbound_rejected_total{reason=\"throttled\"} 1"), std::string::npos) << text;
    EXPECT_NE(text.find("headerd_p2p_inbound_rejected_total{reason=\"ip_limit\"} 0"), std::string::npos);
    EXPECT_NE(text.find("headerd_p2p_inbound_rejected_total{reason=\"subnet_limit\"} 2"), std::string::npos);
}

}  // namespace
}  // namespace headerd::p2p
