// Integration: the devp2p server under bad input. A real p2p::Server serves the mainnet era1 epoch
// 0 (frozen but for the last 1000 headers) on loopback; raw clients send garbage, broken frames,
// malformed messages and floods. Each case must end the way docs/wire.md and docs/rlpx.md say
// (Disconnect with the documented reason where the protocol allows one, a plain close before the
// RLPx handshake), never in a crash or a hang; and after each case a fresh well-behaved peer must
// still get a correct 192-header reply (checked in TearDown).
//
// With HEADERD_BAD_INPUT_TARGET=ENODE the cases run against that server (a `headerd serve` on
// loopback, tests/hostile_test.sh) instead of one of their own: the cases that need a server with
// other options or its log and metrics are skipped, the rest and the TearDown check run unchanged.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "metrics/metrics.hpp"
#include "p2p/client_session.hpp"
#include "p2p/connection.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/eth/status.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/peer.hpp"
#include "p2p/rlpx/frame.hpp"
#include "p2p/rlpx/handshake.hpp"
#include "p2p/server.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "p2p/wire/message_codec.hpp"
#include "p2p/wire/snappy_codec.hpp"
#include "tests/reference_chain.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define HEADERD_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEADERD_TEST_ASAN 1
#endif
#endif

#ifdef HEADERD_TEST_ASAN
// From sanitizer/allocator_interface.h, which GCC does not install: the bytes the program has
// allocated and not yet freed (a block in ASan's quarantine counts as freed).
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace headerd {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using p2p::Clock;
using p2p::decode_disconnect;
using p2p::decode_frame_data;
using p2p::DisconnectReason;
using p2p::encode_disconnect;
using p2p::encode_frame_data;
using p2p::snappy_compress;
using p2p::tcp;

constexpr uint64_t kCount = 8192;
constexpr uint64_t kKeep = 1000;  // blocks [0, 7191] frozen, [7192, 8191] in LevelDB
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
// Absolute ids with eth as the only capability (offset 0x10).
constexpr uint64_t kHelloId = 0x00;
constexpr uint64_t kDisconnectId = 0x01;
constexpr uint64_t kPingId = 0x02;
constexpr uint64_t kPongId = 0x03;
constexpr uint64_t kEthOffset = 0x10;
constexpr uint64_t kStatusId = kEthOffset + 0x00;
constexpr uint64_t kGetBlockHeadersId = kEthOffset + 0x03;
constexpr uint64_t kBlockHeadersId = kEthOffset + 0x04;
// Slack on top of the server's deadlines for a loaded CI machine.
constexpr auto kSlack = 1500ms;
// The slack of an upper bound on a deadline, HEADERD_TEST_TIME_SCALE times longer in a sanitizer
// build (scripts/sanitize.sh sets 3): a TSan build on a loaded machine runs the server's timers late.
// Lower bounds ("not before the deadline") never scale.
std::chrono::milliseconds slack() {
    const char* scale = std::getenv("HEADERD_TEST_TIME_SCALE");
    const long n = scale ? std::strtol(scale, nullptr, 10) : 1;
    return kSlack * std::max(1L, n);
}
// The server's session limits in this suite: short, so deadline cases take seconds, not minutes.
constexpr auto kHandshakeTimeout = 1500ms;
constexpr auto kIdlePeriod = 2s;
// Nothing in this suite needs more than ~10 s; a test still running after this is hung.
constexpr auto kWatchdogLimit = 45s;

// What a client offering only eth/68 negotiates with.
constexpr std::array<p2p::ProtocolOffer, 1> kEth68Only{{{"eth", 68, 17}}};

const std::string& kData = testing::kDataDir;

Bytes hex(std::string_view s) {
    auto b = from_hex(s);
    if (!b) throw std::invalid_argument("bad hex in test table");
    return *b;
}

const testing::ReferenceChain& ref() { return testing::reference_chain(); }

// The server named by HEADERD_BAD_INPUT_TARGET, if any (see the top of the file).
const std::optional<p2p::Enode>& external_target() {
    static const std::optional<p2p::Enode> target = []() -> std::optional<p2p::Enode> {
        const char* text = std::getenv("HEADERD_BAD_INPUT_TARGET");
        if (text == nullptr || *text == '\0') return std::nullopt;
        auto enode = p2p::parse_enode(text);
        if (!enode || enode->host != "127.0.0.1") {
            std::fprintf(stderr, "HEADERD_BAD_INPUT_TARGET: not an enode on 127.0.0.1: %s\n", text);
            std::abort();
        }
        return *enode;
    }();
    return target;
}

// Whether `got` are exactly the reference headers of `numbers`, with the first mismatch named.
::testing::AssertionResult same_headers(const std::vector<ByteView>& got, const std::vector<uint64_t>& numbers) {
    if (got.size() != numbers.size()) {
        return ::testing::AssertionFailure() << got.size() << " headers, expected " << numbers.size();
    }
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::ranges::equal(got[i], ref().headers[numbers[i]])) {
            return ::testing::AssertionFailure() << "header " << i << " is not block " << numbers[i];
        }
    }
    return ::testing::AssertionSuccess();
}

std::vector<uint64_t> range(uint64_t from, uint64_t count, int64_t step = 1) {
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < count; ++i) out.push_back(from + static_cast<uint64_t>(step) * i);
    return out;
}

// How far the process's peak memory rose while this object lived, in KiB. The normal build reads the
// kernel's peak RSS (ru_maxrss). Under ASan the RSS does not show what the server keeps: a freed
// block waits in ASan's quarantine (256 MiB by default) instead of being reused, so the peak RSS of
// the pipelining case rose by about 200 MiB with nothing kept. There the peak of the heap's live
// bytes (allocated and not yet freed, from ASan's own statistics), sampled every millisecond by a
// thread of its own, stands in for it.
class PeakMemoryGrowth {
  public:
#ifdef HEADERD_TEST_ASAN
    PeakMemoryGrowth() : start_(live_bytes()), peak_(start_), sampler_([this] { sample(); }) {}
    PeakMemoryGrowth(const PeakMemoryGrowth&) = delete;
    PeakMemoryGrowth& operator=(const PeakMemoryGrowth&) = delete;
    ~PeakMemoryGrowth() {
        stop_ = true;
        sampler_.join();
    }
    size_t kib() const { return (std::max(peak_.load(), live_bytes()) - start_) >> 10; }

  private:
    static size_t live_bytes() { return __sanitizer_get_current_allocated_bytes(); }
    void sample() {
        while (!stop_) {
            // The only writer of peak_.
            if (const size_t now = live_bytes(); now > peak_.load()) peak_.store(now);
            std::this_thread::sleep_for(1ms);
        }
    }

    const size_t start_;
    std::atomic<size_t> peak_;
    std::atomic<bool> stop_{false};
    std::thread sampler_;
#else
    size_t kib() const { return max_rss_kib() - start_; }

  private:
    static size_t max_rss_kib() {
        rusage u{};
        ::getrusage(RUSAGE_SELF, &u);
        return static_cast<size_t>(u.ru_maxrss);
    }

    const size_t start_ = max_rss_kib();
#endif
};

// ---- log capture --------------------------------------------------------------------------------

// Keeps the server's recent log lines (printed when a test fails) and counts errors: a session that
// ends by an exception other than PeerError is logged at error level, which no bad input may cause.
class CaptureSink : public spdlog::sinks::base_sink<std::mutex> {
  public:
    size_t errors() {
        std::lock_guard lock(mutex_);
        return errors_;
    }
    std::vector<std::string> take() {
        std::lock_guard lock(mutex_);
        std::vector<std::string> out(lines_.begin(), lines_.end());
        lines_.clear();
        errors_ = 0;
        return out;
    }

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        spdlog::memory_buf_t buf;
        formatter_->format(msg, buf);
        lines_.emplace_back(buf.data(), buf.size());
        if (lines_.size() > 400) lines_.pop_front();  // the 300-connection case logs 600 lines
        if (msg.level >= spdlog::level::err) ++errors_;
    }
    void flush_() override {}

  private:
    std::deque<std::string> lines_;
    size_t errors_{0};
};

// ---- watchdog -----------------------------------------------------------------------------------

// Aborts the process when a test overruns: a hung test must fail loudly, not stall CI until its
// global timeout.
class Watchdog {
  public:
    explicit Watchdog(std::string name) : name_(std::move(name)), thread_([this] { run(); }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }

  private:
    void run() {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_for(lock, kWatchdogLimit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: %s still running after %lld s, aborting\n", name_.c_str(),
                         static_cast<long long>(std::chrono::seconds(kWatchdogLimit).count()));
            std::abort();
        }
    }

    std::string name_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_{false};
    std::thread thread_;
};

// ---- raw client ---------------------------------------------------------------------------------

// What a raw client read from the server.
struct Received {
    enum class Kind { kMessage, kClosed, kTimeout, kBadFrame } kind{Kind::kClosed};
    uint64_t id{0};
    Bytes payload;  // decompressed when the client has snappy on; a Disconnect's payload as it arrived
    std::string error;
};

