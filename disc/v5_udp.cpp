#include "disc/v5_udp.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/awaitable.hpp"
#include "disc/lookup.hpp"
#include "disc/v4_udp.hpp"

namespace headerd::disc {
namespace {

namespace asio = boost::asio;
using asio::awaitable;
using udp = asio::ip::udp;

// geth: bucketSize records per FINDNODE answer, lookupRequestLimit distances per lookup query,
// and the ~1000 bytes of records one NODES packet carries.
constexpr size_t kLookupDistances = 3;
constexpr size_t kNodesRecordBytes = 1000;
constexpr unsigned kMaxDistance = 256;

// One form per address: an IPv4-mapped IPv6 address is the IPv4 address.
udp::endpoint normalized(const udp::endpoint& e) {
    const auto a = e.address();
    if (a.is_v6() && a.to_v6().is_v4_mapped()) {
        return {asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()), e.port()};
    }
    return e;
}

udp::endpoint from_v5(const v5::Endpoint& e) {
    if (e.v4) return {asio::ip::address_v4({e.ip[0], e.ip[1], e.ip[2], e.ip[3]}), e.port};
    return {asio::ip::address_v6(e.ip), e.port};
}

v5::Endpoint to_v5(const udp::endpoint& e) {
    const auto a = e.address();
    if (a.is_v4()) return v5::Endpoint::ipv4(a.to_v4().to_bytes(), e.port());
    return v5::Endpoint::ipv6(a.to_v6().to_bytes(), e.port());
}

// geth's lookupDistances: the target's distance from dest, then alternately one more and one
// less, three in all, within 1..256.
std::vector<unsigned> lookup_distances(const NodeId& target, const NodeId& dest) {
    const int td = log_distance(target, dest);
    std::vector<unsigned> out{static_cast<unsigned>(td)};
    for (int i = 1; out.size() < kLookupDistances && i <= 256; ++i) {
        if (td + i <= 256) out.push_back(static_cast<unsigned>(td + i));
        if (td - i > 0 && out.size() < kLookupDistances) out.push_back(static_cast<unsigned>(td - i));
    }
    return out;
}

KademliaConfig core_config(const V5Config& config) {
    KademliaConfig k;
    k.bootnodes = config.bootnodes;
    k.refresh_interval = config.refresh_interval;
    k.revalidate_interval = config.revalidate_interval;
    k.max_findnode_failures = config.max_findnode_failures;
    k.needs_record = true;
    k.log_name = "Discovery v5";
    k.table = config.table;
    return k;
}

// The codec's challenges and sessions age on the service's clock.
v5::CodecOptions codec_options(v5::CodecOptions options, Env& env) {
    if (!options.hooks.now) options.hooks.now = [&env] { return env.now(); };
    return options;
}

}  // namespace

const char* to_string(V5Drop d) noexcept {
    switch (d) {
        case V5Drop::kTooBig:
            return "too-big";
        case V5Drop::kUndecodable:
            return "undecodable";
        case V5Drop::kUnknownMessage:
            return "unknown-message";
        case V5Drop::kUnsolicited:
            return "unsolicited";
        case V5Drop::kUnexpectedWhoareyou:
            return "unexpected-whoareyou";
        case V5Drop::kRateLimited:
            return "rate-limited";
        case V5Drop::kCount_:
            break;
    }
    return "unknown";
}

// A request waiting for its response (or responses: NODES may come in several packets).
struct V5Service::Pending {
    Node node;
    udp::endpoint to;
    v5::Message request;
    v5::MessageType reply_type{};
    v5::Nonce nonce{};          // of the last packet that carried the request
    bool awaiting_whoareyou{};  // it went as a random packet: the request itself is not sent yet
    bool handshake_sent{};
    // Called with each response of reply_type with our request id from (node, to); sets `done`
    // when no more are expected.
    std::function<void(const v5::Message&, bool& done)> match;
    Timer timer;
    bool done{false};
    Pending(asio::io_context& io, Env& env, Node n, v5::Message m)
        : node(std::move(n)), to(normalized({node.ip, node.udp})), request(std::move(m)), timer(io, env) {}
};

