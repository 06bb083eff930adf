#pragma once

// The RLPx encryption handshake in EIP-8 form, sans I/O: the caller moves bytes between this
// object and the socket and enforces the deadline (geth allows 5 s for auth + ack). Layouts and
// limits: docs/rlpx.md.
//
// Initiator (dialer):   write_auth() -> send; read(ack bytes) until 0 -> secrets()
// Recipient (listener): read(auth bytes) until 0 -> write_ack() -> send -> secrets()
//
// Pre-EIP-8 packets are not accepted (as in geth since 2021): the peer's first two bytes are
// always taken as the EIP-8 size prefix. One Handshake per connection; not thread-safe.

#include <cstddef>
#include <optional>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "p2p/rlpx/secp256k1.hpp"
#include "p2p/rlpx/secrets.hpp"

namespace headerd::rlpx {

// Largest auth/ack packet accepted, size prefix excluded (go-ethereum's limit). Real packets
// are 400-700 bytes; the bound is checked on the prefix, before anything is buffered.
inline constexpr size_t kMaxHandshakePacketSize = 2048;
// Size of the EIP-8 size prefix.
inline constexpr size_t kHandshakePrefixSize = 2;

class Handshake {
  public:
    static Handshake initiator(const PrivateKey& me, const PublicKey& remote);
    static Handshake recipient(const PrivateKey& me);
    // Fixed ephemeral key and nonce, for test vectors; production code uses the overloads above,
    // which draw both from the CSPRNG when the first packet is written.
    static Handshake initiator(const PrivateKey& me, const PublicKey& remote, const PrivateKey& ephemeral,
                               const Hash32& nonce);
    static Handshake recipient(const PrivateKey& me, const PrivateKey& ephemeral, const Hash32& nonce);

    Role role() const noexcept { return role_; }

    // Initiator, first call: the auth packet to send, size prefix included.
    Result<Bytes> write_auth() noexcept;
    // Recipient, once read() has returned 0: the ack packet to send. The handshake is done after it.
    Result<Bytes> write_ack() noexcept;

    // How many more bytes the packet being read needs: first the rest of the 2-byte size prefix,
    // then the rest of the packet. 0 when no packet is being read. A caller that reads exactly
    // this many bytes each time never over-reads the socket.
    size_t bytes_needed() const noexcept;
    // Feeds the peer's packet: auth (recipient) or ack (initiator, after write_auth()). Consumes
    // at most bytes_needed() bytes from the front of `in`, so bytes that follow the packet (the
    // peer's first frame) stay in `in`. Returns bytes_needed() afterwards; 0 means the packet is
    // complete, authenticated and decoded. Errors caused by the peer's bytes are final (the
    // handshake is failed, later calls return kHandshakeWrongState): close the connection.
    Result<size_t> read(ByteView& in) noexcept;

    // The peer's static key: given to an initiator, learned by a recipient from auth.
    const std::optional<PublicKey>& remote() const noexcept { return remote_; }
    bool done() const noexcept { return state_ == State::kDone; }
    // Once done(): the session secrets for FrameCodec.
    Result<Secrets> secrets() const noexcept;

  private:
    enum class State { kWriteAuth, kReadAck, kReadAuth, kWriteAck, kDone, kFailed };

    Handshake(Role role, const PrivateKey& me, State state) : role_(role), me_(me), state_(state) {}

    Result<void> ensure_ephemeral() noexcept;
    Result<Bytes> seal(const Bytes& body, const PublicKey& to) noexcept;
    Result<void> on_auth() noexcept;
    Result<void> on_ack() noexcept;
    std::error_code fail(std::error_code ec) noexcept;

    Role role_;
    PrivateKey me_;
    State state_;
    std::optional<PublicKey> remote_;
    std::optional<PrivateKey> ephemeral_;
    std::optional<Hash32> nonce_;
    std::optional<PublicKey> remote_ephemeral_;
    Hash32 remote_nonce_{};
    Bytes incoming_;           // the packet being read, prefix included
    size_t incoming_size_{0};  // from its prefix; 0 until the prefix is complete
    Bytes auth_packet_;
    Bytes ack_packet_;
};

}  // namespace headerd::rlpx