std::string describe(const Received& r) {
    switch (r.kind) {
        case Received::Kind::kMessage:
            return fmt::format("message id {:#x} payload {}", r.id,
                               to_hex(ByteView{r.payload}.first(std::min<size_t>(r.payload.size(), 64))));
        case Received::Kind::kClosed:
            return "connection closed";
        case Received::Kind::kTimeout:
            return "nothing before the deadline";
        case Received::Kind::kBadFrame:
            return "bad frame from the server: " + r.error;
    }
    return "?";
}

// A blocking loopback client over a POSIX socket that can send anything: raw bytes before the
// handshake, then (after an RLPx handshake driven through rlpx::Handshake) frames built by its own
// FrameCodec, valid or deliberately broken. Every read waits under a deadline (poll), every write
// under SO_SNDTIMEO, so no client call can hang.
class RawPeer {
  public:
    RawPeer() = default;
    RawPeer(const RawPeer&) = delete;
    RawPeer& operator=(const RawPeer&) = delete;
    ~RawPeer() { close(); }

    ::testing::AssertionResult connect(uint16_t port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd_ < 0) return ::testing::AssertionFailure() << "socket: " << std::strerror(errno);
        timeval tv{10, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
            return ::testing::AssertionFailure() << "connect: " << std::strerror(errno);
        }
        connected_at_ = Clock::now();
        return ::testing::AssertionSuccess();
    }

    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    int fd() const { return fd_; }
    Clock::time_point connected_at() const { return connected_at_; }
    bool snappy() const { return snappy_; }
    const rlpx::PrivateKey& key() const { return *key_; }
    uint64_t eth_version() const { return eth_version_; }

    // False when the server has closed (or reset) the connection; the caller decides whether that
    // is expected.
    bool send_bytes(ByteView data) {
        while (!data.empty()) {
            const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            data = data.subspan(static_cast<size_t>(n));
        }
        return true;
    }

    enum class Io { kOk, kClosed, kTimeout };

    Io recv_exact(std::span<uint8_t> out, Clock::time_point deadline) {
        size_t got = 0;
        while (got < out.size()) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) return Io::kTimeout;
            pollfd p{fd_, POLLIN, 0};
            const int r = ::poll(&p, 1, static_cast<int>(left.count()));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return Io::kClosed;
            if (r == 0) continue;
            const ssize_t n = ::recv(fd_, out.data() + got, out.size() - got, 0);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) return Io::kClosed;  // EOF, or ECONNRESET when the server closed with our bytes unread
            got += static_cast<size_t>(n);
        }
        return Io::kOk;
    }

    // Waits for the server to close without sending anything (the pre-handshake contract). Returns
    // the time from connect to close, or nullopt (with the reason in `why`) if bytes arrived or the
    // deadline passed.
    std::optional<Clock::duration> wait_closed_silently(Clock::duration timeout, std::string& why) {
        std::array<uint8_t, 1> b{};
        switch (recv_exact(b, Clock::now() + timeout)) {
            case Io::kClosed:
                return Clock::now() - connected_at_;
            case Io::kTimeout:
                why = "still open after the deadline";
                return std::nullopt;
            case Io::kOk:
                why = fmt::format("the server sent byte {:#04x} before closing", b[0]);
                return std::nullopt;
        }
        return std::nullopt;
    }

    // RLPx handshake as initiator, with a fresh key unless one is given.
    ::testing::AssertionResult handshake(const rlpx::PublicKey& server,
                                         std::optional<rlpx::PrivateKey> key = std::nullopt) {
        if (!key) key = *rlpx::PrivateKey::generate();
        key_ = key;
        auto hs = rlpx::Handshake::initiator(*key_, server);
        auto auth = hs.write_auth();
        if (!auth) return ::testing::AssertionFailure() << "write_auth: " << auth.error().message();
        if (!send_bytes(*auth)) return ::testing::AssertionFailure() << "server closed during auth";
        const auto deadline = Clock::now() + 5s;
        Bytes buf;
        while (hs.bytes_needed() > 0) {
            buf.resize(hs.bytes_needed());
            if (recv_exact(buf, deadline) != Io::kOk) return ::testing::AssertionFailure() << "no ack";
            ByteView in{buf};
            auto r = hs.read(in);
            if (!r) return ::testing::AssertionFailure() << "ack: " << r.error().message();
            if (*r == 0) break;
        }
        auto secrets = hs.secrets();
        if (!secrets) return ::testing::AssertionFailure() << "secrets: " << secrets.error().message();
        codec_.emplace(std::move(*secrets));
        return ::testing::AssertionSuccess();
    }

    // The encrypted frame carrying `frame_data`, advancing the egress state as if it were sent.
    Bytes seal(ByteView frame_data) {
        Bytes wire;
        if (auto r = codec_->write_frame(frame_data, wire); !r) throw std::runtime_error(r.error().message());
        return wire;
    }
    bool send_frame_data(ByteView frame_data) { return send_bytes(seal(frame_data)); }
    // id || payload, the payload compressed once snappy is on (never for Hello).
    bool send(uint64_t id, ByteView payload) {
        Bytes buf;
        auto data = encode_frame_data(id, payload, snappy_ && id != kHelloId, buf);
        if (!data) throw std::runtime_error(data.error().message());
        return send_frame_data(*data);
    }

    Received read(Clock::duration timeout) {
        const auto deadline = Clock::now() + timeout;
        Received out;
        std::array<uint8_t, rlpx::kFrameHeaderSize> header{};
        const Io io = recv_exact(header, deadline);
        if (io != Io::kOk) {
            out.kind = io == Io::kTimeout ? Received::Kind::kTimeout : Received::Kind::kClosed;
            return out;
        }
        out.kind = Received::Kind::kBadFrame;
        auto size = codec_->read_header(header);
        if (!size) {
            out.error = size.error().message();
            return out;
        }
        Bytes body(rlpx::FrameCodec::body_size(*size));
        if (recv_exact(body, deadline) != Io::kOk) {
            out.error = "frame body cut short";
            return out;
        }
        auto data = codec_->read_body(std::span<uint8_t>(body));
        if (!data) {
            out.error = data.error().message();
            return out;
        }
        Bytes buf;
        auto msg = decode_frame_data(*data, snappy_, buf);
        if (!msg) {
            out.error = msg.error().message();
            return out;
        }
        out.kind = Received::Kind::kMessage;
        out.id = msg->id;
        out.payload.assign(msg->payload.begin(), msg->payload.end());
        return out;
    }

    // Sends `hello` (ours by default), reads the server's Hello and switches snappy on, as p2p v5
    // does once both Hellos are in.
    ::testing::AssertionResult hello(std::optional<Bytes> payload = std::nullopt,
                                     std::span<const p2p::ProtocolOffer> offers = p2p::kEthOffers) {
        if (!payload) {
            p2p::Hello ours;
            ours.client_id = "bad-input-test";
            ours.capabilities = p2p::capabilities_of(p2p::kEthOffers);
            ours.node_id = key_->public_key().bytes();
            payload.emplace();
            ours.encode(*payload);
        }
        if (!send(kHelloId, *payload)) return ::testing::AssertionFailure() << "server closed before our Hello";
        const Received r = read(3s);
        if (r.kind != Received::Kind::kMessage || r.id != kHelloId) {
            return ::testing::AssertionFailure() << "expected the server's Hello, got " << describe(r);
        }
        auto theirs = p2p::Hello::decode(r.payload);
        if (!theirs) return ::testing::AssertionFailure() << "server Hello: " << theirs.error().message();
        auto shared = p2p::negotiate(offers, *theirs);
        if (!shared) return ::testing::AssertionFailure() << "negotiate: " << shared.error().message();
        eth_version_ = shared->front().version;
        snappy_ = true;
        return ::testing::AssertionSuccess();
    }

    // Reads the server's Status and answers with ours for `head`, changed by the mutators first.
    ::testing::AssertionResult status(const db::Head& head,
                                      const std::function<void(eth::StatusMessage69&)>& mutate69 = {},
                                      const std::function<void(eth::StatusMessage68&)>& mutate68 = {}) {
        const Received r = read(3s);
        if (r.kind != Received::Kind::kMessage || r.id != kStatusId) {
            return ::testing::AssertionFailure() << "expected the server's Status, got " << describe(r);
        }
        Bytes payload;
        if (eth_version_ >= eth::kEth69) {
            if (auto st = eth::StatusMessage69::decode(r.payload); !st) {
                return ::testing::AssertionFailure() << "server Status: " << st.error().message();
            }
            auto ours = eth::make_status69(mainnet_config(), head);
            ours.version = static_cast<uint32_t>(eth_version_);  // the negotiated one, 69..72
            if (mutate69) mutate69(ours);
            ours.encode(payload);
        } else {
            if (auto st = eth::StatusMessage68::decode(r.payload); !st) {
                return ::testing::AssertionFailure() << "server Status: " << st.error().message();
            }
            auto ours = eth::make_status68(mainnet_config(), head);
            if (mutate68) mutate68(ours);
            ours.encode(payload);
        }
        if (!send(kStatusId, payload)) return ::testing::AssertionFailure() << "server closed before our Status";
        return ::testing::AssertionSuccess();
    }

    bool request(const eth::GetBlockHeadersRequest& req) {
        Bytes payload;
        req.encode(payload);
        return send(kGetBlockHeadersId, payload);
    }

    // The next message must be BlockHeaders for `request_id`; its headers go to `out`.
    ::testing::AssertionResult read_headers(uint64_t request_id, Bytes& storage, std::vector<ByteView>& out,
                                            Clock::duration timeout = 5s) {
        const Received r = read(timeout);
        if (r.kind != Received::Kind::kMessage || r.id != kBlockHeadersId) {
            return ::testing::AssertionFailure() << "expected BlockHeaders, got " << describe(r);
        }
        storage = r.payload;
        auto m = eth::BlockHeadersMessage::decode(storage);
        if (!m) return ::testing::AssertionFailure() << "BlockHeaders: " << m.error().message();
        if (m->request_id != request_id) {
            return ::testing::AssertionFailure() << "reply for request " << m->request_id << ", sent " << request_id;
        }
        out = std::move(m->headers);
        return ::testing::AssertionSuccess();
    }

  private:
    int fd_{-1};
    Clock::time_point connected_at_{};
    std::optional<rlpx::PrivateKey> key_;
    std::optional<rlpx::FrameCodec> codec_;
    bool snappy_{false};
    uint64_t eth_version_{0};
};

