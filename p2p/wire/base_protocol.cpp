#include "p2p/wire/base_protocol.hpp"

#include <algorithm>
#include <array>

#include <snappy.h>

#include "core/rlp.hpp"

namespace headerd::p2p {
namespace {

class BaseProtocolCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "p2p"; }
    std::string message(int ev) const override {
        switch (static_cast<BaseProtocolError>(ev)) {
            case BaseProtocolError::kHelloTooLarge:
                return "hello message too large";
            case BaseProtocolError::kMissingField:
                return "hello message has too few fields";
            case BaseProtocolError::kBadCapability:
                return "hello capability is not [name, version]";
            case BaseProtocolError::kBadNodeIdLength:
                return "hello node id is not 64 bytes";
            case BaseProtocolError::kZeroNodeId:
                return "hello node id is all zero";
            case BaseProtocolError::kIncompatibleVersion:
                return "peer speaks p2p version < 5";
            case BaseProtocolError::kNoSharedCapability:
                return "no shared capability";
            case BaseProtocolError::kMalformedDisconnect:
                return "malformed disconnect message";
        }
        return "unknown p2p error";
    }
};

size_t capability_payload(const Capability& c) noexcept {
    return rlp::length(as_bytes(c.name)) + rlp::length(c.version);
}

Result<Capability> decode_capability(ByteView& in) noexcept {
    auto h = rlp::decode_header(in);
    if (!h) return h.error();
    if (!h->list) return BaseProtocolError::kBadCapability;
    ByteView items = in.first(h->payload_length);
    in = in.subspan(h->payload_length);
    if (items.empty()) return BaseProtocolError::kBadCapability;
    auto name = rlp::decode_string(items);
    if (!name)
        return name.error() == rlp::DecodeError::kUnexpectedList ? BaseProtocolError::kBadCapability : name.error();
    if (items.empty()) return BaseProtocolError::kBadCapability;
    auto version = rlp::decode_uint64(items);
    if (!version) return version.error();
    if (!items.empty()) return BaseProtocolError::kBadCapability;
    return Capability{std::string(as_chars(*name)), *version};
}

// One of the plain (uncompressed) Disconnect forms; see decode_disconnect.
Result<DisconnectReason> parse_reason(ByteView in) noexcept {
    if (in.empty()) return DisconnectReason::kRequested;
    ByteView item = in;
    if (in[0] >= 0xc0) {
        auto list = rlp::decode_list(item);
        if (!list || !item.empty()) return BaseProtocolError::kMalformedDisconnect;
        if (list->empty()) return DisconnectReason::kRequested;
        // Anything after the reason is ignored: a newer client may add fields.
        item = *list;
    }
    auto v = rlp::decode_uint64(item);
    if (!v || *v > 0xff) return BaseProtocolError::kMalformedDisconnect;
    if (in[0] < 0xc0 && !item.empty()) return BaseProtocolError::kMalformedDisconnect;
    return static_cast<DisconnectReason>(*v);
}

}  // namespace

const std::error_category& base_protocol_category() noexcept {
    static const BaseProtocolCategory category;
    return category;
}

std::error_code make_error_code(BaseProtocolError e) noexcept {
    return {static_cast<int>(e), base_protocol_category()};
}

void encode_message_id(Bytes& out, uint64_t id) { rlp::encode(out, id); }

Result<uint64_t> decode_message_id(ByteView& frame_data) noexcept { return rlp::decode_uint64(frame_data); }

// ---- Hello --------------------------------------------------------------------------------------

void Hello::encode(Bytes& out) const {
    size_t caps_payload = 0;
    for (const Capability& c : capabilities) caps_payload += rlp::length_of_list(capability_payload(c));
    const size_t payload = rlp::length(version) + rlp::length(as_bytes(client_id)) + rlp::length_of_list(caps_payload) +
                           rlp::length(listen_port) + rlp::length(ByteView{node_id});
    out.reserve(out.size() + rlp::length_of_list(payload));
    rlp::encode_header(out, {true, payload});
    rlp::encode(out, version);
    rlp::encode(out, as_bytes(client_id));
    rlp::encode_header(out, {true, caps_payload});
    for (const Capability& c : capabilities) {
        rlp::encode_header(out, {true, capability_payload(c)});
        rlp::encode(out, as_bytes(c.name));
        rlp::encode(out, c.version);
    }
    rlp::encode(out, listen_port);
    rlp::encode(out, ByteView{node_id});
}