V5Service::V5Service(asio::io_context& io, const rlpx::PrivateKey& key, Enr record, SendFn send, V5Config config)
    : V5Service(io, Env::real(), key, std::move(record), std::move(send), std::move(config)) {}

V5Service::V5Service(asio::io_context& io, Env& env, const rlpx::PrivateKey& key, Enr record, SendFn send,
                     V5Config config)
    : io_(io),
      env_(env),
      codec_(key, std::move(record), codec_options(config.codec, env)),
      send_(std::move(send)),
      config_(std::move(config)),
      limiter_(config_.rate_limit),
      core_(io, env, key.public_key().node_id(), core_config(config_)) {}

V5Service::~V5Service() { stop(); }

void V5Service::start() { core_.start(shared_from_this(), *this); }

void V5Service::stop() {
    if (stopped_) return;
    stopped_ = true;
    core_.stop();
    for (auto& p : pending_) p->timer.cancel();
}

// ---- outgoing ---------------------------------------------------------------------------------

void V5Service::put(const udp::endpoint& to, const v5::Encoded& e) {
    stats_.bytes_out += e.datagram.size();
    if (send_) send_(to, e.datagram);
}

void V5Service::count_out(const v5::Message& m) noexcept {
    ++stats_.packets_out[static_cast<size_t>(v5::message_type(m))];
}

std::optional<v5::Encoded> V5Service::send(const Hash32& id, const udp::endpoint& to, const v5::Message& m) {
    if (stopped_) return std::nullopt;
    auto encoded = codec_.encode(id, to_v5(to), m);
    if (!encoded) {
        spdlog::debug("discv5: cannot encode a message to {}:{}: {}", to.address().to_string(), to.port(),
                      encoded.error().message());
        return std::nullopt;
    }
    put(to, *encoded);
    if (!encoded->random_packet) count_out(m);
    return *encoded;
}

// ---- incoming ---------------------------------------------------------------------------------

void V5Service::handle(ByteView datagram, const udp::endpoint& source) {
    if (stopped_) return;
    stats_.bytes_in += datagram.size();
    if (datagram.size() > v5::kMaxPacketSize) {
        ++stats_.dropped[static_cast<size_t>(V5Drop::kTooBig)];
        return;
    }
    const udp::endpoint from = normalized(source);
    // A handshake's check costs an ECDH and a signature verification: within the limits only.
    if (codec_.packet_kind(datagram) == v5::PacketKind::kHandshake && !admit(from)) return;
    auto decoded = codec_.decode(datagram, to_v5(from));
    stats_.challenges = codec_.challenge_count();  // decode drops the expired and the answered ones
    if (!decoded) {
        const auto& ec = decoded.error();
        using v5::WireError;
        if (ec.category() == v5::wire_category()) {
            switch (static_cast<WireError>(ec.value())) {
                case WireError::kUnexpectedHandshake:
                case WireError::kBadEphemeralKey:
                case WireError::kNoRecord:
                case WireError::kBadRecord:
                case WireError::kRecordIdMismatch:
                case WireError::kBadIdSignature:
                case WireError::kDecryptFailed:
                    ++stats_.handshakes_failed[static_cast<size_t>(ec.value())];
                    return;
                case WireError::kUnknownMessageType:
                    ++stats_.dropped[static_cast<size_t>(V5Drop::kUnknownMessage)];
                    return;
                default:
                    break;
            }
        }
        ++stats_.dropped[static_cast<size_t>(V5Drop::kUndecodable)];
        return;
    }
    if (const auto* w = std::get_if<v5::Whoareyou>(&decoded->packet)) {
        ++stats_.whoareyou_in;
        handle_whoareyou(*w, from);
        return;
    }
    if (const auto* u = std::get_if<v5::Unknown>(&decoded->packet)) {
        // No session: challenge it, within the limits (a WHOAREYOU costs little, but each one makes
        // a challenge to keep and invites a handshake to check). The record we know of it lets it
        // leave its own out.
        if (!admit(from)) return;
        const Table::Entry* known = core_.table().find(decoded->src_id);
        const Enr* record = known && known->node.enr ? &*known->node.enr : nullptr;
        auto challenge = codec_.encode_whoareyou(decoded->src_id, to_v5(from), u->nonce, record);
        if (challenge) {
            ++stats_.whoareyou_out;
            put(from, *challenge);
        }
        stats_.challenges = codec_.challenge_count();
        return;
    }
    handle_message(*decoded, from);
}