// The next message must be Disconnect with `reason`, compressed or raw as `compressed` says, and
// the server must then close the connection.
::testing::AssertionResult expect_disconnect(RawPeer& peer, DisconnectReason reason, bool compressed,
                                             Clock::duration timeout = 3s) {
    // A Ping may come first: a peer slow to send its bad input (a 16 MiB frame on a loaded machine)
    // is idle for the server until the frame begins to arrive.
    const auto deadline = Clock::now() + timeout;
    Received r = peer.read(timeout);
    while (r.kind == Received::Kind::kMessage && r.id == kPingId) r = peer.read(deadline - Clock::now());
    if (r.kind != Received::Kind::kMessage || r.id != kDisconnectId) {
        return ::testing::AssertionFailure()
               << "expected Disconnect " << p2p::to_string(reason) << ", got " << describe(r);
    }
    Bytes expected;
    encode_disconnect(expected, reason);
    if (compressed) {
        Bytes buf;
        auto raw = snappy_compress(expected, buf);
        expected.assign(raw->begin(), raw->end());
    }
    if (r.payload != expected) {
        auto got = decode_disconnect(r.payload);
        return ::testing::AssertionFailure()
               << "Disconnect payload " << to_hex(r.payload) << " (reason "
               << (got ? std::string(p2p::to_string(*got)) : std::string("malformed")) << "), expected "
               << to_hex(expected) << " (" << p2p::to_string(reason) << (compressed ? ", compressed)" : ", raw)");
    }
    const Received after = peer.read(timeout);
    if (after.kind != Received::Kind::kClosed) {
        return ::testing::AssertionFailure() << "after Disconnect: " << describe(after) << " instead of a close";
    }
    return ::testing::AssertionSuccess();
}

// ---- good peer ----------------------------------------------------------------------------------

// A well-behaved client built from the production pieces (ClientSession: dial, handshake, Hello,
// Status, one tracked request).
struct GoodPeerJob {
    std::optional<p2p::Enode> server;
    std::optional<rlpx::PrivateKey> key;
    p2p::LocalNode local;
    eth::GetBlockHeadersRequest request;
    std::optional<p2p::HeadersReply> reply;
    std::optional<DisconnectReason> refused;  // the PeerError that ended it, if any
    std::string error;
};

// REQUIRES: job outlives the coroutine.
asio::awaitable<void> run_good_peer(GoodPeerJob* job) {
    p2p::ClientOptions options;
    options.request_timeout = 5s;
    auto session = co_await p2p::ClientSession::connect(*job->server, job->local, options);
    auto result = co_await session->request(job->request);
    if (result) {
        job->reply = std::move(*result);
    } else {
        job->error = result.error().message;
    }
    co_await session->close();
}

// Runs one good peer on its own io_context, bounded by a guard timer.
void good_peer(GoodPeerJob& job) {
    job.local.key = &*job.key;  // the job may have been copied or moved since it was filled in
    asio::io_context io(1);
    asio::steady_timer guard(io, 10s);
    guard.async_wait([&](const boost::system::error_code& ec) {
        if (ec) return;
        job.error = "good peer timed out";
        io.stop();
    });
    asio::co_spawn(io, run_good_peer(&job), [&](std::exception_ptr e) {
        guard.cancel();
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const p2p::PeerError& ex) {
            job.refused = ex.reason();
            job.error = ex.what();
        } catch (const std::exception& ex) {
            job.error = ex.what();
        }
    });
    io.run();
}

// ---- fixture ------------------------------------------------------------------------------------

// Every case runs against a server with one worker and with two.
class BadInput : public ::testing::TestWithParam<size_t> {
  protected:
    static void SetUpTestSuite() {
        ASSERT_EQ(ref().headers.size(), kCount);
        ASSERT_EQ(ref().hashes.size(), kCount);
        dir_ = fs::temp_directory_path() / ("headerd-bad-input-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        db::ChainDbOptions opts;
        opts.create_if_missing = true;
        auto chain = db::ChainDb::open(dir_.string(), opts);
        ASSERT_TRUE(chain) << chain.error().message;
        auto r = db::import_file(**chain, mainnet_config(), kData + "/mainnet-00000-5ec1ffb8.era1");
        ASSERT_TRUE(r) << r.error().message;
        ASSERT_EQ(r->imported, kCount);
        db::FreezeOptions freeze;
        freeze.keep = kKeep;
        auto frozen = (*chain)->freeze(freeze);
        ASSERT_TRUE(frozen) << frozen.error().message;
        ASSERT_EQ(*frozen, kCount - kKeep);
        db_ = std::move(*chain);
        sink_ = std::make_shared<CaptureSink>();
        auto logger = std::make_shared<spdlog::logger>("bad-input", sink_);
        logger->set_level(spdlog::level::debug);
        spdlog::set_default_logger(logger);
    }
    static void TearDownTestSuite() {
        db_.reset();
        if (!dir_.empty()) fs::remove_all(dir_);
    }

    void SetUp() override {
        ASSERT_NE(db_, nullptr);
        watchdog_ = std::make_unique<Watchdog>(::testing::UnitTest::GetInstance()->current_test_info()->name());
        sink_->take();
        key_ = *rlpx::PrivateKey::generate();
        start_server({});
    }

    void TearDown() override {
        // The point of every case: whatever happened, the server still serves a newcomer.
        if (server_ || external_target()) expect_served(7100);
        stop_server();
        EXPECT_EQ(sink_->errors(), 0u) << "the server logged errors";
        const auto lines = sink_->take();
        if (HasFailure()) {
            for (const auto& line : lines) std::fprintf(stderr, "  server log: %s", line.c_str());
        }
        watchdog_.reset();
    }

    void start_server(p2p::ServerOptions options) {
        if (const auto& target = external_target()) {
            port_ = target->port;
            return;
        }
        options.listen = tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0);
        options.client_id = "headerd/bad-input-test";
        options.limits.handshake = kHandshakeTimeout;
        options.limits.idle = idle_;
        io_ = std::make_unique<asio::io_context>(1);
        pool_ = std::make_unique<p2p::WorkerPool>(GetParam());
        server_ = std::make_unique<p2p::Server>(*io_, *pool_, *db_, *key_, options);
        auto r = server_->listen();
        ASSERT_TRUE(r) << r.error().message;
        port_ = server_->local_endpoint().port();
        pool_->start();
        server_->start();
        thread_ = std::thread([io = io_.get()] { io->run(); });
    }

    void stop_server() {
        if (!server_) return;
        server_->stop();
        // Every session ends within its 1 s goodbye deadline; the watchdog guards the joins.
        if (thread_.joinable()) thread_.join();
        pool_->release();
        pool_->join();
        server_.reset();
        pool_.reset();
        io_.reset();
    }

    void restart_server(p2p::ServerOptions options) {
        stop_server();
        start_server(std::move(options));
    }

    const rlpx::PublicKey& server_key() const {
        return external_target() ? external_target()->key : key_->public_key();
    }
    static db::Head head() { return *db_->head(); }

    GoodPeerJob good_job(const eth::GetBlockHeadersRequest& request) const {
        GoodPeerJob job;
        job.server = p2p::Enode{server_key(), "127.0.0.1", port_};
        job.key = *rlpx::PrivateKey::generate();
        job.local.client_id = "bad-input-test/good";
        job.local.config = &mainnet_config();
        job.local.head = head();
        job.request = request;
        return job;
    }

