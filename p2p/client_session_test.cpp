// ClientSession against a scripted fake server on loopback. The fake is built from the production
// pieces (Connection, establish) up to Status, then does what each test needs: ignores requests,
// answers them late, out of order, under another request's id or an unknown one, pings, asks
// requests of its own or says goodbye. Replies carry the published mainnet headers of tests/data.

#include "p2p/client_session.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/awaitable.hpp"
#include "core/rlp.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/peer.hpp"
#include "p2p/peer_error.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "tests/reference_chain.hpp"
#include "tests/test_util.hpp"

namespace headerd::p2p {
namespace {

using namespace std::chrono_literals;
using namespace boost::asio::experimental::awaitable_operators;
using eth::MessageId;
using Kind = RequestFailure::Kind;

constexpr auto kSlack = 1500ms;

eth::GetBlockHeadersRequest ask(uint64_t origin, uint64_t amount) {
    eth::GetBlockHeadersRequest r;
    r.origin = eth::HashOrNumber::of(origin);
    r.amount = amount;
    return r;
}

asio::awaitable<void> sleep_for(Clock::duration d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(kTuple);
}

// A message as the fake received it, owning its payload.
struct Received {
    uint64_t id{0};
    Bytes payload;
};

// One client at a time: accepts it, does the RLPx handshake, Hello and Status, then runs the
// test's script. Everything runs on the test's io_context, beside the client.
class FakeServer {
  public:
    using Script = std::function<asio::awaitable<void>(FakeServer&)>;

    explicit FakeServer(asio::io_context& io)
        : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
          local_(testing::chainless_node(key_, "fake-server")) {}

    Enode enode() const { return Enode{key_.public_key(), "127.0.0.1", acceptor_.local_endpoint().port()}; }

    void start(Script script) {
        asio::co_spawn(acceptor_.get_executor(), run(std::move(script)), [this](std::exception_ptr e) {
            finished_ = true;
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                error_ = ex.what();
            }
        });
    }
    void close() {
        boost::system::error_code ec;
        acceptor_.close(ec);
        if (conn_) conn_->close();
    }

    bool finished() const { return finished_; }
    // Why the script failed; empty if it did not (yet).
    const std::string& error() const { return error_; }
    size_t requests_seen() const { return requests_seen_; }

    // ---- for scripts ----

    asio::awaitable<Received> next(Clock::duration timeout = 5s) {
        auto m = co_await conn_->read_message(Clock::now() + timeout);
        if (!m) throw std::runtime_error("fake server: no message from the client in time");
        co_return Received{m->id, Bytes(m->payload.begin(), m->payload.end())};
    }
    uint64_t eth_id(MessageId id) const { return link_.offset + static_cast<uint64_t>(id); }
    // The next GetBlockHeaders (Pongs skipped); anything else fails the script.
    asio::awaitable<eth::GetBlockHeadersRequest> next_request(Clock::duration timeout = 5s) {
        for (;;) {
            Received m = co_await next(timeout);
            if (m.id == kPongId) continue;
            if (m.id != eth_id(MessageId::kGetBlockHeaders)) {
                throw std::runtime_error("fake server: expected GetBlockHeaders, got id " + std::to_string(m.id));
            }
            auto r = eth::GetBlockHeadersRequest::decode(m.payload);
            if (!r) throw std::runtime_error("fake server: GetBlockHeaders does not decode");
            ++requests_seen_;
            co_return *r;
        }
    }
    // BlockHeaders for request `id` carrying reference blocks first..first+count-1.
    asio::awaitable<void> reply(uint64_t id, uint64_t first, uint64_t count) {
        Bytes headers;
        for (uint64_t n = first; n < first + count; ++n) append(headers, testing::reference_chain().headers[n]);
        Bytes payload;
        eth::encode_block_headers(payload, id, headers);
        co_await conn_->write_message(eth_id(MessageId::kBlockHeaders), payload);
    }
    // The answer to `request` as an honest server gives it.
    asio::awaitable<void> answer(const eth::GetBlockHeadersRequest& request) {
        co_await reply(request.request_id, request.origin.number, request.amount);
    }
    asio::awaitable<void> send(uint64_t id, ByteView payload) { co_await conn_->write_message(id, payload); }
    // The next message must be Disconnect (Pongs skipped): its reason. Then closes.
    asio::awaitable<DisconnectReason> goodbye(Clock::duration timeout = 5s) {
        for (;;) {
            Received m = co_await next(timeout);
            if (m.id == kPongId) continue;
            if (m.id != kDisconnectId)
                throw std::runtime_error("fake server: expected Disconnect, got id " + std::to_string(m.id));
            auto reason = decode_disconnect(m.payload);
            if (!reason) throw std::runtime_error("fake server: Disconnect does not decode");
            conn_->close();  // as a peer does once told goodbye
            co_return *reason;
        }
    }

