#include "disc/v4wire.hpp"

#include <cstring>

#include "core/keccak.hpp"
#include "core/rlp.hpp"

namespace headerd::disc::v4 {
namespace {

class WireCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "discv4"; }
    std::string message(int c) const override {
        switch (static_cast<WireError>(c)) {
            case WireError::kTooSmall:
                return "packet shorter than hash, signature and type";
            case WireError::kTooBig:
                return "packet longer than 1280 bytes";
            case WireError::kBadHash:
                return "packet hash does not match its contents";
            case WireError::kBadSignature:
                return "no public key recovers from the packet signature";
            case WireError::kUnknownType:
                return "unknown packet type";
            case WireError::kMalformed:
                return "packet data is not the RLP its type expects";
            case WireError::kBadRecord:
                return "ENRResponse record does not decode or verify";
        }
        return "unknown discv4 error";
    }
};

// ---- encoding -----------------------------------------------------------------------------------

void put_list(Bytes& out, const Bytes& payload) {
    rlp::encode_header(out, {true, payload.size()});
    out.insert(out.end(), payload.begin(), payload.end());
}

void put_ip(Bytes& out, const boost::asio::ip::address& ip) {
    if (ip.is_v6()) {
        const auto b = ip.to_v6().to_bytes();
        rlp::encode(out, ByteView{b});
    } else {
        const auto b = ip.to_v4().to_bytes();
        rlp::encode(out, ByteView{b});
    }
}

void put_endpoint(Bytes& out, const Endpoint& e) {
    Bytes body;
    put_ip(body, e.ip);
    rlp::encode(body, uint64_t{e.udp});
    rlp::encode(body, uint64_t{e.tcp});
    put_list(out, body);
}

Bytes body_of(const Ping& p) {
    Bytes b;
    rlp::encode(b, p.version);
    put_endpoint(b, p.from);
    put_endpoint(b, p.to);
    rlp::encode(b, p.expiration);
    if (p.enr_seq) rlp::encode(b, *p.enr_seq);
    return b;
}

Bytes body_of(const Pong& p) {
    Bytes b;
    put_endpoint(b, p.to);
    rlp::encode(b, p.ping_hash);
    rlp::encode(b, p.expiration);
    if (p.enr_seq) rlp::encode(b, *p.enr_seq);
    return b;
}

Bytes body_of(const FindNode& p) {
    Bytes b;
    rlp::encode(b, ByteView{p.target});
    rlp::encode(b, p.expiration);
    return b;
}

Bytes body_of(const Neighbors& p) {
    Bytes nodes;
    for (const auto& n : p.nodes) {
        Bytes node;
        put_ip(node, n.endpoint.ip);
        rlp::encode(node, uint64_t{n.endpoint.udp});
        rlp::encode(node, uint64_t{n.endpoint.tcp});
        rlp::encode(node, ByteView{n.key});
        put_list(nodes, node);
    }
    Bytes b;
    put_list(b, nodes);
    rlp::encode(b, p.expiration);
    return b;
}

Bytes body_of(const EnrRequest& p) {
    Bytes b;
    rlp::encode(b, p.expiration);
    return b;
}

Bytes body_of(const EnrResponse& p) {
    Bytes b;
    rlp::encode(b, p.request_hash);
    if (p.record) {
        const ByteView r = p.record->encoded();
        b.insert(b.end(), r.begin(), r.end());
    }
    return b;
}

// ---- decoding -----------------------------------------------------------------------------------

// Every decode failure inside the packet data is one error: the peer sent something we cannot
// read, and which field it was matters only when debugging by hand.
template <class T>
bool get(Result<T> r, T& out) {
    if (!r) return false;
    out = *r;
    return true;
}

bool get_port(ByteView& in, uint16_t& port) {
    uint64_t v = 0;
    if (!get(rlp::decode_uint64(in), v) || v > 0xffff) return false;
    port = static_cast<uint16_t>(v);
    return true;
}

bool get_ip(ByteView& in, boost::asio::ip::address& ip) {
    ByteView s;
    if (!get(rlp::decode_string(in), s)) return false;
    if (s.size() == 4) {
        boost::asio::ip::address_v4::bytes_type b;
        std::memcpy(b.data(), s.data(), 4);
        ip = boost::asio::ip::address_v4(b);
    } else if (s.size() == 16) {
        boost::asio::ip::address_v6::bytes_type b;
        std::memcpy(b.data(), s.data(), 16);
        ip = boost::asio::ip::address_v6(b);
    } else {
        ip = boost::asio::ip::address_v4::any();
    }
    return true;
}

bool get_endpoint(ByteView& in, Endpoint& e) {
    ByteView body;
    if (!get(rlp::decode_list(in), body)) return false;
    return get_ip(body, e.ip) && get_port(body, e.udp) && get_port(body, e.tcp);  // extra elements ignored
}

bool get_key(ByteView& in, NodeKey& key) {
    ByteView s;
    if (!get(rlp::decode_string(in), s) || s.size() != key.size()) return false;
    std::memcpy(key.data(), s.data(), key.size());
    return true;
}

// An optional trailing integer (EIP-868's enr-seq): absent is fine, present must be an integer.
bool get_optional_uint(ByteView& in, std::optional<uint64_t>& v) {
    if (in.empty()) return true;
    uint64_t x = 0;
    if (!get(rlp::decode_uint64(in), x)) return false;
    v = x;
    return true;
}

