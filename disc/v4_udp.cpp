#include "disc/v4_udp.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/awaitable.hpp"
#include "core/keccak.hpp"
#include "disc/lookup.hpp"

namespace headerd::disc {
namespace {

namespace asio = boost::asio;
using asio::awaitable;

NodeId id_of(const v4::NodeKey& key) { return keccak256(key); }

KademliaConfig core_config(const V4Config& config) {
    KademliaConfig k;
    k.bootnodes = config.bootnodes;
    k.refresh_interval = config.refresh_interval;
    k.revalidate_interval = config.revalidate_interval;
    k.save_interval = config.save_interval;
    k.max_findnode_failures = config.max_findnode_failures;
    k.log_name = "Discovery";
    k.table = config.table;
    return k;
}

}  // namespace

const char* to_string(V4Drop d) noexcept {
    switch (d) {
        case V4Drop::kUndecodable:
            return "undecodable";
        case V4Drop::kTooBig:
            return "too-big";
        case V4Drop::kExpired:
            return "expired";
        case V4Drop::kUnsolicited:
            return "unsolicited";
        case V4Drop::kUnbonded:
            return "unbonded";
        case V4Drop::kRateLimited:
            return "rate-limited";
        case V4Drop::kCount_:
            break;
    }
    return "unknown";
}

// A request waiting for its reply (or replies: Neighbors may come in several packets).
struct V4Service::Pending {
    NodeId from{};
    boost::asio::ip::address ip;
    v4::PacketType type{};
    // Called with each packet of `type` from (from, ip); returns whether it belonged to this
    // request, and sets `done` when no more replies are expected.
    std::function<bool(const v4::Packet&, bool& done)> match;
    Timer timer;
    std::optional<Hash32> echo;  // the hash of our request that its reply must carry (Ping, ENRRequest)
    bool done{false};
    Pending(asio::io_context& io, Env& env, const Node& n, v4::PacketType t)
        : from(n.id), ip(n.ip), type(t), timer(io, env) {}
};

V4Service::V4Service(asio::io_context& io, const rlpx::PrivateKey& key, Enr record, NodeDb db, V4Config config)
    : V4Service(io, Env::real(), nullptr, std::make_shared<UdpTransport>(io, v4::kMaxPacketSize), key,
                std::move(record), std::move(db), std::move(config)) {}

V4Service::V4Service(asio::io_context& io, Env& env, std::shared_ptr<Transport> transport, const rlpx::PrivateKey& key,
                     Enr record, NodeDb db, V4Config config)
    : V4Service(io, env, std::move(transport), nullptr, key, std::move(record), std::move(db), std::move(config)) {}

V4Service::V4Service(asio::io_context& io, Env& env, std::shared_ptr<Transport> transport,
                     std::shared_ptr<UdpTransport> socket, const rlpx::PrivateKey& key, Enr record, NodeDb db,
                     V4Config config)
    : io_(io),
      env_(env),
      transport_(socket ? socket : std::move(transport)),
      socket_(std::move(socket)),
      key_(key),
      record_(std::move(record)),
      db_(std::move(db)),
      config_(std::move(config)),
      core_(io, env, key.public_key().node_id(), core_config(config_)),
      limiter_(config_.rate_limit) {
    core_.set_db([this] { return &db_; });
    // What a lookup answer named: remembered, and (when it went into the table) a crawler's input.
    core_.on_relayed = [this](const Node& n, Table::AddResult r) {
        db_.seen(n, env_.wall_now(), Origin::kRelayed);
        if (on_found && (r == Table::AddResult::kAdded || r == Table::AddResult::kReplacement)) on_found(n);
    };
}

V4Service::~V4Service() { stop(); }

Outcome<void> V4Service::bind(const udp::endpoint& listen) {
    if (!socket_) return make_error("discovery: this discv4 service does not run on a UDP socket");
    return socket_->bind(listen);
}

V4Service::udp::endpoint V4Service::local_endpoint() const { return transport_->local_endpoint(); }

void V4Service::start() {
    // The transport holds no reference to the service: it ends with its owner.
    transport_->start([weak = weak_from_this()](ByteView datagram, const udp::endpoint& from) {
        if (auto self = weak.lock()) self->handle(datagram, from);
    });
    core_.start(shared_from_this(), *this, config_.passive);
}

void V4Service::stop() {
    if (stopped_) return;
    stopped_ = true;
    transport_->close();
    core_.stop();
    for (auto& p : pending_) p->timer.cancel();
    if (auto saved = db_.save(env_.wall_now()); !saved) {
        spdlog::warn("discovery: node database not saved: {}", saved.error().message);
    }
}

void V4Service::drop(V4Drop why) noexcept { ++stats_.dropped[static_cast<size_t>(why)]; }

uint64_t V4Service::unix_now() const {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(env_.wall_now().time_since_epoch()).count());
}