  private:
    asio::awaitable<void> run(Script script) {
        tcp::socket socket = co_await acceptor_.async_accept(asio::use_awaitable);
        conn_ = std::make_unique<Connection>(std::move(socket));
        const auto deadline = Clock::now() + 10s;
        co_await conn_->accept_handshake(key_, deadline);
        link_ = co_await establish(*conn_, local_, deadline);
        co_await script(*this);
    }

    rlpx::PrivateKey key_ = *rlpx::PrivateKey::generate();
    tcp::acceptor acceptor_;
    LocalNode local_;
    std::unique_ptr<Connection> conn_;
    EthLink link_;
    bool finished_{false};
    std::string error_;
    size_t requests_seen_{0};
};

class ClientSessionTest : public ::testing::Test {
  protected:
    void SetUp() override { guard_.emplace(::testing::UnitTest::GetInstance()->current_test_info()->name(), 60s); }
    void TearDown() override {
        // A script that is done leaves: the client's goodbye then need not linger.
        if (fake_.finished()) fake_.close();
        if (session_ && !session_->closed()) {
            try {
                testing::run_task(io_, session_->close(), 5s);
            } catch (const std::exception& e) {
                ADD_FAILURE() << "close: " << e.what();
            }
        }
        // A script waiting for the goodbye gets it now.
        testing::run_until(
            io_, [this] { return fake_.finished(); }, 2s);
        fake_.close();
        EXPECT_TRUE(testing::drain(io_)) << "coroutines still running 10 s after the test";
        EXPECT_EQ(fake_.error(), "") << "the fake server's script failed";
        session_.reset();
        guard_.reset();
    }

    // Starts the fake with `script` and connects a session to it.
    void connect(FakeServer::Script script, ClientOptions options = {}) {
        fake_.start(std::move(script));
        session_ = testing::run_task(io_, ClientSession::connect(fake_.enode(), local_, options));
        ASSERT_TRUE(session_);
        EXPECT_EQ(session_->link().version, kEthOffers.back().version);
    }

    RequestResult request(eth::GetBlockHeadersRequest r, std::optional<Clock::duration> timeout = std::nullopt) {
        return testing::run_task(io_, session_->request(r, timeout));
    }

    // Starts a request in the background; its result lands in `out`.
    void start_request(eth::GetBlockHeadersRequest r, std::optional<Clock::duration> timeout,
                       std::optional<RequestResult>& out, uint64_t group = 0) {
        asio::co_spawn(
            io_,
            [](std::shared_ptr<ClientSession> s, eth::GetBlockHeadersRequest req, std::optional<Clock::duration> t,
               uint64_t g, std::optional<RequestResult>* result) -> asio::awaitable<void> {
                *result = co_await s->request(req, t, g);
            }(session_, r, timeout, group, &out),
            asio::detached);
    }

    bool wait_closed(Clock::duration limit = 5s) {
        return testing::run_until(
            io_, [this] { return session_->closed(); }, limit);
    }

    // The session ended because the peer broke the protocol: kUnexpectedMessage, and the fake
    // server was told "protocol breach" (its script put the reason in `told`).
    ::testing::AssertionResult ended_by_breach(const std::optional<DisconnectReason>& told) {
        if (!wait_closed()) return ::testing::AssertionFailure() << "the session is still open";
        const auto& error = session_->error();
        if (!error || error->kind() != PeerErrorKind::kUnexpectedMessage) {
            return ::testing::AssertionFailure() << "ended by " << (error ? error->what() : "nothing");
        }
        if (!testing::run_until(io_, [this] { return fake_.finished(); })) {
            return ::testing::AssertionFailure() << "the fake server got no goodbye";
        }
        if (told != DisconnectReason::kProtocolBreach) {
            return ::testing::AssertionFailure()
                   << "the peer was told " << (told ? std::string(to_string(*told)) : std::string("nothing"));
        }
        return ::testing::AssertionSuccess();
    }

