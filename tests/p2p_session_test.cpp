// Integration: ClientSession against the in-process Server (with one worker and with two) serving
// the mainnet era1 epoch 0, blocks 0..7191 frozen and 7192..8191 in LevelDB. Many requests in
// flight on each session get exactly their own replies; stop() tells every peer on every worker
// "client quitting" and ends every session, also peers busy with requests; announce() pushes a
// BlockRangeUpdate to eth/69+ peers between the replies of requests in flight; and a client
// offering one eth version negotiates it and is served byte-exact, for every version headerd
// offers.

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/chain_config.hpp"
#include "core/uint256.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "metrics/metrics.hpp"
#include "p2p/client_session.hpp"
#include "p2p/connection.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/eth/status.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/peer.hpp"
#include "p2p/server.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "tests/reference_chain.hpp"
#include "tests/test_util.hpp"

namespace headerd {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using p2p::ClientSession;
using p2p::Clock;
using p2p::RequestResult;

constexpr uint64_t kBlocks = 8192;

// The mainnet epoch imported into `dir`, all but the last 1000 headers frozen. Throws on failure.
std::unique_ptr<db::ChainDb> mainnet_epoch(const std::filesystem::path& dir) {
    std::filesystem::remove_all(dir);
    db::ChainDbOptions options;
    options.create_if_missing = true;
    auto opened = db::ChainDb::open(dir.string(), options);
    if (!opened) throw std::runtime_error(opened.error().message);
    std::unique_ptr<db::ChainDb> chain = std::move(*opened);
    const std::string era1 = testing::kDataDir + "/mainnet-00000-5ec1ffb8.era1";
    if (auto r = db::import_file(*chain, mainnet_config(), era1); !r || r->imported != kBlocks) {
        throw std::runtime_error("import of " + era1 + " failed");
    }
    db::FreezeOptions freeze;
    freeze.keep = 1000;
    if (auto frozen = chain->freeze(freeze); !frozen || *frozen != kBlocks - 1000) {
        throw std::runtime_error("freeze failed");
    }
    return chain;
}

// A Server listening on loopback with its control thread and worker pool; stop() (or the
// destructor) stops it and joins every thread.
class LiveServer {
  public:
    LiveServer(const db::ChainDb& chain, size_t workers, const p2p::NetMetrics* metrics = nullptr) : pool_(workers) {
        p2p::ServerOptions options;
        options.metrics = metrics;
        options.listen = p2p::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0);
        options.client_id = "headerd/session-test";
        options.limits.handshake = 5s;
        options.limits.idle = 5s;
        server_.emplace(control_, pool_, chain, key_, options);
        if (auto r = server_->listen(); !r) throw std::runtime_error(r.error().message);
        pool_.start();
        server_->start();
        control_thread_ = std::thread([this] { control_.run(); });
    }
    LiveServer(const LiveServer&) = delete;
    LiveServer& operator=(const LiveServer&) = delete;
    ~LiveServer() { stop(); }

    p2p::Server& server() { return *server_; }
    p2p::Enode enode() const { return {key_.public_key(), "127.0.0.1", server_->local_endpoint().port()}; }
    const rlpx::PublicKey& key() const { return key_.public_key(); }

    void stop() {
        if (!control_thread_.joinable()) return;
        server_->stop();
        control_thread_.join();
        pool_.release();
        pool_.join();
    }

  private:
    asio::io_context control_{1};
    rlpx::PrivateKey key_ = *rlpx::PrivateKey::generate();
    p2p::WorkerPool pool_;
    std::optional<p2p::Server> server_;
    std::thread control_thread_;
};

eth::GetBlockHeadersRequest ask(uint64_t origin, uint64_t amount, uint64_t skip = 0, bool reverse = false) {
    return eth::GetBlockHeadersRequest{0, eth::HashOrNumber::of(origin), amount, skip, reverse};
}

class SessionTest : public ::testing::TestWithParam<size_t> {
  protected:
    static void SetUpTestSuite() {
        dir_ = std::filesystem::temp_directory_path() / ("headerd-session-test-" + std::to_string(::getpid()));
        chain_ = mainnet_epoch(dir_);
    }
    static void TearDownTestSuite() {
        chain_.reset();
        std::filesystem::remove_all(dir_);
    }

