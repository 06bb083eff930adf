#pragma once

// Owning handles for OpenSSL objects used by the RLPx layer. Internal to p2p/rlpx.

#include <openssl/types.h>

#include <memory>

namespace headerd::rlpx {

struct EvpCipherCtxFree {
    void operator()(EVP_CIPHER_CTX* ctx) const noexcept;
};
using EvpCipherCtx = std::unique_ptr<EVP_CIPHER_CTX, EvpCipherCtxFree>;

// A context set up for `cipher` with `key` (and `iv`, if the mode has one), encrypting, with
// block padding off. Empty on failure (out of memory).
EvpCipherCtx make_cipher(const EVP_CIPHER* cipher, const unsigned char* key, const unsigned char* iv) noexcept;

// Runs `len` bytes through an encrypting context (AES-CTR encryption and decryption are the
// same operation; ECB is called on whole blocks only). `out` may equal `in`.
bool cipher_update(EVP_CIPHER_CTX* ctx, unsigned char* out, const unsigned char* in, size_t len) noexcept;

}  // namespace headerd::rlpx
