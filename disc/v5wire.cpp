#include "disc/v5wire.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "core/rlp.hpp"
#include "p2p/rlpx/error.hpp"

namespace headerd::disc::v5 {
namespace {

constexpr uint8_t kFlagMessage = 0;
constexpr uint8_t kFlagWhoareyou = 1;
constexpr uint8_t kFlagHandshake = 2;
static_assert(static_cast<uint8_t>(PacketKind::kHandshake) == kFlagHandshake);  // a PacketKind is its flag
constexpr std::array<uint8_t, 6> kProtocolId = {'d', 'i', 's', 'c', 'v', '5'};
constexpr size_t kMessageAuthSize = 32;                  // src-id
constexpr size_t kWhoareyouAuthSize = kIdNonceSize + 8;  // id-nonce || enr-seq
constexpr size_t kHandshakeAuthFixedSize = 34;           // src-id || sig-size || eph-key-size

class WireCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "discv5"; }
    std::string message(int c) const override {
        switch (static_cast<WireError>(c)) {
            case WireError::kPacketTooShort:
                return "packet below 63 bytes";
            case WireError::kPacketTooBig:
                return "packet above 1280 bytes";
            case WireError::kBadProtocolId:
                return "protocol id is not discv5";
            case WireError::kBadVersion:
                return "protocol version below 1";
            case WireError::kBadFlag:
                return "unknown packet flag";
            case WireError::kMessageTooShort:
                return "message or handshake packet below the minimum size";
            case WireError::kBadAuthSize:
                return "authdata size wrong for the packet";
            case WireError::kUnexpectedHandshake:
                return "handshake without a pending challenge";
            case WireError::kBadEphemeralKey:
                return "handshake ephemeral key is not a compressed secp256k1 point";
            case WireError::kNoRecord:
                return "handshake without the record we need";
            case WireError::kBadRecord:
                return "handshake record invalid";
            case WireError::kRecordIdMismatch:
                return "handshake record is not the sender's";
            case WireError::kBadIdSignature:
                return "handshake id signature does not verify";
            case WireError::kDecryptFailed:
                return "handshake message does not decrypt";
            case WireError::kEmptyMessage:
                return "message has no type";
            case WireError::kUnknownMessageType:
                return "unknown message type";
            case WireError::kMalformedMessage:
                return "malformed message";
            case WireError::kRequestIdTooLong:
                return "request id above 8 bytes";
            case WireError::kBadRecipientIp:
                return "PONG recipient ip neither 4 nor 16 bytes";
            case WireError::kBadChallenge:
                return "challenge has no challenge data or record of another node";
        }
        return "unknown discv5 error";
    }
};

// ---- message RLP -----------------------------------------------------------------------------------

Bytes wrap_list(MessageType type, const Bytes& body) {
    Bytes out;
    out.reserve(1 + rlp::length_of_list(body.size()));
    out.push_back(static_cast<uint8_t>(type));
    rlp::encode_header(out, rlp::Header{true, body.size()});
    append(out, body);
    return out;
}

// Reads the fields of one message list; every read that fails makes the message malformed.
class Fields {
  public:
    explicit Fields(ByteView list) : in_(list) {}

    std::optional<ByteView> string() {
        auto s = rlp::decode_string(in_);
        if (!s) return std::nullopt;
        return *s;
    }
    std::optional<uint64_t> uint() {
        auto v = rlp::decode_uint64(in_);
        if (!v) return std::nullopt;
        return *v;
    }
    std::optional<ByteView> list() {
        auto l = rlp::decode_list(in_);
        if (!l) return std::nullopt;
        return *l;
    }
    bool done() const noexcept { return in_.empty(); }

  private:
    ByteView in_;
};

