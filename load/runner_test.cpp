// The runner end to end in one process: a p2p::Server on loopback serving the mainnet epoch, the
// load runner with its clients on two workers (so the stats shards, the atomics and the metrics are
// used from several threads; scripts/sanitize.sh runs this under ThreadSanitizer).

#include "load/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <boost/asio/io_context.hpp>

#include "core/chain_config.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "load/reference_chain.hpp"
#include "load/report.hpp"
#include "p2p/server.hpp"
#include "p2p/worker.hpp"
#include "tests/data_dir.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::load {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

const std::string kEra1 = headerd::testing::data_dir() + "/mainnet-00000-5ec1ffb8.era1";

// The epoch in a datadir (blocks below 7192 frozen) served by a p2p::Server with 2 workers.
class Served {
  public:
    Served() : dir_(std::filesystem::temp_directory_path() / ("headerd-runner-test-" + std::to_string(getpid()))) {
        std::filesystem::remove_all(dir_);
        db::ChainDbOptions options;
        options.create_if_missing = true;
        auto opened = db::ChainDb::open(dir_.string(), options);
        if (!opened) throw std::runtime_error(opened.error().message);
        chain_ = std::move(*opened);
        if (auto r = db::import_file(*chain_, mainnet_config(), kEra1); !r) throw std::runtime_error("import failed");
        db::FreezeOptions freeze;
        freeze.keep = 1000;
        if (!chain_->freeze(freeze)) throw std::runtime_error("freeze failed");
        p2p::ServerOptions so;
        so.listen = p2p::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0);
        so.client_id = "headerd/runner-test";
        server_.emplace(control_, pool_, *chain_, key_, so);
        if (auto r = server_->listen(); !r) throw std::runtime_error(r.error().message);
        pool_.start();
        server_->start();
        thread_ = std::thread([this] { control_.run(); });
    }
    ~Served() {
        server_->stop();
        thread_.join();
        pool_.release();
        pool_.join();
        server_.reset();
        chain_.reset();
        std::filesystem::remove_all(dir_);
    }
    p2p::Enode enode() const { return {key_.public_key(), "127.0.0.1", server_->local_endpoint().port()}; }

  private:
    std::filesystem::path dir_;
    std::unique_ptr<db::ChainDb> chain_;
    asio::io_context control_{1};
    rlpx::PrivateKey key_ = *rlpx::PrivateKey::generate();
    p2p::WorkerPool pool_{2};
    std::optional<p2p::Server> server_;
    std::thread thread_;
};

LoadConfig config_for(const Served& served, const ReferenceChain* reference) {
    LoadConfig cfg;
    cfg.peers = {served.enode()};
    cfg.clients = 12;
    cfg.workers = 2;
    cfg.mix = *parse_mix("mix");
    cfg.reference = reference;
    cfg.config = &mainnet_config();
    // Every client must have connected within the run: a sanitizer build (HEADERD_TEST_TIME_SCALE, set
    // by scripts/sanitize.sh) handshakes several times slower, so its run is that much longer.
    const char* scale = std::getenv("HEADERD_TEST_TIME_SCALE");
    cfg.duration = 1500ms * (scale != nullptr ? std::max(1, std::atoi(scale)) : 1);
    cfg.drain = 2s;
    return cfg;
}