    std::optional<testing::HangGuard> guard_;
    asio::io_context io_{1};
    rlpx::PrivateKey key_ = *rlpx::PrivateKey::generate();
    LocalNode local_ = testing::chainless_node(key_, "client-session-test");
    FakeServer fake_{io_};
    std::shared_ptr<ClientSession> session_;
};

constexpr uint64_t kHeadersCode = static_cast<uint64_t>(MessageId::kGetBlockHeaders);

// A request the peer ignores fails with kTimeout, as a value, at its own deadline; the session goes
// on and the next request is answered. The lost request halves the capacity estimate; the reply
// replaces it (the first measurement) and sets the RTT.
TEST_F(ClientSessionTest, TimeoutIsAValueAndTheSessionGoesOn) {
    connect([](FakeServer& f) -> asio::awaitable<void> {
        co_await f.next_request();  // ignored
        co_await f.answer(co_await f.next_request());
    });
    const auto start = Clock::now();
    RequestResult lost = request(ask(1000, 3), 200ms);
    const auto took = Clock::now() - start;
    ASSERT_FALSE(lost);
    EXPECT_EQ(lost.error().kind, Kind::kTimeout) << lost.error().message;
    EXPECT_GE(took, 199ms);
    EXPECT_LT(took, 200ms + kSlack);
    EXPECT_FALSE(session_->closed());
    EXPECT_EQ(session_->stats().lost, 1u);
    EXPECT_EQ(session_->in_flight(), 0u);
    EXPECT_DOUBLE_EQ(session_->capacity().items_per_second(kHeadersCode), 50.0);
    // ceil(50 x 1.8 s x 1.01)
    EXPECT_EQ(session_->target_headers(), 91u);

    RequestResult ok = request(ask(5, 3));
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_TRUE(testing::are_blocks(ok->headers, 5, 3));
    const auto& stats = session_->stats();
    EXPECT_EQ(stats.requests, 2u);
    EXPECT_EQ(stats.replies, 1u);
    EXPECT_EQ(stats.stale, 0u);
    EXPECT_EQ(session_->capacity().rtt(), ok->rtt);
    // A loopback RTT is below geth's 2 s floor: 3 x 2 s.
    EXPECT_EQ(session_->target_timeout(), 6s);
}

// Every verified reply feeds the capacity estimate of its request kind (GetBlockHeaders, the code
// target_headers() and timeouts use): after one reply of 3 headers the estimate is 3 / RTT, the
// first measurement, and the next request is sized from it.
TEST_F(ClientSessionTest, RepliesFeedTheCapacityOfTheirRequestKind) {
    connect([](FakeServer& f) -> asio::awaitable<void> {
        co_await f.next_request();  // ignored: one timeout first, so a stale start value shows
        co_await f.answer(co_await f.next_request());
    });
    EXPECT_EQ(session_->target_headers(), 182u) << "ceil(100/s x 1.8 s x 1.01) before anything is measured";
    ASSERT_FALSE(request(ask(1000, 3), 100ms));
    EXPECT_EQ(session_->target_headers(), 91u) << "halved by the timeout";
    RequestResult ok = request(ask(5, 3));
    ASSERT_TRUE(ok) << ok.error().message;
    const double seconds = std::chrono::duration<double>(ok->rtt).count();
    EXPECT_NEAR(session_->capacity().items_per_second(kHeadersCode), std::clamp(3 / seconds, 1.0, 1e6), 1e-6);
    tracker::Capacity expected;
    expected.update(kHeadersCode, ok->rtt, 3);
    EXPECT_EQ(session_->target_headers(), expected.target_items(kHeadersCode, expected.target_rtt(), 1024));
}

// A request with a shorter timeout, sent after one with a longer timeout, still expires at its own
// deadline (the expiry timer is re-armed for it), while the longer one stays pending and is
// answered later.
TEST_F(ClientSessionTest, AShorterTimeoutExpiresFirst) {
    connect([](FakeServer& f) -> asio::awaitable<void> {
        auto slow = co_await f.next_request();
        co_await f.next_request();  // the short one: ignored
        co_await sleep_for(700ms);
        co_await f.answer(slow);
    });
    const auto start = Clock::now();
    std::optional<RequestResult> slow;
    std::optional<RequestResult> fast;
    Clock::duration fast_took{};
    auto long_one = [&]() -> asio::awaitable<void> { slow = co_await session_->request(ask(100, 2), 5s); };
    auto short_one = [&]() -> asio::awaitable<void> {
        fast = co_await session_->request(ask(200, 2), 150ms);
        fast_took = Clock::now() - start;
    };
    testing::run_task(
        io_, [&]() -> asio::awaitable<void> { co_await (long_one() && short_one()); }(), 20s);
    ASSERT_TRUE(fast && slow);
    ASSERT_FALSE(*fast);
    EXPECT_EQ(fast->error().kind, Kind::kTimeout);
    EXPECT_LT(fast_took, 700ms) << "the short request expired only after the long one was answered";
    ASSERT_TRUE(*slow) << slow->error().message;
    EXPECT_TRUE(testing::are_blocks((*slow)->headers, 100, 2));
    EXPECT_EQ(session_->stats().lost, 1u);
    EXPECT_FALSE(session_->closed());
}

// Without a timeout of its own a request uses options.request_timeout.
TEST_F(ClientSessionTest, TheOptionsTimeoutIsTheDefault) {
    ClientOptions options;
    options.request_timeout = 150ms;
    connect([](FakeServer& f) -> asio::awaitable<void> { co_await f.next_request(); }, options);
    const auto start = Clock::now();
    RequestResult lost = request(ask(1, 1));
    ASSERT_FALSE(lost);
    EXPECT_EQ(lost.error().kind, Kind::kTimeout);
    EXPECT_LT(Clock::now() - start, 150ms + kSlack);
}

// Replies are matched by request id only: a reply carrying the other pending request's id goes to
// that request's waiter, whatever it contains and whichever request it answered.
TEST_F(ClientSessionTest, AReplyGoesToTheWaiterOfItsIdOnly) {
    connect([](FakeServer& f) -> asio::awaitable<void> {
        auto first = co_await f.next_request();
        auto second = co_await f.next_request();
        // The first request's blocks under the second's id, then the second's under the first's.
        co_await f.reply(second.request_id, first.origin.number, first.amount);
        co_await f.reply(first.request_id, second.origin.number, second.amount);
    });
    std::optional<RequestResult> a;
    std::optional<RequestResult> b;
    auto one = [&]() -> asio::awaitable<void> { a = co_await session_->request(ask(100, 3), 5s); };
    auto two = [&]() -> asio::awaitable<void> { b = co_await session_->request(ask(200, 3), 5s); };
    testing::run_task(
        io_, [&]() -> asio::awaitable<void> { co_await (one() && two()); }(), 20s);
    ASSERT_TRUE(a && *a) << (a ? a->error().message : "no result");
    ASSERT_TRUE(b && *b) << (b ? b->error().message : "no result");
    EXPECT_NE((*a)->request_id, (*b)->request_id);
    EXPECT_TRUE(testing::are_blocks((*a)->headers, 200, 3)) << "the reply under the first id";
    EXPECT_TRUE(testing::are_blocks((*b)->headers, 100, 3)) << "the reply under the second id";
    EXPECT_EQ(session_->stats().replies, 2u);
    EXPECT_EQ(session_->stats().stale, 0u);
}

// Many requests in flight, answered in a shuffled order: each gets exactly its own reply.
TEST_F(ClientSessionTest, ManyRequestsAnsweredOutOfOrderEachGetTheirOwn) {
    constexpr uint64_t kRequests = 40;
    connect([](FakeServer& f) -> asio::awaitable<void> {
        std::vector<eth::GetBlockHeadersRequest> got;
        for (uint64_t i = 0; i < kRequests; ++i) got.push_back(co_await f.next_request());
        std::shuffle(got.begin(), got.end(), std::mt19937_64(11));
        for (const auto& r : got) co_await f.answer(r);
    });
    std::vector<std::optional<RequestResult>> results(kRequests);
    for (uint64_t i = 0; i < kRequests; ++i) start_request(ask(150 * i, 1 + i % 7), 10s, results[i]);
    ASSERT_TRUE(testing::run_until(
        io_, [&] { return std::ranges::all_of(results, [](const auto& r) { return r.has_value(); }); }, 20s));
    for (uint64_t i = 0; i < kRequests; ++i) {
        ASSERT_TRUE(*results[i]) << i << ": " << results[i]->error().message;
        EXPECT_TRUE(testing::are_blocks((*results[i])->headers, 150 * i, 1 + i % 7)) << "request " << i;
    }
    EXPECT_EQ(session_->stats().replies, kRequests);
    EXPECT_EQ(session_->in_flight(), 0u);
}

// A reply to an id that is not pending ends the session by default (geth drops such a peer): the
// pending request fails with kClosed, the error is kUnexpectedMessage, and the peer is told
// "protocol breach".
TEST_F(ClientSessionTest, AStaleReplyEndsTheSessionByDefault) {
    std::optional<DisconnectReason> told;
    connect([&told](FakeServer& f) -> asio::awaitable<void> {
        auto r = co_await f.next_request();
        co_await f.reply(r.request_id + 1'000'003, 10, 1);
        told = co_await f.goodbye();
    });
    RequestResult r = request(ask(10, 1), 5s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, Kind::kClosed) << r.error().message;
    EXPECT_TRUE(ended_by_breach(told));
    EXPECT_EQ(session_->stats().stale, 1u);
    // A closed session refuses at once.
    RequestResult after = request(ask(1, 1), 5s);
    ASSERT_FALSE(after);
    EXPECT_EQ(after.error().kind, Kind::kClosed);
}

// A reply that comes after its request timed out is stale too: counted, and by default fatal.
TEST_F(ClientSessionTest, AReplyAfterTheTimeoutIsStale) {
    std::optional<DisconnectReason> told;
    connect([&told](FakeServer& f) -> asio::awaitable<void> {
        auto r = co_await f.next_request();
        co_await sleep_for(500ms);
        co_await f.answer(r);
        told = co_await f.goodbye();
    });
    RequestResult r = request(ask(10, 2), 150ms);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, Kind::kTimeout);
    EXPECT_TRUE(ended_by_breach(told));
    EXPECT_EQ(session_->stats().lost, 1u);
    EXPECT_EQ(session_->stats().stale, 1u);
}