void V5Service::handle_message(const v5::Decoded& d, const udp::endpoint& from) {
    if (d.record) {
        ++stats_.handshakes_accepted;
        // In the table only from the address its record names: a record alone proves nothing of
        // where the node can be reached.
        if (auto n = Node::from_enr(*d.record); n && normalized({n->ip, n->udp}) == from) {
            core_.add(*n, Origin::kDirect, 1, "handshake");
        }
    }
    const auto& m = std::get<v5::Message>(d.packet);
    ++stats_.packets_in[static_cast<size_t>(v5::message_type(m))];
    std::visit(
        [&](const auto& msg) {
            using T = std::decay_t<decltype(msg)>;
            if constexpr (std::is_same_v<T, v5::Ping>) {
                // The recipient is where the packet came from, never what the peer claims.
                send(d.src_id, from, v5::Pong{msg.req_id, record().seq(), to_v5(from)});
            } else if constexpr (std::is_same_v<T, v5::FindNode>) {
                handle_find_node(d.src_id, msg, from);
            } else if constexpr (std::is_same_v<T, v5::TalkReq>) {
                send(d.src_id, from, v5::TalkResp{msg.req_id, {}});  // no TALK protocol is served
            } else {
                if (!handle_reply(d.src_id, m, from)) ++stats_.dropped[static_cast<size_t>(V5Drop::kUnsolicited)];
            }
        },
        m);
}

void V5Service::handle_whoareyou(const v5::Whoareyou& w, const udp::endpoint& from) {
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& p) {
        return !p->done && !p->handshake_sent && p->to == from && p->nonce == w.request_nonce;
    });
    if (it == pending_.end() || !(*it)->node.enr) {
        ++stats_.dropped[static_cast<size_t>(V5Drop::kUnexpectedWhoareyou)];
        return;
    }
    const auto p = *it;
    auto hs = codec_.encode_handshake(p->node.id, to_v5(from), p->request, w, *p->node.enr);
    if (!hs) {
        const auto& ec = hs.error();
        const bool wire = ec.category() == v5::wire_category() && static_cast<size_t>(ec.value()) < kV5FailReasons;
        ++stats_.handshakes_failed[wire ? static_cast<size_t>(ec.value()) : 0];
        return;
    }
    p->handshake_sent = true;
    p->awaiting_whoareyou = false;
    p->nonce = hs->nonce;
    ++stats_.handshakes_sent;
    put(from, *hs);
    count_out(p->request);
    // The request goes only now: a whole response_timeout for its answer (geth re-arms too).
    p->timer.expires_after(config_.response_timeout);
    // The other requests to this node that went as random packets: over the new session now.
    for (auto& other : pending_) {
        if (other == p || other->done || !other->awaiting_whoareyou || other->to != from ||
            other->node.id != p->node.id) {
            continue;
        }
        if (auto e = send(other->node.id, other->to, other->request)) {
            other->nonce = e->nonce;
            other->awaiting_whoareyou = e->random_packet;
            other->timer.expires_after(config_.response_timeout);
        }
    }
}

void V5Service::handle_find_node(const Hash32& src, const v5::FindNode& f, const udp::endpoint& from) {
    std::vector<unsigned> distances;
    for (uint64_t d : f.distances) {
        if (d > kMaxDistance) continue;
        const auto u = static_cast<unsigned>(d);
        if (std::find(distances.begin(), distances.end(), u) == distances.end()) distances.push_back(u);
    }
    std::vector<Bytes> records;
    if (std::find(distances.begin(), distances.end(), 0u) != distances.end()) {
        const auto ours = record().encoded();
        records.emplace_back(ours.begin(), ours.end());
    }
    // Only nodes that answered us or completed a handshake, in random order, as geth
    // (appendBucketNodes with checkLive, shuffled): a node a lookup merely named is not passed on.
    for (const Node& n : core_.table().at_distances(distances, core_.table().size())) {
        if (records.size() >= kFindNodeResults) break;
        if (!n.enr || !relay_allowed(from.address(), n.ip)) continue;
        const auto rlp = n.enr->encoded();
        records.emplace_back(rlp.begin(), rlp.end());
    }
    // Packed into messages of at most ~1000 bytes of records; an empty answer is one message.
    std::vector<v5::Nodes> messages;
    size_t size = 0;
    for (auto& r : records) {
        if (messages.empty() || size + r.size() > kNodesRecordBytes) {
            messages.push_back(v5::Nodes{f.req_id, 0, {}});
            size = 0;
        }
        size += r.size();
        messages.back().records.push_back(std::move(r));
    }
    if (messages.empty()) messages.push_back(v5::Nodes{f.req_id, 0, {}});
    for (auto& m : messages) {
        m.total = static_cast<uint8_t>(messages.size());
        send(src, from, m);
    }
}