TEST(LoadRunner, EveryProfileVerifiesAgainstARealServer) {
    Served served;
    auto reference = ReferenceChain::open({kEra1});
    ASSERT_TRUE(reference) << reference.error().message;
    prometheus::Registry registry;
    std::vector<std::string> names;
    for (const ProfileSpec& p : profiles()) names.emplace_back(p.name);
    LoadMetrics meters(registry, names);
    LoadConfig cfg = config_for(served, reference->get());
    cfg.metrics = &meters;
    Runner runner(cfg);
    size_t seconds = 0;
    RunResult r = runner.run([&](const StatusLine&) { ++seconds; });

    EXPECT_TRUE(verified(r)) << (r.failures.empty() ? "no reply" : r.failures.front().reason);
    EXPECT_GE(seconds, 1u);
    EXPECT_EQ(r.timeline.size(), seconds);
    EXPECT_EQ(r.clients_connected_max, 12u);
    ASSERT_TRUE(r.server);
    EXPECT_EQ(r.server->head, 8191u);
    ASSERT_EQ(r.profiles.size(), profiles().size());
    uint64_t timeline_requests = 0;
    for (const auto& p : r.timeline) timeline_requests += p.requests;
    uint64_t total_requests = 0;
    for (size_t i = 0; i < r.profiles.size(); ++i) {
        const ProfileStats& s = r.profiles[i];
        SCOPED_TRACE(std::string(r.profile_specs[i]->name));
        EXPECT_GE(s.clients, 1u);
        EXPECT_GT(s.replies, 0u);
        EXPECT_EQ(s.replies, s.requests);  // drained: every request answered
        EXPECT_EQ(s.rtt.count(), s.replies);
        EXPECT_EQ(s.lost + s.stale + s.verification_failures, 0u);
        // The Prometheus meters saw the same requests and headers.
        EXPECT_EQ(meters.profile(i).requests->Value(), static_cast<double>(s.requests));
        EXPECT_EQ(meters.profile(i).headers->Value(), static_cast<double>(s.headers));
        total_requests += s.requests;
    }
    // The timeline counts what was sent within whole seconds; the drain comes after it.
    EXPECT_LE(timeline_requests, total_requests);
    EXPECT_EQ(meters.in_flight().Value(), 0);
    EXPECT_EQ(meters.clients_connected().Value(), 0);
}

TEST(LoadRunner, StopsAfterTheRequestsAskedForOrWhenStopped) {
    Served served;
    LoadConfig cfg = config_for(served, nullptr);
    cfg.duration = {};
    cfg.requests = 40;
    cfg.mix = *parse_mix("nethermind,besu");
    RunResult r = Runner(cfg).run({});
    uint64_t sent = 0;
    for (const auto& p : r.profiles) sent += p.requests;
    EXPECT_EQ(sent, 40u);
    EXPECT_TRUE(verified(r));

    cfg.requests.reset();
    cfg.duration = {};  // until stopped
    Runner runner(cfg);
    std::thread stopper([&runner] {
        std::this_thread::sleep_for(700ms);
        runner.stop();
    });
    r = runner.run({});
    stopper.join();
    EXPECT_TRUE(r.interrupted);
    EXPECT_TRUE(verified(r));
}

// An eth/68 client learns the server's head number by asking for its Status head hash: that probe
// is a request and a reply like any other, in the profile's stats, the second's and the metrics.
TEST(LoadRunner, TheEth68HeadProbeIsCountedLikeEveryReply) {
    Served served;
    prometheus::Registry registry;
    LoadMetrics meters(registry, {"nethermind"});
    LoadConfig cfg = config_for(served, nullptr);
    cfg.clients = 1;
    cfg.mix = *parse_mix("nethermind");
    cfg.eth = 68;
    cfg.duration = {};
    cfg.requests = 0;  // the run stops when the probe's client would send its first request
    cfg.metrics = &meters;
    RunResult r = Runner(cfg).run({});

    ASSERT_TRUE(r.server);
    EXPECT_EQ(r.server->eth_version, 68u);
    EXPECT_EQ(r.server->head, 8191u);
    ASSERT_EQ(r.profiles.size(), 1u);
    const ProfileStats& s = r.profiles[0];
    const uint64_t head_bytes = testing::reference_chain().headers.at(8191).size();
    EXPECT_EQ(s.requests, 1u);
    EXPECT_EQ(s.replies, 1u);
    EXPECT_EQ(s.headers, 1u);
    EXPECT_EQ(s.bytes, head_bytes);
    EXPECT_EQ(s.rtt.count(), 1u);
    EXPECT_TRUE(verified(r));
    // Nothing was in flight at the end, so the timeline holds the probe too (in its last second
    // unless connecting took a second or more).
    TimelinePoint sum;
    for (const TimelinePoint& p : r.timeline) {
        sum.requests += p.requests;
        sum.replies += p.replies;
        sum.headers += p.headers;
        sum.bytes += p.bytes;
    }
    EXPECT_EQ(sum.requests, 1u);
    EXPECT_EQ(sum.replies, 1u);
    EXPECT_EQ(sum.headers, 1u);
    EXPECT_EQ(sum.bytes, head_bytes);
    ASSERT_FALSE(r.timeline.empty());
    EXPECT_GT(r.timeline.back().p50_ms, 0);
    EXPECT_EQ(meters.profile(0).requests->Value(), 1);
    EXPECT_EQ(meters.profile(0).headers->Value(), 1);
}

}  // namespace
}  // namespace headerd::load
