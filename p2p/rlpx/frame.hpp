#pragma once

// RLPx frames (docs/rlpx.md "Frames"): encryption with one AES-256-CTR stream per direction,
// and the keccak/AES-ECB MACs over header and body ciphertext.
//
// A FrameCodec is the whole session state of one connection. Each direction's MAC sponge and
// counter advance with every frame, so frames must be encrypted in exactly the order they go on
// the wire (one writer per connection: encrypt and write a frame before encrypting the next) and
// decrypted in the order they arrive. Not thread-safe. The egress side (write_frame) and the
// ingress side (read_header/read_body) share no mutable state, so one writer and one reader
// may run at the same time; two writers or two readers may not. After any read error the
// ingress state is out of step with the peer and further reads fail: close the connection.
//
// Steady state allocates nothing: cipher contexts are created once, and output goes into
// caller-owned buffers that only grow.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "p2p/rlpx/error.hpp"
#include "p2p/rlpx/evp.hpp"
#include "p2p/rlpx/secrets.hpp"

namespace headerd::rlpx {

// header-ct(16) || header-mac(16)
inline constexpr size_t kFrameHeaderSize = 32;
inline constexpr size_t kFrameMacSize = 16;
// frame-size is a 24-bit field.
inline constexpr size_t kMaxFrameSizeField = 0xFFFFFF;

// The running hash behind one direction's MAC: keccak-256 in RLPx. An interface so that tests
// can replay go-ethereum's frame vector, which substitutes a fake hash.
class MacHash {
  public:
    virtual ~MacHash() = default;
    virtual void update(ByteView data) noexcept = 0;
    // Digest of everything absorbed so far, leaving the state as it was.
    virtual Hash32 digest() const noexcept = 0;
};

// One direction's MAC state: the running hash plus AES-256-ECB keyed with the mac-secret.
class FrameMac {
  public:
    using Tag = std::array<uint8_t, 16>;

    // Throws std::bad_alloc if OpenSSL cannot allocate its cipher context.
    FrameMac(const Hash32& mac_secret, std::unique_ptr<MacHash> hash);

    // Absorbs AES(digest16) ^ header_ct and returns the new digest16: the header MAC.
    Result<Tag> update_header(std::span<const uint8_t, 16> header_ct) noexcept;
    // Absorbs frame_ct (padding included), then AES(t) ^ t with t = digest16; returns the new
    // digest16: the frame MAC.
    Result<Tag> update_body(ByteView frame_ct) noexcept;
    // First 16 bytes of the running digest.
    Tag digest16() const noexcept;

  private:
    Result<Tag> absorb_encrypted(const Tag& block, const uint8_t* x) noexcept;

    std::unique_ptr<MacHash> hash_;
    EvpCipherCtx ecb_;
};

class FrameCodec {
  public:
    // The 24-bit size field cannot announce more than 16 MiB - 1, so "16 MiB plus slack" is the
    // field's maximum. A server passes a lower limit matched to its message caps.
    static constexpr size_t kDefaultMaxFrameSize = kMaxFrameSizeField;

    // Throws std::bad_alloc if OpenSSL cannot allocate its cipher contexts.
    explicit FrameCodec(Secrets secrets, size_t max_frame_size = kDefaultMaxFrameSize);
    // Explicit MAC hashes, for vectors that replace keccak.
    FrameCodec(const Hash32& aes_secret, const Hash32& mac_secret, std::unique_ptr<MacHash> egress,
               std::unique_ptr<MacHash> ingress, size_t max_frame_size = kDefaultMaxFrameSize);

    FrameCodec(FrameCodec&&) noexcept = default;
    FrameCodec& operator=(FrameCodec&&) noexcept = default;

    // Bytes on the wire for a frame carrying `frame_size` bytes of frame data.
    static constexpr size_t wire_size(size_t frame_size) noexcept { return kFrameHeaderSize + body_size(frame_size); }
    // Bytes to read after a header that announced `frame_size`: padded ciphertext + frame MAC.
    static constexpr size_t body_size(size_t frame_size) noexcept {
        return (frame_size + 15) / 16 * 16 + kFrameMacSize;
    }

    // Appends one frame carrying `frame_data` (msg-id || msg-data) to `out`. `frame_data` must
    // not point into `out`. Errc::kFrameTooLarge above 2^24 - 1 bytes (nothing is appended).
    Result<void> write_frame(ByteView frame_data, Bytes& out) noexcept;

    // Reading is two steps so the caller learns how much to read before reading it:
    // 1. read_header() with exactly kFrameHeaderSize bytes: checks the header MAC, decrypts, and
    //    returns frame-size (kBadHeaderMac; kFrameTooLarge above the limit given at construction).
    Result<size_t> read_header(ByteView header) noexcept;
    // 2. read_body() with exactly body_size(frame-size) bytes: checks the frame MAC, then decrypts.
    //    In place: returns the frame data as a view into `body`.
    Result<ByteView> read_body(std::span<uint8_t> body) noexcept;
    //    Or into `out` (resized to the padded size, so a reused buffer stops allocating); returns a
    //    view into `out`.
    Result<ByteView> read_body(ByteView body, Bytes& out) noexcept;

    size_t max_frame_size() const noexcept { return max_frame_size_; }

  private:
    enum class ReadState { kHeader, kBody, kFailed };

    Result<size_t> check_body(ByteView body) noexcept;
    std::error_code fail(Errc e) noexcept;

    EvpCipherCtx egress_aes_;
    EvpCipherCtx ingress_aes_;
    FrameMac egress_mac_;
    FrameMac ingress_mac_;
    size_t max_frame_size_;
    ReadState read_state_{ReadState::kHeader};
    size_t pending_frame_size_{0};
};

}  // namespace headerd::rlpx
