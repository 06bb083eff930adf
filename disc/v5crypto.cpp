#include "disc/v5crypto.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <climits>
#include <cstring>
#include <memory>
#include <string_view>

#include "p2p/rlpx/error.hpp"
#include "p2p/rlpx/evp.hpp"

namespace headerd::disc::v5 {
namespace {

constexpr std::string_view kKeyAgreementText = "discovery v5 key agreement";
constexpr std::string_view kIdProofText = "discovery v5 identity proof";

struct KdfFree {
    void operator()(EVP_KDF* k) const noexcept { EVP_KDF_free(k); }
};
struct KdfCtxFree {
    void operator()(EVP_KDF_CTX* c) const noexcept { EVP_KDF_CTX_free(c); }
};
struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};

// HKDF-SHA256 extract-then-expand, filling `out`.
bool hkdf_sha256(ByteView secret, ByteView salt, ByteView info, std::span<uint8_t> out) noexcept {
    std::unique_ptr<EVP_KDF, KdfFree> kdf{EVP_KDF_fetch(nullptr, "HKDF", nullptr)};
    if (!kdf) return false;
    std::unique_ptr<EVP_KDF_CTX, KdfCtxFree> ctx{EVP_KDF_CTX_new(kdf.get())};
    if (!ctx) return false;
    char digest[] = "SHA256";
    // OSSL_PARAM wants non-const pointers; OpenSSL only reads these buffers.
    auto octets = [](const char* name, ByteView b) {
        return OSSL_PARAM_construct_octet_string(name, const_cast<uint8_t*>(b.data()), b.size());
    };
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
        octets(OSSL_KDF_PARAM_KEY, secret),
        octets(OSSL_KDF_PARAM_SALT, salt),
        octets(OSSL_KDF_PARAM_INFO, info),
        OSSL_PARAM_construct_end(),
    };
    return EVP_KDF_derive(ctx.get(), out.data(), out.size(), params) == 1;
}

// One-shot GCM in either direction; `tag` is written when encrypting and checked when decrypting.
bool gcm(bool encrypt, const Key& key, const Nonce& nonce, ByteView in, ByteView ad, uint8_t* out,
         uint8_t* tag) noexcept {
    if (in.size() > INT_MAX || ad.size() > INT_MAX) return false;
    rlpx::EvpCipherCtx ctx{EVP_CIPHER_CTX_new()};
    if (!ctx) return false;
    EVP_CIPHER_CTX* c = ctx.get();
    const int enc = encrypt ? 1 : 0;
    // The default GCM IV length is 12 bytes, the size discv5 uses.
    if (EVP_CipherInit_ex(c, EVP_aes_128_gcm(), nullptr, key.data(), nonce.data(), enc) != 1) return false;
    int len = 0;
    if (!ad.empty() && EVP_CipherUpdate(c, nullptr, &len, ad.data(), static_cast<int>(ad.size())) != 1) return false;
    if (!in.empty() && EVP_CipherUpdate(c, out, &len, in.data(), static_cast<int>(in.size())) != 1) return false;
    if (!encrypt && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagSize), tag) != 1) return false;
    uint8_t tail[16];
    if (EVP_CipherFinal_ex(c, tail, &len) != 1) return false;  // decrypting: the tag check
    return !encrypt || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagSize), tag) == 1;
}

}  // namespace

Result<SessionKeys> derive_keys(const rlpx::PrivateKey& secret, const rlpx::PublicKey& point, const Hash32& id_a,
                                const Hash32& id_b, ByteView challenge_data) noexcept {
    auto shared = rlpx::ecdh_compressed(secret, point);
    if (!shared) return shared.error();
    std::array<uint8_t, kKeyAgreementText.size() + 64> info;
    std::memcpy(info.data(), kKeyAgreementText.data(), kKeyAgreementText.size());
    std::memcpy(info.data() + kKeyAgreementText.size(), id_a.data(), 32);
    std::memcpy(info.data() + kKeyAgreementText.size() + 32, id_b.data(), 32);
    std::array<uint8_t, 2 * kKeySize> okm;
    const bool ok = hkdf_sha256(*shared, challenge_data, info, okm);
    OPENSSL_cleanse(shared->data(), shared->size());
    if (!ok) return make_error_code(rlpx::Errc::kCryptoFailure);
    SessionKeys keys;
    std::memcpy(keys.initiator_key.data(), okm.data(), kKeySize);
    std::memcpy(keys.recipient_key.data(), okm.data() + kKeySize, kKeySize);
    OPENSSL_cleanse(okm.data(), okm.size());
    return keys;
}

Hash32 id_signature_input(ByteView challenge_data, ByteView ephemeral_pubkey, const Hash32& dest_id) noexcept {
    Hash32 out{};
    std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx{EVP_MD_CTX_new()};
    // SHA-256 of in-memory bytes fails only when out of memory; the zero hash then verifies
    // nothing anyone signed.
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
        EVP_DigestUpdate(ctx.get(), kIdProofText.data(), kIdProofText.size()) != 1 ||
        EVP_DigestUpdate(ctx.get(), challenge_data.data(), challenge_data.size()) != 1 ||
        EVP_DigestUpdate(ctx.get(), ephemeral_pubkey.data(), ephemeral_pubkey.size()) != 1 ||
        EVP_DigestUpdate(ctx.get(), dest_id.data(), dest_id.size()) != 1 ||
        EVP_DigestFinal_ex(ctx.get(), out.data(), nullptr) != 1) {
        return Hash32{};
    }
    return out;
}

Result<IdSignature> make_id_signature(const rlpx::PrivateKey& key, ByteView challenge_data, ByteView ephemeral_pubkey,
                                      const Hash32& dest_id) noexcept {
    auto sig = rlpx::sign_recoverable(key, id_signature_input(challenge_data, ephemeral_pubkey, dest_id));
    if (!sig) return sig.error();
    IdSignature out;
    std::memcpy(out.data(), sig->data(), kIdSignatureSize);  // r || s, the recovery id dropped
    return out;
}

bool verify_id_signature(ByteView signature, const rlpx::PublicKey& key, ByteView challenge_data,
                         ByteView ephemeral_pubkey, const Hash32& dest_id) noexcept {
    return rlpx::verify(signature, id_signature_input(challenge_data, ephemeral_pubkey, dest_id), key).has_value();
}

Result<Bytes> encrypt_gcm(const Key& key, const Nonce& nonce, ByteView plaintext, ByteView ad) noexcept {
    Bytes out(plaintext.size() + kTagSize);
    if (!gcm(true, key, nonce, plaintext, ad, out.data(), out.data() + plaintext.size())) {
        return make_error_code(rlpx::Errc::kCryptoFailure);
    }
    return out;
}

std::optional<Bytes> decrypt_gcm(const Key& key, const Nonce& nonce, ByteView ciphertext, ByteView ad) noexcept {
    if (ciphertext.size() < kTagSize) return std::nullopt;
    const size_t n = ciphertext.size() - kTagSize;
    Bytes out(n);
    uint8_t tag[kTagSize];
    std::memcpy(tag, ciphertext.data() + n, kTagSize);
    if (!gcm(false, key, nonce, ciphertext.first(n), ad, out.data(), tag)) return std::nullopt;
    return out;
}

bool apply_mask(const Hash32& dest_id, const MaskingIv& iv, std::span<uint8_t> data) noexcept {
    auto ctx = rlpx::make_cipher(EVP_aes_128_ctr(), dest_id.data(), iv.data());
    return ctx && rlpx::cipher_update(ctx.get(), data.data(), data.data(), data.size());
}

}  // namespace headerd::disc::v5
