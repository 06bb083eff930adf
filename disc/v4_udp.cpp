#include "disc/v4_udp.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

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

uint64_t unix_now() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(WallClock::now().time_since_epoch()).count());
}

NodeId id_of(const v4::NodeKey& key) { return keccak256(key); }

TableConfig table_config(const V4Config& config) {
    TableConfig t = config.table;
    t.revalidate_interval = config.revalidate_interval;
    return t;
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
    asio::steady_timer timer;
    std::optional<Hash32> echo;  // the hash of our request that its reply must carry (Ping, ENRRequest)
    bool done{false};
    Pending(asio::io_context& io, const Node& n, v4::PacketType t) : from(n.id), ip(n.ip), type(t), timer(io) {}
};

V4Service::V4Service(asio::io_context& io, const rlpx::PrivateKey& key, Enr record, NodeDb db, V4Config config)
    : io_(io),
      key_(key),
      record_(std::move(record)),
      db_(std::move(db)),
      config_(std::move(config)),
      table_(key.public_key().node_id(), table_config(config_)),
      socket_(io),
      revalidate_timer_(io),
      refresh_timer_(io),
      limiter_(config_.rate_limit),
      rng_(std::random_device{}()) {}

V4Service::~V4Service() { stop(); }

Outcome<void> V4Service::bind(const udp::endpoint& listen) {
    boost::system::error_code ec;
    socket_.open(listen.protocol(), ec);
    if (!ec) socket_.bind(listen, ec);
    if (ec) {
        return make_error(fmt::format("discovery: cannot listen on UDP {}:{}: {}", listen.address().to_string(),
                                      listen.port(), ec.message()));
    }
    return {};
}

V4Service::udp::endpoint V4Service::local_endpoint() const {
    boost::system::error_code ec;
    return socket_.local_endpoint(ec);
}

void V4Service::start() {
    // Each loop holds the service alive until it ends (after stop()).
    asio::co_spawn(
        io_, [self = shared_from_this()]() -> awaitable<void> { co_await self->read_loop(); }, asio::detached);
    if (config_.passive) return;
    asio::co_spawn(
        io_, [self = shared_from_this()]() -> awaitable<void> { co_await self->refresh_loop(); }, asio::detached);
    asio::co_spawn(
        io_, [self = shared_from_this()]() -> awaitable<void> { co_await self->revalidate_loop(); }, asio::detached);
}

void V4Service::stop() {
    if (stopped_) return;
    stopped_ = true;
    boost::system::error_code ec;
    socket_.close(ec);
    revalidate_timer_.cancel();
    refresh_timer_.cancel();
    for (auto& p : pending_) p->timer.cancel();
    if (auto saved = db_.save(WallClock::now()); !saved) {
        spdlog::warn("discovery: node database not saved: {}", saved.error().message);
    }
}

void V4Service::drop(V4Drop why) noexcept { ++stats_.dropped[static_cast<size_t>(why)]; }

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
    boost::system::error_code ec;
    // UDP sends do not block for long; a failed one is a lost packet, which the protocol expects.
    socket_.send_to(asio::buffer(encoded->datagram), to, 0, ec);
    if (ec) spdlog::debug("discovery: send to {}:{} failed: {}", to.address().to_string(), to.port(), ec.message());
    return encoded->hash;
}

void V4Service::send_raw(const udp::endpoint& to, ByteView datagram) {
    if (stopped_) return;
    stats_.bytes_out += datagram.size();
    boost::system::error_code ec;
    socket_.send_to(asio::buffer(datagram.data(), datagram.size()), to, 0, ec);
}

// ---- incoming ---------------------------------------------------------------------------------

awaitable<void> V4Service::read_loop() {
    // Each wake-up reads every datagram waiting, up to kBatch per recvmmsg(2): under a flood this
    // is one readiness wait and one system call per batch instead of two per datagram. Each buffer
    // has one byte more than a packet may have, so an oversized datagram is seen as such.
    constexpr size_t kBatch = 32;
    constexpr size_t kBufferSize = v4::kMaxPacketSize + 1;
    std::vector<uint8_t> buffers(kBatch * kBufferSize);
    std::array<mmsghdr, kBatch> msgs{};
    std::array<iovec, kBatch> iov{};
    std::array<sockaddr_storage, kBatch> addrs{};
    while (!stopped_) {
        auto [ec] = co_await socket_.async_wait(udp::socket::wait_read, kTuple);
        if (stopped_ || ec == asio::error::operation_aborted) break;
        if (ec) continue;
        for (;;) {
            for (size_t i = 0; i < kBatch; ++i) {
                iov[i] = {buffers.data() + i * kBufferSize, kBufferSize};
                msgs[i].msg_hdr = {};
                msgs[i].msg_hdr.msg_name = &addrs[i];
                msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
                msgs[i].msg_hdr.msg_iov = &iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
            }
            const int n = ::recvmmsg(socket_.native_handle(), msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
            // Nothing more (EAGAIN), or an error: ICMP errors surface here on Linux, and the next
            // datagram is unaffected; the next wait tells when there is more.
            if (n <= 0) break;
            for (int i = 0; i < n && !stopped_; ++i) {
                udp::endpoint from;
                const auto len = std::min<size_t>(msgs[i].msg_hdr.msg_namelen, from.capacity());
                std::memcpy(from.data(), &addrs[i], len);
                from.resize(len);
                handle(ByteView{buffers.data() + static_cast<size_t>(i) * kBufferSize, msgs[i].msg_len}, from);
            }
            if (stopped_ || static_cast<size_t>(n) < kBatch) break;
        }
    }
}

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
    if (!reply && !limiter_.allow(from.address(), Clock::now())) return drop(V4Drop::kRateLimited);
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
    const auto now = WallClock::now();
    db_.set_last_ping(n, from.address(), now);
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
    return WallClock::now() - db_.last_pong(id, ip) < config_.bond_expiration;
}