Result<Message> decode_body(MessageType type, Fields& f) {
    const auto malformed = make_error_code(WireError::kMalformedMessage);
    auto req = f.string();
    if (!req) return malformed;
    // Checked before the other fields: a long request id is its own error, as in geth.
    if (req->size() > kMaxRequestIdSize) return make_error_code(WireError::kRequestIdTooLong);
    RequestId id(req->begin(), req->end());
    switch (type) {
        case MessageType::kPing: {
            auto seq = f.uint();
            if (!seq) return malformed;
            return Message{Ping{std::move(id), *seq}};
        }
        case MessageType::kPong: {
            auto seq = f.uint();
            auto ip = seq ? f.string() : std::nullopt;
            auto port = ip ? f.uint() : std::nullopt;
            if (!port || *port > UINT16_MAX) return malformed;
            Pong pong{std::move(id), *seq, {}};
            const auto p = static_cast<uint16_t>(*port);
            if (ip->size() == 4) {
                std::array<uint8_t, 4> a;
                std::memcpy(a.data(), ip->data(), 4);
                pong.recipient = Endpoint::ipv4(a, p);
            } else if (ip->size() == 16) {
                std::array<uint8_t, 16> a;
                std::memcpy(a.data(), ip->data(), 16);
                pong.recipient = Endpoint::ipv6(a, p);
            } else {
                return make_error_code(WireError::kBadRecipientIp);
            }
            return Message{std::move(pong)};
        }
        case MessageType::kFindNode: {
            auto list = f.list();
            if (!list) return malformed;
            FindNode m{std::move(id), {}};
            Fields d(*list);
            while (!d.done()) {
                auto v = d.uint();
                if (!v) return malformed;
                m.distances.push_back(*v);
            }
            return Message{std::move(m)};
        }
        case MessageType::kNodes: {
            auto total = f.uint();
            auto list = total ? f.list() : std::nullopt;
            if (!list || *total > UINT8_MAX) return malformed;
            Nodes m{std::move(id), static_cast<uint8_t>(*total), {}};
            ByteView items = *list;
            while (!items.empty()) {
                // A record is a list; its contents are the caller's to verify (Enr::decode).
                ByteView probe = items;
                auto item = rlp::next_item(items);
                if (!item || !rlp::decode_list(probe)) return malformed;
                m.records.emplace_back(item->begin(), item->end());
            }
            return Message{std::move(m)};
        }
        case MessageType::kTalkReq: {
            auto protocol = f.string();
            auto request = protocol ? f.string() : std::nullopt;
            if (!request) return malformed;
            return Message{TalkReq{std::move(id), Bytes(protocol->begin(), protocol->end()),
                                   Bytes(request->begin(), request->end())}};
        }
        case MessageType::kTalkResp: {
            auto response = f.string();
            if (!response) return malformed;
            return Message{TalkResp{std::move(id), Bytes(response->begin(), response->end())}};
        }
    }
    return make_error_code(WireError::kUnknownMessageType);
}

// A big-endian uint16 of the static header.
uint16_t be16(ByteView b, size_t at) noexcept { return load_be16(b.data() + at); }

}  // namespace

const std::error_category& wire_category() noexcept {
    static const WireCategory category;
    return category;
}

std::error_code make_error_code(WireError e) noexcept { return {static_cast<int>(e), wire_category()}; }

Endpoint Endpoint::ipv4(const std::array<uint8_t, 4>& address, uint16_t port) noexcept {
    Endpoint e;
    std::memcpy(e.ip.data(), address.data(), 4);
    e.v4 = true;
    e.port = port;
    return e;
}

Endpoint Endpoint::ipv6(const std::array<uint8_t, 16>& address, uint16_t port) noexcept {
    Endpoint e;
    e.ip = address;
    e.v4 = false;
    e.port = port;
    return e;
}

uint8_t Nodes::expected_packets() const noexcept { return std::clamp<uint8_t>(total, 1, kMaxNodesPackets); }

MessageType message_type(const Message& m) noexcept {
    // The variant's alternatives are in type order, PING (1) first.
    return static_cast<MessageType>(m.index() + 1);
}

const RequestId& request_id(const Message& m) noexcept {
    return std::visit([](const auto& v) -> const RequestId& { return v.req_id; }, m);
}

