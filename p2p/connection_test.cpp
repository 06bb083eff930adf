// Connection over real loopback sockets, both ends Connection after a real RLPx handshake: writes
// from many coroutines keep their call order (the frame MAC would break otherwise), idle reads are
// values, a frame cut short is kFrameTimeout, a peer that does not read is kWriteTimeout, and a
// failed write leaves the connection unwritable.

#include "p2p/connection.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "core/awaitable.hpp"
#include "p2p/peer_error.hpp"
#include "p2p/rlpx/frame.hpp"
#include "p2p/rlpx/secp256k1.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "tests/test_util.hpp"

namespace headerd::p2p {
namespace connection_test {

using namespace std::chrono_literals;
using namespace boost::asio::experimental::awaitable_operators;

// Slack on top of a deadline for a loaded machine.
constexpr auto kSlack = 1500ms;

// A loopback socket pair: {dialing end, accepting end}. `rcvbuf` shrinks the accepting end's
// receive buffer (set on the listener, so the window is small from the start).
std::pair<tcp::socket, tcp::socket> socket_pair(asio::io_context& io, std::optional<int> rcvbuf = std::nullopt) {
    tcp::acceptor listener(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    if (rcvbuf) listener.set_option(asio::socket_base::receive_buffer_size(*rcvbuf));
    tcp::socket dialer(io);
    tcp::socket accepted(io);
    dialer.connect(listener.local_endpoint());
    listener.accept(accepted);
    return {std::move(dialer), std::move(accepted)};
}

// Both ends of one session after the RLPx handshake: `a` dialed, `b` accepted.
struct Pair {
    asio::io_context io{1};
    rlpx::PrivateKey key_a = *rlpx::PrivateKey::generate();
    rlpx::PrivateKey key_b = *rlpx::PrivateKey::generate();
    std::unique_ptr<Connection> a;
    std::unique_ptr<Connection> b;

    // A direct loopback pair; with `buffer`, a's send and b's receive buffer are that small, so a
    // large frame cannot be taken at once and its write suspends.
    void connect(std::optional<int> buffer = std::nullopt, SessionLimits la = {}, SessionLimits lb = {}) {
        auto [sa, sb] = socket_pair(io, buffer);
        if (buffer) sa.set_option(asio::socket_base::send_buffer_size(*buffer));
        make(std::move(sa), std::move(sb), la, lb);
    }

    void make(tcp::socket sa, tcp::socket sb, SessionLimits la, SessionLimits lb) {
        a = std::make_unique<Connection>(std::move(sa), la);
        b = std::make_unique<Connection>(std::move(sb), lb);
        const auto deadline = Clock::now() + 10s;
        testing::run_task(io, [](Pair& p, Clock::time_point d) -> asio::awaitable<void> {
            co_await (p.a->dial_handshake(p.key_a, p.key_b.public_key(), d) && p.b->accept_handshake(p.key_b, d));
        }(*this, deadline));
        ASSERT_TRUE(a->remote_key());
        ASSERT_TRUE(b->remote_key());
        EXPECT_EQ(*a->remote_key(), key_b.public_key());
        EXPECT_EQ(*b->remote_key(), key_a.public_key());
    }
};

// A payload that says which write it was: its sequence number, then bytes drawn from it.
Bytes payload_of(uint64_t seq, size_t size) {
    Bytes out(std::max<size_t>(size, 8));
    for (size_t i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(seq >> (8 * i));
    std::mt19937_64 rng(seq);
    for (size_t i = 8; i < out.size(); ++i) out[i] = static_cast<uint8_t>(rng());
    return out;
}

// Sizes cycle through tiny, small and large (larger than the socket buffers, so a write suspends
// and the writers behind it queue).
size_t size_of(uint64_t seq) {
    static constexpr size_t kSizes[] = {8, 300'000, 40, 1200, 700'000, 9, 64'000};
    return kSizes[seq % std::size(kSizes)];
}

uint64_t id_of(uint64_t seq) { return 0x10 + seq % 7; }

PeerErrorKind kind_of_failure(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const PeerError& pe) {
        return pe.kind();
    }
}

// Three coroutines write at once on one connection; every frame arrives intact, in the order the
// write_message calls were made. A frame written out of its encryption order, or two frames
// interleaved on the wire, would fail the reader's MAC check (kBadFrame).
TEST(Connection, ConcurrentWritersKeepCallOrder) {
    testing::HangGuard guard("ConcurrentWritersKeepCallOrder", 60s);
    Pair p;
    p.connect(16 * 1024);
    p.a->enable_snappy();
    p.b->enable_snappy();

    constexpr uint64_t kWriters = 3;
    constexpr uint64_t kPerWriter = 40;
    uint64_t next_seq = 0;
    size_t writing = 0;
    size_t most_writing = 0;
    std::vector<uint64_t> written_by(kWriters, 0);
    auto writer = [&](uint64_t w) -> asio::awaitable<void> {
        for (uint64_t i = 0; i < kPerWriter; ++i) {
            // The sequence number is taken right before the call: call order is sequence order.
            const uint64_t seq = next_seq++;
            const Bytes payload = payload_of(seq, size_of(seq));
            ++writing;
            most_writing = std::max(most_writing, writing);
            co_await p.a->write_message(id_of(seq), payload);
            --writing;
            ++written_by[w];
        }
    };
    std::vector<uint64_t> bad;
    uint64_t received = 0;
    auto reader = [&]() -> asio::awaitable<void> {
        // Start late, so the writers fill the socket buffers and queue behind each other.
        asio::steady_timer wait(p.io, 200ms);
        co_await wait.async_wait(kTuple);
        for (uint64_t seq = 0; seq < kWriters * kPerWriter; ++seq) {
            auto m = co_await p.b->read_message(Clock::now() + 10s);
            if (!m) throw std::runtime_error("reader: nothing within 10 s");
            if (m->id != id_of(seq) || !std::ranges::equal(m->payload, payload_of(seq, size_of(seq))))
                bad.push_back(seq);
            ++received;
        }
    };
    testing::run_task(
        p.io, [&]() -> asio::awaitable<void> { co_await ((writer(0) && writer(1) && writer(2)) && reader()); }(), 40s);
    EXPECT_EQ(received, kWriters * kPerWriter);
    EXPECT_TRUE(bad.empty()) << bad.size() << " messages out of order or damaged, first: write " << bad.front();
    EXPECT_EQ(written_by, std::vector<uint64_t>(kWriters, kPerWriter));
    EXPECT_GE(most_writing, 2u) << "no write ever waited behind another: the test did not exercise the queue";
    EXPECT_LT(p.a->buffered_bytes(), size_t{4} << 20) << "queued frames were not given back";
}

// Both ends write large messages at the same time while both read: neither direction waits for
// the other (a connection that read only between its own writes would deadlock here).
TEST(Connection, BothEndsWriteAndReadAtOnce) {
    testing::HangGuard guard("BothEndsWriteAndReadAtOnce", 60s);
    Pair p;
    p.connect(32 * 1024);
    constexpr uint64_t kMessages = 12;
    auto send = [](Connection& c, uint64_t base) -> asio::awaitable<void> {
        for (uint64_t i = 0; i < kMessages; ++i) co_await c.write_message(0x10, payload_of(base + i, 1'000'000));
    };
    auto receive = [](Connection& c, uint64_t base, uint64_t& good) -> asio::awaitable<void> {
        for (uint64_t i = 0; i < kMessages; ++i) {
            auto m = co_await c.read_message(Clock::now() + 10s);
            if (m && m->id == 0x10 && std::ranges::equal(m->payload, payload_of(base + i, 1'000'000))) ++good;
        }
    };
    uint64_t good_a = 0;
    uint64_t good_b = 0;
    testing::run_task(
        p.io,
        [&]() -> asio::awaitable<void> {
            co_await (send(*p.a, 1000) && send(*p.b, 2000) && receive(*p.a, 2000, good_a) &&
                      receive(*p.b, 1000, good_b));
        }(),
        40s);
    EXPECT_EQ(good_a, kMessages);
    EXPECT_EQ(good_b, kMessages);
}

// A read whose deadline passes with nothing sent is a value (nullopt), not an error, and leaves the
// stream in step: the next message reads normally. A message already there is read even past the
// deadline (reads are tried before any timer).
TEST(Connection, IdleReadReturnsNulloptAndTheStreamStaysUsable) {
    testing::HangGuard guard("IdleReadReturnsNulloptAndTheStreamStaysUsable", 60s);
    Pair p;
    p.connect();
    p.a->enable_snappy();
    p.b->enable_snappy();
    for (int i = 0; i < 3; ++i) {
        const auto start = Clock::now();
        auto m = testing::run_task(p.io, p.b->read_message(start + 150ms));
        const auto took = Clock::now() - start;
        EXPECT_FALSE(m) << "round " << i;
        EXPECT_GE(took, 149ms) << "round " << i;
        EXPECT_LT(took, 150ms + kSlack) << "round " << i;
        EXPECT_TRUE(p.b->is_open());
    }
    const Bytes hello = payload_of(7, 5000);
    testing::run_task(p.io, p.a->write_message(0x11, hello));
    auto m = testing::run_task(p.io, p.b->read_message(Clock::now() + 5s));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->id, 0x11u);
    EXPECT_TRUE(std::ranges::equal(m->payload, hello));

    // Both directions still work, and a waiting message beats a deadline already past.
    testing::run_task(p.io, p.b->write_message(0x12, payload_of(8, 100)));
    testing::run_task(p.io, p.b->write_message(0x13, payload_of(9, 100)));
    auto first = testing::run_task(p.io, p.a->read_message(Clock::now() + 5s));
    ASSERT_TRUE(first);
    EXPECT_EQ(first->id, 0x12u);
    auto second = testing::run_task(p.io, p.a->read_message(Clock::now() - 1s));
    ASSERT_TRUE(second) << "a message already received was not read because the deadline had passed";
    EXPECT_EQ(second->id, 0x13u);
    EXPECT_TRUE(std::ranges::equal(second->payload, payload_of(9, 100)));
    auto none = testing::run_task(p.io, p.a->read_message(Clock::now() - 1s));
    EXPECT_FALSE(none);
}

// take_payload_buffer hands over the buffer a payload lies in, without snappy (the decrypted frame)
// and with it (the inflated message): the payload's bytes stay where they were, and stay intact
// while later messages, small and large, are read into buffers of their own. A buffer given back
// with give_payload_buffer is read into again.
TEST(Connection, ATakenPayloadOutlivesTheNextReads) {
    testing::HangGuard guard("ATakenPayloadOutlivesTheNextReads", 60s);
    for (const bool snappy : {false, true}) {
        SCOPED_TRACE(snappy ? "snappy" : "plain");
        Pair p;
        p.connect();
        if (snappy) {
            p.a->enable_snappy();
            p.b->enable_snappy();
        }
        std::vector<Bytes> kept;
        std::vector<ByteView> views;
        for (uint64_t seq = 1; seq <= 6; ++seq) {
            testing::run_task(p.io, p.a->write_message(0x14, payload_of(seq, size_of(seq))));
            auto m = testing::run_task(p.io, p.b->read_message(Clock::now() + 5s));
            ASSERT_TRUE(m);
            const uint8_t* where = m->payload.data();
            kept.push_back(p.b->take_payload_buffer(m->payload));
            views.push_back(m->payload);
            EXPECT_EQ(m->payload.data(), where);
            EXPECT_TRUE(kept.back().data() <= where &&
                        where + m->payload.size() <= kept.back().data() + kept.back().size())
                << "message " << seq << ": the payload is not in the buffer handed over";
        }
        for (uint64_t seq = 1; seq <= 6; ++seq) {
            EXPECT_TRUE(std::ranges::equal(views[seq - 1], payload_of(seq, size_of(seq)))) << "message " << seq;
        }
        // A buffer given back (the 700 KB one) is where the message after the next one is read:
        // the next take leaves it in place of the buffer it hands out.
        const uint8_t* given = kept[3].data();
        const size_t capacity = kept[3].capacity();
        p.b->give_payload_buffer(std::move(kept[3]));
        for (uint64_t seq = 7; seq <= 8; ++seq) {
            testing::run_task(p.io, p.a->write_message(0x14, payload_of(seq, 1000)));
            auto m = testing::run_task(p.io, p.b->read_message(Clock::now() + 5s));
            ASSERT_TRUE(m);
            EXPECT_TRUE(std::ranges::equal(m->payload, payload_of(seq, 1000))) << "message " << seq;
            const bool in_given = m->payload.data() >= given && m->payload.data() + 1000 <= given + capacity;
            EXPECT_EQ(in_given, seq == 8) << "message " << seq;
            kept.push_back(p.b->take_payload_buffer(m->payload));
        }
    }
}

// Forwards bytes from `from` to `to`, at most `budget` of them once a budget is set (the rest is
// held back for good); the relay between two socket pairs lets a test cut a frame short.
asio::awaitable<void> forward(tcp::socket& from, tcp::socket& to, const std::optional<size_t>* budget,
                              size_t* forwarded) {
    std::vector<uint8_t> buf(64 * 1024);
    for (;;) {
        auto [ec, n] = co_await from.async_read_some(asio::buffer(buf), kTuple);
        if (ec) co_return;
        size_t pass = n;
        if (budget->has_value()) pass = std::min(n, **budget > *forwarded ? **budget - *forwarded : 0);
        if (pass > 0) {
            auto [wec, w] = co_await asio::async_write(to, asio::buffer(buf.data(), pass), kTuple);
            if (wec) co_return;
            *forwarded += w;
        }
        if (budget->has_value() && *forwarded >= **budget) co_return;
    }
}

// A frame that starts arriving but is not complete within limits().idle ends the read with
// kFrameTimeout, however far the read's own deadline is: cut inside the frame body, and inside the
// 32-byte frame header. A frame larger than limits().max_frame is refused on its header alone
// (kBadFrame), without waiting for a body that may never come.
TEST(Connection, FramesCutShortOrTooLargeEndTheRead) {
    testing::HangGuard guard("FramesCutShortOrTooLargeEndTheRead", 60s);
    struct Case {
        size_t keep;  // bytes of the frame the relay delivers
        size_t max_frame;
        Clock::duration idle;
        PeerErrorKind kind;
    };
    const Case cases[] = {
        {32 + 500, rlpx::kMaxFrameSizeField, 300ms, PeerErrorKind::kFrameTimeout},
        {10, rlpx::kMaxFrameSizeField, 300ms, PeerErrorKind::kFrameTimeout},
        {32, 4096, 3s, PeerErrorKind::kBadFrame},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE("bytes of the frame delivered: " + std::to_string(c.keep) +
                     ", max frame: " + std::to_string(c.max_frame));
        Pair p;
        auto [a, relay_a] = socket_pair(p.io);
        auto [relay_b, b] = socket_pair(p.io);
        std::optional<size_t> budget;
        size_t forwarded = 0;
        size_t backwards = 0;
        const std::optional<size_t> unlimited;
        asio::co_spawn(p.io, forward(relay_a, relay_b, &budget, &forwarded), asio::detached);
        asio::co_spawn(p.io, forward(relay_b, relay_a, &unlimited, &backwards), asio::detached);
        SessionLimits lb;
        lb.idle = c.idle;
        lb.max_frame = c.max_frame;
        p.make(std::move(a), std::move(b), {}, lb);
        budget = forwarded + c.keep;
        testing::run_task(p.io, p.a->write_message(0x10, payload_of(1, 20'000)));
        const auto start = Clock::now();
        std::optional<PeerErrorKind> kind;
        try {
            testing::run_task(p.io, p.b->read_message(Clock::now() + 20s));
        } catch (const PeerError& e) {
            kind = e.kind();
        }
        const auto took = Clock::now() - start;
        ASSERT_TRUE(kind) << "the frame was read";
        EXPECT_EQ(*kind, c.kind) << to_string(*kind);
        if (c.kind == PeerErrorKind::kFrameTimeout) {
            EXPECT_GE(took, c.idle - 50ms);
            EXPECT_LT(took, c.idle + kSlack);
        } else {
            EXPECT_LT(took, kSlack) << "an oversized frame waited for its body";
        }
        EXPECT_EQ(forwarded, budget) << "the relay did not deliver what the test meant to";
        relay_a.close();
        relay_b.close();
    }
}

// A peer that never reads: the write of a frame larger than every socket buffer on the way ends
// with kWriteTimeout once limits().write has passed; a write queued behind it fails too, every
// later write throws at once, and disconnect() then closes without waiting.
TEST(Connection, WriteToAPeerThatNeverReadsTimesOut) {
    testing::HangGuard guard("WriteToAPeerThatNeverReadsTimesOut", 60s);
    constexpr auto kWrite = 400ms;
    Pair p;
    SessionLimits la;
    la.write = kWrite;
    p.connect(8 * 1024, la);

    const Bytes big = payload_of(2, 8'000'000);  // random: snappy is off anyway
    std::exception_ptr first_error;
    std::exception_ptr queued_error;
    bool queued_returned = false;
    Clock::duration first_took{};
    const auto start = Clock::now();
    auto first = [&]() -> asio::awaitable<void> {
        try {
            co_await p.a->write_message(0x10, big);
        } catch (...) {
            first_error = std::current_exception();
        }
        first_took = Clock::now() - start;
    };
    auto queued = [&]() -> asio::awaitable<void> {
        try {
            co_await p.a->write_message(0x11, payload_of(3, 10));
            queued_returned = true;
        } catch (...) {
            queued_error = std::current_exception();
        }
    };
    testing::run_task(
        p.io, [&]() -> asio::awaitable<void> { co_await (first() && queued()); }(), 20s);
    ASSERT_TRUE(first_error) << "an 8 MB frame was taken by a peer that never reads";
    EXPECT_EQ(kind_of_failure(first_error), PeerErrorKind::kWriteTimeout);
    EXPECT_GE(first_took, kWrite - 50ms);
    EXPECT_LT(first_took, kWrite + kSlack);
    EXPECT_FALSE(queued_returned) << "a frame queued behind a failed write was reported written";
    EXPECT_TRUE(queued_error) << "a frame queued behind a failed write did not fail";

    for (int i = 0; i < 3; ++i) {
        const auto t = Clock::now();
        EXPECT_THROW(testing::run_task(p.io, p.a->write_message(0x12, payload_of(4, 10))), PeerError) << i;
        EXPECT_LT(Clock::now() - t, kWrite) << "a write after a failed one waited instead of failing at once";
    }
    const auto t = Clock::now();
    testing::run_task(p.io, p.a->disconnect(DisconnectReason::kRequested));
    EXPECT_LT(Clock::now() - t, kWrite) << "disconnect() tried to write on a broken stream";
    EXPECT_FALSE(p.a->is_open());
}

// cancel() ends a pending read, and every later one, with kNetwork but leaves the socket open, so a
// Disconnect can still be sent: what Server::stop() relies on to say "client quitting".
TEST(Connection, CancelEndsAReadButStillAllowsAGoodbye) {
    testing::HangGuard guard("CancelEndsAReadButStillAllowsAGoodbye", 60s);
    Pair p;
    p.connect();
    p.a->enable_snappy();
    p.b->enable_snappy();
    std::optional<PeerErrorKind> kind;
    auto reader = [&]() -> asio::awaitable<void> {
        try {
            co_await p.b->read_message(Clock::now() + 20s);
        } catch (const PeerError& e) {
            kind = e.kind();
        }
    };
    auto canceller = [&]() -> asio::awaitable<void> {
        asio::steady_timer wait(p.io, 100ms);
        co_await wait.async_wait(kTuple);
        p.b->cancel();
    };
    const auto start = Clock::now();
    testing::run_task(
        p.io, [&]() -> asio::awaitable<void> { co_await (reader() && canceller()); }(), 10s);
    EXPECT_LT(Clock::now() - start, 100ms + kSlack);
    ASSERT_TRUE(kind);
    EXPECT_EQ(*kind, PeerErrorKind::kNetwork);
    EXPECT_TRUE(p.b->is_open());
    // Every later read fails at once too, even with a message waiting: a session told to stop
    // between two reads cannot miss it. Writing still works.
    testing::run_task(p.io, p.a->write_message(0x10, payload_of(5, 100)));
    const auto again = Clock::now();
    try {
        testing::run_task(p.io, p.b->read_message(Clock::now() + 5s));
        ADD_FAILURE() << "a read after cancel() returned";
    } catch (const PeerError& e) {
        EXPECT_EQ(e.kind(), PeerErrorKind::kNetwork);
    }
    EXPECT_LT(Clock::now() - again, kSlack);
    testing::run_task(p.io, p.b->write_message(0x11, payload_of(6, 100)));
    auto written = testing::run_task(p.io, p.a->read_message(Clock::now() + 5s));
    ASSERT_TRUE(written);
    EXPECT_EQ(written->id, 0x11u);
    testing::run_task(p.io, p.b->disconnect(DisconnectReason::kQuitting));
    EXPECT_FALSE(p.b->is_open());
    auto m = testing::run_task(p.io, p.a->read_message(Clock::now() + 5s));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->id, kDisconnectId);
    auto reason = decode_disconnect(m->payload);
    ASSERT_TRUE(reason);
    EXPECT_EQ(*reason, DisconnectReason::kQuitting);
    // Then the stream ends.
    EXPECT_THROW(testing::run_task(p.io, p.a->read_message(Clock::now() + 5s)), PeerError);
}

// cancel() leaves a write in progress alone: a frame half on the wire when the session is told to
// stop still finishes (within its own deadline), so the stream stays at a frame boundary and the
// Disconnect that follows is readable.
TEST(Connection, CancelLetsAWriteInProgressFinish) {
    testing::HangGuard guard("CancelLetsAWriteInProgressFinish", 60s);
    Pair p;
    p.connect(8 * 1024);
    const Bytes big = payload_of(7, 2'000'000);
    bool written = false;
    bool written_at_cancel = true;
    std::optional<Bytes> received;
    auto writer = [&]() -> asio::awaitable<void> {
        co_await p.a->write_message(0x10, big);
        written = true;
    };
    auto stopper_then_reader = [&]() -> asio::awaitable<void> {
        asio::steady_timer wait(p.io, 100ms);
        co_await wait.async_wait(kTuple);
        written_at_cancel = written;
        p.a->cancel();
        auto m = co_await p.b->read_message(Clock::now() + 10s);
        if (m) received.emplace(m->payload.begin(), m->payload.end());
    };
    testing::run_task(
        p.io, [&]() -> asio::awaitable<void> { co_await (writer() && stopper_then_reader()); }(), 20s);
    EXPECT_FALSE(written_at_cancel) << "the write was not in progress: the test did not exercise anything";
    EXPECT_TRUE(written);
    ASSERT_TRUE(received);
    EXPECT_EQ(*received, big);
    testing::run_task(p.io, p.a->disconnect(DisconnectReason::kQuitting));
    auto m = testing::run_task(p.io, p.b->read_message(Clock::now() + 5s));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->id, kDisconnectId);
    EXPECT_EQ(decode_disconnect(m->payload).value(), DisconnectReason::kQuitting);
}

}  // namespace connection_test
}  // namespace headerd::p2p
