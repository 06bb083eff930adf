#pragma once

// discv5.1 over UDP (devp2p discv5-theory.md), as geth runs it (p2p/discover/v5_udp.go), on the
// socket of the discv4 service: V4Service hands every datagram that is not discv4 to handle()
// (its on_unhandled) and this service sends through V4Service::send_raw (share_socket wires
// both). The wire work is the sans-I/O v5::Codec (disc/v5wire.hpp); this class adds the requests,
// their reply matching and deadlines, the answers, the Kademlia table and lookups.
//
// - Answers PING with PONG (to the packet's source), FINDNODE by distances (0: our record; at most
//   16 records, relay rule, packed into NODES of at most ~1000 bytes of records), TALKREQ with an
//   empty TALKRESP, a packet it cannot decrypt with WHOAREYOU (the pending challenge again while
//   there is one).
// - Flood limits: a WHOAREYOU answer and a handshake's check (ECDH and signature) each take a token
//   of a RateLimiter (disc/rate_limit.hpp: per source IP and global); without one the datagram is
//   dropped unread. WHOAREYOUs answering our requests and messages over a session are not limited.
// - Requests (ping, find_node, talk_req) need the node's record (the key agreement uses its key).
//   Without a session the codec sends a random packet; the WHOAREYOU naming it makes us send the
//   request again as a handshake, and the other requests waiting on that node are sent again over
//   the new session. Replies count only from the node id and IP:port the request went to, with
//   its request id; anything else is dropped as unsolicited. The deadline (response_timeout)
//   starts again when the handshake goes out and after each NODES packet of a longer answer, as
//   geth's: a first contact takes two round trips.
// - A node that completes a handshake with us from the address its record names, or answers one
//   of our requests, goes into the table.
//
// The table, refresh, revalidation and lookups are the shared core's (disc/kademlia.hpp), as
// discv4's; time comes from an Env (disc/env.hpp).
//
// Threading: everything runs on the io_context given (the V4Service's); one thread must run it.
// stats() may be read from any thread. Lifetime: made with std::make_shared; its coroutines hold a
// reference, so after stop() it lives until the io_context has run them to their end.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "disc/env.hpp"
#include "disc/kademlia.hpp"
#include "disc/lookup.hpp"
#include "disc/node_db.hpp"
#include "disc/rate_limit.hpp"
#include "disc/table.hpp"
#include "disc/v5wire.hpp"

namespace headerd::disc {

class V4Service;

struct V5Config {
    std::vector<Node> bootnodes;                          // with their records (enr:), else unusable
    std::chrono::milliseconds response_timeout{700};      // geth: v5wire's respTimeout (V5RespTimeout)
    std::chrono::seconds refresh_interval{30 * 60};       // geth: RefreshInterval (randomised 1/2..1)
    std::chrono::milliseconds revalidate_interval{3000};  // one table node pinged per interval
    bool allow_low_ports = false;                         // geth refuses relayed nodes on UDP <= 1024
    size_t max_pending = 1024;                            // requests waiting for replies at once
    uint32_t max_findnode_failures = 5;                   // geth: maxFindnodeFailures, as discv4
    RateLimitConfig rate_limit;                           // WHOAREYOU answers and handshake checks per source
    TableConfig table;
    v5::CodecOptions codec;
};

// Why an incoming datagram was not acted on.
enum class V5Drop : uint8_t {
    kTooBig = 0,           // over 1280 bytes
    kUndecodable,          // not a discv5 packet (or not for us), or a malformed message
    kUnknownMessage,       // a message type not handled (REGTOPIC, ...)
    kUnsolicited,          // a response to nothing we asked that node (id, IP:port, request id)
    kUnexpectedWhoareyou,  // a WHOAREYOU that names no request we wait for
    kRateLimited,          // a packet to challenge or a handshake over the rate limits: dropped unread
    kCount_,
};
const char* to_string(V5Drop d) noexcept;

// Index of the "handshakes failed" counters: the WireError value (0 unused).
inline constexpr size_t kV5FailReasons = static_cast<size_t>(v5::WireError::kBadChallenge) + 1;

struct V5Stats {
    std::array<std::atomic<uint64_t>, 7> packets_in{};  // messages by type (index 0 unused)
    std::array<std::atomic<uint64_t>, 7> packets_out{};
    std::atomic<uint64_t> whoareyou_in{0};
    std::atomic<uint64_t> whoareyou_out{0};
    std::atomic<uint64_t> handshakes_sent{0};                               // we answered a WHOAREYOU with a handshake
    std::atomic<uint64_t> handshakes_accepted{0};                           // a peer's handshake verified
    std::array<std::atomic<uint64_t>, kV5FailReasons> handshakes_failed{};  // by WireError
    std::array<std::atomic<uint64_t>, static_cast<size_t>(V5Drop::kCount_)> dropped{};
    std::atomic<uint64_t> bytes_in{0};
    std::atomic<uint64_t> bytes_out{0};
    std::atomic<uint64_t> request_timeouts{0};
    std::atomic<uint64_t> challenges{0};  // WHOAREYOUs waiting for their handshake (the codec's count)
};

class V5Service : public std::enable_shared_from_this<V5Service>, private KademliaProtocol {
  public:
    using udp = boost::asio::ip::udp;
    using SendFn = std::function<void(const udp::endpoint&, ByteView)>;