    // A fresh good peer asks for 192 headers from `origin` (7100 spans the freezer/LevelDB boundary)
    // and must get exactly the reference headers.
    ::testing::AssertionResult served(uint64_t origin) const {
        eth::GetBlockHeadersRequest req;
        req.request_id = 0x0123456789abcdefULL;
        req.origin = eth::HashOrNumber::of(origin);
        req.amount = 192;
        GoodPeerJob job = good_job(req);
        good_peer(job);
        if (!job.error.empty() || !job.reply) return ::testing::AssertionFailure() << "good peer: " << job.error;
        return same_headers(job.reply->headers, range(origin, 192));
    }
    void expect_served(uint64_t origin) const { EXPECT_TRUE(served(origin)) << "a fresh good peer was not served"; }

    // Waits (bounded) until the server counts at most `n` established peers: a peer that quit is
    // released by its worker only when that worker reads the close.
    ::testing::AssertionResult peers_drop_to(size_t n) const {
        const auto until = Clock::now() + 5s;
        while (server_->peers() > n && Clock::now() < until) std::this_thread::sleep_for(5ms);
        if (server_->peers() <= n) return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << server_->peers() << " peers after 5 s, expected at most " << n;
    }

    // A raw client through the RLPx handshake, Hello and Status, ready for eth messages; nullptr (and
    // a failure) if any step fails.
    std::unique_ptr<RawPeer> established_peer() const {
        auto peer = std::make_unique<RawPeer>();
        auto r = peer->connect(port_);
        if (r) r = peer->handshake(server_key());
        if (r) r = peer->hello();
        if (r) r = peer->status(head());
        if (!r) {
            ADD_FAILURE() << "establishing a raw peer: " << r.message();
            return nullptr;
        }
        return peer;
    }

    static inline fs::path dir_;
    static inline std::unique_ptr<db::ChainDb> db_;
    static inline std::shared_ptr<CaptureSink> sink_;

    std::unique_ptr<Watchdog> watchdog_;
    std::optional<rlpx::PrivateKey> key_;
    std::unique_ptr<asio::io_context> io_;
    std::unique_ptr<p2p::WorkerPool> pool_;
    std::unique_ptr<p2p::Server> server_;
    std::thread thread_;
    uint16_t port_{0};
    std::chrono::milliseconds idle_{kIdlePeriod};  // the server's idle period (restart_server to change)
};

// ---- 1, 2: bad bytes instead of an auth packet ---------------------------------------------------

// 1. Random bytes where auth belongs. The first two are the EIP-8 size prefix; with the top bit set it
// declares more than 2048 bytes, which is refused on the prefix alone: a prompt, silent close.
TEST_P(BadInput, GarbageInsteadOfAuthIsClosedAtOnce) {
    std::mt19937_64 rng(1);
    Bytes garbage(500);
    for (auto& b : garbage) b = static_cast<uint8_t>(rng());
    garbage[0] |= 0x80;
    RawPeer peer;
    ASSERT_TRUE(peer.connect(port_));
    peer.send_bytes(garbage);  // may fail part-way: the server closes after two bytes
    std::string why;
    const auto closed = peer.wait_closed_silently(kHandshakeTimeout + slack(), why);
    ASSERT_TRUE(closed) << why;
    EXPECT_LT(*closed, 1s) << "an oversized prefix should be refused without waiting for the deadline";
}

// 2. A valid size prefix followed by exactly that many bytes that are not an ECIES message: a bad
// first byte, a point off the curve, a real point with a wrong MAC, a packet below the minimum and
// one of the largest size allowed.
TEST_P(BadInput, ValidPrefixWithGarbageBodyIsClosed) {
    std::mt19937_64 rng(3);
    auto ephemeral = *rlpx::PrivateKey::generate();
    struct Case {
        const char* name;
        size_t size;
        std::function<void(Bytes&)> shape;
    };
    const std::vector<Case> cases{
        {"random body", 300, [](Bytes&) {}},
        {"04 then a point off the curve", 300, [](Bytes& b) { b[0] = 0x04; }},
        {"a real ephemeral key, wrong MAC", 400,
         [&](Bytes& b) {
             b[0] = 0x04;
             std::ranges::copy(ephemeral.public_key().bytes(), b.begin() + 1);
         }},
        {"112 bytes: below the ECIES overhead", 112, [](Bytes& b) { b[0] = 0x04; }},
        {"2048 bytes: the largest size allowed", 2048, [](Bytes& b) { b[0] = 0x04; }},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        Bytes packet{static_cast<uint8_t>(c.size >> 8), static_cast<uint8_t>(c.size)};
        Bytes body(c.size);
        for (auto& b : body) b = static_cast<uint8_t>(rng());
        c.shape(body);
        append(packet, body);
        RawPeer peer;
        ASSERT_TRUE(peer.connect(port_));
        ASSERT_TRUE(peer.send_bytes(packet));
        std::string why;
        const auto closed = peer.wait_closed_silently(kHandshakeTimeout + slack(), why);
        ASSERT_TRUE(closed) << why;
        EXPECT_LT(*closed, 1s) << "a complete but invalid packet should be refused at once";
    }
}

// ---- 3, 4: broken frames after a valid handshake ------------------------------------------------

// 3. One byte flipped in each part of a frame. The MACs cover the ciphertext, so every flip is caught
// before anything is decrypted; the session says "protocol breach" (raw before Hello, compressed
// after it) and closes.
TEST_P(BadInput, FlippedFrameByteIsAProtocolBreach) {
    struct Case {
        const char* name;
        bool after_status;
        std::function<size_t(size_t)> offset;  // of the frame's wire size
    };
    const std::vector<Case> cases{
        {"header ciphertext, before Hello", false, [](size_t) { return size_t{3}; }},
        {"header ciphertext", true, [](size_t) { return size_t{0}; }},
        {"header MAC", true, [](size_t) { return size_t{20}; }},
        {"body ciphertext", true, [](size_t) { return size_t{rlpx::kFrameHeaderSize + 1}; }},
        {"frame MAC", true, [](size_t n) { return n - 1; }},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        RawPeer peer;
        ASSERT_TRUE(peer.connect(port_));
        ASSERT_TRUE(peer.handshake(server_key()));
        if (c.after_status) {
            ASSERT_TRUE(peer.hello());
            ASSERT_TRUE(peer.status(head()));
        }
        eth::GetBlockHeadersRequest req;
        req.request_id = 7;
        req.amount = 1;
        Bytes payload;
        req.encode(payload);
        Bytes buf;
        auto data = encode_frame_data(kGetBlockHeadersId, payload, peer.snappy(), buf);
        ASSERT_TRUE(data);
        Bytes wire = peer.seal(*data);
        wire[c.offset(wire.size())] ^= 0x01;
        ASSERT_TRUE(peer.send_bytes(wire));
        if (!c.after_status) {
            // The server's Hello was sent before our frame was read.
            const Received hello = peer.read(3s);
            ASSERT_EQ(hello.kind, Received::Kind::kMessage) << describe(hello);
            ASSERT_EQ(hello.id, kHelloId);
        }
        EXPECT_TRUE(expect_disconnect(peer, DisconnectReason::kProtocolBreach, c.after_status));
    }
}

// 4. The 24-bit size field cannot declare more than 2^24 - 1 bytes, which is also the server's frame
// limit, so no header is refused on its size alone. A frame of the largest size is read in full and
// refused on its content (the eth message cap, 10 MiB); a frame of size 0 has no message id.
TEST_P(BadInput, LargestAndEmptyFramesAreProtocolBreaches) {
    // Receiving 16 MiB may take the server (a TSan build on a loaded machine) longer than two 2 s
    // idle periods, after which it would rightly drop a peer that did not answer its Ping: this case
    // is about the frame, so its server waits 30 s.
    if (!external_target()) {
        idle_ = 30s;
        restart_server({});
    }
    {
        SCOPED_TRACE("2^24 - 1 bytes of frame data");
        auto peer = established_peer();
        ASSERT_TRUE(peer);
        Bytes data(rlpx::kMaxFrameSizeField);
        std::mt19937_64 rng(4);
        for (auto& b : data) b = static_cast<uint8_t>(rng());
        // id, then a snappy varint declaring 16 MiB - 64, then incompressible filler.
        data[0] = static_cast<uint8_t>(kGetBlockHeadersId);
        const uint64_t declared = (uint64_t{16} << 20) - 64;
        for (size_t i = 0; i < 3; ++i) data[1 + i] = static_cast<uint8_t>(((declared >> (7 * i)) & 0x7f) | 0x80);
        data[4] = static_cast<uint8_t>(declared >> 21);
        ASSERT_TRUE(peer->send_frame_data(data));
        EXPECT_TRUE(expect_disconnect(*peer, DisconnectReason::kProtocolBreach, true, 10s));
    }
    {
        SCOPED_TRACE("empty frame");
        auto peer = established_peer();
        ASSERT_TRUE(peer);
        ASSERT_TRUE(peer->send_frame_data({}));
        EXPECT_TRUE(expect_disconnect(*peer, DisconnectReason::kProtocolBreach, true));
    }
    {
        SCOPED_TRACE("header of the largest frame, then the peer leaves");
        auto peer = established_peer();
        ASSERT_TRUE(peer);
        Bytes data(rlpx::kMaxFrameSizeField, 0);
        Bytes wire = peer->seal(data);
        ASSERT_TRUE(peer->send_bytes(ByteView{wire}.first(rlpx::kFrameHeaderSize)));
        peer->close();  // the server must give up the 16 MiB buffer it sized for the body
    }
}

