#include "p2p/rlpx/evp.hpp"

#include <openssl/evp.h>

namespace headerd::rlpx {

void EvpCipherCtxFree::operator()(EVP_CIPHER_CTX* ctx) const noexcept { EVP_CIPHER_CTX_free(ctx); }

EvpCipherCtx make_cipher(const EVP_CIPHER* cipher, const unsigned char* key, const unsigned char* iv) noexcept {
    EvpCipherCtx ctx{EVP_CIPHER_CTX_new()};
    if (!ctx) return ctx;
    if (EVP_EncryptInit_ex(ctx.get(), cipher, nullptr, key, iv) != 1 || EVP_CIPHER_CTX_set_padding(ctx.get(), 0) != 1) {
        ctx.reset();
    }
    return ctx;
}

bool cipher_update(EVP_CIPHER_CTX* ctx, unsigned char* out, const unsigned char* in, size_t len) noexcept {
    // EVP takes int lengths; frames are below 2^24, so one call suffices in practice. Chunks stay
    // whole blocks so ECB never sees a partial one.
    constexpr size_t kChunk = size_t{1} << 30;
    while (len > 0) {
        const int n = static_cast<int>(len > kChunk ? kChunk : len);
        int written = 0;
        if (EVP_EncryptUpdate(ctx, out, &written, in, n) != 1 || written != n) return false;
        out += n;
        in += n;
        len -= static_cast<size_t>(n);
    }
    return true;
}

}  // namespace headerd::rlpx
