// Crawler over real discv4 services on 127.0.0.1: a node whose record request goes unanswered is
// asked again (before, it stayed without a record for the rest of the run, and sync --discover
// could end with fewer peers than were up).

#include "node/crawler.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include <boost/asio/ip/address.hpp>

#include "core/chain_config.hpp"
#include "disc/enr.hpp"
#include "disc/node_db.hpp"
#include "disc/udp_test_util.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::node {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;
using namespace std::chrono_literals;

struct UdpNode {
    rlpx::PrivateKey key = rlpx::PrivateKey::generate().value();
    std::shared_ptr<disc::V4Service> service;

    explicit UdpNode(asio::io_context& io) {
        disc::V4Config config;
        config.response_timeout = 300ms;
        config.bond_wait = 50ms;
        auto placeholder = disc::EnrBuilder(1).ip({127, 0, 0, 1}).sign(key).value();
        service = std::make_shared<disc::V4Service>(io, key, placeholder, disc::NodeDb{}, config);
        EXPECT_TRUE(service->bind(udp::endpoint(asio::ip::make_address("127.0.0.1"), 0)));
        const uint16_t port = service->local_endpoint().port();
        service->set_record(disc::EnrBuilder(2).ip({127, 0, 0, 1}).udp(port).tcp(port).sign(key).value());
    }
    ~UdpNode() { service->stop(); }
    disc::Node node() const {
        const uint16_t port = service->local_endpoint().port();
        return disc::Node::from_key(key.public_key(), asio::ip::make_address("127.0.0.1"), port, port);
    }
};

TEST(Crawler, AsksAgainForARecordThatWentUnanswered) {
    asio::io_context io;
    UdpNode ours(io);
    UdpNode quiet(io);  // bound but not reading yet: the first request times out
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
    UdpNode ours(io);
    UdpNode silent(io);  // never reads
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

}  // namespace
}  // namespace headerd::node