uint64_t V4Service::expiration() const { return unix_now() + static_cast<uint64_t>(config_.packet_expiration.count()); }

bool V4Service::expired(uint64_t expiration) const { return expiration < unix_now(); }

v4::Endpoint V4Service::our_endpoint() const {
    v4::Endpoint e;
    if (auto ip = record_.ip()) {
        e.ip = asio::ip::address_v4(*ip);
    } else {
        e.ip = asio::ip::address_v4::loopback();  // geth's fallback before it has predicted its address
    }
    e.udp = record_.udp().value_or(local_endpoint().port());
    e.tcp = record_.tcp().value_or(0);
    return e;
}

std::optional<Hash32> V4Service::send(const udp::endpoint& to, const v4::Packet& packet) {
    if (stopped_) return std::nullopt;
    auto encoded = v4::encode(key_, packet);
    if (!encoded) return std::nullopt;
    ++stats_.packets_out[static_cast<size_t>(v4::type_of(packet))];
    stats_.bytes_out += encoded->datagram.size();
    transport_->send(to, encoded->datagram);
    return encoded->hash;
}

void V4Service::send_raw(const udp::endpoint& to, ByteView datagram) {
    if (stopped_) return;
    stats_.bytes_out += datagram.size();
    transport_->send(to, datagram);
}

// ---- incoming ---------------------------------------------------------------------------------

namespace {

// The expiration a packet carries (ENRResponse has none).
std::optional<uint64_t> expiration_of(const v4::Packet& p) {
    return std::visit(
        [](const auto& x) -> std::optional<uint64_t> {
            if constexpr (requires { x.expiration; }) {
                return x.expiration;
            } else {
                return std::nullopt;
            }
        },
        p);
}

// The hash of our request a reply echoes (Pong, ENRResponse); none for the others.
std::optional<Hash32> echo_of(const v4::Packet& p) {
    if (const auto* pong = std::get_if<v4::Pong>(&p)) return pong->ping_hash;
    if (const auto* r = std::get_if<v4::EnrResponse>(&p)) return r->request_hash;
    return std::nullopt;
}

}  // namespace