    // `record` is our own ENR, signed by `key`; `send` puts a datagram on the shared socket. `env`
    // (the machine's clock when not given) must outlive the service.
    V5Service(boost::asio::io_context& io, const rlpx::PrivateKey& key, Enr record, SendFn send, V5Config config);
    V5Service(boost::asio::io_context& io, Env& env, const rlpx::PrivateKey& key, Enr record, SendFn send,
              V5Config config);
    ~V5Service() override;
    V5Service(const V5Service&) = delete;
    V5Service& operator=(const V5Service&) = delete;

    // Starts the refresh loop (the first refresh bootstraps from the bootnodes) and revalidation:
    // every revalidate_interval the node checked least recently is pinged; a miss divides its
    // liveness count by 3 and removes it at 0, and a PONG with a higher seq than its record's makes
    // us fetch the newer record (FINDNODE at distance 0).
    void start();
    // Ends every wait; sends nothing more. Idempotent.
    void stop();

    // The node database to keep seeds in and restart from (share_socket gives it discv4's); the
    // function returns null when there is none (any more).
    void set_db(std::function<NodeDb*()> db) { core_.set_db(std::move(db)); }
    // Replaces the send function (share_socket sets it).
    void set_send(SendFn send) { send_ = std::move(send); }
    // What another node says our endpoint is (the recipient of its PONG to our PING): the input of
    // endpoint prediction (disc/endpoint_predictor.hpp).
    std::function<void(const udp::endpoint& from, const udp::endpoint& stated)> on_statement;
    // One datagram from `from` (wire V4Service::on_unhandled here).
    void handle(ByteView datagram, const udp::endpoint& from);

    // Requests; `node` must carry its record. Each ends within response_timeout.
    boost::asio::awaitable<std::optional<v5::Pong>> ping(Node node);
    // The verified records it answered with (at the requested distances, relay and port rules),
    // or nullopt when no NODES came.
    boost::asio::awaitable<std::optional<std::vector<Node>>> find_node(Node node, std::vector<unsigned> distances);
    // The TALKRESP payload (empty: the protocol is unknown to it), or nullopt on timeout.
    boost::asio::awaitable<std::optional<Bytes>> talk_req(Node node, Bytes protocol, Bytes request);
    // An iterative lookup (alpha = 3), asking each node for the distances around the target (geth's
    // lookupDistances): the up to 16 closest nodes found.
    boost::asio::awaitable<std::vector<Node>> lookup(NodeId target);
    // Bootnodes into the table, our own lookup and three random ones.
    boost::asio::awaitable<void> refresh();

    const Table& table() const noexcept { return core_.table(); }
    const TableStats& table_stats() const noexcept { return core_.stats(); }
    const V5Stats& stats() const noexcept { return stats_; }
    const Enr& record() const noexcept { return codec_.local_record(); }
    void set_record(Enr record) { codec_.set_local_record(std::move(record)); }
    const NodeId& id() const noexcept { return codec_.local_id(); }
    bool bootstrapped() const noexcept { return core_.bootstrapped(); }

  private:
    struct Pending;
    // KademliaProtocol: what the shared core asks of discv5.
    boost::asio::awaitable<std::optional<uint64_t>> check(Node n) override;
    boost::asio::awaitable<std::optional<Node>> fetch_record(Node n) override;
    Target lookup_target(bool self) override;
    // Asks a node for the distances around `target` (geth's lookupDistances).
    LookupQuery query_towards(NodeId target);

    void handle_message(const v5::Decoded& d, const udp::endpoint& from);
    void handle_whoareyou(const v5::Whoareyou& w, const udp::endpoint& from);
    void handle_find_node(const Hash32& src, const v5::FindNode& f, const udp::endpoint& from);
    bool handle_reply(const Hash32& src, const v5::Message& m, const udp::endpoint& from);
    // Encodes and sends over the session (or as a random packet); nullopt when nothing was sent.
    std::optional<v5::Encoded> send(const Hash32& id, const udp::endpoint& to, const v5::Message& m);
    void put(const udp::endpoint& to, const v5::Encoded& e);
    void count_out(const v5::Message& m) noexcept;
    // Sends `pending`'s request and waits until it is done or times out; true when done.
    boost::asio::awaitable<bool> request(std::shared_ptr<Pending> pending);
    std::shared_ptr<Pending> make_pending(const Node& node, v5::Message m);
    v5::RequestId new_request_id();
    // Takes a token of the rate limits for a datagram from `from`; false: drop it (counted).
    bool admit(const udp::endpoint& from);
    std::optional<Node> verified_node(ByteView rlp, const Node& from, const std::vector<unsigned>& distances);

    boost::asio::io_context& io_;
    Env& env_;
    v5::Codec codec_;
    SendFn send_;
    V5Config config_;
    RateLimiter limiter_;
    Kademlia core_;
    std::list<std::shared_ptr<Pending>> pending_;
    V5Stats stats_;
    bool stopped_{false};
};

// Shares `v4`'s socket with `v5`: datagrams that are not discv4 go to v5, and v5 sends from
// v4's socket. Neither keeps the other alive (weak references both ways).
void share_socket(const std::shared_ptr<V4Service>& v4, const std::shared_ptr<V5Service>& v5);

}  // namespace headerd::disc