Result<Packet> decode_data(PacketType type, ByteView data) noexcept {
    // EIP-8: bytes after the list, and list elements after the known ones, are ignored.
    ByteView in;
    if (!get(rlp::decode_list(data), in)) return WireError::kMalformed;
    const std::error_code bad = WireError::kMalformed;
    switch (type) {
        case PacketType::kPing: {
            Ping p;
            if (!get(rlp::decode_uint64(in), p.version) || !get_endpoint(in, p.from) || !get_endpoint(in, p.to) ||
                !get(rlp::decode_uint64(in), p.expiration) || !get_optional_uint(in, p.enr_seq)) {
                return bad;
            }
            return Packet{p};
        }
        case PacketType::kPong: {
            Pong p;
            if (!get_endpoint(in, p.to) || !get(rlp::decode_hash(in), p.ping_hash) ||
                !get(rlp::decode_uint64(in), p.expiration) || !get_optional_uint(in, p.enr_seq)) {
                return bad;
            }
            return Packet{p};
        }
        case PacketType::kFindNode: {
            FindNode p;
            if (!get_key(in, p.target) || !get(rlp::decode_uint64(in), p.expiration)) return bad;
            return Packet{p};
        }
        case PacketType::kNeighbors: {
            Neighbors p;
            ByteView nodes;
            if (!get(rlp::decode_list(in), nodes)) return bad;
            while (!nodes.empty()) {
                ByteView node;
                NeighborNode n;
                if (!get(rlp::decode_list(nodes), node) || !get_ip(node, n.endpoint.ip) ||
                    !get_port(node, n.endpoint.udp) || !get_port(node, n.endpoint.tcp) || !get_key(node, n.key)) {
                    return bad;
                }
                p.nodes.push_back(n);
            }
            if (!get(rlp::decode_uint64(in), p.expiration)) return bad;
            return Packet{std::move(p)};
        }
        case PacketType::kEnrRequest: {
            EnrRequest p;
            if (!get(rlp::decode_uint64(in), p.expiration)) return bad;
            return Packet{p};
        }
        case PacketType::kEnrResponse: {
            EnrResponse p;
            ByteView record;
            if (!get(rlp::decode_hash(in), p.request_hash) || !get(rlp::next_item(in), record)) return bad;
            auto enr = Enr::decode(record);
            if (!enr) return WireError::kBadRecord;
            p.record = std::move(*enr);
            return Packet{std::move(p)};
        }
    }
    return WireError::kUnknownType;
}

}  // namespace

const std::error_category& wire_category() noexcept {
    static const WireCategory c;
    return c;
}

std::error_code make_error_code(WireError e) noexcept { return {static_cast<int>(e), wire_category()}; }

PacketType type_of(const Packet& p) noexcept { return static_cast<PacketType>(p.index() + 1); }

const char* type_name(PacketType t) noexcept {
    switch (t) {
        case PacketType::kPing:
            return "ping";
        case PacketType::kPong:
            return "pong";
        case PacketType::kFindNode:
            return "findnode";
        case PacketType::kNeighbors:
            return "neighbors";
        case PacketType::kEnrRequest:
            return "enrrequest";
        case PacketType::kEnrResponse:
            return "enrresponse";
    }
    return "unknown";
}

Result<Frame> frame(ByteView datagram) noexcept {
    if (datagram.size() < kHeaderSize + 1) return WireError::kTooSmall;
    if (datagram.size() > kMaxPacketSize) return WireError::kTooBig;
    Frame f;
    f.hash = keccak256(datagram.subspan(32));
    if (std::memcmp(f.hash.data(), datagram.data(), f.hash.size()) != 0) return WireError::kBadHash;
    const uint8_t type = datagram[kHeaderSize];
    if (type < 1 || type > 6) return WireError::kUnknownType;
    f.type = static_cast<PacketType>(type);
    return f;
}

Result<Unverified> decode_data(ByteView datagram, const Frame& f) noexcept {
    auto packet = decode_data(f.type, datagram.subspan(kHeaderSize + 1));
    if (!packet) return packet.error();
    return Unverified{std::move(*packet), f.hash};
}

Result<rlpx::PublicKey> recover_sender(ByteView datagram) noexcept {
    const ByteView signature = datagram.subspan(32, rlpx::kSignatureSize);
    auto sender = rlpx::recover(signature, keccak256(datagram.subspan(kHeaderSize)));
    if (!sender) return WireError::kBadSignature;
    return *sender;
}

Result<Decoded> decode(ByteView datagram) noexcept {
    auto f = frame(datagram);
    if (!f) return f.error();
    // The signature before the data, as the packet is framed: a packet bad in both is kBadSignature.
    auto sender = recover_sender(datagram);
    if (!sender) return sender.error();
    auto u = decode_data(datagram, *f);
    if (!u) return u.error();
    return Decoded{std::move(u->packet), *sender, u->hash};
}

Result<Encoded> encode(const rlpx::PrivateKey& key, const Packet& packet) {
    Bytes body = std::visit([](const auto& p) { return body_of(p); }, packet);
    Bytes datagram(kHeaderSize);
    datagram.reserve(kHeaderSize + 1 + rlp::header_length(body.size()) + body.size());
    datagram.push_back(static_cast<uint8_t>(type_of(packet)));
    put_list(datagram, body);
    const ByteView signed_part = ByteView{datagram}.subspan(kHeaderSize);
    auto signature = rlpx::sign_recoverable(key, keccak256(signed_part));
    if (!signature) return signature.error();
    std::memcpy(datagram.data() + 32, signature->data(), signature->size());
    Encoded e;
    e.hash = keccak256(ByteView{datagram}.subspan(32));
    std::memcpy(datagram.data(), e.hash.data(), 32);
    e.datagram = std::move(datagram);
    return e;
}

}  // namespace headerd::disc::v4
