#include "sim/adversary.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <variant>

#include "core/keccak.hpp"
#include "disc/lookup.hpp"
#include "disc/v5crypto.hpp"

namespace headerd::sim {

namespace asio = boost::asio;
namespace v4 = disc::v4;
namespace v5 = disc::v5;
using disc::NodeId;

namespace {

// geth: the records of one NODES message (~1000 bytes), the records of one answer (16).
constexpr size_t kNodesRecordBytes = 1000;
constexpr size_t kAnswer = disc::kFindNodeResults;
// How long a discv4 endpoint counts as pinged (we ping back only after that).
constexpr auto kPingedFor = std::chrono::hours(1);
// How long our discv5 PING waits for the WHOAREYOU that lets it go as a handshake.
constexpr auto kPendingFor = std::chrono::seconds(10);

v5::Endpoint to_v5(const udp::endpoint& e) { return v5::Endpoint::ipv4(e.address().to_v4().to_bytes(), e.port()); }

v4::Endpoint to_v4(const udp::endpoint& e, uint16_t tcp) { return v4::Endpoint{e.address(), e.port(), tcp}; }

uint64_t unix_seconds(const disc::Env& env) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(env.wall_now().time_since_epoch()).count());
}

void fill(std::mt19937_64& rng, std::span<uint8_t> out) {
    for (auto& b : out) b = static_cast<uint8_t>(rng());
}

}  // namespace

std::vector<size_t> closest_positions(const std::vector<NodeId>& sorted, const NodeId& target, size_t n) {
    const auto pos = static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), target) - sorted.begin());
    const size_t window = 8 * n;
    const size_t lo = pos > window ? pos - window : 0;
    const size_t hi = std::min(sorted.size(), pos + window);
    std::vector<size_t> out;
    out.reserve(hi - lo);
    for (size_t i = lo; i < hi; ++i) out.push_back(i);
    const size_t keep = std::min(n, out.size());
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(keep), out.end(),
                      [&](size_t a, size_t b) { return disc::compare_distance(target, sorted[a], sorted[b]) < 0; });
    out.resize(keep);
    return out;
}

std::vector<unsigned> lookup_distances(const NodeId& target, const NodeId& dest) {
    const int td = disc::log_distance(target, dest);
    std::vector<unsigned> out{static_cast<unsigned>(td)};
    for (int i = 1; out.size() < 3 && i <= 256; ++i) {
        if (td + i <= 256) out.push_back(static_cast<unsigned>(td + i));
        if (td - i > 0 && out.size() < 3) out.push_back(static_cast<unsigned>(td - i));
    }
    return out;
}

v5::CodecOptions deterministic_codec(std::shared_ptr<std::mt19937_64> rng, disc::Env& env, size_t session_capacity) {
    v5::CodecOptions o;
    o.session_capacity = session_capacity;
    o.hooks.now = [&env] { return env.now(); };
    o.hooks.random = [rng](std::span<uint8_t> out) -> Result<void> {
        fill(*rng, out);
        return {};
    };
    o.hooks.ephemeral_key = [rng]() -> Result<rlpx::PrivateKey> {
        for (;;) {
            std::array<uint8_t, 32> b;
            fill(*rng, b);
            if (auto k = rlpx::PrivateKey::from_bytes(b)) return *k;
        }
    };
    return o;
}

// ---- the coalition ----------------------------------------------------------------------------

void Coalition::add_member(Member m) {
    members_.push_back(std::move(m));
    indexed_ = false;
}

void Coalition::add_stale(const disc::Enr& old) {
    const auto rlp = old.encoded();
    stale_.emplace_back(rlp.begin(), rlp.end());
    stale_ids_.push_back(old.node_id());
}

void Coalition::index() {
    if (indexed_) return;
    sorted_index_.resize(members_.size());
    for (size_t i = 0; i < sorted_index_.size(); ++i) sorted_index_[i] = i;
    std::sort(sorted_index_.begin(), sorted_index_.end(),
              [&](size_t a, size_t b) { return members_[a].id < members_[b].id; });
    sorted_ids_.clear();
    for (size_t i : sorted_index_) sorted_ids_.push_back(members_[i].id);
    indexed_ = true;
}