    void SetUp() override {
        guard_.emplace(::testing::UnitTest::GetInstance()->current_test_info()->name(), 90s);
        live_ = std::make_unique<LiveServer>(*chain_, GetParam());
    }
    void TearDown() override {
        for (auto& s : sessions_) {
            if (!s->closed()) testing::run_task(client_io_, s->close(), 5s);
        }
        EXPECT_TRUE(testing::drain(client_io_));
        live_.reset();
        sessions_.clear();
        guard_.reset();
    }

    // A new session offering `offers`, kept until the test ends.
    std::shared_ptr<ClientSession> open(std::span<const p2p::ProtocolOffer> offers = p2p::kEthOffers) {
        keys_.push_back(std::make_unique<rlpx::PrivateKey>(*rlpx::PrivateKey::generate()));
        locals_.push_back(
            std::make_unique<p2p::LocalNode>(testing::chainless_node(*keys_.back(), "session-test", offers)));
        p2p::ClientOptions options;
        options.request_timeout = 20s;
        auto s = testing::run_task(client_io_, ClientSession::connect(live_->enode(), *locals_.back(), options));
        sessions_.push_back(s);
        return s;
    }

    static inline std::filesystem::path dir_;
    static inline std::unique_ptr<db::ChainDb> chain_;

    std::optional<testing::HangGuard> guard_;
    asio::io_context client_io_{1};
    std::vector<std::unique_ptr<rlpx::PrivateKey>> keys_;
    std::vector<std::unique_ptr<p2p::LocalNode>> locals_;
    std::vector<std::shared_ptr<ClientSession>> sessions_;
    std::unique_ptr<metrics::Metrics> metrics_;  // before live_: the server's metrics outlive it
    std::unique_ptr<p2p::NetMetrics> net_metrics_;
    std::unique_ptr<LiveServer> live_;
};

// One request of the mix below: forward and reverse, contiguous and skipping, on both sides of the
// freezer boundary at 7192.
struct Query {
    eth::GetBlockHeadersRequest request;
    int64_t step;
};

Query query_of(uint64_t i) {
    std::mt19937_64 rng(i);
    const uint64_t amount = 1 + rng() % 96;
    const uint64_t skip = rng() % 4;
    const bool reverse = rng() % 2 == 1;
    const uint64_t span = (amount - 1) * (skip + 1);
    const uint64_t origin = reverse ? span + rng() % (kBlocks - span) : rng() % (kBlocks - span);
    const int64_t step = static_cast<int64_t>(skip + 1) * (reverse ? -1 : 1);
    return {ask(origin, amount, skip, reverse), step};
}

// Several sessions (spread over the workers), each with many requests in flight at once: every
// request gets exactly its own reply, checked against the published hashes.
TEST_P(SessionTest, ManyRequestsInFlightEachGetTheirOwnReply) {
    constexpr size_t kSessions = 4;
    constexpr uint64_t kPerSession = 48;
    for (size_t i = 0; i < kSessions; ++i) open();
    std::vector<std::optional<RequestResult>> results(kSessions * kPerSession);
    for (size_t s = 0; s < kSessions; ++s) {
        for (uint64_t i = 0; i < kPerSession; ++i) {
            const uint64_t n = s * kPerSession + i;
            asio::co_spawn(
                client_io_,
                [](std::shared_ptr<ClientSession> session, uint64_t q,
                   std::optional<RequestResult>* out) -> asio::awaitable<void> {
                    *out = co_await session->request(query_of(q).request);
                }(sessions_[s], n, &results[n]),
                asio::detached);
        }
    }
    ASSERT_TRUE(testing::run_until(
        client_io_, [&] { return std::ranges::all_of(results, [](const auto& r) { return r.has_value(); }); }, 60s));
    std::vector<uint64_t> ids;
    for (uint64_t n = 0; n < results.size(); ++n) {
        ASSERT_TRUE(*results[n]) << "request " << n << ": " << results[n]->error().message;
        const Query q = query_of(n);
        EXPECT_TRUE(testing::are_blocks((*results[n])->headers, q.request.origin.number, q.request.amount, q.step))
            << "request " << n;
        ids.push_back((*results[n])->request_id);
    }
    std::ranges::sort(ids);
    EXPECT_EQ(std::ranges::adjacent_find(ids), ids.end()) << "two requests shared an id";
    for (const auto& s : sessions_) {
        EXPECT_EQ(s->stats().replies, kPerSession);
        EXPECT_EQ(s->stats().stale, 0u);
        EXPECT_EQ(s->stats().lost, 0u);
        EXPECT_FALSE(s->closed());
        EXPECT_EQ(s->target_timeout(), 6s) << "loopback RTTs are below geth's 2 s floor";
    }
}