// With drop_on_stale off, replies to unknown ids and second replies are counted and dropped; the
// session and the requests pending go on.
TEST_F(ClientSessionTest, StaleRepliesAreCountedAndDroppedWhenNotFatal) {
    ClientOptions options;
    options.drop_on_stale = false;
    connect(
        [](FakeServer& f) -> asio::awaitable<void> {
            auto first = co_await f.next_request();
            co_await f.reply(first.request_id ^ 0x5555'5555, 300, 1);  // never sent
            co_await f.answer(first);
            auto second = co_await f.next_request();
            co_await f.answer(first);  // answered already
            co_await f.answer(second);
        },
        options);
    RequestResult a = request(ask(10, 2), 5s);
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_TRUE(testing::are_blocks(a->headers, 10, 2));
    RequestResult b = request(ask(20, 1), 5s);
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_TRUE(testing::are_blocks(b->headers, 20, 1));
    EXPECT_EQ(session_->stats().stale, 2u);
    EXPECT_EQ(session_->stats().replies, 2u);
    EXPECT_FALSE(session_->closed());
}

// More headers than asked for: the tracker refuses the reply before decoding it; the session ends
// with kUnexpectedMessage and "protocol breach".
TEST_F(ClientSessionTest, MoreHeadersThanAskedEndTheSession) {
    std::optional<DisconnectReason> told;
    connect([&told](FakeServer& f) -> asio::awaitable<void> {
        auto r = co_await f.next_request();
        co_await f.reply(r.request_id, 0, r.amount + 1);
        told = co_await f.goodbye();
    });
    RequestResult r = request(ask(0, 2), 5s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, Kind::kClosed);
    EXPECT_TRUE(ended_by_breach(told));
}

// GetBlockBodies and GetReceipts go through the same tracking: the request carries the hashes
// asked for, the reply's items come back as views (eth/70+ Receipts with lastBlockIncomplete), a
// reply feeds the capacity of its own request kind, and more items than hashes end the session.
TEST_F(ClientSessionTest, HistoryRequestsAreTrackedAndTheirItemsHandedOver) {
    const std::vector<Hash32> hashes = {testing::reference_chain().hashes[1], testing::reference_chain().hashes[2]};
    std::optional<DisconnectReason> told;
    connect([&](FakeServer& f) -> asio::awaitable<void> {
        Received m = co_await f.next();
        while (m.id == kPongId) m = co_await f.next();
        if (m.id != f.eth_id(MessageId::kGetBlockBodies)) throw std::runtime_error("expected GetBlockBodies");
        auto bodies = eth::HashListRequest::decode(m.payload);
        if (!bodies || bodies->count != 2 || eth::hash_at(bodies->hashes, 1) != hashes[1]) {
            throw std::runtime_error("GetBlockBodies does not carry the two hashes");
        }
        // [id, [[[], []], [[], []]]]: two empty bodies.
        Bytes reply;
        rlp::encode_header(reply, {true, rlp::length(bodies->request_id) + 1 + 6});
        rlp::encode(reply, bodies->request_id);
        append(reply, Bytes{0xc6, 0xc2, 0xc0, 0xc0, 0xc2, 0xc0, 0xc0});
        co_await f.send(f.eth_id(MessageId::kBlockBodies), reply);

        m = co_await f.next();
        while (m.id == kPongId) m = co_await f.next();
        auto receipts = eth::GetReceiptsRequest70::decode(m.payload);
        if (!receipts || receipts->first_block_receipt_index != 3) throw std::runtime_error("expected GetReceipts 70");
        // [id, 1, [[]]]: one receipt list, cut.
        reply.clear();
        rlp::encode_header(reply, {true, rlp::length(receipts->request_id) + 1 + 2});
        rlp::encode(reply, receipts->request_id);
        append(reply, Bytes{0x01, 0xc1, 0xc0});
        co_await f.send(f.eth_id(MessageId::kReceipts), reply);

        m = co_await f.next();
        while (m.id == kPongId) m = co_await f.next();
        bodies = eth::HashListRequest::decode(m.payload);
        reply.clear();  // three bodies for two hashes
        rlp::encode_header(reply, {true, rlp::length(bodies->request_id) + 1 + 9});
        rlp::encode(reply, bodies->request_id);
        append(reply, Bytes{0xc9, 0xc2, 0xc0, 0xc0, 0xc2, 0xc0, 0xc0, 0xc2, 0xc0, 0xc0});
        co_await f.send(f.eth_id(MessageId::kBlockBodies), reply);
        told = co_await f.goodbye();
    });
    ASSERT_GE(session_->link().version, eth::kEth70);
    auto bodies = testing::run_task(io_, session_->request_history(MessageId::kGetBlockBodies, hashes, 5s));
    ASSERT_TRUE(bodies) << bodies.error().message;
    ASSERT_EQ(bodies->items.size(), 2u);
    EXPECT_EQ(Bytes(bodies->items[1].begin(), bodies->items[1].end()), (Bytes{0xc2, 0xc0, 0xc0}));
    EXPECT_GT(session_->capacity().items_per_second(static_cast<uint64_t>(MessageId::kGetBlockBodies)), 0);

    auto receipts = testing::run_task(io_, session_->request_history(MessageId::kGetReceipts, hashes, 5s, 3));
    ASSERT_TRUE(receipts) << receipts.error().message;
    ASSERT_EQ(receipts->items.size(), 1u);
    EXPECT_TRUE(receipts->last_block_incomplete);

    auto over = testing::run_task(io_, session_->request_history(MessageId::kGetBlockBodies, hashes, 5s));
    ASSERT_FALSE(over);
    EXPECT_EQ(over.error().kind, Kind::kClosed);
    EXPECT_TRUE(ended_by_breach(told));
    EXPECT_EQ(session_->stats().replies, 2u);
}

// At max_in_flight the next request is refused without being sent (kRejected); the ones in flight
// are unaffected.
TEST_F(ClientSessionTest, TheInFlightCapRejects) {
    ClientOptions options;
    options.max_in_flight = 2;
    connect(
        [](FakeServer& f) -> asio::awaitable<void> {
            co_await f.next_request();
            co_await f.next_request();
            co_await f.goodbye();
        },
        options);
    std::optional<RequestResult> a;
    std::optional<RequestResult> b;
    start_request(ask(1, 1), 10s, a);
    start_request(ask(2, 1), 10s, b);
    ASSERT_TRUE(testing::run_until(io_, [&] { return fake_.requests_seen() == 2; }));
    EXPECT_EQ(session_->in_flight(), 2u);
    RequestResult refused = request(ask(3, 1), 10s);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind, Kind::kRejected) << refused.error().message;
    EXPECT_EQ(session_->stats().requests, 2u) << "a refused request was sent";
    EXPECT_EQ(session_->in_flight(), 2u);
    EXPECT_FALSE(a || b);
    testing::run_task(io_, session_->close());
    ASSERT_TRUE(testing::run_until(io_, [&] { return a && b; }));
    EXPECT_EQ((*a).error().kind, Kind::kClosed);
    EXPECT_EQ((*b).error().kind, Kind::kClosed);
}