std::vector<v4::NeighborNode> Coalition::neighbors(const NodeId& target, std::mt19937_64& rng) {
    index();
    struct Candidate {
        NodeId id;
        v4::NeighborNode node;
        bool honest;
    };
    std::vector<Candidate> all;
    for (size_t pos : closest_positions(sorted_ids_, target, kAnswer)) {
        const Member& m = members_[sorted_index_[pos]];
        all.push_back({m.id, v4::NeighborNode{to_v4(m.ep, m.ep.port()), m.key}, false});
    }
    std::vector<const HonestRef*> honest;
    if (closest_honest) closest_honest(target, kAnswer, honest);
    for (const HonestRef* h : honest) {
        // Its id and key, at an endpoint of ours: a random adversary's address and a random port.
        const Member& at = members_[std::uniform_int_distribution<size_t>(0, members_.size() - 1)(rng)];
        const auto port = static_cast<uint16_t>(std::uniform_int_distribution<int>(1025, 65535)(rng));
        all.push_back({h->id, v4::NeighborNode{v4::Endpoint{at.ep.address(), port, port}, h->key}, true});
    }
    std::sort(all.begin(), all.end(),
              [&](const Candidate& a, const Candidate& b) { return disc::compare_distance(target, a.id, b.id) < 0; });
    if (all.size() > kAnswer) all.resize(kAnswer);
    std::vector<v4::NeighborNode> out;
    for (const auto& c : all) {
        ++(c.honest ? poisoned_sent : members_sent);
        out.push_back(c.node);
    }
    return out;
}

std::vector<Bytes> Coalition::records_at(const NodeId& responder, const std::vector<uint64_t>& distances,
                                         std::mt19937_64& rng) {
    const auto wanted = [&](const NodeId& id) {
        const auto d = static_cast<uint64_t>(disc::log_distance(id, responder));
        return d != 0 && std::find(distances.begin(), distances.end(), d) != distances.end();
    };
    std::vector<size_t> stale;
    for (size_t i = 0; i < stale_ids_.size(); ++i) {
        if (wanted(stale_ids_[i])) stale.push_back(i);
    }
    std::vector<size_t> ours;
    for (size_t i = 0; i < members_.size(); ++i) {
        if (wanted(members_[i].id)) ours.push_back(i);
    }
    std::shuffle(stale.begin(), stale.end(), rng);
    std::shuffle(ours.begin(), ours.end(), rng);
    // Half stale replays and half our own where there are enough of both; the rest from either.
    const size_t n_stale = std::min(stale.size(), std::max(kAnswer / 2, kAnswer - std::min(ours.size(), kAnswer)));
    const size_t n_ours = std::min(ours.size(), kAnswer - n_stale);
    std::vector<Bytes> out;
    for (size_t i = 0; i < n_stale; ++i) out.push_back(stale_[stale[i]]);
    for (size_t i = 0; i < n_ours; ++i) out.push_back(members_[ours[i]].record);
    stale_sent += n_stale;
    members_sent += n_ours;
    return out;
}

// ---- one adversarial identity -----------------------------------------------------------------

Adversary::Adversary(disc::VirtualEnv& env, std::shared_ptr<disc::SimTransport> transport, Coalition& coalition,
                     const rlpx::PrivateKey& key, disc::Enr record, uint64_t seed, size_t session_capacity)
    : env_(env),
      transport_(std::move(transport)),
      coalition_(coalition),
      key_(key),
      record_(record),
      id_(key.public_key().node_id()),
      ep_(transport_->local_endpoint()),
      rng_(std::make_shared<std::mt19937_64>(seed)),
      codec_(key, std::move(record), deterministic_codec(rng_, env, session_capacity)) {}

Adversary::~Adversary() { transport_->close(); }

void Adversary::start() {
    transport_->start([this](ByteView d, const udp::endpoint& from) { receive(d, from); });
}

uint64_t Adversary::expiration() const { return unix_seconds(env_) + 20; }

v5::RequestId Adversary::request_id() {
    v5::RequestId id(8);
    const uint64_t r = (*rng_)();
    std::memcpy(id.data(), &r, id.size());
    return id;
}

void Adversary::send_v4(const udp::endpoint& to, const v4::Packet& p) {
    if (auto e = v4::encode(key_, p)) transport_->send(to, e->datagram);
}

void Adversary::send_v5(const NodeId& id, const udp::endpoint& to, const v5::Message& m) {
    if (auto e = codec_.encode(id, to_v5(to), m); e && !e->random_packet) transport_->send(to, e->datagram);
}

void Adversary::v4_ping(const udp::endpoint& to) {
    pinged_[endpoint_key(to)] = env_.now();
    ++stats_.pings_sent;
    send_v4(to, v4::Ping{4, to_v4(ep_, ep_.port()), to_v4(to, 0), expiration(), record_.seq()});
}

