#pragma once

// discv4 over UDP (devp2p discv4.md, EIP-868), as geth runs it (p2p/discover/v4_udp.go): answers
// Ping, FindNode and ENRRequest, sends its own requests with a reply matcher and a deadline, keeps
// the Kademlia table (disc/table.hpp) filled by lookups and checked by revalidation, and remembers
// nodes in the node database (disc/node_db.hpp).
//
// The rules that keep it from being used against others or itself:
// - FindNode and ENRRequest are answered only after an endpoint proof: the sender answered our
//   ping, from that IP, within bond_expiration (geth: 24 h). A spoofed request gets nothing, so a
//   small packet never makes a large one go to a victim.
// - Replies count only when they answer a request we sent to that node id and IP (Pong by the
//   ping's hash, ENRResponse by the request's hash); anything else is dropped as unsolicited.
// - Packets whose expiration has passed are dropped; at most max_pending requests wait at once.
// - The signer of a packet (a secp256k1 recovery) is found only when the packet could matter: a
//   reply only when a request of its type to that IP is waiting (a Pong or ENRResponse only with
//   the hash of that request), a request only within the rate limits of disc/rate_limit.hpp, and
//   no packet past its expiration. A flood of junk, signed or not, then costs little CPU.
// - Nodes others tell us about pass geth's relay rule (no loopback or LAN nodes from the outside)
//   and have a UDP port above 1024.
// Datagrams that are not discv4 go to on_unhandled (the discv5 service shares the socket, as in
// geth).
//
// The table, refresh, revalidation and lookups are the shared core's (disc/kademlia.hpp); this
// class is the discv4 wire around it. Time and datagrams come from an Env and a Transport
// (disc/env.hpp, disc/transport.hpp): the machine's clock and a UDP socket, or virtual time and a
// simulated network.
//
// Threading: everything runs on the io_context given; one thread must run it. stats() may be read
// from any thread. Lifetime: made with std::make_shared; its coroutines hold a reference, so after
// stop() it lives until the io_context has run them to their end.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "core/result.hpp"
#include "disc/env.hpp"
#include "disc/kademlia.hpp"
#include "disc/node_db.hpp"
#include "disc/rate_limit.hpp"
#include "disc/table.hpp"
#include "disc/transport.hpp"
#include "disc/v4wire.hpp"

namespace headerd::disc {

struct V4Config {
    std::vector<Node> bootnodes;
    std::chrono::milliseconds response_timeout{500};      // geth: respTimeout
    std::chrono::seconds bond_expiration{24 * 3600};      // geth: bondExpiration
    std::chrono::seconds packet_expiration{20};           // geth: expiration
    std::chrono::milliseconds bond_wait{500};             // after our ping, for the remote's ping back
    std::chrono::milliseconds revalidate_interval{3000};  // one table node pinged per interval
    std::chrono::seconds refresh_interval{30 * 60};       // geth: RefreshInterval (randomised 1/2..1)
    std::chrono::seconds save_interval{5 * 60};           // node database written this often
    uint32_t max_findnode_failures = 5;                   // geth: maxFindnodeFailures
    bool allow_low_ports = false;                         // geth refuses relayed nodes on UDP <= 1024
    size_t max_pending = 1024;                            // requests waiting for replies at once
    // Only the socket for discv5 (--discovery v5 alone): answers discv4 but runs no refresh, no
    // revalidation and no lookups of its own (and so never contacts the node database's seeds).
    bool passive = false;
    RateLimitConfig rate_limit;  // Ping, FindNode, ENRRequest per source
    TableConfig table;
};

// Why an incoming packet was not acted on.
enum class V4Drop : uint8_t {
    kUndecodable = 0,  // not discv4 (passed to on_unhandled when set)
    kTooBig,           // over 1280 bytes
    kExpired,          // its expiration has passed
    kUnsolicited,      // a reply to nothing we asked that node
    kUnbonded,         // FindNode or ENRRequest without an endpoint proof
    kRateLimited,      // a request over its source's or the global rate, dropped before its signature check
    kCount_,
};
const char* to_string(V4Drop d) noexcept;

struct V4Stats {
    std::array<std::atomic<uint64_t>, 7> packets_in{};  // by packet type (index 0 unused)
    std::array<std::atomic<uint64_t>, 7> packets_out{};
    std::array<std::atomic<uint64_t>, static_cast<size_t>(V4Drop::kCount_)> dropped{};
    std::atomic<uint64_t> bytes_in{0};
    std::atomic<uint64_t> bytes_out{0};
    std::atomic<uint64_t> request_timeouts{0};
};

class V4Service : public std::enable_shared_from_this<V4Service>, private KademliaProtocol {
  public:
    using udp = boost::asio::ip::udp;

    // `record` is our own ENR (answered to ENRRequest, its seq sent in Ping and Pong). On a UDP
    // socket (bind() it) and the machine's clock.
    V4Service(boost::asio::io_context& io, const rlpx::PrivateKey& key, Enr record, NodeDb db, V4Config config);
    // On another transport and clock (a simulated network); `env` must outlive the service.
    V4Service(boost::asio::io_context& io, Env& env, std::shared_ptr<Transport> transport, const rlpx::PrivateKey& key,
              Enr record, NodeDb db, V4Config config);
    ~V4Service() override;
    V4Service(const V4Service&) = delete;
    V4Service& operator=(const V4Service&) = delete;

