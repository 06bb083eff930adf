// Integration: the server's inbound limits over loopback. A real p2p::Server (2 workers) serves the
// mainnet epoch; raw connections bound to addresses of 127.0.0.0/8 play distinct hosts and subnets.
// A refused connection is closed by the acceptor at once; an accepted one waits for the auth
// packet. Each refusal must be counted by reason, slots must come back when connections close, the
// throttle must let an address in again after its window, and a well-behaved peer from the exempt
// address must be served throughout.

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/chain_config.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "metrics/metrics.hpp"
#include "p2p/client_session.hpp"
#include "p2p/inbound_limit.hpp"
#include "p2p/server.hpp"
#include "tests/loopback_dial.hpp"
#include "tests/reference_chain.hpp"

namespace headerd {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using p2p::Clock;
using p2p::tcp;

constexpr auto kWindow = 4s;

class InboundLimitTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("headerd-inbound-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        db::ChainDbOptions opts;
        opts.create_if_missing = true;
        auto chain = db::ChainDb::open(dir_.string(), opts);
        ASSERT_TRUE(chain) << chain.error().message;
        auto r = db::import_file(**chain, mainnet_config(), testing::kDataDir + "/mainnet-00000-5ec1ffb8.era1");
        ASSERT_TRUE(r) << r.error().message;
        db_ = std::move(*chain);

        p2p::ServerOptions options;
        options.listen = tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0);
        options.limits.handshake = 3s;
        options.inbound.max_per_ip = 2;
        options.inbound.max_per_subnet = 3;
        options.inbound.throttle_window = kWindow;
        options.inbound.throttle_burst = 3;
        options.inbound.exempt = *p2p::parse_ip_prefixes("127.0.0.1");
        options.inbound_metrics = &inbound_metrics_;
        pool_ = std::make_unique<p2p::WorkerPool>(2);
        server_ = std::make_unique<p2p::Server>(io_, *pool_, *db_, key_, options);
        ASSERT_TRUE(server_->listen());
        port_ = server_->local_endpoint().port();
        pool_->start();
        server_->start();
        thread_ = std::thread([this] { io_.run(); });
    }

    void TearDown() override {
        for (int fd : fds_) ::close(fd);
        if (server_) server_->stop();
        if (thread_.joinable()) thread_.join();
        if (pool_) {
            pool_->release();
            pool_->join();
        }
        server_.reset();
        db_.reset();
        fs::remove_all(dir_);
    }

    // Opens `n` connections from `from` and says, after a moment, how many the server kept.
    size_t held(const std::string& from, size_t n) {
        std::vector<int> mine;
        for (size_t i = 0; i < n; ++i) {
            const int fd = testing::dial_from(from, "127.0.0.1", port_);
            EXPECT_GE(fd, 0) << "dial from " << from;
            if (fd >= 0) mine.push_back(fd);
        }
        std::this_thread::sleep_for(300ms);
        size_t kept = 0;
        for (int fd : mine) {
            if (testing::closed_now(fd)) {
                ::close(fd);
            } else {
                ++kept;
                fds_.push_back(fd);
            }
        }
        return kept;
    }

    // Closes every connection still open and waits until the server has ended their sessions.
    void close_all() {
        for (int fd : fds_) ::close(fd);
        fds_.clear();
        const auto until = Clock::now() + 5s;
        while (server_->sessions() > 0 && Clock::now() < until) std::this_thread::sleep_for(10ms);
        ASSERT_EQ(server_->sessions(), 0u) << "sessions still running after their sockets closed";
    }

    double rejected(p2p::InboundReject r) const { return inbound_metrics_.rejected(r).Value(); }

    // A well-behaved peer from 127.0.0.1 gets 192 correct headers.
    void expect_served() {
        rlpx::PrivateKey key = *rlpx::PrivateKey::generate();
        p2p::LocalNode local;
        local.key = &key;
        local.client_id = "inbound-limit-test";
        local.config = &mainnet_config();
        local.head = *db_->head();
        asio::io_context io(1);
        std::optional<p2p::RequestResult> result;
        const p2p::Enode server{key_.public_key(), "127.0.0.1", port_};
        // Named, so that the closure the coroutine refers to outlives it.
        auto fetch = [&]() -> asio::awaitable<void> {
            auto s = co_await p2p::ClientSession::connect(server, local);
            eth::GetBlockHeadersRequest req;
            req.origin = eth::HashOrNumber::of(uint64_t{7000});
            req.amount = 192;
            result = co_await s->request(req, 5s);
            co_await s->close();
        };
        asio::co_spawn(io, fetch(), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
        io.run_for(10s);
        ASSERT_TRUE(result && *result) << "the good peer was not served";
        ASSERT_EQ((*result)->headers.size(), 192u);
        EXPECT_TRUE(std::ranges::equal((*result)->headers[0], testing::reference_chain().headers[7000]));
    }

    fs::path dir_;
    std::unique_ptr<db::ChainDb> db_;
    metrics::Metrics registry_{"test", "0123abcd"};
    p2p::InboundMetrics inbound_metrics_{registry_.registry()};
    rlpx::PrivateKey key_ = *rlpx::PrivateKey::generate();
    asio::io_context io_{1};
    std::unique_ptr<p2p::WorkerPool> pool_;
    std::unique_ptr<p2p::Server> server_;
    std::thread thread_;
    uint16_t port_{0};
    std::vector<int> fds_;
};

TEST_F(InboundLimitTest, PerAddressAndPerSubnetLimitsHoldAndFreeTheirSlots) {
    EXPECT_EQ(held("127.0.0.1", 20), 20u) << "the exempt address is not limited";
    EXPECT_EQ(held("127.0.1.1", 3), 2u) << "two per address";
    EXPECT_EQ(rejected(p2p::InboundReject::kIpLimit), 1.0);
    EXPECT_EQ(held("127.0.1.2", 1), 1u);
    EXPECT_EQ(held("127.0.1.3", 1), 0u) << "three per /24";
    EXPECT_EQ(rejected(p2p::InboundReject::kSubnetLimit), 1.0);
    EXPECT_EQ(held("127.0.2.1", 2), 2u) << "another /24 has its own count";
    expect_served();
    close_all();
    // Closed connections give their slots back (127.0.1.1 has used 2 of its 3 attempts).
    EXPECT_EQ(held("127.0.1.3", 1), 1u);
    EXPECT_EQ(held("127.0.1.1", 1), 1u);
    EXPECT_EQ(rejected(p2p::InboundReject::kThrottled), 0.0);
    close_all();
}

TEST_F(InboundLimitTest, ThrottleRefusesTheFourthAttemptWithinItsWindow) {
    const auto start = Clock::now();
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(held("127.0.3.1", 1), 1u) << "attempt " << i;
        close_all();
    }
    EXPECT_EQ(held("127.0.3.1", 1), 0u);
    EXPECT_EQ(held("127.0.3.1", 1), 0u);
    ASSERT_LT(Clock::now() - start, kWindow) << "the machine is too slow for this window";
    EXPECT_EQ(rejected(p2p::InboundReject::kThrottled), 2.0);
    EXPECT_EQ(held("127.0.3.2", 1), 1u) << "another address is not throttled";
    expect_served();
    std::this_thread::sleep_until(start + kWindow + 100ms);
    EXPECT_EQ(held("127.0.3.1", 1), 1u) << "let in again after the window";
    close_all();
}

}  // namespace
}  // namespace headerd