Bytes encode_message(const Message& m) {
    Bytes body;
    rlp::encode(body, ByteView{request_id(m)});
    if (const auto* ping = std::get_if<Ping>(&m)) {
        rlp::encode(body, ping->enr_seq);
    } else if (const auto* pong = std::get_if<Pong>(&m)) {
        rlp::encode(body, pong->enr_seq);
        rlp::encode(body, pong->recipient.ip_bytes());
        rlp::encode(body, uint64_t{pong->recipient.port});
    } else if (const auto* find = std::get_if<FindNode>(&m)) {
        Bytes list;
        for (uint64_t d : find->distances) rlp::encode(list, d);
        rlp::encode_header(body, rlp::Header{true, list.size()});
        append(body, list);
    } else if (const auto* nodes = std::get_if<Nodes>(&m)) {
        rlp::encode(body, uint64_t{nodes->total});
        size_t size = 0;
        for (const auto& r : nodes->records) size += r.size();
        rlp::encode_header(body, rlp::Header{true, size});
        for (const auto& r : nodes->records) append(body, r);
    } else if (const auto* req = std::get_if<TalkReq>(&m)) {
        rlp::encode(body, ByteView{req->protocol});
        rlp::encode(body, ByteView{req->request});
    } else if (const auto* resp = std::get_if<TalkResp>(&m)) {
        rlp::encode(body, ByteView{resp->response});
    }
    return wrap_list(message_type(m), body);
}

Result<Message> decode_message(ByteView plaintext) noexcept {
    if (plaintext.empty()) return make_error_code(WireError::kEmptyMessage);
    const uint8_t type = plaintext[0];
    if (type < static_cast<uint8_t>(MessageType::kPing) || type > static_cast<uint8_t>(MessageType::kTalkResp)) {
        return make_error_code(WireError::kUnknownMessageType);
    }
    ByteView in = plaintext.subspan(1);
    auto list = rlp::decode_list(in);
    if (!list || !in.empty()) return make_error_code(WireError::kMalformedMessage);
    Fields f(*list);
    auto m = decode_body(static_cast<MessageType>(type), f);
    if (m && !f.done()) return make_error_code(WireError::kMalformedMessage);  // extra fields
    return m;
}

// ---- codec ------------------------------------------------------------------------------------------

Codec::Codec(const rlpx::PrivateKey& key, Enr record, CodecOptions options)
    : key_(key),
      local_id_(key.public_key().node_id()),
      record_(std::move(record)),
      capacity_(std::max<size_t>(options.session_capacity, 1)),
      challenge_capacity_(std::max<size_t>(options.challenge_capacity, 1)),
      handshake_timeout_(options.handshake_timeout),
      hooks_(std::move(options.hooks)) {
    if (!hooks_.now) hooks_.now = [] { return std::chrono::steady_clock::now(); };
    if (!hooks_.random) hooks_.random = [](std::span<uint8_t> out) { return rlpx::random_bytes(out); };
    const auto random = hooks_.random;
    if (!hooks_.masking_iv) {
        hooks_.masking_iv = [random]() -> Result<MaskingIv> {
            MaskingIv iv;
            if (auto r = random(iv); !r) return r.error();
            return iv;
        };
    }
    if (!hooks_.nonce) {
        hooks_.nonce = [random](uint32_t counter) -> Result<Nonce> {
            Nonce n;
            store_be32(n.data(), counter);
            if (auto r = random(std::span<uint8_t>(n).subspan(4)); !r) return r.error();
            return n;
        };
    }
    if (!hooks_.id_nonce) {
        hooks_.id_nonce = [random]() -> Result<IdNonce> {
            IdNonce n;
            if (auto r = random(n); !r) return r.error();
            return n;
        };
    }
    if (!hooks_.ephemeral_key) hooks_.ephemeral_key = [] { return rlpx::PrivateKey::generate(); };
}

Codec::Session* Codec::find_session(const Peer& peer) {
    auto it = sessions_.find(peer);
    if (it == sessions_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);  // now the most recently used
    return &it->second->second;
}