// Asks for `amount` headers at a time until the session ends; counts the replies that were right
// (in a counter the coroutine shares: it may outlive a test body that failed an assertion).
asio::awaitable<void> keep_asking(std::shared_ptr<ClientSession> session, uint64_t seed, uint64_t amount,
                                  std::shared_ptr<uint64_t> good) {
    std::mt19937_64 rng(seed);
    while (!session->closed()) {
        const uint64_t origin = rng() % (kBlocks - amount);
        RequestResult r = co_await session->request(ask(origin, amount), 10s);
        if (!r) co_return;
        if (testing::are_blocks(r->headers, origin, amount)) ++*good;
    }
}

// stop() tells every peer on every worker "client quitting" (0x08) and every session ends: the
// server's session count reaches 0 and its threads can be joined. Peers 0..idle-1 are idle, the
// others busy (requests of their own running).
void stop_and_expect_quitting(LiveServer& live, asio::io_context& io,
                              const std::vector<std::shared_ptr<ClientSession>>& sessions, size_t idle) {
    live.server().stop();
    const auto stopped = Clock::now();
    const bool all_closed = testing::run_until(
        io, [&] { return std::ranges::all_of(sessions, [](const auto& s) { return s->closed(); }); }, 8s);
    EXPECT_TRUE(all_closed) << "peers still connected 8 s after stop()";
    EXPECT_LT(Clock::now() - stopped, 5s);
    for (size_t i = 0; i < sessions.size(); ++i) {
        const auto& s = sessions[i];
        SCOPED_TRACE((i < idle ? "idle peer " : "busy peer ") + std::to_string(i));
        if (!s->closed()) {
            ADD_FAILURE() << "still connected";
            continue;
        }
        ASSERT_TRUE(s->error());
        EXPECT_EQ(s->error()->kind(), p2p::PeerErrorKind::kRemoteDisconnect) << s->error()->what();
        EXPECT_EQ(s->error()->reason(), p2p::DisconnectReason::kQuitting) << s->error()->what();
    }
    // Sessions the server failed to end would keep its workers (and the joins below) forever: let
    // the clients leave first, so a failure is reported instead of hanging.
    const bool server_done = testing::run_until(
        io, [&] { return live.server().sessions() == 0; }, 5s);
    EXPECT_TRUE(server_done) << live.server().sessions() << " server sessions still running after stop()";
    if (!server_done) {
        for (const auto& s : sessions) {
            if (!s->closed()) testing::run_task(io, s->close(), 5s);
        }
    }
    live.stop();
    EXPECT_EQ(live.server().sessions(), 0u);
    EXPECT_EQ(live.server().peers(), 0u);
}

TEST_P(SessionTest, StopTellsIdlePeersOnEveryWorkerClientQuitting) {
    constexpr size_t kPeers = 8;  // round robin: on both workers when there are two
    for (size_t i = 0; i < kPeers; ++i) open();
    EXPECT_TRUE(testing::run_until(client_io_, [&] { return live_->server().peers() == kPeers; }));
    // Each has been served once, so every server session is in its serving loop.
    for (const auto& s : sessions_) {
        RequestResult r = testing::run_task(client_io_, s->request(ask(7000, 2)));
        ASSERT_TRUE(r) << r.error().message;
    }
    stop_and_expect_quitting(*live_, client_io_, sessions_, kPeers);
}