void V4Service::handle(ByteView datagram, const udp::endpoint& from) {
    stats_.bytes_in += datagram.size();
    if (datagram.size() > v4::kMaxPacketSize) return drop(V4Drop::kTooBig);
    const auto not_v4 = [&] {
        if (on_unhandled) {
            on_unhandled(datagram, from);
        } else {
            drop(V4Drop::kUndecodable);
        }
    };
    // The cheap checks first, each a hash, a look-up or RLP: what fails them is dropped before its
    // signer is recovered (docs/discovery.md, "Flood limits").
    auto frame = v4::frame(datagram);
    if (!frame) return not_v4();
    const auto type = frame->type;
    const bool reply =
        type == v4::PacketType::kPong || type == v4::PacketType::kNeighbors || type == v4::PacketType::kEnrResponse;
    if (reply && !awaiting(type, from.address(), std::nullopt)) return drop(V4Drop::kUnsolicited);
    if (!reply && !limiter_.allow(from.address(), env_.now())) return drop(V4Drop::kRateLimited);
    auto data = v4::decode_data(datagram, *frame);
    if (!data) return not_v4();
    if (auto e = expiration_of(data->packet); e && expired(*e)) return drop(V4Drop::kExpired);
    if (auto echo = echo_of(data->packet); echo && !awaiting(type, from.address(), echo)) {
        return drop(V4Drop::kUnsolicited);
    }
    auto sender = v4::recover_sender(datagram);
    if (!sender) return not_v4();
    const v4::Decoded decoded{std::move(data->packet), *sender, data->hash};
    ++stats_.packets_in[static_cast<size_t>(type)];
    switch (type) {
        case v4::PacketType::kPing:
            return handle_ping(decoded, std::get<v4::Ping>(decoded.packet), from);
        case v4::PacketType::kFindNode:
            return handle_find_node(decoded, std::get<v4::FindNode>(decoded.packet), from);
        case v4::PacketType::kEnrRequest:
            return handle_enr_request(decoded, from);
        case v4::PacketType::kPong:
        case v4::PacketType::kNeighbors:
        case v4::PacketType::kEnrResponse:
            if (!handle_reply(decoded, from)) drop(V4Drop::kUnsolicited);
            return;
    }
}

void V4Service::handle_ping(const v4::Decoded& d, const v4::Ping& p, const udp::endpoint& from) {
    // Answer to where the packet came from, never to the address it claims.
    send(from, v4::Pong{{from.address(), from.port(), p.from.tcp}, d.hash, expiration(), record_.seq()});
    // Where it sent its ping: what it thinks our endpoint is (geth feeds its predictor the same).
    if (on_statement) on_statement(from, udp::endpoint(p.to.ip, p.to.udp));
    const Node n = Node::from_key(d.sender, from.address(), from.port(), p.from.tcp);
    db_.set_last_ping(n, from.address(), env_.wall_now());
    // geth adds a pinging node only once it has answered our own ping (and only after the first
    // refresh, so a flood of pings cannot fill an empty table before our own lookups did). Nor is
    // it reported before: a spoofed ping must not make a crawler ask the spoofed address.
    if (bonded(n.id, n.ip)) {
        add_direct(n);
        return;
    }
    asio::co_spawn(
        io_,
        [self = shared_from_this(), n]() -> awaitable<void> {
            if (co_await self->ping(n)) self->add_direct(n);
        },
        asio::detached);
}

bool V4Service::bonded(const NodeId& id, const boost::asio::ip::address& ip) const {
    return env_.wall_now() - db_.last_pong(id, ip) < config_.bond_expiration;
}

void V4Service::handle_find_node(const v4::Decoded& d, const v4::FindNode& p, const udp::endpoint& from) {
    const NodeId sender = d.sender.node_id();
    if (!bonded(sender, from.address())) return drop(V4Drop::kUnbonded);  // no amplification
    // Verified nodes only while there are any (geth's preferLive): what a lookup merely named is not
    // passed on.
    std::vector<Node> closest = core_.table().closest(id_of(p.target), kFindNodeResults, true);
    std::erase_if(closest, [&](const Node& n) { return !relay_allowed(from.address(), n.ip); });
    for (const auto& reply : neighbors_packets(closest, expiration())) send(from, reply);
}

std::vector<v4::Neighbors> neighbors_packets(std::span<const Node> nodes, uint64_t expiration) {
    std::vector<v4::Neighbors> out;
    size_t sent = 0;
    do {
        v4::Neighbors& reply = out.emplace_back();
        reply.expiration = expiration;
        for (; sent < nodes.size() && reply.nodes.size() < v4::kMaxNeighbors; ++sent) {
            const Node& n = nodes[sent];
            reply.nodes.push_back({{n.ip, n.udp, n.tcp}, n.key.bytes()});
        }
    } while (sent < nodes.size());
    return out;
}