void Codec::put_session(const Peer& peer, Session session) {
    if (auto it = sessions_.find(peer); it != sessions_.end()) {
        lru_.erase(it->second);
        sessions_.erase(it);
    }
    while (sessions_.size() >= capacity_) {
        sessions_.erase(lru_.back().first);
        lru_.pop_back();
    }
    lru_.emplace_front(peer, std::move(session));
    sessions_.emplace(peer, lru_.begin());
}

void Codec::store_session(const Hash32& id, const Endpoint& addr, const Key& write_key, const Key& read_key,
                          const Enr& record) {
    put_session(Peer{id, addr}, Session{write_key, read_key, 0, record});
}

const Enr* Codec::session_record(const Hash32& id, const Endpoint& addr) const {
    auto it = sessions_.find(Peer{id, addr});
    return it == sessions_.end() ? nullptr : &it->second->second.record;
}

const Whoareyou* Codec::current_challenge(const Hash32& id, const Endpoint& addr) const {
    auto it = challenges_.find(Peer{id, addr});
    if (it == challenges_.end() || hooks_.now() - it->second->second.sent > handshake_timeout_) return nullptr;
    return &it->second->second.whoareyou;
}

void Codec::drop_oldest_challenge() {
    challenges_.erase(challenge_order_.front().first);
    challenge_order_.pop_front();
}

void Codec::expire_challenges() {
    // Called for every datagram: it must not cost a pass over a full map.
    const auto now = hooks_.now();
    while (!challenge_order_.empty() && now - challenge_order_.front().second.sent > handshake_timeout_) {
        drop_oldest_challenge();
    }
}

Result<Nonce> Codec::next_nonce(Session& session) {
    // The counter makes nonces unique within a session even if the random part repeats.
    ++session.nonce_counter;
    return hooks_.nonce(session.nonce_counter);
}

Result<Bytes> Codec::header(uint8_t flag, const Nonce& nonce, ByteView authdata) {
    auto iv = hooks_.masking_iv();
    if (!iv) return iv.error();
    Bytes h;
    h.reserve(kHeaderStart + authdata.size());
    append(h, *iv);
    append(h, kProtocolId);
    h.resize(h.size() + 2);
    store_be16(h.data() + h.size() - 2, kProtocolVersion);
    h.push_back(flag);
    append(h, nonce);
    h.resize(h.size() + 2);
    store_be16(h.data() + h.size() - 2, static_cast<uint16_t>(authdata.size()));
    append(h, authdata);
    return h;
}

Result<Bytes> Codec::finish(const Hash32& dest_id, Bytes header, ByteView body) const {
    if (header.size() + body.size() > kMaxPacketSize) return make_error_code(WireError::kPacketTooBig);
    MaskingIv iv;
    std::memcpy(iv.data(), header.data(), kMaskingIvSize);
    if (!apply_mask(dest_id, iv, std::span<uint8_t>(header).subspan(kMaskingIvSize))) {
        return make_error_code(rlpx::Errc::kCryptoFailure);
    }
    append(header, body);
    return header;
}

Result<Bytes> Codec::seal(const Hash32& dest_id, const Key& key, const Nonce& nonce, Bytes header, const Message& msg) {
    auto ct = encrypt_gcm(key, nonce, encode_message(msg), header);
    if (!ct) return ct.error();
    return finish(dest_id, std::move(header), *ct);
}

