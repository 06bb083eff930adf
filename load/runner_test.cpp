// The runner end to end in one process: a p2p::Server on loopback serving the mainnet epoch (or a
// synthetic chain), the load runner with its clients on two workers (so the stats shards, the
// atomics and the metrics are used from several threads; scripts/sanitize.sh runs this under
// ThreadSanitizer). Also the options of `headerd load` that shape the connections: every --eth
// version, --synthetic, --ramp and --handshakes (against a listener that never answers, whose
// accept times show when clients dialled), and --server-metrics against the server's /metrics.

#include "load/runner.hpp"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "core/chain_config.hpp"
#include "core/hex.hpp"
#include "core/synthetic.hpp"
#include "db/chain_db.hpp"
#include "db/era_store.hpp"
#include "db/import.hpp"
#include "load/reference_chain.hpp"
#include "load/report.hpp"
#include "load/server_scrape.hpp"
#include "metrics/http_server.hpp"
#include "metrics/metrics.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/server.hpp"
#include "p2p/worker.hpp"
#include "tests/data_dir.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::load {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using tcp = asio::ip::tcp;

const std::string kEra1 = headerd::testing::data_dir() + "/mainnet-00000-5ec1ffb8.era1";

std::filesystem::path temp_dir(const std::string& what) {
    static std::atomic<int> n{0};
    return std::filesystem::temp_directory_path() /
           ("headerd-runner-test-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(n++));
}

// A datadir holding `headerd generate --count count --seed seed`'s chain.
std::unique_ptr<db::ChainDb> generated(const std::filesystem::path& dir, uint64_t count, uint64_t seed) {
    std::filesystem::remove_all(dir);
    db::ChainDbOptions options;
    options.create_if_missing = true;
    auto opened = db::ChainDb::open(dir.string(), options);
    if (!opened) throw std::runtime_error(opened.error().message);
    if (auto r = db::generate_chain(**opened, count, seed); !r) throw std::runtime_error(r.error().message);
    return std::move(*opened);
}

struct ServedOptions {
    // A synthetic chain (count, seed) instead of the epoch.
    std::optional<std::pair<uint64_t, uint64_t>> synthetic;
    // /metrics on 127.0.0.1, as `headerd serve --metrics`.
    bool metrics{false};
    // The epoch's bodies and receipts too, as after `headerd import --history`.
    bool history{false};
};

// The epoch in a datadir (blocks below 7192 frozen), or a synthetic chain, served by a p2p::Server
// with 2 workers.
class Served {
  public:
    explicit Served(ServedOptions o = {}) : dir_(temp_dir("served")) {
        if (o.synthetic) {
            chain_ = generated(dir_, o.synthetic->first, o.synthetic->second);
        } else {
            std::filesystem::remove_all(dir_);
            db::ChainDbOptions options;
            options.create_if_missing = true;
            auto opened = db::ChainDb::open(dir_.string(), options);
            if (!opened) throw std::runtime_error(opened.error().message);
            chain_ = std::move(*opened);
            if (auto r = db::import_file(*chain_, mainnet_config(), kEra1); !r) {
                throw std::runtime_error("import failed");
            }
            db::FreezeOptions freeze;
            freeze.keep = 1000;
            if (!chain_->freeze(freeze)) throw std::runtime_error("freeze failed");
        }
        p2p::ServerOptions so;
        if (o.history) {
            auto store = db::EraStore::open((dir_ / "history").string());
            if (!store) throw std::runtime_error(store.error().message);
            history_ = std::move(*store);
            if (auto r = db::import_history(*chain_, *history_, kEra1); !r) throw std::runtime_error(r.error().message);
            so.history = history_.get();
        }
        so.listen = p2p::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0);
        so.client_id = "headerd/runner-test";
        if (o.metrics) {
            registry_ = std::make_unique<metrics::Metrics>("test", "0000000");
            net_metrics_ = std::make_unique<p2p::NetMetrics>(registry_->families());
            chain_->set_read_observer(net_metrics_.get());
            so.metrics = net_metrics_.get();
            http_.emplace(control_, registry_->collectables(), std::function<metrics::Health()>{});
            if (auto r = http_->listen(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)); !r) {
                throw std::runtime_error(r.error().message);
            }
            http_->start();
        }
        server_.emplace(control_, pool_, *chain_, key_, so);
        if (auto r = server_->listen(); !r) throw std::runtime_error(r.error().message);
        pool_.start();
        server_->start();
        thread_ = std::thread([this] { control_.run(); });
    }
    ~Served() {
        if (http_) asio::post(control_, [this] { http_->stop(); });
        server_->stop();
        thread_.join();
        pool_.release();
        pool_.join();
        server_.reset();
        http_.reset();
        history_.reset();
        chain_->set_read_observer(nullptr);
        chain_.reset();
        std::filesystem::remove_all(dir_);
    }
    p2p::Enode enode() const { return {key_.public_key(), "127.0.0.1", server_->local_endpoint().port()}; }
    // The /metrics URL (ServedOptions::metrics).
    std::string metrics_url() const {
        return "http://127.0.0.1:" + std::to_string(http_->local_endpoint().port()) + "/metrics";
    }
    const db::ChainDb& chain() const { return *chain_; }

  private:
    std::filesystem::path dir_;
    std::unique_ptr<db::ChainDb> chain_;
    std::unique_ptr<db::EraStore> history_;
    std::unique_ptr<metrics::Metrics> registry_;
    std::unique_ptr<p2p::NetMetrics> net_metrics_;
    asio::io_context control_{1};
    std::optional<metrics::HttpServer> http_;
    rlpx::PrivateKey key_ = *rlpx::PrivateKey::generate();
    p2p::WorkerPool pool_{2};
    std::optional<p2p::Server> server_;
    std::thread thread_;
};

