// DiscoveryCollector over real services on loopback: a discv4 ping and a discv5 ping (with its
// handshake) between two nodes show up in both nodes' samples, by protocol, direction and type, and
// every drop reason and handshake result has its sample.

#include "disc/disc_metrics.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include "disc/udp_test_util.hpp"

namespace headerd::disc {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;
using namespace std::chrono_literals;

// A discv4 node with discv5 on the same socket, discv4 started.
struct TestNode {
    test::V4Node base;
    std::shared_ptr<V4Service> v4 = base.service;
    std::shared_ptr<V5Service> v5;

    explicit TestNode(asio::io_context& io)
        : base(io, V4Config{}), v5(std::make_shared<V5Service>(io, base.key, v4->record(), nullptr, V5Config{})) {
        share_socket(v4, v5);
        v4->start();
    }
    ~TestNode() { v5->stop(); }
    Node node() const { return *Node::from_enr(v5->record()); }
};

using Labels = std::map<std::string, std::string>;

// The value of the sample of family `name` with exactly `labels`; -1 when there is none.
double sample(const std::vector<prometheus::MetricFamily>& families, const std::string& name, const Labels& labels) {
    for (const auto& f : families) {
        if (f.name != name) continue;
        for (const auto& m : f.metric) {
            Labels got;
            for (const auto& l : m.label) got[l.name] = l.value;
            if (got == labels) return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
        }
    }
    return -1;
}

TEST(DiscoveryCollector, CountsBothProtocolsOfRealPings) {
    asio::io_context io;
    TestNode a(io);
    TestNode b(io);
    ASSERT_TRUE(test::run(io, a.v4->ping(b.node())));
    ASSERT_TRUE(test::run(io, a.v5->ping(b.node())));
    const auto fa = DiscoveryCollector(a.v4, a.v5).Collect();
    const auto fb = DiscoveryCollector(b.v4, b.v5).Collect();
    const std::string packets = "headerd_discovery_packets_total";

    // b pings a back to make its own endpoint proof; when that ping comes before b's Pong was read, a
    // (not yet bonded either) pings again: one or two each way.
    EXPECT_GE(sample(fa, packets, {{"protocol", "discv4"}, {"direction", "out"}, {"type", "ping"}}), 1);
    EXPECT_GE(sample(fa, packets, {{"protocol", "discv4"}, {"direction", "in"}, {"type", "pong"}}), 1);
    EXPECT_GE(sample(fb, packets, {{"protocol", "discv4"}, {"direction", "in"}, {"type", "ping"}}), 1);

    // discv5: a's PING went as a random packet, b challenged it, a answered with a handshake.
    EXPECT_EQ(sample(fa, packets, {{"protocol", "discv5"}, {"direction", "out"}, {"type", "ping"}}), 1);
    EXPECT_EQ(sample(fa, packets, {{"protocol", "discv5"}, {"direction", "in"}, {"type", "pong"}}), 1);
    EXPECT_EQ(sample(fa, packets, {{"protocol", "discv5"}, {"direction", "in"}, {"type", "whoareyou"}}), 1);
    EXPECT_EQ(sample(fb, packets, {{"protocol", "discv5"}, {"direction", "out"}, {"type", "whoareyou"}}), 1);
    EXPECT_EQ(sample(fb, packets, {{"protocol", "discv5"}, {"direction", "in"}, {"type", "ping"}}), 1);
    const std::string handshakes = "headerd_discovery_handshakes_total";
    EXPECT_EQ(sample(fa, handshakes, {{"protocol", "discv5"}, {"result", "sent"}}), 1);
    EXPECT_EQ(sample(fb, handshakes, {{"protocol", "discv5"}, {"result", "accepted"}}), 1);
    EXPECT_EQ(sample(fb, "headerd_discovery_handshake_failures_total",
                     {{"protocol", "discv5"}, {"reason", "bad-id-signature"}}),
              0);
    EXPECT_GT(sample(fa, "headerd_discovery_bytes_total", {{"protocol", "discv5"}, {"direction", "out"}}), 0);

    // Every reason has its sample, at zero here.
    for (const char* reason : {"undecodable", "too-big", "expired", "unsolicited", "unbonded", "rate-limited"}) {
        EXPECT_EQ(sample(fa, "headerd_discovery_dropped_total", {{"protocol", "discv4"}, {"reason", reason}}), 0)
            << reason;
    }
    for (const char* reason : {"unsolicited", "rate-limited"}) {
        EXPECT_EQ(sample(fa, "headerd_discovery_dropped_total", {{"protocol", "discv5"}, {"reason", reason}}), 0)
            << reason;
    }
    // b's challenge was used up by a's handshake.
    EXPECT_EQ(sample(fb, "headerd_discovery_challenges", {{"protocol", "discv5"}}), 0);
    EXPECT_EQ(sample(fa, "headerd_discovery_table_nodes", {{"protocol", "discv5"}}), 1);  // b answered

    // Without a discv5 service, no discv5 sample.
    const auto v4_only = DiscoveryCollector(a.v4).Collect();
    EXPECT_EQ(sample(v4_only, packets, {{"protocol", "discv5"}, {"direction", "out"}, {"type", "ping"}}), -1);
    EXPECT_GE(sample(v4_only, packets, {{"protocol", "discv4"}, {"direction", "out"}, {"type", "ping"}}), 1);
}

}  // namespace
}  // namespace headerd::disc
