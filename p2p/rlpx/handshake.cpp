#include "p2p/rlpx/handshake.hpp"

#include <algorithm>

#include "core/rlp.hpp"
#include "p2p/rlpx/ecies.hpp"

namespace headerd::rlpx {
namespace {

// auth-vsn / ack-vsn we send. Receivers accept any value (EIP-8 forward compatibility).
constexpr uint64_t kHandshakeVersion = 4;
// EIP-8 asks for at least 100 bytes of padding so an EIP-8 auth is longer than a legacy one; a
// random amount makes the packet size useless for fingerprinting.
constexpr size_t kMinPadding = 100;
constexpr size_t kPaddingRange = 200;

// A fixed-size string field of an auth/ack list.
template <size_t N>
bool decode_fixed(ByteView& in, std::array<uint8_t, N>& out) noexcept {
    auto s = rlp::decode_string(in);
    if (!s || s->size() != N) return false;
    std::copy(s->begin(), s->end(), out.begin());
    return true;
}

// The version and any further elements: values ignored, but each must be well-formed RLP, as
// go-ethereum's "tail" decoding requires.
bool skip_version_and_rest(ByteView& in) noexcept {
    if (!rlp::decode_uint64(in)) return false;
    while (!in.empty()) {
        if (!rlp::next_item(in)) return false;
    }
    return true;
}

}  // namespace

Handshake Handshake::initiator(const PrivateKey& me, const PublicKey& remote) {
    Handshake h{Role::kInitiator, me, State::kWriteAuth};
    h.remote_ = remote;
    return h;
}

Handshake Handshake::recipient(const PrivateKey& me) { return Handshake{Role::kRecipient, me, State::kReadAuth}; }

Handshake Handshake::initiator(const PrivateKey& me, const PublicKey& remote, const PrivateKey& ephemeral,
                               const Hash32& nonce) {
    Handshake h = initiator(me, remote);
    h.ephemeral_ = ephemeral;
    h.nonce_ = nonce;
    return h;
}

Handshake Handshake::recipient(const PrivateKey& me, const PrivateKey& ephemeral, const Hash32& nonce) {
    Handshake h = recipient(me);
    h.ephemeral_ = ephemeral;
    h.nonce_ = nonce;
    return h;
}

std::error_code Handshake::fail(std::error_code ec) noexcept {
    state_ = State::kFailed;
    return ec;
}

Result<void> Handshake::ensure_ephemeral() noexcept {
    if (!ephemeral_) {
        auto key = PrivateKey::generate();
        if (!key) return key.error();
        ephemeral_ = *key;
    }
    if (!nonce_) {
        Hash32 nonce;
        if (auto r = random_bytes(nonce); !r) return r.error();
        nonce_ = nonce;
    }
    return {};
}

Result<Bytes> Handshake::seal(const Bytes& body, const PublicKey& to) noexcept {
    uint8_t r[2];
    if (auto ok = random_bytes(r); !ok) return ok.error();
    const size_t padding = kMinPadding + load_be16(r) % kPaddingRange;
    Bytes plain;
    plain.reserve(body.size() + padding);
    append(plain, body);
    plain.resize(body.size() + padding, 0);

    // The prefix is MAC input of the ECIES message it precedes, so it is computed first.
    const size_t size = plain.size() + ecies::kOverhead;
    Bytes packet(kHandshakePrefixSize);
    store_be16(packet.data(), static_cast<uint16_t>(size));
    auto sealed = ecies::encrypt(to, plain, packet);
    if (!sealed) return sealed.error();
    append(packet, *sealed);
    return packet;
}

Result<Bytes> Handshake::write_auth() noexcept {
    if (role_ != Role::kInitiator || state_ != State::kWriteAuth) return make_error_code(Errc::kHandshakeWrongState);
    if (auto r = ensure_ephemeral(); !r) return fail(r.error());
    // The ephemeral key signs static-shared-secret ^ nonce: the recipient recovers the ephemeral
    // public key from it, and only the holder of our static key could have produced that value.
    auto static_shared = ecdh(me_, *remote_);
    if (!static_shared) return fail(static_shared.error());
    auto sig = sign_recoverable(*ephemeral_, xor32(*static_shared, *nonce_));
    if (!sig) return fail(sig.error());

    const ByteView pub{me_.public_key().bytes()};
    const size_t payload = rlp::length(ByteView{*sig}) + rlp::length(pub) + rlp::length(ByteView{*nonce_}) +
                           rlp::length(kHandshakeVersion);
    Bytes body;
    body.reserve(rlp::length_of_list(payload));
    rlp::encode_header(body, {.list = true, .payload_length = payload});
    rlp::encode(body, ByteView{*sig});
    rlp::encode(body, pub);
    rlp::encode(body, ByteView{*nonce_});
    rlp::encode(body, kHandshakeVersion);

    auto packet = seal(body, *remote_);
    if (!packet) return fail(packet.error());
    auth_packet_ = *packet;
    state_ = State::kReadAck;
    return packet;
}

Result<Bytes> Handshake::write_ack() noexcept {
    if (role_ != Role::kRecipient || state_ != State::kWriteAck) return make_error_code(Errc::kHandshakeWrongState);
    if (auto r = ensure_ephemeral(); !r) return fail(r.error());

    const ByteView pub{ephemeral_->public_key().bytes()};
    const size_t payload = rlp::length(pub) + rlp::length(ByteView{*nonce_}) + rlp::length(kHandshakeVersion);
    Bytes body;
    body.reserve(rlp::length_of_list(payload));
    rlp::encode_header(body, {.list = true, .payload_length = payload});
    rlp::encode(body, pub);
    rlp::encode(body, ByteView{*nonce_});
    rlp::encode(body, kHandshakeVersion);

    auto packet = seal(body, *remote_);
    if (!packet) return fail(packet.error());
    ack_packet_ = *packet;
    state_ = State::kDone;
    return packet;
}

size_t Handshake::bytes_needed() const noexcept {
    if (state_ != State::kReadAuth && state_ != State::kReadAck) return 0;
    if (incoming_.size() < kHandshakePrefixSize) return kHandshakePrefixSize - incoming_.size();
    return kHandshakePrefixSize + incoming_size_ - incoming_.size();
}

Result<size_t> Handshake::read(ByteView& in) noexcept {
    if (state_ != State::kReadAuth && state_ != State::kReadAck) return make_error_code(Errc::kHandshakeWrongState);
    while (!in.empty() && bytes_needed() > 0) {
        const size_t take = std::min(bytes_needed(), in.size());
        incoming_.insert(incoming_.end(), in.begin(), in.begin() + static_cast<std::ptrdiff_t>(take));
        in = in.subspan(take);
        if (incoming_size_ == 0 && incoming_.size() == kHandshakePrefixSize) {
            // Bound the size before buffering any of the body.
            const size_t size = load_be16(incoming_.data());
            if (size > kMaxHandshakePacketSize) return fail(make_error_code(Errc::kHandshakeSizeTooLarge));
            if (size < ecies::kOverhead) return fail(make_error_code(Errc::kHandshakeSizeTooSmall));
            incoming_size_ = size;
            incoming_.reserve(kHandshakePrefixSize + size);
        }
    }
    if (incoming_size_ == 0 || bytes_needed() > 0) return bytes_needed();

    auto r = state_ == State::kReadAuth ? on_auth() : on_ack();
    if (!r) return fail(r.error());
    return size_t{0};
}

Result<void> Handshake::on_auth() noexcept {
    const ByteView prefix = ByteView{incoming_}.first(kHandshakePrefixSize);
    auto plain = ecies::decrypt(me_, ByteView{incoming_}.subspan(kHandshakePrefixSize), prefix);
    if (!plain) return plain.error();

    // Only the first item counts; what follows it is padding.
    ByteView rest{*plain};
    auto list = rlp::decode_list(rest);
    if (!list) return make_error_code(Errc::kMalformedAuth);
    Signature sig;
    std::array<uint8_t, kPublicKeySize> pub;
    Hash32 nonce;
    if (!decode_fixed(*list, sig) || !decode_fixed(*list, pub) || !decode_fixed(*list, nonce) ||
        !skip_version_and_rest(*list)) {
        return make_error_code(Errc::kMalformedAuth);
    }

    auto remote = PublicKey::from_bytes(pub);
    if (!remote) return remote.error();
    auto static_shared = ecdh(me_, *remote);
    if (!static_shared) return static_shared.error();
    auto remote_ephemeral = recover(sig, xor32(*static_shared, nonce));
    if (!remote_ephemeral) return remote_ephemeral.error();

    remote_ = *remote;
    remote_ephemeral_ = *remote_ephemeral;
    remote_nonce_ = nonce;
    auth_packet_ = std::move(incoming_);
    incoming_ = {};
    state_ = State::kWriteAck;
    return {};
}

Result<void> Handshake::on_ack() noexcept {
    const ByteView prefix = ByteView{incoming_}.first(kHandshakePrefixSize);
    auto plain = ecies::decrypt(me_, ByteView{incoming_}.subspan(kHandshakePrefixSize), prefix);
    if (!plain) return plain.error();

    ByteView rest{*plain};
    auto list = rlp::decode_list(rest);
    if (!list) return make_error_code(Errc::kMalformedAck);
    std::array<uint8_t, kPublicKeySize> pub;
    Hash32 nonce;
    if (!decode_fixed(*list, pub) || !decode_fixed(*list, nonce) || !skip_version_and_rest(*list)) {
        return make_error_code(Errc::kMalformedAck);
    }
    auto remote_ephemeral = PublicKey::from_bytes(pub);
    if (!remote_ephemeral) return remote_ephemeral.error();

    remote_ephemeral_ = *remote_ephemeral;
    remote_nonce_ = nonce;
    ack_packet_ = std::move(incoming_);
    incoming_ = {};
    state_ = State::kDone;
    return {};
}

Result<Secrets> Handshake::secrets() const noexcept {
    if (state_ != State::kDone) return make_error_code(Errc::kHandshakeWrongState);
    auto shared = ecdh(*ephemeral_, *remote_ephemeral_);
    if (!shared) return shared.error();
    const bool initiator = role_ == Role::kInitiator;
    const Hash32& initiator_nonce = initiator ? *nonce_ : remote_nonce_;
    const Hash32& recipient_nonce = initiator ? remote_nonce_ : *nonce_;
    return derive_secrets(role_, *shared, initiator_nonce, recipient_nonce, auth_packet_, ack_packet_, *remote_);
}

}  // namespace headerd::rlpx