Result<Encoded> Codec::encode(const Hash32& dest_id, const Endpoint& dest, const Message& msg) {
    if (request_id(msg).size() > kMaxRequestIdSize) return make_error_code(WireError::kRequestIdTooLong);
    Session* session = find_session(Peer{dest_id, dest});
    if (session == nullptr) {
        // No keys: random bytes that look like a message, to make the peer send WHOAREYOU.
        Nonce nonce;
        std::array<uint8_t, kRandomMessageSize> body;
        if (auto r = hooks_.random(nonce); !r) return r.error();
        if (auto r = hooks_.random(body); !r) return r.error();
        auto h = header(kFlagMessage, nonce, local_id_);
        if (!h) return h.error();
        auto out = finish(dest_id, std::move(*h), body);
        if (!out) return out.error();
        return Encoded{std::move(*out), nonce, true};
    }
    auto nonce = next_nonce(*session);
    if (!nonce) return nonce.error();
    auto h = header(kFlagMessage, *nonce, local_id_);
    if (!h) return h.error();
    auto out = seal(dest_id, session->write_key, *nonce, std::move(*h), msg);
    if (!out) return out.error();
    return Encoded{std::move(*out), *nonce};
}

Result<Encoded> Codec::encode_handshake(const Hash32& dest_id, const Endpoint& dest, const Message& msg,
                                        const Whoareyou& challenge, const Enr& dest_record) {
    if (request_id(msg).size() > kMaxRequestIdSize) return make_error_code(WireError::kRequestIdTooLong);
    if (challenge.challenge_data.size() != kHeaderStart + kWhoareyouAuthSize || dest_record.node_id() != dest_id) {
        return make_error_code(WireError::kBadChallenge);
    }
    // The ephemeral key comes first: the id-signature covers its public half.
    auto eph = hooks_.ephemeral_key();
    if (!eph) return eph.error();
    const auto eph_pub = eph->public_key().compressed();
    auto sig = make_id_signature(key_, challenge.challenge_data, eph_pub, dest_id);
    if (!sig) return sig.error();
    auto keys = derive_keys(*eph, dest_record.public_key(), local_id_, dest_id, challenge.challenge_data);
    if (!keys) return keys.error();
    Session session{keys->initiator_key, keys->recipient_key, 0, dest_record};
    auto nonce = next_nonce(session);
    if (!nonce) return nonce.error();

    Bytes auth;
    append(auth, local_id_);
    auth.push_back(static_cast<uint8_t>(sig->size()));
    auth.push_back(static_cast<uint8_t>(eph_pub.size()));
    append(auth, *sig);
    append(auth, eph_pub);
    // Our record only when the peer's copy is older (or it has none): it is most of the packet.
    if (challenge.enr_seq < record_.seq()) append(auth, record_.encoded());
    auto h = header(kFlagHandshake, *nonce, auth);
    if (!h) return h.error();
    auto out = seal(dest_id, session.write_key, *nonce, std::move(*h), msg);
    if (!out) return out.error();
    // Stored now, as geth does: the peer's answer comes over this session.
    put_session(Peer{dest_id, dest}, std::move(session));
    return Encoded{std::move(*out), *nonce};
}

Result<Encoded> Codec::encode_whoareyou(const Hash32& dest_id, const Endpoint& dest, const Nonce& request_nonce,
                                        const Enr* known_record) {
    expire_challenges();
    const Peer peer{dest_id, dest};
    if (auto it = challenges_.find(peer); it != challenges_.end()) {
        // Resend the pending challenge: the same bytes (same masking IV), so either copy the peer
        // answers is checked against the one challenge we keep.
        const Whoareyou& w = it->second->second.whoareyou;
        auto out = finish(dest_id, w.challenge_data, {});
        if (!out) return out.error();
        return Encoded{std::move(*out), w.request_nonce};
    }
    Whoareyou w;
    w.request_nonce = request_nonce;
    auto id_nonce = hooks_.id_nonce();
    if (!id_nonce) return id_nonce.error();
    w.id_nonce = *id_nonce;
    w.enr_seq = known_record != nullptr ? known_record->seq() : 0;
    std::array<uint8_t, kWhoareyouAuthSize> auth;
    std::memcpy(auth.data(), w.id_nonce.data(), kIdNonceSize);
    store_be64(auth.data() + kIdNonceSize, w.enr_seq);
    auto h = header(kFlagWhoareyou, request_nonce, auth);
    if (!h) return h.error();
    w.challenge_data = *h;
    auto out = finish(dest_id, std::move(*h), {});
    if (!out) return out.error();
    std::optional<Enr> record;
    if (known_record != nullptr) record = *known_record;
    // None is pending for peer (found above): a new entry, the newest. At the cap the oldest goes,
    // and its peer's handshake will be kUnexpectedHandshake.
    while (challenges_.size() >= challenge_capacity_) drop_oldest_challenge();
    challenge_order_.emplace_back(peer, Challenge{w, std::move(record), hooks_.now()});
    challenges_.emplace(peer, std::prev(challenge_order_.end()));
    return Encoded{std::move(*out), request_nonce};
}