void Adversary::ping(const HonestRef& target) {
    if (target.v4) v4_ping(target.ep);
    if (target.v5 && target.record) {
        // Over the session when there is one; otherwise a random packet, and the PING goes as the
        // handshake that answers the target's WHOAREYOU.
        v5::Message m = v5::Ping{request_id(), record_.seq()};
        auto e = codec_.encode(target.id, to_v5(target.ep), m);
        if (!e) return;
        ++stats_.pings_sent;
        transport_->send(target.ep, e->datagram);
        if (e->random_packet) {
            const auto now = env_.now();
            while (!pending_.empty() && now - pending_.front().sent > kPendingFor) pending_.pop_front();
            pending_.push_back(PendingPing{e->nonce, target.id, target.ep, *target.record, std::move(m), now});
        }
    }
}

void Adversary::receive(ByteView datagram, const udp::endpoint& from) {
    if (auto f = v4::frame(datagram)) return on_v4(datagram, *f, from);
    on_v5(datagram, from);
}

void Adversary::on_v4(ByteView datagram, const v4::Frame& frame, const udp::endpoint& from) {
    // The sender's key is never needed (answers go to the source address), so no recovery.
    auto data = v4::decode_data(datagram, frame);
    if (!data) return;
    switch (frame.type) {
        case v4::PacketType::kPing: {
            const auto& p = std::get<v4::Ping>(data->packet);
            send_v4(from, v4::Pong{to_v4(from, p.from.tcp), data->hash, expiration(), record_.seq()});
            // Ping back, as a node does that has no bond: the pinging node then takes our Pong as
            // its endpoint proof and adds us.
            const auto it = pinged_.find(endpoint_key(from));
            if (it == pinged_.end() || env_.now() - it->second > kPingedFor) v4_ping(from);
            return;
        }
        case v4::PacketType::kFindNode: {
            const auto& f = std::get<v4::FindNode>(data->packet);
            ++stats_.findnodes_answered;
            const auto nodes = coalition_.neighbors(keccak256(f.target), *rng_);
            for (size_t i = 0; i < nodes.size(); i += v4::kMaxNeighbors) {
                v4::Neighbors n;
                n.expiration = expiration();
                n.nodes.assign(
                    nodes.begin() + static_cast<std::ptrdiff_t>(i),
                    nodes.begin() + static_cast<std::ptrdiff_t>(std::min(nodes.size(), i + v4::kMaxNeighbors)));
                send_v4(from, n);
            }
            if (nodes.empty()) send_v4(from, v4::Neighbors{{}, expiration()});
            return;
        }
        case v4::PacketType::kEnrRequest:
            send_v4(from, v4::EnrResponse{data->hash, record_});
            return;
        default:
            return;  // replies to our pings: nothing to do
    }
}

void Adversary::on_v5(ByteView datagram, const udp::endpoint& from) {
    auto decoded = codec_.decode(datagram, to_v5(from));
    if (!decoded) return;
    if (const auto* u = std::get_if<v5::Unknown>(&decoded->packet)) {
        if (auto w = codec_.encode_whoareyou(decoded->src_id, to_v5(from), u->nonce, nullptr)) {
            transport_->send(from, w->datagram);
        }
        return;
    }
    if (const auto* w = std::get_if<v5::Whoareyou>(&decoded->packet)) {
        auto it = std::find_if(pending_.begin(), pending_.end(),
                               [&](const PendingPing& p) { return p.nonce == w->request_nonce && p.to == from; });
        if (it == pending_.end()) return;
        if (auto hs = codec_.encode_handshake(it->id, to_v5(from), it->message, *w, it->record)) {
            ++stats_.handshakes;
            transport_->send(from, hs->datagram);
        }
        pending_.erase(it);
        return;
    }
    if (decoded->record) ++stats_.handshakes;
    const auto& m = std::get<v5::Message>(decoded->packet);
    const NodeId& src = decoded->src_id;
    if (const auto* ping = std::get_if<v5::Ping>(&m)) {
        send_v5(src, from, v5::Pong{ping->req_id, record_.seq(), to_v5(from)});
    } else if (const auto* f = std::get_if<v5::FindNode>(&m)) {
        ++stats_.findnodes_answered;
        std::vector<Bytes> records;
        if (std::find(f->distances.begin(), f->distances.end(), 0u) != f->distances.end()) {
            const auto ours = record_.encoded();
            records.emplace_back(ours.begin(), ours.end());
        }
        for (auto& r : coalition_.records_at(id_, f->distances, *rng_)) {
            if (records.size() >= kAnswer) break;
            records.push_back(std::move(r));
        }
        std::vector<v5::Nodes> messages;
        size_t size = 0;
        for (auto& r : records) {
            if (messages.empty() || size + r.size() > kNodesRecordBytes) {
                messages.push_back(v5::Nodes{f->req_id, 0, {}});
                size = 0;
            }
            size += r.size();
            messages.back().records.push_back(std::move(r));
        }
        if (messages.empty()) messages.push_back(v5::Nodes{f->req_id, 0, {}});
        for (auto& msg : messages) {
            msg.total = static_cast<uint8_t>(messages.size());
            send_v5(src, from, msg);
        }
    } else if (const auto* t = std::get_if<v5::TalkReq>(&m)) {
        send_v5(src, from, v5::TalkResp{t->req_id, {}});
    }
}