void V4Service::handle_find_node(const v4::Decoded& d, const v4::FindNode& p, const udp::endpoint& from) {
    const NodeId sender = d.sender.node_id();
    if (!bonded(sender, from.address())) return drop(V4Drop::kUnbonded);  // no amplification
    // Verified nodes only while there are any (geth's preferLive): what a lookup merely named is not
    // passed on.
    std::vector<Node> closest = table_.closest(id_of(p.target), kFindNodeResults, true);
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
    co_await pending->timer.async_wait(kTuple);
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
    auto pending = std::make_shared<Pending>(io_, node, v4::PacketType::kPong);
    pending->echo = *hash;
    pending->match = [&, h = *hash](const v4::Packet& packet, bool& done) {
        const auto& p = std::get<v4::Pong>(packet);
        if (p.ping_hash != h) return false;  // not the answer to this ping: no proof from it
        pong = p;
        done = true;
        return true;
    };
    if (!co_await wait(pending)) co_return std::nullopt;
    db_.set_last_pong(node, node.ip, WallClock::now());
    if (on_statement) on_statement(to, udp::endpoint(pong->to.ip, pong->to.udp));
    co_return pong;
}

awaitable<void> V4Service::ensure_bond(const Node& node) {
    const bool stale = WallClock::now() - db_.last_ping(node.id, node.ip) > config_.bond_expiration;
    if (!stale && db_.findnode_failures(node.id) <= config_.max_findnode_failures) co_return;
    if (!co_await ping(node)) co_return;
    // The remote pings back when it has no proof of us; give it time before asking.
    asio::steady_timer t(io_, config_.bond_wait);
    co_await t.async_wait(kTuple);
}

std::optional<Node> V4Service::relayed_node(const v4::NeighborNode& n, const boost::asio::ip::address& sender) {
    if (const auto verdict = check_relay(sender, n.endpoint.ip); verdict != AddressVerdict::kAllowed) {
        ++stats_.refused_relays;
        spdlog::debug("Discovery node refused                   from={} addr={} reason=\"{}\"", sender.to_string(),
                      n.endpoint.ip.to_string(), to_string(verdict));
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
    auto pending = std::make_shared<Pending>(io_, node, v4::PacketType::kNeighbors);
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
    if (!complete && received == 0) {
        const uint32_t fails = db_.findnode_failures(node.id) + 1;
        db_.set_findnode_failures(node.id, fails);
        // geth's rule: drop a node that keeps failing, unless its bucket is nearly empty (which
        // keeps a small network from losing its last contacts).
        if (fails >= config_.max_findnode_failures && table_.bucket_size_of(node.id) >= config_.table.bucket_size / 4) {
            if (table_.remove(node.id)) log_table("evicted", node, "findnode failures");
        }
        co_return std::nullopt;
    }
    db_.set_findnode_failures(node.id, 0);
    co_return found;
}

awaitable<std::optional<Enr>> V4Service::request_enr(Node node) {
    co_await ensure_bond(node);
    auto hash = send({node.ip, node.udp}, v4::EnrRequest{expiration()});
    if (!hash) co_return std::nullopt;
    std::optional<Enr> record;
    auto pending = std::make_shared<Pending>(io_, node, v4::PacketType::kEnrResponse);
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
        ++stats_.refused_relays;
        spdlog::debug("Discovery record refused                 id={} from={} reason=\"{}\"", short_id(node.id),
                      node.ip.to_string(), to_string(verdict));
        co_return std::nullopt;
    }
    co_return record;
}

void V4Service::note_table() noexcept {
    stats_.table_size = table_.size();
    const auto sizes = table_.bucket_sizes();
    for (size_t i = 0; i < sizes.size(); ++i) stats_.bucket_sizes[i] = sizes[i];
    stats_.table_replacements = table_.replacement_count();
}

void V4Service::log_table(const char* what, const Node& n, std::string_view source) const {
    spdlog::debug("Discovery table: {:<8}                  id={} addr={}:{} source={} table={}", what, short_id(n.id),
                  n.ip.to_string(), n.udp, source, table_.size());
}

