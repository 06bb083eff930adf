// Crawler over real discv4 services on 127.0.0.1: a node whose record request goes unanswered is
// asked again (before, it stayed without a record for the rest of the run, and sync --discover
// could end with fewer peers than were up).

#include "node/crawler.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "core/chain_config.hpp"
#include "disc/udp_test_util.hpp"

namespace headerd::node {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

disc::V4Config fast_config() {
    disc::V4Config config;
    config.response_timeout = 300ms;
    config.bond_wait = 50ms;
    return config;
}

TEST(Crawler, AsksAgainForARecordThatWentUnanswered) {
    asio::io_context io;
    disc::test::V4Node ours(io, fast_config());
    disc::test::V4Node quiet(io, fast_config());  // bound but not reading yet: the first request times out
    ours.service->start();
    auto crawler = std::make_shared<Crawler>(ours.service, mainnet_config(), 0, 0);
    crawler->start(io);
    crawler->add(quiet.node());
    const disc::NodeId id = quiet.node().id;

    const auto failed_once = [&] { return crawler->found().at(id).failures == 1; };
    ASSERT_TRUE(disc::test::run_until(io, failed_once, 3s));
    EXPECT_FALSE(crawler->found().at(id).record);

    quiet.service->start();
    const auto has_record = [&] { return crawler->found().at(id).record.has_value(); };
    ASSERT_TRUE(disc::test::run_until(io, has_record, 3 * Crawler::kRecordRetryDelay + 2s));
    EXPECT_EQ(crawler->found().at(id).record->seq(), 2u);
    EXPECT_EQ(crawler->found().at(id).failures, 1u);
    crawler->stop();
}

TEST(Crawler, GivesUpOnARecordAfterItsTries) {
    asio::io_context io;
    disc::test::V4Node ours(io, fast_config());
    disc::test::V4Node silent(io, fast_config());  // never reads
    ours.service->start();
    auto crawler = std::make_shared<Crawler>(ours.service, mainnet_config(), 0, 0);
    crawler->start(io);
    crawler->add(silent.node());
    const disc::NodeId id = silent.node().id;
    const auto gave_up = [&] { return crawler->found().at(id).failures == Crawler::kRecordTries; };
    ASSERT_TRUE(disc::test::run_until(io, gave_up, 6 * Crawler::kRecordRetryDelay));
    EXPECT_TRUE(crawler->found().at(id).asked);  // no request more
    EXPECT_FALSE(crawler->found().at(id).record);
    crawler->stop();
}

// A record from a DNS node list passes the address policy against the DNS server it came from: a
// list from a server on the internet (or the system's resolver, unspecified) may not point us at
// loopback, the LAN or a special range; one from a server on loopback may name loopback nodes.
TEST(Crawler, DnsRecordsPassTheAddressPolicyOfTheirServer) {
    asio::io_context io;
    disc::test::V4Node ours(io, fast_config());
    auto crawler = std::make_shared<Crawler>(ours.service, mainnet_config(), 0, 0);
    const auto record = [](std::array<uint8_t, 4> ip) {
        const auto key = rlpx::PrivateKey::generate().value();
        return disc::EnrBuilder(1).ip(ip).udp(30303).tcp(30303).sign(key).value();
    };
    const auto internet = asio::ip::make_address("93.184.216.34");
    const auto system_resolver = asio::ip::address(asio::ip::address_v4::any());
    crawler->add_record(record({127, 0, 0, 1}), "dns", internet);
    crawler->add_record(record({192, 168, 1, 5}), "dns", system_resolver);
    crawler->add_record(record({198, 18, 0, 1}), "dns", asio::ip::make_address("127.0.0.1"));
    EXPECT_TRUE(crawler->found().empty());
    EXPECT_EQ(crawler->left_out(), 3u);
    const auto local = record({127, 0, 0, 1});
    crawler->add_record(local, "dns", asio::ip::make_address("127.0.0.1"));
    ASSERT_EQ(crawler->found().size(), 1u);
    EXPECT_EQ(crawler->found().begin()->second.found_by, "dns");
    const auto reached = record({8, 8, 8, 8});
    crawler->add_record(reached, "dns", internet);
    EXPECT_EQ(crawler->found().size(), 2u);
}

}  // namespace
}  // namespace headerd::node