bool V5Service::handle_reply(const Hash32& src, const v5::Message& m, const udp::endpoint& from) {
    const auto type = v5::message_type(m);
    const auto& req_id = v5::request_id(m);
    for (auto& p : pending_) {
        if (p->done || p->node.id != src || p->to != from || p->reply_type != type ||
            v5::request_id(p->request) != req_id) {
            continue;
        }
        bool done = false;
        p->match(m, done);
        if (done) {
            p->done = true;
            p->timer.cancel();
        } else {
            p->timer.expires_after(config_.response_timeout);  // more NODES to come: a deadline each
        }
        return true;
    }
    return false;
}

// ---- requests ---------------------------------------------------------------------------------

v5::RequestId V5Service::new_request_id() {
    v5::RequestId id(8);
    const uint64_t r = core_.rng()();
    std::memcpy(id.data(), &r, id.size());
    return id;
}

bool V5Service::admit(const udp::endpoint& from) {
    if (limiter_.allow(from.address(), env_.now())) return true;
    ++stats_.dropped[static_cast<size_t>(V5Drop::kRateLimited)];
    return false;
}

std::shared_ptr<V5Service::Pending> V5Service::make_pending(const Node& node, v5::Message m) {
    return std::make_shared<Pending>(io_, env_, node, std::move(m));
}

awaitable<bool> V5Service::request(std::shared_ptr<Pending> p) {
    if (stopped_ || !p->node.enr || pending_.size() >= config_.max_pending) co_return false;
    auto sent = send(p->node.id, p->to, p->request);
    if (!sent) co_return false;
    p->nonce = sent->nonce;
    p->awaiting_whoareyou = sent->random_packet;
    p->timer.expires_after(config_.response_timeout);
    pending_.push_back(p);
    for (;;) {
        co_await p->timer.wait();
        // Re-armed (expires_after ends the wait): wait on until the new deadline.
        if (p->done || stopped_ || p->timer.expiry() <= env_.now()) break;
    }
    pending_.remove(p);
    if (!p->done) ++stats_.request_timeouts;
    // It answered: alive, and we have its record.
    if (p->done && !stopped_) core_.add(p->node, Origin::kDirect, 1, "answer");
    co_return p->done;
}

awaitable<std::optional<v5::Pong>> V5Service::ping(Node node) {
    auto p = make_pending(node, v5::Ping{new_request_id(), record().seq()});
    p->reply_type = v5::MessageType::kPong;
    std::optional<v5::Pong> pong;
    p->match = [&pong](const v5::Message& m, bool& done) {
        pong = std::get<v5::Pong>(m);
        done = true;
    };
    if (!co_await request(p)) co_return std::nullopt;
    // Where it saw our PING come from: a statement for endpoint prediction (geth does the same).
    if (on_statement) on_statement(p->to, from_v5(pong->recipient));
    co_return pong;
}

awaitable<std::optional<Bytes>> V5Service::talk_req(Node node, Bytes protocol, Bytes payload) {
    auto p = make_pending(node, v5::TalkReq{new_request_id(), std::move(protocol), std::move(payload)});
    p->reply_type = v5::MessageType::kTalkResp;
    std::optional<Bytes> response;
    p->match = [&response](const v5::Message& m, bool& done) {
        response = std::get<v5::TalkResp>(m).response;
        done = true;
    };
    if (!co_await request(p)) co_return std::nullopt;
    co_return response;
}