// close() says Disconnect "requested" and every pending request fails with kClosed; later
// requests fail at once.
TEST_F(ClientSessionTest, CloseFailsPendingRequestsWithClosed) {
    std::optional<DisconnectReason> told;
    connect([&told](FakeServer& f) -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) co_await f.next_request();
        told = co_await f.goodbye();
    });
    std::vector<std::optional<RequestResult>> results(3);
    for (uint64_t i = 0; i < 3; ++i) start_request(ask(i, 1), 10s, results[i]);
    ASSERT_TRUE(testing::run_until(io_, [&] { return fake_.requests_seen() == 3; }));
    const auto start = Clock::now();
    testing::run_task(io_, session_->close());
    ASSERT_TRUE(testing::run_until(
        io_, [&] { return std::ranges::all_of(results, [](const auto& r) { return r.has_value(); }); }));
    EXPECT_LT(Clock::now() - start, kSlack) << "pending requests waited for their timeout";
    for (const auto& r : results) {
        ASSERT_FALSE(*r);
        EXPECT_EQ(r->error().kind, Kind::kClosed);
    }
    EXPECT_TRUE(wait_closed());
    ASSERT_TRUE(testing::run_until(io_, [&] { return fake_.finished(); }));
    EXPECT_EQ(told, DisconnectReason::kRequested);
    RequestResult after = request(ask(1, 1));
    ASSERT_FALSE(after);
    EXPECT_EQ(after.error().kind, Kind::kClosed);
}

