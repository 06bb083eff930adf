#include "p2p/rlpx/ecies.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <cstring>
#include <memory>

#include "p2p/rlpx/evp.hpp"

namespace headerd::rlpx::ecies {
namespace {

constexpr size_t kPointSize = 65;
constexpr size_t kIvSize = 16;
constexpr size_t kMacSize = 32;
constexpr size_t kKeySize = 16;  // AES-128

struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};
struct MacCtxFree {
    void operator()(EVP_MAC_CTX* c) const noexcept { EVP_MAC_CTX_free(c); }
};

// Encryption and MAC keys derived from the ECDH secret. Wiped on destruction.
struct Keys {
    std::array<uint8_t, kKeySize> enc{};
    std::array<uint8_t, 32> mac{};
    ~Keys() {
        OPENSSL_cleanse(enc.data(), enc.size());
        OPENSSL_cleanse(mac.data(), mac.size());
    }
};

bool sha256(std::initializer_list<ByteView> parts, uint8_t* out) noexcept {
    std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx{EVP_MD_CTX_new()};
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return false;
    for (ByteView p : parts) {
        if (EVP_DigestUpdate(ctx.get(), p.data(), p.size()) != 1) return false;
    }
    unsigned int len = 0;
    return EVP_DigestFinal_ex(ctx.get(), out, &len) == 1 && len == 32;
}

Result<Keys> derive_keys(const PrivateKey& key, const PublicKey& point) noexcept {
    auto z = ecdh(key, point);
    if (!z) return z.error();
    auto k = concat_kdf(*z, kKeySize + 16);
    OPENSSL_cleanse(z->data(), z->size());
    if (!k) return k.error();
    Keys keys;
    std::memcpy(keys.enc.data(), k->data(), kKeySize);
    // The MAC key is the hash of the second KDF half, not the half itself (go-ethereum, and so
    // every client, does this).
    const bool ok = sha256({ByteView{*k}.subspan(kKeySize)}, keys.mac.data());
    OPENSSL_cleanse(k->data(), k->size());
    if (!ok) return make_error_code(Errc::kCryptoFailure);
    return keys;
}

bool hmac_sha256(const std::array<uint8_t, 32>& key, ByteView data, ByteView shared, uint8_t* out) noexcept {
    // Fetched once: a fetch walks the provider tables, and the EVP_MAC object may be shared
    // between threads (only the EVP_MAC_CTX may not).
    static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, OSSL_MAC_NAME_HMAC, nullptr);
    if (mac == nullptr) return false;
    std::unique_ptr<EVP_MAC_CTX, MacCtxFree> ctx{EVP_MAC_CTX_new(mac)};
    if (!ctx) return false;
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_construct_end()};
    size_t len = 0;
    return EVP_MAC_init(ctx.get(), key.data(), key.size(), params) == 1 &&
           EVP_MAC_update(ctx.get(), data.data(), data.size()) == 1 &&
           EVP_MAC_update(ctx.get(), shared.data(), shared.size()) == 1 &&
           EVP_MAC_final(ctx.get(), out, &len, kMacSize) == 1 && len == kMacSize;
}

bool aes128_ctr(const std::array<uint8_t, kKeySize>& key, const uint8_t* iv, ByteView in, uint8_t* out) noexcept {
    EvpCipherCtx ctx = make_cipher(EVP_aes_128_ctr(), key.data(), iv);
    return ctx && cipher_update(ctx.get(), out, in.data(), in.size());
}

}  // namespace

Result<Bytes> concat_kdf(ByteView z, size_t length) noexcept {
    Bytes out((length + 31) / 32 * 32);
    uint8_t counter[4];
    for (size_t i = 0; i * 32 < length; ++i) {
        store_be32(counter, static_cast<uint32_t>(i + 1));
        if (!sha256({ByteView{counter}, z}, out.data() + i * 32)) return make_error_code(Errc::kCryptoFailure);
    }
    out.resize(length);
    return out;
}

Result<Bytes> encrypt(const PublicKey& recipient, ByteView plaintext, ByteView shared_mac_data) noexcept {
    auto ephemeral = PrivateKey::generate();
    if (!ephemeral) return ephemeral.error();
    auto keys = derive_keys(*ephemeral, recipient);
    if (!keys) return keys.error();

    Bytes out(kOverhead + plaintext.size());
    uint8_t* p = out.data();
    p[0] = 0x04;
    std::memcpy(p + 1, ephemeral->public_key().bytes().data(), kPublicKeySize);
    uint8_t* iv = p + kPointSize;
    if (auto r = random_bytes({iv, kIvSize}); !r) return r.error();
    uint8_t* ct = iv + kIvSize;
    if (!aes128_ctr(keys->enc, iv, plaintext, ct)) return make_error_code(Errc::kCryptoFailure);
    const ByteView iv_ct{iv, kIvSize + plaintext.size()};
    if (!hmac_sha256(keys->mac, iv_ct, shared_mac_data, ct + plaintext.size())) {
        return make_error_code(Errc::kCryptoFailure);
    }
    return out;
}

Result<Bytes> decrypt(const PrivateKey& key, ByteView message, ByteView shared_mac_data) noexcept {
    if (message.size() < kOverhead) return make_error_code(Errc::kEciesTooShort);
    // Only the uncompressed form is used on the wire; the curve check stops invalid-curve
    // attacks that would otherwise leak bits of `key` through the MAC outcome.
    if (message[0] != 0x04) return make_error_code(Errc::kEciesInvalidPoint);
    auto point = PublicKey::from_bytes(message.subspan(1, kPublicKeySize));
    if (!point) return make_error_code(Errc::kEciesInvalidPoint);
    auto keys = derive_keys(key, *point);
    if (!keys) return keys.error();

    const ByteView iv_ct = message.subspan(kPointSize, message.size() - kPointSize - kMacSize);
    const ByteView tag = message.last(kMacSize);
    std::array<uint8_t, kMacSize> expected;
    if (!hmac_sha256(keys->mac, iv_ct, shared_mac_data, expected.data())) return make_error_code(Errc::kCryptoFailure);
    if (CRYPTO_memcmp(expected.data(), tag.data(), kMacSize) != 0) return make_error_code(Errc::kEciesBadMac);

    const ByteView ct = iv_ct.subspan(kIvSize);
    Bytes out(ct.size());
    if (!aes128_ctr(keys->enc, iv_ct.data(), ct, out.data())) return make_error_code(Errc::kCryptoFailure);
    return out;
}

}  // namespace headerd::rlpx::ecies