void V4Service::handle_enr_request(const v4::Decoded& d, const udp::endpoint& from) {
    if (!bonded(d.sender.node_id(), from.address())) return drop(V4Drop::kUnbonded);
    send(from, v4::EnrResponse{d.hash, record_});
}

bool V4Service::awaiting(v4::PacketType reply, const boost::asio::ip::address& ip,
                         const std::optional<Hash32>& echo) const {
    return std::ranges::any_of(pending_, [&](const auto& p) {
        return !p->done && p->type == reply && p->ip == ip && (!echo || p->echo == echo);
    });
}

bool V4Service::handle_reply(const v4::Decoded& d, const udp::endpoint& from) {
    const NodeId sender = d.sender.node_id();
    const auto type = v4::type_of(d.packet);
    for (auto& p : pending_) {
        if (p->done || p->from != sender || p->ip != from.address() || p->type != type) continue;
        bool done = false;
        if (!p->match(d.packet, done)) continue;
        if (done) {
            p->done = true;
            p->timer.cancel();
        }
        return true;
    }
    return false;
}

// ---- requests ---------------------------------------------------------------------------------

awaitable<bool> V4Service::wait(std::shared_ptr<Pending> pending) {
    if (stopped_ || pending_.size() >= config_.max_pending) co_return false;
    pending->timer.expires_after(config_.response_timeout);
    pending_.push_back(pending);
    co_await pending->timer.wait();
    pending_.remove(pending);
    if (!pending->done) ++stats_.request_timeouts;
    co_return pending->done;
}

awaitable<std::optional<v4::Pong>> V4Service::ping(Node node) {
    const udp::endpoint to(node.ip, node.udp);
    // The recipient's endpoint with TCP port 0, as the spec and geth write it.
    auto hash = send(to, v4::Ping{4, our_endpoint(), {node.ip, node.udp, 0}, expiration(), record_.seq()});
    if (!hash) co_return std::nullopt;
    std::optional<v4::Pong> pong;
    auto pending = std::make_shared<Pending>(io_, env_, node, v4::PacketType::kPong);
    pending->echo = *hash;
    pending->match = [&, h = *hash](const v4::Packet& packet, bool& done) {
        const auto& p = std::get<v4::Pong>(packet);
        if (p.ping_hash != h) return false;  // not the answer to this ping: no proof from it
        pong = p;
        done = true;
        return true;
    };
    if (!co_await wait(pending)) co_return std::nullopt;
    db_.set_last_pong(node, node.ip, env_.wall_now());
    if (on_statement) on_statement(to, udp::endpoint(pong->to.ip, pong->to.udp));
    co_return pong;
}

awaitable<void> V4Service::ensure_bond(const Node& node) {
    const bool stale = env_.wall_now() - db_.last_ping(node.id, node.ip) > config_.bond_expiration;
    if (!stale && core_.findnode_failures(node.id) <= config_.max_findnode_failures) co_return;
    if (!co_await ping(node)) co_return;
    // The remote pings back when it has no proof of us; give it time before asking.
    Timer t(io_, env_);
    t.expires_after(config_.bond_wait);
    co_await t.wait();
}

std::optional<Node> V4Service::relayed_node(const v4::NeighborNode& n, const boost::asio::ip::address& sender) {
    if (const auto verdict = check_relay(sender, n.endpoint.ip); verdict != AddressVerdict::kAllowed) {
        core_.refused(nullptr, sender, n.endpoint.ip, verdict);
        return std::nullopt;
    }
    if (n.endpoint.udp <= 1024 && !config_.allow_low_ports) return std::nullopt;
    auto key = rlpx::PublicKey::from_bytes(n.key);
    if (!key) return std::nullopt;
    return Node::from_key(*key, n.endpoint.ip, n.endpoint.udp, n.endpoint.tcp);
}