Result<Decoded> Codec::decode(ByteView datagram, const Endpoint& from) {
    if (datagram.size() < kMinPacketSize) return make_error_code(WireError::kPacketTooShort);
    if (datagram.size() > kMaxPacketSize) return make_error_code(WireError::kPacketTooBig);
    // Unmask everything after the IV in one keystream: the header's length is known only after
    // its first part, and the keystream runs on through the authdata.
    Bytes plain(datagram.begin(), datagram.end());
    MaskingIv iv;
    std::memcpy(iv.data(), plain.data(), kMaskingIvSize);
    if (!apply_mask(local_id_, iv, std::span<uint8_t>(plain).subspan(kMaskingIvSize))) {
        return make_error_code(rlpx::Errc::kCryptoFailure);
    }
    const ByteView p = plain;
    if (!std::equal(kProtocolId.begin(), kProtocolId.end(), p.begin() + kMaskingIvSize)) {
        return make_error_code(WireError::kBadProtocolId);
    }
    // Later versions are read as this one, as geth does: a version bump need not split the network.
    if (be16(p, kMaskingIvSize + 6) < kProtocolVersion) return make_error_code(WireError::kBadVersion);
    const uint8_t flag = p[kMaskingIvSize + 8];
    Nonce nonce;
    std::memcpy(nonce.data(), p.data() + kMaskingIvSize + 9, kNonceSize);
    const size_t auth_size = be16(p, kMaskingIvSize + 21);
    const size_t remaining = p.size() - kHeaderStart;
    if (flag != kFlagWhoareyou && remaining < kMinMessageSize) return make_error_code(WireError::kMessageTooShort);
    if (auth_size > remaining) return make_error_code(WireError::kBadAuthSize);
    const ByteView header_data = p.first(kHeaderStart + auth_size);
    const ByteView authdata = header_data.subspan(kHeaderStart);
    // The message was never masked: it comes from the datagram as is.
    const ByteView message = datagram.subspan(kHeaderStart + auth_size);

    // Before a handshake is looked at, so a stale challenge cannot be answered.
    expire_challenges();
    switch (flag) {
        case kFlagMessage:
            return decode_message_packet(from, nonce, header_data, authdata, message);
        case kFlagWhoareyou: {
            if (auth_size != kWhoareyouAuthSize) return make_error_code(WireError::kBadAuthSize);
            Whoareyou w;
            w.request_nonce = nonce;
            std::memcpy(w.id_nonce.data(), authdata.data(), kIdNonceSize);
            w.enr_seq = load_be64(authdata.data() + kIdNonceSize);
            w.challenge_data.assign(header_data.begin(), header_data.end());
            return Decoded{Hash32{}, std::nullopt, Packet{std::move(w)}};
        }
        case kFlagHandshake:
            return decode_handshake(from, nonce, header_data, authdata, message);
        default:
            return make_error_code(WireError::kBadFlag);
    }
}

std::optional<PacketKind> Codec::packet_kind(ByteView datagram) const {
    if (datagram.size() < kMinPacketSize || datagram.size() > kMaxPacketSize) return std::nullopt;
    // The static header alone: the masking keystream starts with it, so this is what decode sees.
    MaskingIv iv;
    std::memcpy(iv.data(), datagram.data(), kMaskingIvSize);
    std::array<uint8_t, kStaticHeaderSize> h;
    std::memcpy(h.data(), datagram.data() + kMaskingIvSize, h.size());
    if (!apply_mask(local_id_, iv, h)) return std::nullopt;
    if (!std::equal(kProtocolId.begin(), kProtocolId.end(), h.begin())) return std::nullopt;
    if (be16(h, 6) < kProtocolVersion || h[8] > kFlagHandshake) return std::nullopt;
    return static_cast<PacketKind>(h[8]);
}

