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

}  // namespace
}  // namespace headerd::node