// The same with peers busy with small requests, six in flight each, so the server's sessions are
// mostly between one read and the next, not waiting in one, when stop() comes.
// (Connection::cancel() makes every later read fail too, so a session between two reads cannot
// miss the stop.)
TEST_P(SessionTest, StopTellsPeersBusyWithRequestsClientQuitting) {
    constexpr size_t kIdle = 2;
    constexpr size_t kBusy = 6;
    for (size_t i = 0; i < kIdle + kBusy; ++i) open();
    EXPECT_TRUE(testing::run_until(client_io_, [&] { return live_->server().peers() == kIdle + kBusy; }));
    auto good = std::make_shared<uint64_t>(0);
    for (size_t i = kIdle; i < kIdle + kBusy; ++i) {
        for (uint64_t k = 0; k < 6; ++k) {
            asio::co_spawn(client_io_, keep_asking(sessions_[i], i * 10 + k, 1 + k % 3, good), asio::detached);
        }
    }
    ASSERT_TRUE(testing::run_until(
        client_io_, [&] { return *good >= 300; }, 30s))
        << "the busy peers were not served";
    stop_and_expect_quitting(*live_, client_io_, sessions_, kIdle);
}

// What a raw eth client built from the production pieces saw.
struct Seen {
    std::vector<uint64_t> reply_ids;  // BlockHeaders request ids, in arrival order
    std::vector<size_t> updates_at;   // for each BlockRangeUpdate: replies received before it
    std::vector<eth::BlockRangeUpdate> updates;
    size_t bad_replies{0};
    std::optional<p2p::DisconnectReason> goodbye;  // the server's Disconnect, if it sent one
    std::string error;                             // how the stream broke, if it did
};

// The reason a Disconnect payload gives; throws if it has none.
p2p::DisconnectReason reason_of(ByteView payload) {
    auto reason = p2p::decode_disconnect(payload);
    if (!reason) throw std::runtime_error("raw client: Disconnect does not decode");
    return *reason;
}

// Dials the server, handshakes, Hello and Status offering `offers`; sends `requests` requests of
// 1024 headers back to back; calls `on_first_reply` once the first reply is in; reads every reply,
// and whatever else comes, until the last reply, a Disconnect from the server or a broken stream.
asio::awaitable<void> pipelined_client(p2p::Enode server, std::span<const p2p::ProtocolOffer> offers, uint64_t requests,
                                       std::function<void()> on_first_reply, Seen* seen, uint64_t* version) {
    auto executor = co_await asio::this_coro::executor;
    p2p::tcp::socket socket(executor);
    // A small fixed receive window (no autotuning): the server cannot write far ahead of what this
    // client has read, so most replies are still to be written when the update is announced.
    socket.open(p2p::tcp::v4());
    socket.set_option(asio::socket_base::receive_buffer_size(64 * 1024));
    co_await socket.async_connect(p2p::tcp::endpoint(asio::ip::make_address(server.host), server.port),
                                  asio::use_awaitable);
    p2p::Connection conn(std::move(socket));
    const auto key = *rlpx::PrivateKey::generate();
    const auto local = testing::chainless_node(key, "session-test/raw", offers);
    const auto deadline = Clock::now() + 10s;
    co_await conn.dial_handshake(key, server.key, deadline);
    const p2p::EthLink link = co_await p2p::establish(conn, local, deadline);
    *version = link.version;
    for (uint64_t i = 0; i < requests; ++i) {
        eth::GetBlockHeadersRequest r = ask(i * 1024 % (kBlocks - 1024), 1024);
        r.request_id = 1000 + i;
        Bytes payload;
        r.encode(payload);
        co_await conn.write_message(link.offset + static_cast<uint64_t>(eth::MessageId::kGetBlockHeaders), payload);
    }
    try {
        while (seen->reply_ids.size() < requests) {
            auto m = co_await conn.read_message(Clock::now() + 10s);
            if (!m) throw std::runtime_error("raw client: nothing for 10 s");
            if (m->id == static_cast<uint64_t>(p2p::BaseMessageId::kDisconnect)) {
                seen->goodbye = reason_of(m->payload);
                co_return;
            }
            if (m->id == static_cast<uint64_t>(p2p::BaseMessageId::kPing)) {
                Bytes pong;
                p2p::encode_pong(pong);
                co_await conn.write_message(static_cast<uint64_t>(p2p::BaseMessageId::kPong), pong);
                continue;
            }
            const uint64_t code = m->id - link.offset;
            if (code == static_cast<uint64_t>(eth::MessageId::kBlockRangeUpdate)) {
                auto u = eth::BlockRangeUpdate::decode(m->payload);
                if (!u) throw std::runtime_error("raw client: BlockRangeUpdate does not decode");
                seen->updates_at.push_back(seen->reply_ids.size());
                seen->updates.push_back(*u);
                continue;
            }
            if (code != static_cast<uint64_t>(eth::MessageId::kBlockHeaders)) {
                throw std::runtime_error("raw client: unexpected message id " + std::to_string(m->id));
            }
            auto reply = eth::BlockHeadersMessage::decode(m->payload);
            if (!reply) throw std::runtime_error("raw client: BlockHeaders does not decode");
            const uint64_t i = seen->reply_ids.size();
            if (!testing::are_blocks(reply->headers, i * 1024 % (kBlocks - 1024), 1024)) ++seen->bad_replies;
            seen->reply_ids.push_back(reply->request_id);
            if (seen->reply_ids.size() == 1 && on_first_reply) on_first_reply();
        }
        // An update written after the last reply would be missed above: look once more.
        while (auto m = co_await conn.read_message(Clock::now() + 500ms)) {
            if (m->id == static_cast<uint64_t>(p2p::BaseMessageId::kDisconnect)) {
                seen->goodbye = reason_of(m->payload);
                co_return;
            }
            if (m->id - link.offset == static_cast<uint64_t>(eth::MessageId::kBlockRangeUpdate)) {
                seen->updates_at.push_back(seen->reply_ids.size());
                if (auto u = eth::BlockRangeUpdate::decode(m->payload)) seen->updates.push_back(*u);
            }
        }
    } catch (const p2p::PeerError& e) {
        seen->error = e.what();
        co_return;
    }
    co_await conn.disconnect(p2p::DisconnectReason::kRequested);
}

