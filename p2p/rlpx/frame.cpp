#include "p2p/rlpx/frame.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>
#include <new>
#include <utility>

namespace headerd::rlpx {
namespace {

// header-data = rlp([capability-id 0, context-id 0]). Receivers ignore it.
constexpr uint8_t kHeaderData[] = {0xc2, 0x80, 0x80};
constexpr uint8_t kZeroIv[16] = {};
constexpr uint8_t kZeros[16] = {};

class KeccakMac final : public MacHash {
  public:
    explicit KeccakMac(Keccak256 state) : state_(std::move(state)) {}
    void update(ByteView data) noexcept override { state_.update(data); }
    Hash32 digest() const noexcept override { return state_.digest(); }

  private:
    Keccak256 state_;
};

EvpCipherCtx make_cipher_or_throw(const EVP_CIPHER* cipher, const Hash32& key, const uint8_t* iv) {
    EvpCipherCtx ctx = make_cipher(cipher, key.data(), iv);
    if (!ctx) throw std::bad_alloc();
    return ctx;
}

FrameMac::Tag first16(const Hash32& h) noexcept {
    FrameMac::Tag t;
    std::memcpy(t.data(), h.data(), t.size());
    return t;
}

}  // namespace

// ---- FrameMac ----------------------------------------------------------------------------------

FrameMac::FrameMac(const Hash32& mac_secret, std::unique_ptr<MacHash> hash)
    : hash_(std::move(hash)), ecb_(make_cipher_or_throw(EVP_aes_256_ecb(), mac_secret, nullptr)) {}

FrameMac::Tag FrameMac::digest16() const noexcept { return first16(hash_->digest()); }

Result<FrameMac::Tag> FrameMac::absorb_encrypted(const Tag& block, const uint8_t* x) noexcept {
    Tag seed;
    if (!cipher_update(ecb_.get(), seed.data(), block.data(), seed.size()))
        return make_error_code(Errc::kCryptoFailure);
    for (size_t i = 0; i < seed.size(); ++i) seed[i] ^= x[i];
    hash_->update(seed);
    return digest16();
}

Result<FrameMac::Tag> FrameMac::update_header(std::span<const uint8_t, 16> header_ct) noexcept {
    return absorb_encrypted(digest16(), header_ct.data());
}

Result<FrameMac::Tag> FrameMac::update_body(ByteView frame_ct) noexcept {
    hash_->update(frame_ct);
    const Tag t = digest16();
    return absorb_encrypted(t, t.data());
}

// ---- FrameCodec --------------------------------------------------------------------------------

FrameCodec::FrameCodec(Secrets secrets, size_t max_frame_size)
    : FrameCodec(secrets.aes, secrets.mac, std::make_unique<KeccakMac>(std::move(secrets.egress_mac)),
                 std::make_unique<KeccakMac>(std::move(secrets.ingress_mac)), max_frame_size) {}

FrameCodec::FrameCodec(const Hash32& aes_secret, const Hash32& mac_secret, std::unique_ptr<MacHash> egress,
                       std::unique_ptr<MacHash> ingress, size_t max_frame_size)
    // Both directions start from the same key and a zero IV; the stream is never reset.
    : egress_aes_(make_cipher_or_throw(EVP_aes_256_ctr(), aes_secret, kZeroIv)),
      ingress_aes_(make_cipher_or_throw(EVP_aes_256_ctr(), aes_secret, kZeroIv)),
      egress_mac_(mac_secret, std::move(egress)),
      ingress_mac_(mac_secret, std::move(ingress)),
      max_frame_size_(max_frame_size < kMaxFrameSizeField ? max_frame_size : kMaxFrameSizeField) {}

Result<void> FrameCodec::write_frame(ByteView frame_data, Bytes& out) noexcept {
    const size_t size = frame_data.size();
    if (size > kMaxFrameSizeField) return make_error_code(Errc::kFrameTooLarge);
    const size_t padded = (size + 15) / 16 * 16;
    const size_t start = out.size();
    out.resize(start + wire_size(size));
    uint8_t* const header = out.data() + start;
    uint8_t* const body = header + kFrameHeaderSize;

    header[0] = static_cast<uint8_t>(size >> 16);
    header[1] = static_cast<uint8_t>(size >> 8);
    header[2] = static_cast<uint8_t>(size);
    std::memcpy(header + 3, kHeaderData, sizeof(kHeaderData));
    std::memset(header + 3 + sizeof(kHeaderData), 0, 16 - 3 - sizeof(kHeaderData));

    // The egress state may have advanced past what the peer will ever see, so after a failure the
    // connection is unusable; `out` is at least left as it was.
    const auto crypto_failure = [&out, start] {
        out.resize(start);
        return make_error_code(Errc::kCryptoFailure);
    };
    // Encrypt first: both MACs are over ciphertext.
    if (!cipher_update(egress_aes_.get(), header, header, 16)) return crypto_failure();
    auto header_mac = egress_mac_.update_header(std::span<const uint8_t, 16>{header, 16});
    if (!header_mac) return crypto_failure();
    std::memcpy(header + 16, header_mac->data(), kFrameMacSize);

    // Straight from the caller's bytes into `out`; the zero padding is encrypted in its own call
    // (CTR keeps its position across calls, partial blocks included).
    if (!cipher_update(egress_aes_.get(), body, frame_data.data(), size) ||
        !cipher_update(egress_aes_.get(), body + size, kZeros, padded - size)) {
        return crypto_failure();
    }
    auto frame_mac = egress_mac_.update_body(ByteView{body, padded});
    if (!frame_mac) return crypto_failure();
    std::memcpy(body + padded, frame_mac->data(), kFrameMacSize);
    return {};
}

std::error_code FrameCodec::fail(Errc e) noexcept {
    read_state_ = ReadState::kFailed;
    return make_error_code(e);
}

Result<size_t> FrameCodec::read_header(ByteView header) noexcept {
    if (read_state_ != ReadState::kHeader || header.size() != kFrameHeaderSize) return fail(Errc::kFrameWrongState);
    auto expected = ingress_mac_.update_header(header.first<16>());
    if (!expected) return fail(Errc::kCryptoFailure);
    if (CRYPTO_memcmp(expected->data(), header.data() + 16, kFrameMacSize) != 0) return fail(Errc::kBadHeaderMac);

    uint8_t plain[16];
    if (!cipher_update(ingress_aes_.get(), plain, header.data(), 16)) return fail(Errc::kCryptoFailure);
    // Bytes 3..15 (header-data and padding) carry nothing anyone uses; they are not checked.
    const size_t size = (size_t{plain[0]} << 16) | (size_t{plain[1]} << 8) | plain[2];
    if (size > max_frame_size_) return fail(Errc::kFrameTooLarge);
    pending_frame_size_ = size;
    read_state_ = ReadState::kBody;
    return size;
}

Result<size_t> FrameCodec::check_body(ByteView body) noexcept {
    if (read_state_ != ReadState::kBody || body.size() != body_size(pending_frame_size_)) {
        return fail(Errc::kFrameWrongState);
    }
    const size_t padded = body.size() - kFrameMacSize;
    auto expected = ingress_mac_.update_body(body.first(padded));
    if (!expected) return fail(Errc::kCryptoFailure);
    if (CRYPTO_memcmp(expected->data(), body.data() + padded, kFrameMacSize) != 0) return fail(Errc::kBadFrameMac);
    return padded;
}

Result<ByteView> FrameCodec::read_body(std::span<uint8_t> body) noexcept {
    auto padded = check_body(body);
    if (!padded) return padded.error();
    if (!cipher_update(ingress_aes_.get(), body.data(), body.data(), *padded)) return fail(Errc::kCryptoFailure);
    read_state_ = ReadState::kHeader;
    return ByteView{body.data(), pending_frame_size_};
}

Result<ByteView> FrameCodec::read_body(ByteView body, Bytes& out) noexcept {
    auto padded = check_body(body);
    if (!padded) return padded.error();
    out.resize(*padded);
    if (!cipher_update(ingress_aes_.get(), out.data(), body.data(), *padded)) return fail(Errc::kCryptoFailure);
    read_state_ = ReadState::kHeader;
    return ByteView{out.data(), pending_frame_size_};
}

}  // namespace headerd::rlpx