// abandon(group) ends that group's waiting requests at once as kAbandoned (a sync lent the session
// ends its own requests this way) and nothing else: the other group's request gets its reply, the
// replies to the abandoned ones are dropped without counting as stale (which would end the
// session), and the session goes on. abandon(0) ends nothing.
TEST_F(ClientSessionTest, AbandonEndsOneGroupsRequestsAndTheSessionGoesOn) {
    bool abandoned = false;
    connect([&abandoned](FakeServer& f) -> asio::awaitable<void> {
        std::vector<eth::GetBlockHeadersRequest> got;
        for (int i = 0; i < 3; ++i) got.push_back(co_await f.next_request());
        while (!abandoned) co_await sleep_for(5ms);
        for (const auto& r : got) co_await f.answer(r);
        co_await f.answer(co_await f.next_request());
    });
    std::vector<std::optional<RequestResult>> results(3);
    start_request(ask(10, 2), 10s, results[0], 7);
    start_request(ask(20, 3), 10s, results[1]);
    start_request(ask(30, 4), 10s, results[2], 7);
    ASSERT_TRUE(testing::run_until(io_, [&] { return fake_.requests_seen() == 3; }));
    session_->abandon(0);
    session_->abandon(8);
    testing::run_until(
        io_, [] { return false; }, 50ms);
    EXPECT_TRUE(std::ranges::none_of(results, [](const auto& r) { return r.has_value(); }))
        << "abandon(0) or another group's abandon ended a request";

    const auto start = Clock::now();
    session_->abandon(7);
    ASSERT_TRUE(testing::run_until(io_, [&] { return results[0] && results[2]; }));
    EXPECT_LT(Clock::now() - start, kSlack) << "abandoned requests waited for their timeout";
    for (size_t i : {0, 2}) {
        ASSERT_FALSE(*results[i]) << i;
        EXPECT_EQ(results[i]->error().kind, Kind::kAbandoned) << results[i]->error().message;
    }
    EXPECT_FALSE(results[1]) << "the other group's request was ended too";

    abandoned = true;
    ASSERT_TRUE(testing::run_until(io_, [&] { return results[1].has_value(); }));
    ASSERT_TRUE(*results[1]) << results[1]->error().message;
    EXPECT_TRUE(testing::are_blocks((*results[1])->headers, 20, 3));
    RequestResult next = request(ask(40, 5), 5s);
    ASSERT_TRUE(next) << next.error().message;
    EXPECT_TRUE(testing::are_blocks(next->headers, 40, 5));
    EXPECT_FALSE(session_->closed());
    EXPECT_EQ(session_->stats().stale, 0u) << "a reply to an abandoned request was taken as stale";
    EXPECT_EQ(session_->stats().replies, 2u);
    EXPECT_EQ(session_->stats().lost, 0u);
    EXPECT_EQ(session_->in_flight(), 0u);
}