// ---- 5: snappy bombs ----------------------------------------------------------------------------

// 5. A few bytes whose snappy header declares a huge payload: refused on the declared length before
// anything is inflated (the server's peak memory stays flat), as are corrupt lengths and lies.
TEST_P(BadInput, SnappyBombIsAProtocolBreach) {
    struct Case {
        const char* name;
        uint64_t id;
        const char* compressed;  // hex, after the message id
    };
    static constexpr Case kCases[] = {
        {"declares 16 MiB + 1", kGetBlockHeadersId, "8180800800"},
        {"declares 11 MiB, above the 10 MiB eth cap", kGetBlockHeadersId, "8080c0050000"},
        {"declares 4 GiB", kGetBlockHeadersId, "80808080100000"},
        {"Ping declaring 1 GiB", kPingId, "808080800400"},
        {"overlong varint", kGetBlockHeadersId, "ffffffffffffffffffff01"},
        {"declares 100, holds 3", kGetBlockHeadersId, "6408c0c0c0"},
        {"empty", kGetBlockHeadersId, ""},
    };
    const PeakMemoryGrowth memory;
    for (const auto& c : kCases) {
        SCOPED_TRACE(c.name);
        auto peer = established_peer();
        ASSERT_TRUE(peer);
        Bytes data;
        rlp::encode(data, c.id);
        append(data, hex(c.compressed));
        ASSERT_TRUE(peer->send_frame_data(data));
        EXPECT_TRUE(expect_disconnect(*peer, DisconnectReason::kProtocolBreach, true));
    }
    EXPECT_LT(memory.kib(), size_t{64} << 10) << "KiB of peak memory grew";
}

// ---- 6: malformed GetBlockHeaders ---------------------------------------------------------------

// 6. Each payload breaks one rule of docs/wire.md (strict, canonical RLP; exactly the fields) and is
// sent, snappy-compressed as it should be, on its own connection.
TEST_P(BadInput, MalformedGetBlockHeadersIsAProtocolBreach) {
    struct Case {
        const char* name;
        const char* payload;
    };
    static constexpr Case kCases[] = {
        {"request id with a leading zero", "cb83000457c682270f050580"},
        {"request id 5 as a one-byte string", "c98105c682270f050580"},
        {"amount with a leading zero", "cc820457c882270f8200050580"},
        {"origin number with a leading zero", "cb820457c78300270f050580"},
        {"origin of 9 bytes", "d1820457cd89010203040506070809050580"},
        {"origin of 31 bytes", "e7820457e39f0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f050580"},
        {"origin is a list", "ca820457c6c20102050580"},
        {"amount of 9 bytes", "d3820457cf82270f890100000000000000000580"},
        {"reverse 00", "ca820457c682270f050500"},
        {"reverse 02", "ca820457c682270f050502"},
        {"query of three fields", "c9820457c582270f0505"},
        {"query of five fields", "cc820457c882270f05058080"},
        {"nil query [id, []]", "c4820457c0"},
        {"a byte after the message", "ca820457c682270f05058000"},
        {"truncated", "ca820457c682270f0505"},
        {"long-form list header for a short list", "f80a820457c682270f050580"},
        {"a string, not a list", "820457"},
        {"empty payload", ""},
    };
    for (const auto& c : kCases) {
        SCOPED_TRACE(c.name);
        auto peer = established_peer();
        ASSERT_TRUE(peer);
        ASSERT_TRUE(peer->send(kGetBlockHeadersId, hex(c.payload)));
        EXPECT_TRUE(expect_disconnect(*peer, DisconnectReason::kProtocolBreach, true));
    }
    // 18 breaches from one address within seconds: the warning is logged once per worker (each worker
    // has its own limiter, which holds the rest back for 10 s per address), so a misbehaving peer
    // cannot flood the log. The line is written before the Disconnect is sent, so it is in.
    if (external_target()) return;  // its log is not ours to read
    const auto lines = sink_->take();
    const auto warnings = std::ranges::count_if(
        lines, [](const std::string& l) { return l.find("Peer misbehaved") != std::string::npos; });
    EXPECT_GE(warnings, 1);
    EXPECT_LE(static_cast<size_t>(warnings), GetParam());
}

// ---- 7: unknown and unexpected message ids ------------------------------------------------------

TEST_P(BadInput, UnknownMessageIdIsAProtocolBreach) {
    struct Case {
        const char* name;
        uint64_t id;
    };
    static constexpr Case kCases[] = {
        {"0x10 + 0x30, above every range", kEthOffset + 0x30},
        {"0x10 + 0x16, just above eth/72", kEthOffset + 0x16},
        {"0x10 + 0x0b, unassigned since eth/67", kEthOffset + 0x0b},
        {"0x10 + 0x0d, GetNodeData (gone)", kEthOffset + 0x0d},
        {"p2p 0x04, unassigned", 0x04},
        {"p2p 0x0f, unassigned", 0x0f},
        {"second Hello", kHelloId},
        {"second Status", kStatusId},
        {"unsolicited BlockHeaders", kBlockHeadersId},
        {"id 2^63", uint64_t{1} << 63},
    };
    for (const auto& c : kCases) {
        SCOPED_TRACE(c.name);
        auto peer = established_peer();
        ASSERT_TRUE(peer);
        const Bytes empty_list{0xc0};
        ASSERT_TRUE(peer->send(c.id, empty_list));
        EXPECT_TRUE(expect_disconnect(*peer, DisconnectReason::kProtocolBreach, true));
    }
    {
        SCOPED_TRACE("id 00, a non-canonical zero");
        auto peer = established_peer();
        ASSERT_TRUE(peer);
        ASSERT_TRUE(
            peer->send_frame_data(hex("00"
                                      "0100c0")));
        EXPECT_TRUE(expect_disconnect(*peer, DisconnectReason::kProtocolBreach, true));
    }
    {
        SCOPED_TRACE("BlockRangeUpdate on an eth/68 link");
        RawPeer peer;
        ASSERT_TRUE(peer.connect(port_));
        ASSERT_TRUE(peer.handshake(server_key()));
        p2p::Hello ours;
        ours.client_id = "bad-input-test/68";
        ours.capabilities = {{"eth", 68}};
        ours.node_id = peer.key().public_key().bytes();
        Bytes hello;
        ours.encode(hello);
        ASSERT_TRUE(peer.hello(hello, kEth68Only));
        ASSERT_EQ(peer.eth_version(), eth::kEth68);
        ASSERT_TRUE(peer.status(head()));
        Bytes update;
        eth::make_block_range_update(head()).encode(update);
        ASSERT_TRUE(peer.send(kEthOffset + 0x11, update));
        EXPECT_TRUE(expect_disconnect(peer, DisconnectReason::kProtocolBreach, true));
    }
}

// ---- 8: extreme but valid requests --------------------------------------------------------------

// 8. amount, skip and origin at 2^64-1 (and their neighbours) are valid requests: the server caps the
// amount, refuses to wrap around and answers past the head with nothing; the connection stays up.
TEST_P(BadInput, ExtremeRequestsGetValidReplies) {
    struct Case {
        const char* name;
        eth::GetBlockHeadersRequest req;
        std::vector<uint64_t> expected;
    };
    auto q = [](uint64_t id, uint64_t origin, uint64_t amount, uint64_t skip, bool reverse) {
        return eth::GetBlockHeadersRequest{id, eth::HashOrNumber::of(origin), amount, skip, reverse};
    };
    auto by_hash = [](uint64_t id, const Hash32& origin, uint64_t amount, uint64_t skip, bool reverse) {
        return eth::GetBlockHeadersRequest{id, eth::HashOrNumber::of(origin), amount, skip, reverse};
    };
    Hash32 unknown;
    unknown.fill(0xff);
    const std::vector<Case> cases{
        {"all max, forward", q(kMax, kMax, kMax, kMax, false), {}},
        {"all max, reverse", q(kMax, kMax, kMax, kMax, true), {}},
        {"origin max, one header", q(1, kMax, 1, 0, false), {}},
        {"origin max, reverse, contiguous", q(2, kMax, kMax, 0, true), {}},
        {"origin past the head by one", q(3, kCount, kMax, 0, false), {}},
        {"genesis, skip max", q(4, 0, kMax, kMax, false), {0}},
        {"head, reverse, skip max", q(5, kCount - 1, kMax, kMax, true), {kCount - 1}},
        {"skip max - 1 (step 2^64-1)", q(6, 5, kMax, kMax - 1, false), {5}},
        {"skip max - 1, reverse", q(7, 5, kMax, kMax - 1, true), {5}},
        {"skip 2^63, reverse", q(8, 10, kMax, uint64_t{1} << 63, true), {10}},
        {"amount max from genesis: capped at 1024", q(9, 0, kMax, 0, false), range(0, 1024)},
        {"amount max from the head, reverse", q(10, kCount - 1, kMax, 0, true), range(kCount - 1, 1024, -1)},
        {"skip 15 to the head", q(11, 8000, kMax, 15, false), range(8000, 12, 16)},
        {"skip 15 to genesis", q(12, 100, kMax, 15, true), range(100, 7, -16)},
        {"skip 1000 past the head", q(13, 8191, kMax, 1000, false), {8191}},
        {"amount 0", q(14, 0, 0, 0, false), {}},
        {"unknown hash", by_hash(15, unknown, kMax, kMax, false), {}},
        {"canonical hash, skip max", by_hash(16, ref().hashes[7191], kMax, kMax, true), {7191}},
        {"request id 0", q(0, 7190, 4, 0, false), range(7190, 4)},
    };
    auto peer = established_peer();
    ASSERT_TRUE(peer);
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        ASSERT_TRUE(peer->request(c.req));
        Bytes storage;
        std::vector<ByteView> headers;
        ASSERT_TRUE(peer->read_headers(c.req.request_id, storage, headers));
        EXPECT_TRUE(same_headers(headers, c.expected));
    }
    // Still up and still correct.
    ASSERT_TRUE(peer->request(q(99, 7100, 192, 0, false)));
    Bytes storage;
    std::vector<ByteView> headers;
    ASSERT_TRUE(peer->read_headers(99, storage, headers));
    EXPECT_TRUE(same_headers(headers, range(7100, 192)));
}