Result<Decoded> Codec::decode_message_packet(const Endpoint& from, const Nonce& nonce, ByteView header_data,
                                             ByteView authdata, ByteView message) {
    if (authdata.size() != kMessageAuthSize) return make_error_code(WireError::kBadAuthSize);
    Decoded out;
    std::memcpy(out.src_id.data(), authdata.data(), 32);
    Session* session = find_session(Peer{out.src_id, from});
    auto plain = session != nullptr ? decrypt_gcm(session->read_key, nonce, message, header_data) : std::nullopt;
    if (!plain) {
        // No session, or the peer has another one (it restarted, or we dropped ours): handshake anew.
        out.packet = Unknown{nonce};
        return out;
    }
    auto msg = decode_message(*plain);
    if (!msg) return msg.error();
    out.packet = std::move(*msg);
    return out;
}

Result<Decoded> Codec::decode_handshake(const Endpoint& from, const Nonce& nonce, ByteView header_data,
                                        ByteView authdata, ByteView message) {
    if (authdata.size() < kHandshakeAuthFixedSize) return make_error_code(WireError::kBadAuthSize);
    Decoded out;
    std::memcpy(out.src_id.data(), authdata.data(), 32);
    const Peer peer{out.src_id, from};
    auto it = challenges_.find(peer);
    if (it == challenges_.end()) return make_error_code(WireError::kUnexpectedHandshake);
    // Whatever happens next, this challenge is used up (as in geth): one answer per WHOAREYOU.
    const Challenge challenge = std::move(it->second->second);
    challenge_order_.erase(it->second);
    challenges_.erase(it);

    const size_t sig_size = authdata[32];
    const size_t key_size = authdata[33];
    const ByteView var = authdata.subspan(kHandshakeAuthFixedSize);
    if (var.size() < sig_size + key_size) return make_error_code(WireError::kBadAuthSize);
    const ByteView signature = var.first(sig_size);
    const ByteView eph_key = var.subspan(sig_size, key_size);
    const ByteView record_bytes = var.subspan(sig_size + key_size);

    // The sender's record: the one it sent if newer than ours, else ours. Only a record the
    // challenge asked for (or one newer than we have) is taken.
    std::optional<Enr> record = challenge.record;
    if (!record_bytes.empty()) {
        auto sent = Enr::decode(record_bytes);
        if (!sent) return make_error_code(WireError::kBadRecord);
        if (!record || record->seq() < sent->seq()) {
            if (sent->node_id() != out.src_id) return make_error_code(WireError::kRecordIdMismatch);
            record = std::move(*sent);
        }
    }
    if (!record) return make_error_code(WireError::kNoRecord);
    const ByteView challenge_data = challenge.whoareyou.challenge_data;
    if (!verify_id_signature(signature, record->public_key(), challenge_data, eph_key, local_id_)) {
        return make_error_code(WireError::kBadIdSignature);
    }
    auto eph = rlpx::PublicKey::from_compressed(eph_key);
    if (!eph) return make_error_code(WireError::kBadEphemeralKey);
    auto keys = derive_keys(key_, *eph, out.src_id, local_id_, challenge_data);
    if (!keys) return keys.error();
    // We are the recipient: we read what the initiator writes.
    auto plain = decrypt_gcm(keys->initiator_key, nonce, message, header_data);
    if (!plain) return make_error_code(WireError::kDecryptFailed);
    auto msg = decode_message(*plain);
    if (!msg) return msg.error();
    put_session(peer, Session{keys->recipient_key, keys->initiator_key, 0, *record});
    out.record = std::move(record);
    out.packet = std::move(*msg);
    return out;
}

}  // namespace headerd::disc::v5