// A Disconnect from the peer fails the pending request with kClosed; the error carries the
// peer's reason.
TEST_F(ClientSessionTest, APeersDisconnectFailsPendingRequests) {
    connect([](FakeServer& f) -> asio::awaitable<void> {
        co_await f.next_request();
        Bytes bye;
        encode_disconnect(bye, DisconnectReason::kTooManyPeers);
        co_await f.send(kDisconnectId, bye);
    });
    RequestResult r = request(ask(1, 1), 10s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, Kind::kClosed);
    ASSERT_TRUE(wait_closed());
    EXPECT_EQ(session_->error()->kind(), PeerErrorKind::kRemoteDisconnect);
    EXPECT_EQ(session_->error()->reason(), DisconnectReason::kTooManyPeers);
}

// A server that sends nothing for one idle period is pinged; one silent for two is dropped with
// "ping timeout" (kSilent), and the request it left unanswered fails with kClosed.
TEST_F(ClientSessionTest, ASilentServerIsPingedThenDropped) {
    ClientOptions options;
    options.limits.idle = 200ms;
    std::optional<uint64_t> first;
    std::optional<DisconnectReason> told;
    connect(
        [&](FakeServer& f) -> asio::awaitable<void> {
            co_await f.next_request();  // ignored, like everything else
            first = (co_await f.next(2s)).id;
            told = co_await f.goodbye(2s);
        },
        options);
    const auto start = Clock::now();
    RequestResult r = request(ask(1, 1), 10s);
    const auto took = Clock::now() - start;
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, Kind::kClosed) << r.error().message;
    EXPECT_GE(took, 200ms) << "dropped without the Ping period";
    EXPECT_LT(took, 2 * 200ms + kSlack);
    ASSERT_TRUE(wait_closed());
    EXPECT_EQ(session_->error()->kind(), PeerErrorKind::kSilent);
    ASSERT_TRUE(testing::run_until(io_, [&] { return fake_.finished(); }));
    EXPECT_EQ(first, kPingId);
    EXPECT_EQ(told, DisconnectReason::kPingTimeout);
}

// The server's Ping is answered with Pong while the client is otherwise idle, and the session then
// serves requests as usual; requests the server makes get the empty answer a client without a
// chain gives.
TEST_F(ClientSessionTest, PingsAndRequestsFromTheServerAreAnswered) {
    std::vector<uint64_t> answers;
    Bytes empty_reply;
    connect([&](FakeServer& f) -> asio::awaitable<void> {
        for (int i = 0; i < 2; ++i) {
            Bytes ping;
            encode_ping(ping);
            co_await f.send(kPingId, ping);
            answers.push_back((co_await f.next(2s)).id);
        }
        eth::GetBlockHeadersRequest theirs = ask(5, 10);
        theirs.request_id = 4242;
        Bytes payload;
        theirs.encode(payload);
        co_await f.send(f.eth_id(MessageId::kGetBlockHeaders), payload);
        Received reply = co_await f.next(2s);
        answers.push_back(reply.id - f.eth_id(MessageId::kStatus));
        empty_reply = reply.payload;
        co_await f.answer(co_await f.next_request());
    });
    // Our own request only once the server's exchanges are done, so the fake reads them in order.
    ASSERT_TRUE(testing::run_until(io_, [&] { return answers.size() == 3; }));
    RequestResult ok = request(ask(7000, 4), 5s);
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_TRUE(testing::are_blocks(ok->headers, 7000, 4));
    ASSERT_TRUE(testing::run_until(io_, [&] { return fake_.finished(); }));
    EXPECT_EQ(answers[0], kPongId);
    EXPECT_EQ(answers[1], kPongId);
    EXPECT_EQ(answers[2], static_cast<uint64_t>(MessageId::kBlockHeaders));
    auto decoded = eth::BlockHeadersMessage::decode(empty_reply);
    ASSERT_TRUE(decoded);
    EXPECT_EQ(decoded->request_id, 4242u);
    EXPECT_TRUE(decoded->headers.empty());
    EXPECT_EQ(session_->stats().pings, 2u);
    EXPECT_EQ(session_->stats().answered, 1u);
}