    // Binds the UDP socket (an error names the address; and it is an error on another transport).
    Outcome<void> bind(const udp::endpoint& listen);
    udp::endpoint local_endpoint() const;
    // Starts reading, revalidating and refreshing (the first refresh bootstraps from the node
    // database's seeds and the bootnodes). Call after bind().
    void start();
    // Closes the socket, ends every wait and saves the node database. Idempotent.
    void stop();

    // Requests; each ends within response_timeout (plus bond_wait when a bond is made first).
    // The Pong, or nullopt on timeout.
    boost::asio::awaitable<std::optional<v4::Pong>> ping(Node node);
    // The nodes it answered with (after relay and port checks), or nullopt when it did not answer.
    boost::asio::awaitable<std::optional<std::vector<Node>>> find_node(Node node, v4::NodeKey target);
    // Its record: signed by the node's key, for its id; nullopt otherwise.
    boost::asio::awaitable<std::optional<Enr>> request_enr(Node node);
    // An iterative lookup (alpha = 3 queries at a time): the up to 16 closest nodes found to target.
    boost::asio::awaitable<std::vector<Node>> lookup(v4::NodeKey target);
    // Our own lookup and three random ones, as geth refreshes; seeds come from the database and
    // the bootnodes.
    boost::asio::awaitable<void> refresh();

    const Table& table() const noexcept { return core_.table(); }
    const TableStats& table_stats() const noexcept { return core_.stats(); }
    const NodeDb& db() const noexcept { return db_; }
    // The node database discv5 shares (share_socket): geth keeps one for both protocols.
    NodeDb& db() noexcept { return db_; }
    const V4Stats& stats() const noexcept { return stats_; }
    const Enr& record() const noexcept { return record_; }
    void set_record(Enr record) { record_ = std::move(record); }
    bool bootstrapped() const noexcept { return core_.bootstrapped(); }

    // Sends a datagram of another protocol from our socket (discv5 shares the port, as in geth).
    void send_raw(const udp::endpoint& to, ByteView datagram);

    // Datagrams that do not decode as discv4 (the discv5 service takes them).
    std::function<void(ByteView, const udp::endpoint&)> on_unhandled;
    // Every node that bonded with us (answered our ping) or that a FindNode answer put into the
    // table or its replacements (a crawler's input); never a node that only pinged us.
    std::function<void(const Node&)> on_found;
    // What another node says our endpoint is (the `to` of its Ping, and of its Pong to ours): the
    // input of endpoint prediction (disc/endpoint_predictor.hpp).
    std::function<void(const udp::endpoint& from, const udp::endpoint& stated)> on_statement;

  private:
    struct Pending;
    V4Service(boost::asio::io_context& io, Env& env, std::shared_ptr<Transport> transport,
              std::shared_ptr<UdpTransport> socket, const rlpx::PrivateKey& key, Enr record, NodeDb db,
              V4Config config);
    // KademliaProtocol: what the shared core asks of discv4.
    boost::asio::awaitable<std::optional<uint64_t>> check(Node n) override;
    boost::asio::awaitable<std::optional<Node>> fetch_record(Node n) override;
    Target lookup_target(bool self) override;
    // Asks a node for the nodes closest to `target`'s hash.
    LookupQuery query_towards(const v4::NodeKey& target);

    void handle(ByteView datagram, const udp::endpoint& from);
    void handle_ping(const v4::Decoded& d, const v4::Ping& p, const udp::endpoint& from);
    void handle_find_node(const v4::Decoded& d, const v4::FindNode& p, const udp::endpoint& from);
    void handle_enr_request(const v4::Decoded& d, const udp::endpoint& from);
    bool handle_reply(const v4::Decoded& d, const udp::endpoint& from);
    // Whether a request whose reply has this type waits for an answer from ip (carrying `echo`, the
    // hash of our request, when given).
    bool awaiting(v4::PacketType reply, const boost::asio::ip::address& ip, const std::optional<Hash32>& echo) const;
    bool bonded(const NodeId& id, const boost::asio::ip::address& ip) const;
    boost::asio::awaitable<void> ensure_bond(const Node& node);
    std::optional<Hash32> send(const udp::endpoint& to, const v4::Packet& packet);
    v4::Endpoint our_endpoint() const;
    uint64_t unix_now() const;
    uint64_t expiration() const;
    bool expired(uint64_t expiration) const;
    void drop(V4Drop why) noexcept;
    // Waits for replies matched by `pending` until it is done or times out; true when done.
    boost::asio::awaitable<bool> wait(std::shared_ptr<Pending> pending);
    std::optional<Node> relayed_node(const v4::NeighborNode& n, const boost::asio::ip::address& sender);
    // A node that answered our ping, into the table once the first refresh is done.
    void add_direct(const Node& n);

    boost::asio::io_context& io_;
    Env& env_;
    std::shared_ptr<Transport> transport_;
    std::shared_ptr<UdpTransport> socket_;  // the transport when it is a UDP socket (for bind())
    rlpx::PrivateKey key_;
    Enr record_;
    NodeDb db_;
    V4Config config_;
    Kademlia core_;
    std::list<std::shared_ptr<Pending>> pending_;
    RateLimiter limiter_;
    V4Stats stats_;
    bool stopped_{false};
};

// A FindNode answer: `nodes` in Neighbors packets of at most kMaxNeighbors each, and one empty
// packet when there are none (so the asker stops waiting).
std::vector<v4::Neighbors> neighbors_packets(std::span<const Node> nodes, uint64_t expiration);

}  // namespace headerd::disc