// ---- 9: pipelining ------------------------------------------------------------------------------

// 9. 500 requests sent back to back without reading. The server answers one at a time and TCP
// pushes back, so its memory stays bounded; meanwhile another peer is served; then every reply
// arrives, in order, correct.
TEST_P(BadInput, PipelinedRequestsAreAnsweredInOrder) {
    constexpr uint64_t kRequests = 500;
    auto origin_of = [](uint64_t i) { return (i * 37) % (kCount - 192); };
    auto peer = established_peer();
    ASSERT_TRUE(peer);
    Bytes wire;
    for (uint64_t i = 1; i <= kRequests; ++i) {
        eth::GetBlockHeadersRequest req{i, eth::HashOrNumber::of(origin_of(i)), 192, 0, i % 2 == 0};
        Bytes payload;
        req.encode(payload);
        Bytes buf;
        auto data = encode_frame_data(kGetBlockHeadersId, payload, true, buf);
        ASSERT_TRUE(data);
        append(wire, peer->seal(*data));
    }
    const PeakMemoryGrowth memory;
    ASSERT_TRUE(peer->send_bytes(wire));
    // The server is now blocked writing replies nobody reads (its write deadline is 10 s). Meanwhile
    // another peer is served from the same shared reply buffers; every reply is checked below.
    std::this_thread::sleep_for(200ms);
    expect_served(4000);
    for (uint64_t i = 1; i <= kRequests; ++i) {
        Bytes storage;
        std::vector<ByteView> headers;
        ASSERT_TRUE(peer->read_headers(i, storage, headers)) << "reply " << i;
        const uint64_t o = origin_of(i);
        ASSERT_TRUE(same_headers(headers, i % 2 == 0 ? range(o, std::min<uint64_t>(192, o + 1), -1) : range(o, 192)))
            << "reply " << i;
    }
    EXPECT_LT(memory.kib(), size_t{128} << 10) << "KiB of peak memory grew";
    // The connection is still in step.
    const Bytes ping{0xc0};
    ASSERT_TRUE(peer->send(kPingId, ping));
    Received pong = peer->read(3s);
    // Reading 500 replies may take a sanitizer build longer than the server's idle period: its own
    // Ping may come first, and is answered as a peer would.
    while (pong.kind == Received::Kind::kMessage && pong.id == kPingId) {
        ASSERT_TRUE(peer->send(kPongId, ping));
        pong = peer->read(3s);
    }
    EXPECT_EQ(pong.kind, Received::Kind::kMessage) << describe(pong);
    EXPECT_EQ(pong.id, kPongId);
}

// ---- 10: bad Status -----------------------------------------------------------------------------

// 10. Every Status check fails with Disconnect 0x10 (subprotocol error), as geth sends.
TEST_P(BadInput, WrongStatusIsASubprotocolError) {
    struct Case {
        const char* name;
        std::function<void(eth::StatusMessage69&)> mutate;
    };
    const std::vector<Case> cases{
        {"wrong genesis", [](eth::StatusMessage69& s) { s.genesis_hash[0] ^= 0x01; }},
        {"unknown fork id",
         [](eth::StatusMessage69& s) {
             s.fork_id = ForkId{{0xde, 0xad, 0xbe, 0xef}, 0};
         }},
        {"fork id of a node past a fork we do not know",
         [](eth::StatusMessage69& s) {
             s.fork_id = ForkId{s.fork_id.hash, 1};
         }},
        {"wrong network id", [](eth::StatusMessage69& s) { s.network_id = 5; }},
        {"version 68 on an eth/69 link", [](eth::StatusMessage69& s) { s.version = 68; }},
        {"earliest after latest", [](eth::StatusMessage69& s) { s.earliest = s.latest + 1; }},
        {"zero latest hash", [](eth::StatusMessage69& s) { s.latest_hash = Hash32{}; }},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        RawPeer peer;
        ASSERT_TRUE(peer.connect(port_));
        ASSERT_TRUE(peer.handshake(server_key()));
        ASSERT_TRUE(peer.hello());
        ASSERT_TRUE(peer.status(head(), c.mutate));
        EXPECT_TRUE(expect_disconnect(peer, DisconnectReason::kSubprotocolError, true));
    }
    {
        SCOPED_TRACE("eth/68, wrong genesis");
        RawPeer peer;
        ASSERT_TRUE(peer.connect(port_));
        ASSERT_TRUE(peer.handshake(server_key()));
        p2p::Hello ours;
        ours.client_id = "bad-input-test/68";
        ours.capabilities = {{"eth", 68}};
        ours.node_id = peer.key().public_key().bytes();
        Bytes hello;
        ours.encode(hello);
        ASSERT_TRUE(peer.hello(hello, kEth68Only));
        ASSERT_TRUE(peer.status(head(), {}, [](eth::StatusMessage68& s) { s.genesis_hash[31] ^= 0x80; }));
        EXPECT_TRUE(expect_disconnect(peer, DisconnectReason::kSubprotocolError, true));
    }
    {
        // A Status that does not decode is malformed, not a failed check.
        SCOPED_TRACE("Status with an extra field");
        RawPeer peer;
        ASSERT_TRUE(peer.connect(port_));
        ASSERT_TRUE(peer.handshake(server_key()));
        ASSERT_TRUE(peer.hello());
        const Received theirs = peer.read(3s);
        ASSERT_EQ(theirs.id, kStatusId) << describe(theirs);
        Bytes ours;
        eth::encode_status(peer.eth_version(), mainnet_config(), head(), ours);
        // Re-wrap the list with one more element (0x80).
        ByteView rest{ours};
        auto items = rlp::decode_list(rest);
        ASSERT_TRUE(items);
        Bytes longer;
        rlp::encode_header(longer, {true, items->size() + 1});
        append(longer, *items);
        longer.push_back(0x80);
        ASSERT_TRUE(peer.send(kStatusId, longer));
        EXPECT_TRUE(expect_disconnect(peer, DisconnectReason::kProtocolBreach, true));
    }
}

// ---- 11, 12 (and a stalled frame): slow peers, run side by side -----------------------------------