// Accepts TCP connections on 127.0.0.1 and never sends a byte, so every RLPx handshake with it runs
// into its deadline; records when each connection was accepted (when its client dialled).
class HangingListener {
  public:
    HangingListener() {
        accept();
        thread_ = std::thread([this] { io_.run(); });
    }
    ~HangingListener() {
        io_.stop();
        thread_.join();
    }
    p2p::Enode enode() const { return {key_.public_key(), "127.0.0.1", acceptor_.local_endpoint().port()}; }
    // A run of `clients` clients on 2 workers against this listener, lasting `duration` with no
    // drain, each handshake given up after `handshake`.
    LoadConfig config(size_t clients, Clock::duration duration, Clock::duration handshake) const {
        LoadConfig cfg;
        cfg.peers = {enode()};
        cfg.clients = clients;
        cfg.workers = 2;
        cfg.mix = *parse_mix("nethermind");
        cfg.config = &mainnet_config();
        cfg.duration = duration;
        cfg.drain = 0s;
        cfg.limits.handshake = handshake;
        return cfg;
    }
    std::vector<Clock::time_point> accepted() const {
        std::lock_guard lock(mu_);
        return accepted_;
    }

  private:
    void accept() {
        acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
            if (ec) return;
            {
                std::lock_guard lock(mu_);
                accepted_.push_back(Clock::now());
            }
            held_.push_back(std::move(socket));  // open, silent
            accept();
        });
    }

    asio::io_context io_{1};
    tcp::acceptor acceptor_{io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
    std::vector<tcp::socket> held_;
    rlpx::PrivateKey key_ = *rlpx::PrivateKey::generate();
    mutable std::mutex mu_;
    std::vector<Clock::time_point> accepted_;
    std::thread thread_;
};

uint64_t sum(const RunResult& r, uint64_t ProfileStats::*field) {
    uint64_t n = 0;
    for (const auto& p : r.profiles) n += p.*field;
    return n;
}

uint64_t connect_errors_total(const RunResult& r) {
    uint64_t n = 0;
    for (const auto& [reason, count] : r.connect_errors) n += count;
    return n;
}

// A sanitizer build (HEADERD_TEST_TIME_SCALE, set by scripts/sanitize.sh) handshakes and serves
// several times slower: runs in which every client must connect last that much longer.
int time_scale() {
    const char* scale = std::getenv("HEADERD_TEST_TIME_SCALE");
    return scale != nullptr ? std::max(1, std::atoi(scale)) : 1;
}