Result<Hello> Hello::decode(ByteView payload) noexcept {
    if (payload.size() > kMaxHelloSize) return BaseProtocolError::kHelloTooLarge;
    auto list = rlp::decode_list(payload);
    if (!list) return list.error();
    if (!payload.empty()) return rlp::DecodeError::kTrailingBytes;
    ByteView items = *list;
    Hello h;

    if (items.empty()) return BaseProtocolError::kMissingField;
    auto version = rlp::decode_uint64(items);
    if (!version) return version.error();
    h.version = *version;

    if (items.empty()) return BaseProtocolError::kMissingField;
    auto client = rlp::decode_string(items);
    if (!client) return client.error();
    h.client_id.assign(as_chars(*client));

    if (items.empty()) return BaseProtocolError::kMissingField;
    auto caps = rlp::decode_list(items);
    if (!caps) return caps.error();
    for (ByteView rest = *caps; !rest.empty();) {
        auto c = decode_capability(rest);
        if (!c) return c.error();
        h.capabilities.push_back(std::move(*c));
    }

    if (items.empty()) return BaseProtocolError::kMissingField;
    auto port = rlp::decode_uint64(items);
    if (!port) return port.error();
    h.listen_port = *port;

    if (items.empty()) return BaseProtocolError::kMissingField;
    auto id = rlp::decode_string(items);
    if (!id) return id.error();
    if (id->size() != h.node_id.size()) return BaseProtocolError::kBadNodeIdLength;
    if (std::all_of(id->begin(), id->end(), [](uint8_t b) { return b == 0; })) return BaseProtocolError::kZeroNodeId;
    std::copy(id->begin(), id->end(), h.node_id.begin());

    // EIP-8: later versions may append fields; skip them but insist they are RLP items.
    while (!items.empty()) {
        auto extra = rlp::next_item(items);
        if (!extra) return extra.error();
    }
    return h;
}

// ---- negotiation --------------------------------------------------------------------------------

std::vector<Capability> capabilities_of(std::span<const ProtocolOffer> offers) {
    std::vector<Capability> caps;
    caps.reserve(offers.size());
    for (const ProtocolOffer& o : offers) caps.push_back({std::string(o.name), o.version});
    std::sort(caps.begin(), caps.end(), [](const Capability& a, const Capability& b) {
        return a.name != b.name ? a.name < b.name : a.version < b.version;
    });
    return caps;
}

Result<std::vector<SharedCapability>> negotiate(std::span<const ProtocolOffer> ours, const Hello& remote) {
    if (remote.version < kBaseProtocolVersion) return BaseProtocolError::kIncompatibleVersion;
    std::vector<SharedCapability> shared;
    for (const ProtocolOffer& o : ours) {
        const bool theirs =
            std::any_of(remote.capabilities.begin(), remote.capabilities.end(),
                        [&](const Capability& c) { return c.name == o.name && c.version == o.version; });
        if (!theirs) continue;
        auto same =
            std::find_if(shared.begin(), shared.end(), [&](const SharedCapability& s) { return s.name == o.name; });
        if (same == shared.end()) {
            shared.push_back({std::string(o.name), o.version, 0, o.length});
        } else if (o.version > same->version) {
            same->version = o.version;
            same->length = o.length;
        }
    }
    if (shared.empty()) return BaseProtocolError::kNoSharedCapability;
    // std::string compares as unsigned bytes, which is the order geth assigns ranges in.
    std::sort(shared.begin(), shared.end(),
              [](const SharedCapability& a, const SharedCapability& b) { return a.name < b.name; });
    uint64_t offset = kBaseProtocolLength;
    for (SharedCapability& s : shared) {
        s.offset = offset;
        offset += s.length;
    }
    return shared;
}

// ---- Disconnect ---------------------------------------------------------------------------------

std::string_view to_string(DisconnectReason r) noexcept {
    switch (r) {
        case DisconnectReason::kRequested:
            return "disconnect requested";
        case DisconnectReason::kNetworkError:
            return "network error";
        case DisconnectReason::kProtocolBreach:
            return "protocol breach";
        case DisconnectReason::kUselessPeer:
            return "useless peer";
        case DisconnectReason::kTooManyPeers:
            return "too many peers";
        case DisconnectReason::kAlreadyConnected:
            return "already connected";
        case DisconnectReason::kIncompatibleVersion:
            return "incompatible p2p version";
        case DisconnectReason::kInvalidIdentity:
            return "invalid node identity";
        case DisconnectReason::kQuitting:
            return "client quitting";
        case DisconnectReason::kUnexpectedIdentity:
            return "unexpected identity";
        case DisconnectReason::kConnectedToSelf:
            return "connected to self";
        case DisconnectReason::kPingTimeout:
            return "ping timeout";
        case DisconnectReason::kSubprotocolError:
            return "subprotocol error";
    }
    return "unknown";
}

void encode_disconnect(Bytes& out, DisconnectReason r) {
    const auto code = static_cast<uint64_t>(r);
    rlp::encode_header(out, {true, rlp::length(code)});
    rlp::encode(out, code);
}

Result<DisconnectReason> decode_disconnect(ByteView payload) noexcept {
    // Every legitimate Disconnect inflates to at most a few bytes, so a small stack buffer does and
    // a larger declared size means these bytes are not snappy.
    std::array<char, 16> buf;
    size_t n = 0;
    const char* p = reinterpret_cast<const char*>(payload.data());
    if (snappy::GetUncompressedLength(p, payload.size(), &n) && n <= buf.size() &&
        snappy::RawUncompress(p, payload.size(), buf.data())) {
        if (auto r = parse_reason(ByteView{reinterpret_cast<const uint8_t*>(buf.data()), n})) return r;
    }
    return parse_reason(payload);
}

}  // namespace headerd::p2p