// The read loop gives the thread's other sessions and timers a turn after every message
// (read_loop's post): Connection reads a message straight from the socket when its bytes are there,
// so without the turn a peer that keeps the socket full would hold the thread. A second fake server,
// on a thread of its own, floods a session with stale (empty) BlockHeaders replies, which are counted
// and dropped, until 12,000 wait in the socket; then, on the one io_context of the test, a 1 ms
// timer and another session's request must make progress while the backlog is read. Counted in
// messages, not time, so a loaded machine cannot fail it: between two ticks of the timer the flooded
// session reads at most a quarter of those waiting (without the turn, the first tick comes after all
// of them), and the other session's reply arrives before half are read.
TEST_F(ClientSessionTest, AFloodingPeerDoesNotHoldTheThread) {
    // The other session's server waits as long as filling the flooded socket may take.
    connect([](FakeServer& f) -> asio::awaitable<void> { co_await f.answer(co_await f.next_request(30s)); });

    asio::io_context flood_io{1};
    auto flood_work = asio::make_work_guard(flood_io);
    FakeServer flooder(flood_io);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> written{0};
    std::atomic<bool> flood_done{false};
    constexpr uint64_t kMaxFlood = 12'000;
    flooder.start([&](FakeServer& f) -> asio::awaitable<void> {
        Bytes stale;
        eth::encode_block_headers(stale, 7, {});  // the flooded session sends no request: id 7 is not pending
        while (!stop.load() && written.load() < kMaxFlood) {
            co_await f.send(f.eth_id(MessageId::kBlockHeaders), stale);
            written.fetch_add(1);
        }
        flood_done.store(true);
    });
    std::thread flood_thread([&flood_io] { flood_io.run(); });
    // However the test ends, the flood's thread ends first (before what it uses is destroyed).
    struct Joiner {
        asio::io_context& io;
        std::thread& thread;
        ~Joiner() {
            io.stop();
            thread.join();
        }
    } joiner{flood_io, flood_thread};
    ClientOptions options;
    options.drop_on_stale = false;
    std::shared_ptr<ClientSession> flooded =
        testing::run_task(io_, ClientSession::connect(flooder.enode(), local_, options));

    // The test's io_context is idle now: the flood fills the socket until 12,000 messages are written
    // or the writer blocks.
    uint64_t waiting = 0;
    for (int quiet = 0; quiet < 50 && waiting < kMaxFlood;) {
        std::this_thread::sleep_for(10ms);
        const uint64_t now = written.load();
        quiet = now == waiting ? quiet + 1 : 0;
        waiting = now;
    }
    ASSERT_GE(waiting, 8'000u) << "the flood did not fill the socket";

    std::vector<uint64_t> read_at_tick;
    bool ticking = true;
    bool ticker_done = false;
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
            asio::steady_timer tick(co_await asio::this_coro::executor);
            while (ticking) {
                tick.expires_after(1ms);
                co_await tick.async_wait(kTuple);
                read_at_tick.push_back(flooded->stats().stale);
            }
            ticker_done = true;
        },
        asio::detached);
    std::optional<RequestResult> other;
    std::optional<uint64_t> read_at_reply;
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
            other = co_await session_->request(ask(7000, 3), 10s);
            read_at_reply = flooded->stats().stale;
        },
        asio::detached);
    const bool all_read = testing::run_until(
        io_, [&] { return flooded->stats().stale >= waiting && read_at_reply.has_value(); }, 30s);
    // Both coroutines use this test's locals: they end before any assertion can return.
    ticking = false;
    ASSERT_TRUE(testing::run_until(
        io_, [&] { return ticker_done && read_at_reply.has_value(); }, 15s));
    ASSERT_TRUE(all_read) << flooded->stats().stale << " of " << waiting << " read";

    ASSERT_TRUE(other && *other) << (other ? other->error().message : "no result");
    EXPECT_TRUE(testing::are_blocks((*other)->headers, 7000, 3));
    EXPECT_LT(*read_at_reply, waiting / 2) << "the other session's reply waited for the flood";
    ASSERT_GE(read_at_tick.size(), 2u);
    uint64_t most = read_at_tick.front();  // read between the flood's start and the first tick
    for (size_t i = 1; i < read_at_tick.size(); ++i) most = std::max(most, read_at_tick[i] - read_at_tick[i - 1]);
    EXPECT_LE(most, waiting / 4) << "messages read between two ticks of the timer, of " << waiting << " waiting";
    std::printf(
        "flood: %llu waiting, at most %llu read between two 1 ms ticks (%zu ticks), %llu read before the "
        "other session's reply\n",
        static_cast<unsigned long long>(waiting), static_cast<unsigned long long>(most), read_at_tick.size(),
        static_cast<unsigned long long>(*read_at_reply));
    EXPECT_FALSE(flooded->closed());

    // The flood stops; the session reads what is left, says goodbye, and the fake closes.
    stop.store(true);
    ASSERT_TRUE(testing::run_until(
        io_, [&] { return flood_done.load(); }, 20s));
    asio::post(flood_io, [&flooder] { flooder.close(); });
    flood_work.reset();
    testing::run_task(io_, flooded->close(), 5s);
    EXPECT_EQ(flooded->stats().replies, 0u);
    EXPECT_GE(flooded->stats().stale, waiting);
}

}  // namespace
}  // namespace headerd::p2p