LoadConfig config_for(const Served& served, const ReferenceChain* reference) {
    LoadConfig cfg;
    cfg.peers = {served.enode()};
    cfg.clients = 12;
    cfg.workers = 2;
    cfg.mix = *parse_mix("mix");
    cfg.reference = reference;
    cfg.config = &mainnet_config();
    // Every client must have connected within the run.
    cfg.duration = 1500ms * time_scale();
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
    ASSERT_EQ(r.profiles.size(), cfg.mix.size());
    ASSERT_EQ(r.profiles.size(), 9u);
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

// The history profiles against a server holding the epoch's bodies and receipts (import
// --history): every body and receipt list checked against the headers the clients got, and each
// request message counted apart. Epoch 0 has uncles but no transaction, so geth and reth ask the
// bodies with uncles only and no client but Nethermind asks a receipt list (it asks every block's).
TEST(LoadRunner, HistoryProfilesVerifyEveryBodyAndReceiptList) {
    ServedOptions options;
    options.history = true;
    Served served(options);
    auto reference = ReferenceChain::open({kEra1});
    ASSERT_TRUE(reference) << reference.error().message;
    LoadConfig cfg = config_for(served, reference->get());
    cfg.clients = 4;
    cfg.mix = *parse_mix("history");
    RunResult r = Runner(cfg).run({});

    EXPECT_TRUE(verified(r)) << (r.failures.empty() ? "no reply" : r.failures.front().reason);
    ASSERT_EQ(r.profiles.size(), 4u);
    uint64_t timeline_bodies = 0;
    for (const auto& t : r.timeline) timeline_bodies += t.bodies;
    uint64_t bodies = 0;
    for (size_t i = 0; i < r.profiles.size(); ++i) {
        const ProfileStats& s = r.profiles[i];
        const std::string name(r.profile_specs[i]->name);
        SCOPED_TRACE(name);
        const MessageStats& h = s.message(Message::kHeaders);
        const MessageStats& b = s.message(Message::kBodies);
        const MessageStats& rc = s.message(Message::kReceipts);
        EXPECT_GT(h.replies, 0u);
        EXPECT_GT(b.items, 0u);
        EXPECT_EQ(b.rtt.count(), b.replies);
        EXPECT_EQ(s.requests, h.requests + b.requests + rc.requests);
        EXPECT_EQ(s.replies, h.replies + b.replies + rc.replies);
        EXPECT_EQ(s.replies, s.requests);  // drained
        EXPECT_EQ(s.headers, h.items);
        EXPECT_EQ(b.receipts, 0u);  // no transaction in epoch 0
        EXPECT_EQ(s.verification_failures + s.lost + s.drops + s.penalties, 0u);
        if (name == "nethermind-history") {
            EXPECT_GT(rc.items, 0u);
            EXPECT_EQ(rc.receipts, 0u);
        } else {
            EXPECT_EQ(rc.requests, 0u);
        }
        bodies += b.items;
    }
    EXPECT_LE(timeline_bodies, bodies);
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

// --eth V: the clients offer only eth/V (whatever their profile's versions), headerd's server
// negotiates it, and every profile's replies verify byte for byte; on eth/68 the head number comes
// from asking for the Status' head hash.
TEST(LoadRunner, EachEthVersionNegotiatesAndVerifies) {
    Served served;
    auto reference = ReferenceChain::open({kEra1});
    ASSERT_TRUE(reference) << reference.error().message;
    for (uint64_t version = 68; version <= 72; ++version) {
        SCOPED_TRACE("eth/" + std::to_string(version));
        LoadConfig cfg = config_for(served, reference->get());
        cfg.clients = 9;  // one client per profile of the mix
        cfg.eth = version;
        cfg.duration = 700ms * time_scale();
        RunResult r = Runner(cfg).run({});
        EXPECT_TRUE(verified(r)) << (r.failures.empty() ? "no reply" : r.failures.front().reason);
        ASSERT_TRUE(r.server);
        EXPECT_EQ(r.server->eth_version, version);
        EXPECT_EQ(r.server->head, 8191u);
        EXPECT_EQ(r.connect_failures, 0u);
        EXPECT_EQ(r.clients_connected_max, 9u);
        for (size_t i = 0; i < r.profiles.size(); ++i) {
            EXPECT_GT(r.profiles[i].replies, 0u) << r.profile_specs[i]->name;
        }
    }
}

// --synthetic N:SEED against a server of `headerd generate --count N --seed SEED`: the clients claim
// that network, and every reply equals the generated chain byte for byte. Clients of another seed's
// network are refused by the server's Status check; the run says why, with both genesis hashes.
TEST(LoadRunner, ASyntheticChainVerifiesAndAnotherSeedIsRefusedWithItsReason) {
    Served served(ServedOptions{std::pair<uint64_t, uint64_t>{3000, 7}, false});
    const std::filesystem::path copy = temp_dir("synthetic-reference");
    generated(copy, 3000, 7).reset();  // the same chain again, closed: the reference
    auto reference = ReferenceChain::open({copy.string()});
    ASSERT_TRUE(reference) << reference.error().message;
    const synthetic::Generator network(3000, 7);  // what --synthetic 3000:7 claims
    ASSERT_EQ(network.config().genesis_hash, (*reference)->genesis_hash());
    ASSERT_EQ(network.config().genesis_hash, served.chain().config()->genesis_hash);

    LoadConfig cfg = config_for(served, reference->get());
    cfg.config = &network.config();
    cfg.clients = 9;
    cfg.duration = 1s * time_scale();
    RunResult r = Runner(cfg).run({});
    EXPECT_TRUE(verified(r)) << (r.failures.empty() ? "no reply" : r.failures.front().reason);
    ASSERT_TRUE(r.server);
    EXPECT_EQ(r.server->head, 2999u);
    EXPECT_EQ(r.server->head_hash, (*reference)->db().canonical_hash(2999).value());
    for (size_t i = 0; i < r.profiles.size(); ++i) EXPECT_GT(r.profiles[i].replies, 0u) << r.profile_specs[i]->name;
    EXPECT_TRUE(r.connect_errors.empty());

    const synthetic::Generator other(3000, 8);  // --synthetic 3000:8
    cfg.config = &other.config();
    cfg.reference = nullptr;
    cfg.clients = 3;
    cfg.duration = 800ms;
    r = Runner(cfg).run({});
    EXPECT_FALSE(verified(r));
    EXPECT_EQ(sum(r, &ProfileStats::replies), 0u);
    EXPECT_EQ(r.clients_connected_max, 0u);
    EXPECT_GE(r.connect_attempts, 3u);
    EXPECT_EQ(r.connect_failures, r.connect_attempts);
    ASSERT_EQ(r.connect_errors.size(), 1u);
    EXPECT_EQ(r.connect_errors.begin()->first, "Status: genesis mismatch: remote " +
                                                   to_hex0x(network.config().genesis_hash) + ", local " +
                                                   to_hex0x(other.config().genesis_hash));
    EXPECT_EQ(connect_errors_total(r), r.connect_failures);
    std::filesystem::remove_all(copy);
}

// --ramp S: client i of N dials at i/N x S after the start, never earlier (exact lower bounds) and
// not much later (upper bounds with 500 ms of slack for a loaded machine). The listener never
// answers and the handshake deadline (1.5 s) outlasts the run, so each client dials exactly once.
// (The slack is HEADERD_TEST_TIME_SCALE times longer in a sanitizer build.)
TEST(LoadRunner, ClientsStartSpreadOverTheRamp) {
    HangingListener listener;
    LoadConfig cfg = listener.config(5, 1300ms, 1500ms);
    cfg.ramp = 1s;
    const auto before = Clock::now();
    RunResult r = Runner(cfg).run({});
    std::vector<Clock::time_point> accepted = listener.accepted();
    ASSERT_EQ(accepted.size(), 5u);
    std::sort(accepted.begin(), accepted.end());
    const auto start = before + 50ms;  // the run starts 50 ms after run() is called
    for (size_t i = 0; i < accepted.size(); ++i) {
        const auto planned = start + cfg.ramp * static_cast<int64_t>(i) / 5;
        EXPECT_GE(accepted[i], planned) << "client " << i << " dialled before its ramp slot";
        EXPECT_LE(accepted[i], planned + 500ms * time_scale())
            << "client " << i << " dialled " << std::chrono::duration<double>(accepted[i] - planned).count()
            << " s after its ramp slot";
    }
    EXPECT_GE(accepted.back() - accepted.front(), 800ms - 500ms);
    EXPECT_EQ(r.connect_attempts, 5u);
    EXPECT_EQ(r.connect_failures, 5u);
    EXPECT_EQ(r.clients_connected_max, 0u);
    EXPECT_EQ(connect_errors_total(r), 5u);
}

// --handshakes N: at most N connections are in the handshake at once. Against a listener that never
// answers, 6 clients with a cap of 2 and a 1 s handshake deadline: exactly 2 dial in the first
// 800 ms, the next 2 once those time out; each attempt and failure is counted. Against the real
// server a cap of 1 still connects every client, one after the other.
TEST(LoadRunner, TheHandshakeCapHolds) {
    HangingListener listener;
    LoadConfig cfg = listener.config(6, 1600ms, 1s);
    cfg.max_handshakes = 2;
    RunResult r = Runner(cfg).run({});
    // Every dial completed before run() returned; the listener's thread records it at once.
    std::vector<Clock::time_point> accepted;
    for (int i = 0; i < 100; ++i) {
        accepted = listener.accepted();
        if (accepted.size() >= r.connect_attempts) break;
        std::this_thread::sleep_for(10ms);
    }
    std::sort(accepted.begin(), accepted.end());
    ASSERT_GE(accepted.size(), 4u);
    const auto early = std::count_if(accepted.begin(), accepted.end(),
                                     [&](Clock::time_point t) { return t < accepted.front() + 800ms; });
    EXPECT_EQ(early, 2) << "connections in the handshake at once, before any deadline";
    EXPECT_GE(accepted[2], accepted.front() + 800ms);
    EXPECT_EQ(r.connect_attempts, accepted.size());
    EXPECT_EQ(r.connect_failures, r.connect_attempts);
    EXPECT_EQ(connect_errors_total(r), r.connect_failures);
    EXPECT_EQ(sum(r, &ProfileStats::requests), 0u);

    Served served;
    LoadConfig real = config_for(served, nullptr);
    real.clients = 8;
    real.max_handshakes = 1;
    real.mix = *parse_mix("nethermind");
    real.duration = 1500ms * time_scale();
    r = Runner(real).run({});
    EXPECT_TRUE(verified(r)) << (r.failures.empty() ? "no reply" : r.failures.front().reason);
    EXPECT_EQ(r.connect_attempts, 8u);
    EXPECT_EQ(r.connect_failures, 0u);
    EXPECT_EQ(r.clients_connected_max, 8u);
}

// --server-metrics against the server's own /metrics: the difference of two scrapes counts exactly
// the requests the clients sent and the headers they received.
TEST(LoadRunner, ServerMetricsCountWhatTheClientsReceived) {
    Served served(ServedOptions{std::nullopt, true});
    auto before = scrape_server(served.metrics_url(), 5s);
    ASSERT_TRUE(before) << before.error().message;
    EXPECT_TRUE(before->has_any());
    LoadConfig cfg = config_for(served, nullptr);
    cfg.duration = {};
    cfg.requests = 60;
    cfg.mix = *parse_mix("nethermind,besu,reth");
    RunResult r = Runner(cfg).run({});
    ASSERT_TRUE(verified(r));
    auto after = scrape_server(served.metrics_url(), 5s);
    ASSERT_TRUE(after) << after.error().message;
    const boost::json::object o = server_delta(served.metrics_url(), *before, *after);
    EXPECT_EQ(o.at("requests_served").to_number<double>(), static_cast<double>(sum(r, &ProfileStats::requests)));
    EXPECT_EQ(o.at("headers_served").to_number<double>(), static_cast<double>(sum(r, &ProfileStats::headers)));
    EXPECT_EQ(sum(r, &ProfileStats::requests), 60u);
    EXPECT_GT(sum(r, &ProfileStats::headers), 60u * 100);
    const auto& serve = o.at("serve_seconds").as_object();
    ASSERT_TRUE(serve.at("p50").is_number());
    ASSERT_TRUE(serve.at("p99").is_number());
    EXPECT_GT(serve.at("p50").to_number<double>(), 0);
    EXPECT_LE(serve.at("p50").to_number<double>(), serve.at("p99").to_number<double>());
    EXPECT_LT(serve.at("p99").to_number<double>(), 30);
    EXPECT_TRUE(o.at("cpu_seconds").is_number());
}

}  // namespace
}  // namespace headerd::load