std::optional<Node> V5Service::verified_node(ByteView rlp, const Node& from, const std::vector<unsigned>& distances) {
    auto record = Enr::decode(rlp);
    if (!record) return std::nullopt;
    const auto d = static_cast<unsigned>(log_distance(record->node_id(), from.id));
    if (std::find(distances.begin(), distances.end(), d) == distances.end()) return std::nullopt;
    auto n = Node::from_enr(*record);
    if (!n) return std::nullopt;
    if (const auto verdict = check_relay(from.ip, n->ip); verdict != AddressVerdict::kAllowed) {
        core_.refused(&n->id, from.ip, n->ip, verdict);
        return std::nullopt;
    }
    if (n->udp <= 1024 && !config_.allow_low_ports) return std::nullopt;
    return n;
}

awaitable<std::optional<std::vector<Node>>> V5Service::find_node(Node node, std::vector<unsigned> distances) {
    v5::FindNode f{new_request_id(), {}};
    for (unsigned d : distances) f.distances.push_back(d);
    auto p = make_pending(node, std::move(f));
    p->reply_type = v5::MessageType::kNodes;
    std::vector<Node> found;
    std::unordered_set<NodeId, NodeIdHash> seen;
    size_t received = 0;
    size_t expected = 1;
    p->match = [&](const v5::Message& m, bool& done) {
        const auto& nodes = std::get<v5::Nodes>(m);
        if (received == 0) expected = nodes.expected_packets();  // at most 5, whatever `total` says
        ++received;
        for (const Bytes& rlp : nodes.records) {
            auto n = verified_node(rlp, node, distances);
            if (n && seen.insert(n->id).second) found.push_back(std::move(*n));
        }
        done = received >= expected;
    };
    const bool complete = co_await request(p);
    // Fewer packets than announced is still an answer.
    const bool answered = complete || received > 0;
    if (!stopped_) core_.track_findnode(node, answered);
    if (!answered) co_return std::nullopt;
    co_return found;
}

LookupQuery V5Service::query_towards(NodeId target) {
    return [self = shared_from_this(), target](Node n) {
        const auto distances = lookup_distances(target, n.id);
        return self->find_node(std::move(n), distances);
    };
}

awaitable<std::vector<Node>> V5Service::lookup(NodeId target) {
    co_return co_await core_.lookup(target, query_towards(target));
}

awaitable<void> V5Service::refresh() { co_await core_.refresh(*this); }

// ---- what the shared core asks of discv5 ------------------------------------------------------

awaitable<std::optional<uint64_t>> V5Service::check(Node n) {
    auto pong = co_await ping(std::move(n));
    if (!pong) co_return std::nullopt;
    co_return pong->enr_seq;
}

awaitable<std::optional<Node>> V5Service::fetch_record(Node n) {
    // Distance 0 is the node's own record. (The vector is made outside the co_await: GCC cannot put
    // an initializer list's array into a coroutine frame.)
    std::vector<unsigned> own(1, 0);
    const NodeId id = n.id;
    auto records = co_await find_node(std::move(n), std::move(own));
    if (!records) co_return std::nullopt;
    for (const Node& updated : *records) {
        if (updated.id == id) co_return updated;
    }
    co_return std::nullopt;
}

KademliaProtocol::Target V5Service::lookup_target(bool self) {
    NodeId target = id();
    if (!self) {
        for (auto& b : target) b = static_cast<uint8_t>(core_.rng()());
    }
    return {target, query_towards(target)};
}

void share_socket(const std::shared_ptr<V4Service>& v4, const std::shared_ptr<V5Service>& v5) {
    v4->on_unhandled = [weak = std::weak_ptr<V5Service>(v5)](ByteView datagram, const udp::endpoint& from) {
        if (auto s = weak.lock()) s->handle(datagram, from);
    };
    v5->set_send([weak = std::weak_ptr<V4Service>(v4)](const udp::endpoint& to, ByteView datagram) {
        if (auto s = weak.lock()) s->send_raw(to, datagram);
    });
    // One thread runs both, so the database cannot go between the lock and its use.
    v5->set_db([weak = std::weak_ptr<V4Service>(v4)]() -> NodeDb* {
        auto s = weak.lock();
        return s ? &s->db() : nullptr;
    });
}

}  // namespace headerd::disc