awaitable<std::optional<std::vector<Node>>> V4Service::find_node(Node node, v4::NodeKey target) {
    co_await ensure_bond(node);
    if (!send({node.ip, node.udp}, v4::FindNode{target, expiration()})) co_return std::nullopt;
    std::vector<Node> found;
    size_t received = 0;
    auto pending = std::make_shared<Pending>(io_, env_, node, v4::PacketType::kNeighbors);
    pending->match = [&](const v4::Packet& packet, bool& done) {
        for (const auto& n : std::get<v4::Neighbors>(packet).nodes) {
            if (auto ok = relayed_node(n, node.ip)) found.push_back(*ok);
        }
        received += std::get<v4::Neighbors>(packet).nodes.size();
        done = received >= kFindNodeResults;
        return true;
    };
    const bool complete = co_await wait(pending);
    // A node with fewer than 16 to give sends fewer: a timeout after some answer is an answer.
    const bool answered = complete || received > 0;
    core_.track_findnode(node, answered);
    if (!answered) co_return std::nullopt;
    co_return found;
}

awaitable<std::optional<Enr>> V4Service::request_enr(Node node) {
    co_await ensure_bond(node);
    auto hash = send({node.ip, node.udp}, v4::EnrRequest{expiration()});
    if (!hash) co_return std::nullopt;
    std::optional<Enr> record;
    auto pending = std::make_shared<Pending>(io_, env_, node, v4::PacketType::kEnrResponse);
    pending->echo = *hash;
    pending->match = [&, h = *hash](const v4::Packet& packet, bool& done) {
        const auto& r = std::get<v4::EnrResponse>(packet);
        if (r.request_hash != h) return false;
        done = true;
        // The record must be the node's own: the packet's signer already is (it matched by id).
        if (r.record && r.record->node_id() == node.id) record = r.record;
        return true;
    };
    if (!co_await wait(pending)) co_return std::nullopt;
    if (!record) co_return std::nullopt;
    // geth's RequestENR: an older record than the one held is not taken, and the record's address
    // passes the address policy against where the node answered from, or it is refused (a public
    // node must not point our dials or our pings at loopback, the LAN or a special range).
    if (node.enr && record->seq() < node.enr->seq()) co_return node.enr;
    if (const auto verdict = check_record(node.ip, *record); verdict != AddressVerdict::kAllowed) {
        const auto named = Node::from_enr(*record);
        core_.refused(&node.id, node.ip, named ? named->ip : node.ip, verdict);
        co_return std::nullopt;
    }
    co_return record;
}

void V4Service::add_direct(const Node& n) {
    if (!core_.bootstrapped()) return;
    core_.add(n, Origin::kDirect, 1, "ping");
    if (on_found) on_found(n);  // it bonded: a crawler may ask it for its record
}

LookupQuery V4Service::query_towards(const v4::NodeKey& target) {
    return [self = shared_from_this(), target](Node n) { return self->find_node(std::move(n), target); };
}

awaitable<std::vector<Node>> V4Service::lookup(v4::NodeKey target) {
    co_return co_await core_.lookup(id_of(target), query_towards(target));
}

awaitable<void> V4Service::refresh() { co_await core_.refresh(*this); }

// ---- what the shared core asks of discv4 ------------------------------------------------------

awaitable<std::optional<uint64_t>> V4Service::check(Node n) {
    auto pong = co_await ping(std::move(n));
    if (!pong) co_return std::nullopt;
    co_return pong->enr_seq.value_or(0);
}

awaitable<std::optional<Node>> V4Service::fetch_record(Node n) {
    auto record = co_await request_enr(std::move(n));
    if (!record) co_return std::nullopt;
    co_return Node::from_enr(*record);
}

KademliaProtocol::Target V4Service::lookup_target(bool self) {
    v4::NodeKey key = key_.public_key().bytes();
    if (!self) {
        for (auto& b : key) b = static_cast<uint8_t>(core_.rng()());
    }
    return {id_of(key), query_towards(key)};
}

}  // namespace headerd::disc