void V4Service::note_add(Table::AddResult r, const Node& n, std::string_view source) {
    switch (r) {
        case Table::AddResult::kAdded:
            log_table("added", n, source);
            break;
        case Table::AddResult::kMoved:
            ++stats_.moves;
            log_table("moved", n, source);
            break;
        case Table::AddResult::kStale:
            ++stats_.refused_moves;
            log_table("refused", n, source);
            break;
        case Table::AddResult::kIpLimit:
            log_table("ip-limit", n, source);
            break;
        default:
            break;
    }
    note_table();
}

void V4Service::add_direct(const Node& n) {
    if (!init_done_) return;
    const auto r = table_.add(n, Clock::now(), Origin::kDirect, 1);
    note_add(r, n, "ping");
    if (on_found) on_found(n);  // it bonded: a crawler may ask it for its record
}

void V4Service::add_found(const Node& n) {
    if (n.id == table_.self()) return;  // others list us too
    db_.seen(n, WallClock::now(), Origin::kRelayed);
    const auto r = table_.add(n, Clock::now(), Origin::kRelayed, 0);  // unverified until it answers a ping
    note_add(r, n, "neighbors");
    if (on_found && (r == Table::AddResult::kAdded || r == Table::AddResult::kReplacement)) on_found(n);
}

awaitable<std::vector<Node>> V4Service::lookup(v4::NodeKey target) {
    const auto started = Clock::now();
    const NodeId target_id = id_of(target);
    std::vector<Node> seeds = table_.closest(target_id, kLookupResults);
    if (seeds.empty()) seeds = config_.bootnodes;
    LookupHooks hooks;
    hooks.query = [self = shared_from_this(), target](Node n) { return self->find_node(std::move(n), target); };
    hooks.on_found = [self = shared_from_this()](const Node& n) { self->add_found(n); };
    hooks.stopped = [self = shared_from_this()] { return self->stopped_; };
    auto result = co_await iterative_lookup(io_, table_.self(), target_id, seeds, std::move(hooks));
    ++stats_.lookups;
    stats_.lookup_micros +=
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count());
    co_return result;
}

awaitable<void> V4Service::refresh() {
    for (const auto& n : db_.seeds(kSeedCount, WallClock::now(), rng_)) {
        note_add(table_.add(n, Clock::now(), Origin::kRelayed, 0), n, "seed");
    }
    for (const auto& n : config_.bootnodes) note_add(table_.add(n, Clock::now(), Origin::kRelayed, 0), n, "bootnode");
    co_await lookup(key_.public_key().bytes());
    for (int i = 0; i < 3 && !stopped_; ++i) {
        v4::NodeKey random;
        for (auto& b : random) b = static_cast<uint8_t>(rng_());
        co_await lookup(random);
    }
    init_done_ = true;
    note_table();
}

awaitable<void> V4Service::refresh_loop() {
    while (!stopped_) {
        co_await refresh();
        // stop() during the refresh cancelled a timer not yet armed: arming it now would keep the
        // io_context (and a stopping serve or discover) running until the next refresh is due.
        if (stopped_) break;
        refresh_timer_.expires_after(refresh_delay(config_.refresh_interval, rng_));
        co_await refresh_timer_.async_wait(kTuple);
    }
}

awaitable<void> V4Service::revalidate_loop() {
    auto last_save = Clock::now();
    while (!stopped_) {
        // The table says when its next revalidation list is due (geth's randomised fast and slow
        // lists); nodes added while we sleep wait at most one interval.
        revalidate_timer_.expires_at(std::min(table_.next_revalidation(), Clock::now() + config_.revalidate_interval));
        co_await revalidate_timer_.async_wait(kTuple);
        if (stopped_) break;
        for (const Node& n : table_.due_for_revalidation(Clock::now())) {
            co_await revalidate(n);
            if (stopped_) co_return;
        }
        if (Clock::now() - last_save >= config_.save_interval) {
            last_save = Clock::now();
            if (auto saved = db_.save(WallClock::now()); !saved) {
                spdlog::warn("discovery: node database not saved: {}", saved.error().message);
            }
        }
    }
}

awaitable<void> V4Service::revalidate(Node n) {
    auto pong = co_await ping(n);
    if (stopped_) co_return;
    if (table_.revalidated(n.id, pong.has_value(), Clock::now())) log_table("evicted", n, "revalidation");
    const Table::Entry* e = table_.find(n.id);
    // geth keeps a node that passed more than 5 checks as a seed for the next start.
    if (e && e->liveness_checks > 5) db_.set_liveness(n.id, e->liveness_checks);
    // A higher seq in the Pong means a newer record: fetch it (EIP-868). It must be newer than the
    // one held to change anything (request_enr checks its address).
    if (pong && pong->enr_seq && e && (!e->node.enr || e->node.enr->seq() < *pong->enr_seq)) {
        Node held = e->node;
        if (auto record = co_await request_enr(std::move(held))) {
            if (auto updated = Node::from_enr(*record)) {
                note_add(table_.add(*updated, Clock::now(), Origin::kRelayed, 0), *updated, "record");
            }
        }
    }
    note_table();
}

}  // namespace headerd::disc