// announce() while an eth/69+ client has 96 large requests in flight: the BlockRangeUpdate arrives
// between two replies (the server pushes while it answers), exactly once, with the new head; the
// replies are all there, in order and correct. An eth/68 client in flight at the same time gets no
// update.
TEST_P(SessionTest, AnnounceReachesAnEth69PeerBetweenRepliesInFlight) {
    constexpr uint64_t kRequests = 96;
    const auto& chain = testing::reference_chain();
    const db::Head head{8191, chain.hashes[8191], U256(0), 0};
    const std::array<p2p::ProtocolOffer, 1> eth68{{p2p::kEthOffers.front()}};
    ASSERT_EQ(eth68[0].version, eth::kEth68);

    Seen modern;
    Seen old;
    uint64_t modern_version = 0;
    uint64_t old_version = 0;
    bool old_done = false;
    asio::co_spawn(client_io_, pipelined_client(live_->enode(), eth68, kRequests, nullptr, &old, &old_version),
                   [&](std::exception_ptr e) {
                       old_done = true;
                       if (e) ADD_FAILURE() << "the eth/68 client failed";
                   });
    testing::run_task(client_io_,
                      pipelined_client(
                          live_->enode(), p2p::kEthOffers, kRequests, [&] { live_->server().announce(head); }, &modern,
                          &modern_version),
                      60s);
    ASSERT_TRUE(testing::run_until(
        client_io_, [&] { return old_done; }, 60s));

    EXPECT_EQ(modern_version, p2p::kEthOffers.back().version);
    EXPECT_EQ(old_version, eth::kEth68);
    std::vector<uint64_t> in_order(kRequests);
    for (uint64_t i = 0; i < kRequests; ++i) in_order[i] = 1000 + i;
    EXPECT_EQ(modern.reply_ids, in_order);
    EXPECT_EQ(old.reply_ids, in_order);
    EXPECT_EQ(modern.bad_replies, 0u);
    EXPECT_EQ(old.bad_replies, 0u);
    EXPECT_EQ(modern.error, "");
    EXPECT_EQ(old.error, "");
    EXPECT_FALSE(modern.goodbye || old.goodbye);
    ASSERT_EQ(modern.updates.size(), 1u) << "BlockRangeUpdates received";
    EXPECT_GE(modern.updates_at[0], 1u);
    EXPECT_LT(modern.updates_at[0], kRequests) << "the update waited until every reply was written";
    EXPECT_EQ(modern.updates[0].latest, 8191u);
    EXPECT_EQ(modern.updates[0].latest_hash, chain.hashes[8191]);
    EXPECT_LE(modern.updates[0].earliest, modern.updates[0].latest);
    EXPECT_TRUE(old.updates.empty()) << "an eth/68 peer got a BlockRangeUpdate";
}

