// Endpoint prediction (geth's IPTracker): the endpoint most senders state, once enough do; one vote
// per sender IP (per IP:port on loopback); statements the address policy refuses ignored; old ones
// forgotten.

#include "disc/endpoint_predictor.hpp"

#include <gtest/gtest.h>

#include <string>

namespace headerd::disc {
namespace {

using boost::asio::ip::make_address;
using Endpoint = EndpointPredictor::Endpoint;

Endpoint at(const std::string& ip, uint16_t port) { return Endpoint(make_address(ip), port); }

TEST(EndpointPredictor, PredictsWhatMostSendersStateOnceEnoughDo) {
    EndpointPredictor p(std::chrono::minutes(5), 3);
    auto now = EndpointPredictor::Clock::now();
    const Endpoint ours = at("93.184.216.34", 30303);
    EXPECT_TRUE(p.add_statement(at("8.8.8.8", 30303), ours, now));
    EXPECT_TRUE(p.add_statement(at("8.8.4.4", 30303), ours, now));
    EXPECT_FALSE(p.predict(now));  // two of three
    EXPECT_TRUE(p.add_statement(at("1.1.1.1", 30303), at("93.184.216.99", 30303), now));
    EXPECT_FALSE(p.predict(now));
    EXPECT_TRUE(p.add_statement(at("9.9.9.9", 30303), ours, now));
    ASSERT_TRUE(p.predict(now));
    EXPECT_EQ(*p.predict(now), ours);
    // Statements older than the window are forgotten.
    now += std::chrono::minutes(6);
    EXPECT_FALSE(p.predict(now));
    EXPECT_EQ(p.senders(now), 0u);
}

TEST(EndpointPredictor, OneHostVotesOnceButLoopbackPeersEachCount) {
    EndpointPredictor p(std::chrono::minutes(5), 3);
    const auto now = EndpointPredictor::Clock::now();
    // One public host with many ports (or node ids) is one sender: its latest statement counts.
    for (uint16_t port = 1000; port < 1010; ++port) p.add_statement(at("8.8.8.8", port), at("93.184.216.34", 1), now);
    EXPECT_EQ(p.senders(now), 1u);
    EXPECT_FALSE(p.predict(now));
    // Three local processes on 127.0.0.1 are three senders.
    EndpointPredictor local(std::chrono::minutes(5), 3);
    for (uint16_t port = 2000; port < 2003; ++port)
        local.add_statement(at("127.0.0.1", port), at("127.0.0.1", 30303), now);
    ASSERT_TRUE(local.predict(now));
    EXPECT_EQ(*local.predict(now), at("127.0.0.1", 30303));
}

TEST(EndpointPredictor, StatementsThePolicyRefusesAreIgnored) {
    EndpointPredictor p(std::chrono::minutes(5), 1);
    const auto now = EndpointPredictor::Clock::now();
    EXPECT_FALSE(p.add_statement(at("8.8.8.8", 1), at("127.0.0.1", 30303), now));    // loopback from outside
    EXPECT_FALSE(p.add_statement(at("8.8.8.8", 1), at("192.168.1.5", 30303), now));  // LAN from the internet
    EXPECT_FALSE(p.add_statement(at("8.8.8.8", 1), at("198.18.0.1", 30303), now));   // special
    EXPECT_FALSE(p.add_statement(at("8.8.8.8", 1), at("0.0.0.0", 30303), now));
    EXPECT_FALSE(p.add_statement(at("8.8.8.8", 1), at("93.184.216.34", 0), now));  // no port
    EXPECT_FALSE(p.predict(now));
    EXPECT_TRUE(p.add_statement(at("::ffff:8.8.8.8", 1), at("::ffff:93.184.216.34", 30303), now));
    EXPECT_EQ(*p.predict(now), at("93.184.216.34", 30303));  // mapped addresses unmapped
}

}  // namespace
}  // namespace headerd::disc