// 11. A peer that connects and says nothing, and 12. three hundred of them at once: the server keeps
// serving while they wait, and closes each at its 5 s handshake deadline. Run in the same window
// because each waits for a deadline: 1b. random bytes whose size prefix is in range but larger than
// what was sent (the server waits for the rest, so it too closes at the deadline, not earlier); and a
// peer that announces the largest frame and then stalls, which must be dropped at the read deadline
// (15 s) with "ping timeout" - not treated as idle and pinged, since the frame stream is out of step
// once a read has stopped part-way through a frame.
TEST_P(BadInput, IdleAndStalledPeersAreClosedAtTheirDeadlines) {
    if (external_target()) GTEST_SKIP() << "needs a server of its own";
    constexpr size_t kIdle = 300;
    p2p::ServerOptions options;
    options.max_pending = kIdle + 16;  // room for every idle peer plus the good ones
    restart_server(options);

    auto stalled = established_peer();
    // The server's read deadline runs from here: it starts reading the next message once Status is in.
    const auto stalled_at = Clock::now();
    ASSERT_TRUE(stalled);
    {
        Bytes data(rlpx::kMaxFrameSizeField, 0);
        Bytes wire = stalled->seal(data);
        ASSERT_TRUE(stalled->send_bytes(ByteView{wire}.first(rlpx::kFrameHeaderSize + 1000)));
    }

    std::vector<std::unique_ptr<RawPeer>> idle;
    for (size_t i = 0; i < kIdle + 1; ++i) {
        idle.push_back(std::make_unique<RawPeer>());
        ASSERT_TRUE(idle.back()->connect(port_)) << "connection " << i;
    }
    {
        std::mt19937_64 rng(2);
        Bytes garbage(500);
        for (auto& b : garbage) b = static_cast<uint8_t>(rng());
        garbage[0] = 0x07;  // 0x07xx: 1792..2047 bytes declared, 498 sent
        ASSERT_TRUE(idle.front()->send_bytes(garbage));
    }
    const auto opened = Clock::now();
    // Responsive while they all wait.
    expect_served(0);
    expect_served(8000);
    EXPECT_LT(Clock::now() - opened, kHandshakeTimeout) << "the good peers were served only after the deadline";

    // Every idle connection closes, silently, at its deadline.
    std::vector<pollfd> fds;
    for (const auto& p : idle) fds.push_back({p->fd(), POLLIN, 0});
    std::vector<std::optional<Clock::duration>> closed(fds.size());
    size_t open = fds.size();
    const auto deadline = opened + kHandshakeTimeout + slack();
    while (open > 0 && Clock::now() < deadline) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        const int r = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
        if (r <= 0) continue;
        for (size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            uint8_t b = 0;
            const ssize_t n = ::recv(fds[i].fd, &b, 1, MSG_DONTWAIT);
            EXPECT_LE(n, 0) << "connection " << i << " received a byte before its handshake";
            closed[i] = Clock::now() - idle[i]->connected_at();
            fds[i].fd = -1;
            --open;
        }
    }
    EXPECT_EQ(open, 0u) << "idle connections still open after the handshake deadline";
    size_t early = 0;
    for (const auto& c : closed) {
        if (c && *c < kHandshakeTimeout - 100ms) ++early;
    }
    EXPECT_EQ(early, 0u) << "idle connections closed before the deadline";
    idle.clear();

    const Received r = stalled->read(stalled_at + kIdlePeriod + slack() - Clock::now());
    ASSERT_EQ(r.kind, Received::Kind::kMessage) << describe(r);
    ASSERT_EQ(r.id, kDisconnectId) << "a peer stalled inside a frame must not be pinged as if it were idle";
    Bytes expected;
    encode_disconnect(expected, DisconnectReason::kPingTimeout);
    Bytes buf;
    auto compressed = snappy_compress(expected, buf);
    EXPECT_TRUE(std::ranges::equal(r.payload, *compressed)) << to_hex(r.payload);
    EXPECT_GE(Clock::now() - stalled_at, kIdlePeriod - 100ms);
}

// Connections beyond max_pending wait in the listen backlog instead of being handled: a newcomer is
// taken, and served, as soon as a pending handshake ends.
TEST_P(BadInput, ConnectionsBeyondMaxPendingWaitForASlot) {
    if (external_target()) GTEST_SKIP() << "needs a server of its own";
    p2p::ServerOptions options;
    options.max_pending = 4;
    restart_server(options);
    std::vector<std::unique_ptr<RawPeer>> pending;
    for (size_t i = 0; i < 4; ++i) {
        pending.push_back(std::make_unique<RawPeer>());
        ASSERT_TRUE(pending.back()->connect(port_));
    }
    // The server's own count says when it holds all four (under load, accepting them takes a while).
    for (auto until = Clock::now() + 5s; server_->pending_handshakes() < 4 && Clock::now() < until;) {
        std::this_thread::sleep_for(5ms);
    }
    ASSERT_EQ(server_->pending_handshakes(), 4u);
    std::atomic<bool> done{false};
    ::testing::AssertionResult result = ::testing::AssertionFailure();
    std::thread newcomer([&] {
        result = served(7100);
        done = true;
    });
    std::this_thread::sleep_for(500ms);
    EXPECT_FALSE(done) << "a connection beyond max_pending was handled while 4 handshakes were pending";
    // Leaving frees the slots at once (EOF ends the handshake read), long before their deadline.
    const auto freed = Clock::now();
    pending.clear();
    newcomer.join();
    EXPECT_TRUE(result);
    EXPECT_LT(Clock::now() - freed, kHandshakeTimeout) << "the newcomer waited for a deadline, not for a slot";
}

// ---- 13: too many peers -------------------------------------------------------------------------

// 13. With max_peers = 2, a third peer past the handshake gets Disconnect 0x04, before Hello (so raw),
// both through the production client (establish sees the reason) and a raw one; a slot freed by a
// leaving peer is usable again.
TEST_P(BadInput, PeersBeyondMaxPeersGetTooManyPeers) {
    if (external_target()) GTEST_SKIP() << "needs a server of its own";
    p2p::ServerOptions options;
    options.max_peers = 2;
    restart_server(options);
    auto first = established_peer();
    auto second = established_peer();
    ASSERT_TRUE(first && second);

    eth::GetBlockHeadersRequest req;
    req.request_id = 1;
    req.amount = 1;
    GoodPeerJob job = good_job(req);
    good_peer(job);
    EXPECT_EQ(job.refused, DisconnectReason::kTooManyPeers) << job.error;

    RawPeer third;
    ASSERT_TRUE(third.connect(port_));
    ASSERT_TRUE(third.handshake(server_key()));
    EXPECT_TRUE(expect_disconnect(third, DisconnectReason::kTooManyPeers, false));

    // Established peers are unaffected.
    ASSERT_TRUE(first->request({5, eth::HashOrNumber::of(1), 2, 0, false}));
    Bytes storage;
    std::vector<ByteView> headers;
    ASSERT_TRUE(first->read_headers(5, storage, headers));
    EXPECT_TRUE(same_headers(headers, {1, 2}));

    // A peer's slot is freed when its worker sees the close, which may be after a newcomer arrives
    // on another worker: wait for the server's own count, then the newcomer must be served at once.
    first.reset();
    ASSERT_TRUE(peers_drop_to(1)) << "the slot of a peer that left was not freed";
    expect_served(100);
    // The good peer quits after its reply; TearDown's newcomer needs that slot back the same way.
    ASSERT_TRUE(peers_drop_to(1)) << "the slot of the good peer that quit was not freed";
}

// ---- 14: bad Hello ------------------------------------------------------------------------------

// Hello payload: [version, client id, [[name, version]...], port, node id, extra...]
Bytes hello_payload(uint64_t version, const std::vector<p2p::Capability>& caps, ByteView node_id) {
    Bytes body;
    rlp::encode(body, version);
    rlp::encode(body, ByteView{reinterpret_cast<const uint8_t*>("crafted"), 7});
    Bytes cap_list;
    for (const auto& c : caps) {
        Bytes one;
        rlp::encode(one, ByteView{reinterpret_cast<const uint8_t*>(c.name.data()), c.name.size()});
        rlp::encode(one, c.version);
        rlp::encode_header(cap_list, {true, one.size()});
        append(cap_list, one);
    }
    rlp::encode_header(body, {true, cap_list.size()});
    append(body, cap_list);
    rlp::encode(body, uint64_t{0});
    rlp::encode(body, node_id);
    Bytes out;
    rlp::encode_header(out, {true, body.size()});
    append(out, body);
    return out;
}

// 14. A Hello naming another node than the handshake key gets 0x09; the other Hello checks get the
// reasons of docs/wire.md. None is compressed: the server has not accepted our Hello.
TEST_P(BadInput, BadHelloGetsItsReason) {
    const std::vector<p2p::Capability> caps{{"eth", 68}, {"eth", 69}};
    const auto other = *rlpx::PrivateKey::generate();
    const Bytes zero(64, 0);
    struct Case {
        const char* name;
        std::function<Bytes(const RawPeer&)> payload;
        DisconnectReason reason;
    };
    const std::vector<Case> cases{
        {"node id of another key", [&](const RawPeer&) { return hello_payload(5, caps, other.public_key().bytes()); },
         DisconnectReason::kUnexpectedIdentity},
        {"all-zero node id", [&](const RawPeer&) { return hello_payload(5, caps, zero); },
         DisconnectReason::kInvalidIdentity},
        {"63-byte node id",
         [&](const RawPeer& p) { return hello_payload(5, caps, ByteView{p.key().public_key().bytes()}.first(63)); },
         DisconnectReason::kInvalidIdentity},
        {"p2p version 4", [&](const RawPeer& p) { return hello_payload(4, caps, p.key().public_key().bytes()); },
         DisconnectReason::kIncompatibleVersion},
        {"no shared capability",
         [&](const RawPeer& p) {
             return hello_payload(5, {{"eth", 67}, {"snap", 1}}, p.key().public_key().bytes());
         },
         DisconnectReason::kUselessPeer},
        {"Hello above 2048 bytes",
         [&](const RawPeer& p) {
             std::vector<p2p::Capability> many(400, p2p::Capability{"xyz", 1});
             many.push_back({"eth", 69});
             return hello_payload(5, many, p.key().public_key().bytes());
         },
         DisconnectReason::kProtocolBreach},
        {"not RLP", [&](const RawPeer&) { return hex("ff"); }, DisconnectReason::kProtocolBreach},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        RawPeer peer;
        ASSERT_TRUE(peer.connect(port_));
        ASSERT_TRUE(peer.handshake(server_key()));
        ASSERT_TRUE(peer.send(kHelloId, c.payload(peer)));
        const Received hello = peer.read(3s);
        ASSERT_EQ(hello.id, kHelloId) << describe(hello);
        EXPECT_TRUE(expect_disconnect(peer, c.reason, false));
    }
    {
        SCOPED_TRACE("Ping before Hello");
        RawPeer peer;
        ASSERT_TRUE(peer.connect(port_));
        ASSERT_TRUE(peer.handshake(server_key()));
        ASSERT_TRUE(peer.send(kPingId, Bytes{0xc0}));
        const Received hello = peer.read(3s);
        ASSERT_EQ(hello.id, kHelloId) << describe(hello);
        EXPECT_TRUE(expect_disconnect(peer, DisconnectReason::kProtocolBreach, false));
    }
}