// stop() while the server is writing replies to a peer that reads slowly (96 large requests in
// flight, a 64 KiB receive window): the peer still gets "client quitting" after whole replies,
// never a frame cut short or a bare close.
// (cancel() leaves the write in progress alone, and disconnect() drains the peer's pipelined
// requests before closing, so the close is not a reset that could discard the Disconnect.)
TEST_P(SessionTest, StopTellsAPeerWaitingForRepliesClientQuitting) {
    constexpr uint64_t kRequests = 96;
    Seen seen;
    uint64_t version = 0;
    testing::run_task(client_io_,
                      pipelined_client(
                          live_->enode(), p2p::kEthOffers, kRequests, [&] { live_->server().stop(); }, &seen, &version),
                      30s);
    EXPECT_EQ(seen.error, "") << "the stream broke instead of ending with a Disconnect";
    EXPECT_EQ(seen.goodbye, p2p::DisconnectReason::kQuitting);
    EXPECT_LT(seen.reply_ids.size(), kRequests) << "every request was served before the goodbye";
    EXPECT_EQ(seen.bad_replies, 0u);
    EXPECT_TRUE(testing::run_until(
        client_io_, [&] { return live_->server().sessions() == 0; }, 5s));
}

// A ClientSession with requests in flight takes a BlockRangeUpdate in its stride: it validates it
// and goes on; every request is answered.
TEST_P(SessionTest, AnnounceDoesNotDisturbAClientSessionInFlight) {
    auto session = open();
    std::vector<std::optional<RequestResult>> results(32);
    for (uint64_t i = 0; i < results.size(); ++i) {
        asio::co_spawn(
            client_io_,
            [](std::shared_ptr<ClientSession> s, uint64_t n, std::optional<RequestResult>* out)
                -> asio::awaitable<void> { *out = co_await s->request(ask(n * 200, 512)); }(session, i, &results[i]),
            asio::detached);
    }
    const auto& chain = testing::reference_chain();
    live_->server().announce(db::Head{8191, chain.hashes[8191], U256(0), 0});
    live_->server().announce(db::Head{8190, chain.hashes[8190], U256(0), 0});
    ASSERT_TRUE(testing::run_until(
        client_io_, [&] { return std::ranges::all_of(results, [](const auto& r) { return r.has_value(); }); }, 60s));
    for (uint64_t i = 0; i < results.size(); ++i) {
        ASSERT_TRUE(*results[i]) << i << ": " << results[i]->error().message;
        EXPECT_TRUE(testing::are_blocks((*results[i])->headers, i * 200, 512)) << i;
    }
    EXPECT_FALSE(session->closed());
}

// Our own client offering only eth/N negotiates N with a default server, for every version headerd
// offers, and is served 192 headers across the freezer boundary byte-exact.
TEST_P(SessionTest, EveryEthVersionIsNegotiatedAndServed) {
    ASSERT_GE(p2p::kEthOffers.size(), 2u);
    for (const p2p::ProtocolOffer& offer : p2p::kEthOffers) {
        SCOPED_TRACE("eth/" + std::to_string(offer.version));
        auto session = open(std::span<const p2p::ProtocolOffer>(&offer, 1));
        EXPECT_EQ(session->link().version, offer.version);
        EXPECT_EQ(session->link().client_id, "headerd/session-test");
        RequestResult r = testing::run_task(client_io_, session->request(ask(7100, 192)));
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_TRUE(testing::are_blocks(r->headers, 7100, 192));
        RequestResult back = testing::run_task(client_io_, session->request(ask(7291, 192, 0, true)));
        ASSERT_TRUE(back) << back.error().message;
        EXPECT_TRUE(testing::are_blocks(back->headers, 7291, 192, -1));
        testing::run_task(client_io_, session->close());
    }
}