// ---- spoofed requests -------------------------------------------------------------------------

Spoofer::Spoofer(disc::VirtualEnv& env, std::shared_ptr<disc::SimTransport> at_victim, const rlpx::PrivateKey& key,
                 disc::Enr record, uint64_t seed)
    : env_(env),
      transport_(std::move(at_victim)),
      key_(key),
      victim_(transport_->local_endpoint()),
      rng_(std::make_shared<std::mt19937_64>(seed)),
      codec_(key, std::move(record), deterministic_codec(rng_, env, 16)) {
    transport_->start([this](ByteView d, const udp::endpoint&) {
        ++victim_packets;
        victim_bytes += d.size();
    });
}

Spoofer::~Spoofer() { transport_->close(); }

bool Spoofer::send(const HonestRef& target, PacketClass kind) {
    const uint64_t exp = unix_seconds(env_) + 20;
    Bytes datagram;
    const bool v4_kind =
        kind == PacketClass::kV4Ping || kind == PacketClass::kV4FindNode || kind == PacketClass::kV4EnrRequest;
    if (v4_kind ? !target.v4 : !target.v5) return false;
    switch (kind) {
        case PacketClass::kV4Ping:
        case PacketClass::kV4FindNode:
        case PacketClass::kV4EnrRequest: {
            v4::Packet p = v4::EnrRequest{exp};
            if (kind == PacketClass::kV4Ping) {
                p = v4::Ping{4, to_v4(victim_, victim_.port()), to_v4(target.ep, 0), exp, 1};
            } else if (kind == PacketClass::kV4FindNode) {
                v4::NodeKey t;
                fill(*rng_, t);
                p = v4::FindNode{t, exp};
            }
            auto e = v4::encode(key_, p);
            if (!e) return false;
            datagram = std::move(e->datagram);
            break;
        }
        case PacketClass::kV5Random: {
            auto e = codec_.encode(target.id, to_v5(target.ep), v5::Ping{Bytes(8, 1), 1});
            if (!e) return false;
            datagram = std::move(e->datagram);
            break;
        }
        case PacketClass::kV5Whoareyou: {
            v5::Nonce nonce;
            fill(*rng_, nonce);
            auto e = codec_.encode_whoareyou(target.id, to_v5(target.ep), nonce, nullptr);
            if (!e) return false;
            datagram = std::move(e->datagram);
            break;
        }
        case PacketClass::kV5Handshake: {
            // A handshake that answers no challenge: masked header, random authdata and message.
            constexpr size_t kAuth = 34 + 64 + 33;
            datagram.assign(v5::kMaskingIvSize + v5::kStaticHeaderSize + kAuth + 32, 0);
            fill(*rng_, datagram);
            const std::array<uint8_t, 9> start{'d', 'i', 's', 'c', 'v', '5', 0, 1, 2};
            std::copy(start.begin(), start.end(), datagram.begin() + v5::kMaskingIvSize);
            datagram[v5::kMaskingIvSize + 21] = 0;
            datagram[v5::kMaskingIvSize + 22] = static_cast<uint8_t>(kAuth);
            const auto id = key_.public_key().node_id();
            std::copy(id.begin(), id.end(), datagram.begin() + v5::kHeaderStart);
            datagram[v5::kHeaderStart + 32] = 64;
            datagram[v5::kHeaderStart + 33] = 33;
            v5::MaskingIv iv;
            std::memcpy(iv.data(), datagram.data(), iv.size());
            v5::apply_mask(target.id, iv,
                           std::span<uint8_t>(datagram).subspan(v5::kMaskingIvSize, v5::kStaticHeaderSize + kAuth));
            break;
        }
        default:
            return false;
    }
    const auto i = static_cast<size_t>(kind);
    ++sent_packets[i];
    sent_bytes[i] += datagram.size();
    transport_->send(target.ep, datagram);
    return true;
}

}  // namespace headerd::sim
