#include "p2p/net_metrics.hpp"

#include <gtest/gtest.h>

#include <string>

namespace headerd::p2p {
namespace {

// The metric families docs/operations.md lists ("3. Metrics"), with their Prometheus types; all of
// them but process_virtual_memory_bytes and process_max_fds.
struct Family {
    const char* name;
    const char* type;
};
constexpr Family kFamilies[] = {
    {"headerd_p2p_peers", "gauge"},
    {"headerd_p2p_handshake_errors_total", "counter"},
    {"headerd_p2p_ingress_bytes_total", "counter"},
    {"headerd_p2p_egress_bytes_total", "counter"},
    {"headerd_p2p_ingress_messages_total", "counter"},
    {"headerd_p2p_egress_messages_total", "counter"},
    {"headerd_p2p_serve_seconds", "histogram"},
    {"headerd_p2p_tracked_requests", "gauge"},
    {"headerd_p2p_request_rtt_seconds", "histogram"},
    {"headerd_p2p_requests_lost_total", "counter"},
    {"headerd_p2p_responses_stale_total", "counter"},
    {"headerd_p2p_tracker_rejected_total", "counter"},
    {"headerd_headers_served_total", "counter"},
    {"headerd_header_requests_total", "counter"},
    {"headerd_db_read_seconds", "histogram"},
    {"headerd_chain_head_number", "gauge"},
    {"headerd_ancient_items", "gauge"},
    {"process_cpu_seconds_total", "counter"},
    {"process_resident_memory_bytes", "gauge"},
    {"process_open_fds", "gauge"},
    {"process_start_time_seconds", "gauge"},
    {"headerd_build_info", "gauge"},
};

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(NetMetrics, ExposeEveryDesignFamilyWithItsTypeBeforeAnyTraffic) {
    metrics::Metrics registry("0.1.0", "abc");
    NetMetrics net(registry.families());
    const std::string text = registry.scrape();
    for (const auto& f : kFamilies) {
        EXPECT_TRUE(has(text, std::string("# TYPE ") + f.name + " " + f.type)) << f.name;
    }
    // Children exist from the start, so rates and quantiles have series before the first request.
    EXPECT_TRUE(has(text, R"(headerd_p2p_serve_seconds_count{code="0x03",proto="eth",version="68"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_serve_seconds_count{code="0x03",proto="eth",version="69"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_ingress_messages_total{code="0x00",proto="p2p",version="5"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_ingress_messages_total{code="0x11",proto="eth",version="69"} 0)"));
    // BlockRangeUpdate does not exist in eth/68.
    EXPECT_FALSE(has(text, R"(headerd_p2p_ingress_messages_total{code="0x11",proto="eth",version="68"})"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_request_rtt_seconds_count{code="0x03",proto="eth",version="69"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_handshake_errors_total{reason="timeout"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_handshake_errors_total{reason="subprotocol_error"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_headers_served_total{store="ancient"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_header_requests_total{kind="non_canonical"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_peers{direction="outbound"} 0)"));
    // Buckets from 50 us to 30 s.
    EXPECT_TRUE(has(text, R"(headerd_db_read_seconds_bucket{store="leveldb",le="5e-05"} 0)")) << text;
    EXPECT_TRUE(has(text, R"(headerd_db_read_seconds_bucket{store="leveldb",le="30"} 0)"));
}

TEST(NetMetrics, TablesPointAtTheLabelledChildren) {
    metrics::Metrics registry("0.1.0", "abc");
    NetMetrics net(registry.families());
    count_message(net.eth(69), true, 0x03, 80);
    count_message(net.eth(69), false, 0x04, 1000);
    count_message(&net.base(), true, 0x02, 64);
    count_message(net.eth(68), true, 0x0b, 10);  // unused code: no meter, not counted
    count_message(net.eth(70), true, 0x03, 10);  // unknown version: no table
    net.handshake_error(DisconnectReason::kTooManyPeers).Increment();
    net.set_chain(8191, 7192);
    net.on_read(Store::kAncient, 192, std::chrono::microseconds(120));
    const std::string text = registry.scrape();
    EXPECT_TRUE(has(text, R"(headerd_p2p_ingress_messages_total{code="0x03",proto="eth",version="69"} 1)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_ingress_bytes_total{code="0x03",proto="eth",version="69"} 80)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_egress_bytes_total{code="0x04",proto="eth",version="69"} 1000)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_ingress_messages_total{code="0x02",proto="p2p",version="5"} 1)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_ingress_messages_total{code="0x03",proto="eth",version="68"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_p2p_handshake_errors_total{reason="too_many_peers"} 1)"));
    EXPECT_TRUE(has(text, "headerd_chain_head_number 8191"));
    EXPECT_TRUE(has(text, "headerd_ancient_items 7192"));
    EXPECT_TRUE(has(text, R"(headerd_db_read_seconds_bucket{store="ancient",le="0.0001"} 0)"));
    EXPECT_TRUE(has(text, R"(headerd_db_read_seconds_bucket{store="ancient",le="0.00025"} 1)"));
}

}  // namespace
}  // namespace headerd::p2p