// The cache of compressed replies (p2p/eth/reply_cache.hpp): three sessions ask the same ranges
// (forward, reverse, skipping, across the freezer boundary at 7192, one cut by the head) three
// times each with ids of their own: every reply holds exactly its blocks, and the server counts
// one miss per range and worker, the rest hits.
TEST_P(SessionTest, RangesAskedAgainAreServedExactlyFromTheReplyCache) {
    metrics_ = std::make_unique<metrics::Metrics>("test", "test");
    net_metrics_ = std::make_unique<p2p::NetMetrics>(metrics_->families());
    live_.reset();
    live_ = std::make_unique<LiveServer>(*chain_, GetParam(), net_metrics_.get());
    const std::vector<Query> ranges = {
        {ask(0, 192), 1},         {ask(7100, 192), 1},          {ask(7291, 192, 0, true), -1},
        {ask(8100, 192), 1},      {ask(7000, 64, 3), 4},        {ask(7500, 64, 7, true), -8},
        {ask(1, 1), 1},           {ask(8191, 5, 0, true), -1},  {ask(4000, 1024), 1},
        {ask(6000, 128, 15), 16}, {ask(191, 192, 0, true), -1}, {ask(7192, 2), 1},
    };
    constexpr size_t kSessions = 3;
    constexpr int kRounds = 3;
    for (size_t i = 0; i < kSessions; ++i) open();
    auto good = std::make_shared<size_t>(0);
    auto done = std::make_shared<size_t>(0);
    for (size_t s = 0; s < kSessions; ++s) {
        asio::co_spawn(
            client_io_,
            [](std::shared_ptr<ClientSession> session, std::vector<Query> qs, size_t first, std::shared_ptr<size_t> ok,
               std::shared_ptr<size_t> finished) -> asio::awaitable<void> {
                for (int round = 0; round < kRounds; ++round) {
                    for (size_t i = 0; i < qs.size(); ++i) {
                        const Query& q = qs[(first + i) % qs.size()];
                        RequestResult r = co_await session->request(q.request);
                        const uint64_t available =
                            q.step > 0 ? std::min<uint64_t>(q.request.amount, kBlocks - q.request.origin.number)
                                       : q.request.amount;
                        if (r && testing::are_blocks(r->headers, q.request.origin.number, available, q.step)) ++*ok;
                    }
                }
                ++*finished;
            }(sessions_[s], ranges, s * 5, good, done),
            asio::detached);
    }
    ASSERT_TRUE(testing::run_until(
        client_io_, [&] { return *done == kSessions; }, 60s));
    EXPECT_EQ(*good, kSessions * kRounds * ranges.size());
    auto& requests = metrics_->families().reply_cache_requests;
    const double misses = requests.Add({{"result", "miss"}}).Value();
    const double hits = requests.Add({{"result", "hit"}}).Value();
    const size_t workers_used = std::min(GetParam(), kSessions);
    EXPECT_EQ(misses, static_cast<double>(ranges.size() * workers_used));
    EXPECT_EQ(hits + misses, static_cast<double>(kSessions * kRounds * ranges.size()));
    EXPECT_EQ(metrics_->families().reply_cache_entries.Add({}).Value(), misses);
    EXPECT_GT(metrics_->families().reply_cache_bytes.Add({}).Value(), 0.0);
    EXPECT_EQ(metrics_->families().reply_cache_evictions.Add({}).Value(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Workers, SessionTest, ::testing::Values(size_t{1}, size_t{2}),
                         [](const ::testing::TestParamInfo<size_t>& param) {
                             return std::to_string(param.param) + "workers";
                         });

}  // namespace
}  // namespace headerd
