#include "p2p/rlpx/secrets.hpp"

#include <openssl/crypto.h>

namespace headerd::rlpx {
namespace {

Hash32 keccak_concat(const Hash32& a, const Hash32& b) {
    Keccak256 h;
    h.update(a);
    h.update(b);
    return h.digest();
}

}  // namespace

Secrets derive_secrets(Role role, const Hash32& ephemeral_shared, const Hash32& initiator_nonce,
                       const Hash32& recipient_nonce, ByteView auth_packet, ByteView ack_packet,
                       const PublicKey& remote) {
    // The recipient's nonce comes first on both sides, so both derive the same values.
    Hash32 shared = keccak_concat(ephemeral_shared, keccak_concat(recipient_nonce, initiator_nonce));
    Secrets s{.aes = keccak_concat(ephemeral_shared, shared),
              .mac = {},
              .egress_mac = {},
              .ingress_mac = {},
              .remote = remote};
    s.mac = keccak_concat(ephemeral_shared, s.aes);
    OPENSSL_cleanse(shared.data(), shared.size());

    // The sponge that absorbs auth is keyed with the recipient's nonce and the one that absorbs
    // ack with the initiator's: each side's egress MAC then equals the other side's ingress MAC.
    Keccak256 auth_mac;
    auth_mac.update(xor32(s.mac, recipient_nonce));
    auth_mac.update(auth_packet);
    Keccak256 ack_mac;
    ack_mac.update(xor32(s.mac, initiator_nonce));
    ack_mac.update(ack_packet);
    if (role == Role::kInitiator) {
        s.egress_mac = std::move(auth_mac);
        s.ingress_mac = std::move(ack_mac);
    } else {
        s.egress_mac = std::move(ack_mac);
        s.ingress_mac = std::move(auth_mac);
    }
    return s;
}

}  // namespace headerd::rlpx