// ---- 15: Ping / Pong ----------------------------------------------------------------------------

// 15. Ping is answered with Pong (compressed c0) at once, during the Status exchange as well as while
// serving; an unsolicited Pong is ignored; our Disconnect ends the session without a reply.
TEST_P(BadInput, PingGetsPong) {
    const Bytes empty_list{0xc0};
    RawPeer peer;
    ASSERT_TRUE(peer.connect(port_));
    ASSERT_TRUE(peer.handshake(server_key()));
    ASSERT_TRUE(peer.hello());
    // Between Hello and Status: the server has sent its Status and waits for ours.
    ASSERT_TRUE(peer.send(kPingId, empty_list));
    const Received status = peer.read(3s);
    ASSERT_EQ(status.id, kStatusId) << describe(status);
    Received pong = peer.read(3s);
    ASSERT_EQ(pong.kind, Received::Kind::kMessage) << describe(pong);
    EXPECT_EQ(pong.id, kPongId);
    EXPECT_EQ(pong.payload, empty_list);
    Bytes ours;
    eth::encode_status(peer.eth_version(), mainnet_config(), head(), ours);
    ASSERT_TRUE(peer.send(kStatusId, ours));

    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(peer.send(kPingId, empty_list));
        pong = peer.read(3s);
        ASSERT_EQ(pong.kind, Received::Kind::kMessage) << describe(pong);
        EXPECT_EQ(pong.id, kPongId);
        EXPECT_EQ(pong.payload, empty_list);
    }
    ASSERT_TRUE(peer.send(kPongId, empty_list));
    ASSERT_TRUE(peer.request({42, eth::HashOrNumber::of(7191), 2, 0, false}));
    Bytes storage;
    std::vector<ByteView> headers;
    ASSERT_TRUE(peer.read_headers(42, storage, headers));
    EXPECT_TRUE(same_headers(headers, {7191, 7192}));

    Bytes bye;
    encode_disconnect(bye, DisconnectReason::kRequested);
    ASSERT_TRUE(peer.send(kDisconnectId, bye));
    const Received end = peer.read(3s);
    EXPECT_EQ(end.kind, Received::Kind::kClosed) << describe(end);
}

// ---- metrics -------------------------------------------------------------------------------------

// With metrics on, every message, served header, read, service time and failed handshake is counted
// exactly once, under the labels of the protocol version the link negotiated.
TEST_P(BadInput, MetricsCountEveryMessageHeaderAndFailedHandshake) {
    if (external_target()) GTEST_SKIP() << "needs a server of its own";
    metrics::Metrics registry("test", "0123abcd");
    p2p::NetMetrics net(registry.families());
    db_->set_read_observer(&net);
    p2p::ServerOptions options;
    options.metrics = &net;
    restart_server(options);

    constexpr int kGoodPeers = 3;
    for (int i = 0; i < kGoodPeers; ++i) expect_served(7100);  // 92 frozen headers, 100 from LevelDB
    {
        RawPeer garbage;  // a bad first byte after a valid size prefix: a protocol breach in the handshake
        ASSERT_TRUE(garbage.connect(port_));
        Bytes packet(300, 0x55);
        packet[0] = 0x01;
        packet[1] = 0x2a;
        garbage.send_bytes(packet);
        std::string why;
        ASSERT_TRUE(garbage.wait_closed_silently(kHandshakeTimeout + slack(), why)) << why;
    }
    // A good peer's Disconnect reaches the server after expect_served has returned: on a slow run
    // (sanitizers, a busy machine) the last one may still be unread. Wait for it, bounded, then stop
    // the server so that the sessions' own bookkeeping is in too.
    const p2p::MessageMeters& base = net.base();
    for (const auto until = std::chrono::steady_clock::now() + 10s;
         base.ingress_messages[0x01]->Value() < kGoodPeers && std::chrono::steady_clock::now() < until;) {
        std::this_thread::sleep_for(10ms);
    }
    stop_server();
    db_->set_read_observer(nullptr);

    // Both sides offer the same versions: the highest is negotiated.
    const p2p::MessageMeters& eth69 = *net.eth(p2p::kEthOffers.back().version);
    const p2p::MessageMeters& eth68 = *net.eth(eth::kEth68);
    constexpr size_t kGetHeaders = 0x03, kHeaders = 0x04, kStatus = 0x00;
    EXPECT_EQ(eth69.ingress_messages[kGetHeaders]->Value(), kGoodPeers);
    EXPECT_EQ(eth69.egress_messages[kHeaders]->Value(), kGoodPeers);
    EXPECT_EQ(eth69.ingress_messages[kStatus]->Value(), kGoodPeers);
    EXPECT_EQ(eth69.egress_messages[kStatus]->Value(), kGoodPeers);
    EXPECT_EQ(eth68.ingress_messages[kGetHeaders]->Value(), 0);
    EXPECT_EQ(base.ingress_messages[0x00]->Value(), kGoodPeers);  // Hello
    EXPECT_EQ(base.egress_messages[0x00]->Value(), kGoodPeers);
    EXPECT_EQ(base.ingress_messages[0x01]->Value(), kGoodPeers);  // the good peers' Disconnect
    // Bytes are whole frames as sent: 192 early mainnet headers snappy-compress to about 32 KB; a
    // request is one frame of 80 bytes (header and its MAC 32, body padded to 32, body MAC 16), or of
    // 64 when its body fits 16 bytes: ClientSession starts its request ids at a random 32-bit value,
    // and one below 2^24 encodes a byte shorter (about one run in 85 of each variant has one).
    EXPECT_GT(eth69.egress_bytes[kHeaders]->Value(), kGoodPeers * 20'000.0);
    EXPECT_LT(eth69.egress_bytes[kHeaders]->Value(), kGoodPeers * 192 * 540.0);
    const auto request_bytes = static_cast<uint64_t>(eth69.ingress_bytes[kGetHeaders]->Value());
    EXPECT_EQ(request_bytes % 16, 0u) << request_bytes;
    EXPECT_GE(request_bytes, kGoodPeers * 64u);
    EXPECT_LE(request_bytes, kGoodPeers * 80u);

    auto histogram_count = [](prometheus::Histogram* h) { return h->Collect().histogram.sample_count; };
    EXPECT_EQ(histogram_count(eth69.serve_seconds[kGetHeaders]), kGoodPeers);
    EXPECT_EQ(net.headers_served(db::Store::kAncient).Value(), kGoodPeers * 92);
    EXPECT_EQ(net.headers_served(db::Store::kLevelDb).Value(), kGoodPeers * 100);
    EXPECT_EQ(net.header_requests(eth::ServeKind::kContiguous).Value(), kGoodPeers);
    EXPECT_EQ(net.handshake_error(DisconnectReason::kProtocolBreach).Value(), 1);
    EXPECT_EQ(net.handshake_error(p2p::HandshakeFailure::kTimeout).Value(), 0);
    EXPECT_EQ(net.peers(p2p::Direction::kInbound).Value(), 0);  // all gone again

    // The good peers ask the same range: the first on each worker reads it from both stores, the
    // others get it from that worker's cache of compressed replies.
    const std::string text = registry.scrape();
    auto value = [&](const std::string& series) {
        const size_t at = text.find(series + " ");
        return at == std::string::npos ? -1.0 : std::stod(text.substr(at + series.size() + 1));
    };
    const double misses = value("headerd_reply_cache_requests_total{result=\"miss\"}");
    EXPECT_GE(misses, 1.0) << text;
    EXPECT_LE(misses, static_cast<double>(std::min<size_t>(GetParam(), kGoodPeers))) << text;
    EXPECT_EQ(misses + value("headerd_reply_cache_requests_total{result=\"hit\"}"), kGoodPeers) << text;
    EXPECT_EQ(value("headerd_db_read_seconds_count{store=\"ancient\"}"), misses) << text;
    EXPECT_EQ(value("headerd_db_read_seconds_count{store=\"leveldb\"}"), misses) << text;
    EXPECT_NE(text.find("headerd_build_info{commit=\"0123abcd\",version=\"test\"} 1"), std::string::npos);

    start_server({});  // TearDown's check runs against a server without metrics
}

INSTANTIATE_TEST_SUITE_P(Workers, BadInput, ::testing::Values(size_t{1}, size_t{2}),
                         [](const ::testing::TestParamInfo<size_t>& param) {
                             return "workers" + std::to_string(param.param);
                         });

}  // namespace
}  // namespace headerd
