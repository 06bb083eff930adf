// libFuzzer target for discv4 packets (disc/v4wire.hpp): the input is tried as a whole datagram
// (v4::decode), and as `type || data` that the target signs and frames itself (a fuzzer cannot
// forge the hash and the signature, so this is how mutated packet data reaches the decoders).
//
// It asserts, for a packet that decodes: its sender is the key that signed it (for the framed
// input); its hash is keccak256 of everything after the hash; the packet encodes again (signed
// with the same key), within 1280 bytes unless it is a Neighbors, and that encoding, when it fits,
// decodes to the same packet. Every failure is a WireError.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <variant>

#include "core/keccak.hpp"
#include "disc/v4wire.hpp"

using namespace headerd;
using namespace headerd::disc;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "v4wire_fuzz: %s\n", what);
    std::abort();
}

const rlpx::PrivateKey& key() {
    static const rlpx::PrivateKey k = *rlpx::PrivateKey::from_bytes(Bytes(32, 0x22));
    return k;
}

bool same(const v4::Packet& a, const v4::Packet& b) {
    if (a.index() != b.index()) return false;
    if (const auto* ra = std::get_if<v4::EnrResponse>(&a)) {
        const auto& rb = std::get<v4::EnrResponse>(b);
        return ra->request_hash == rb.request_hash && ra->record && rb.record &&
               std::ranges::equal(ra->record->encoded(), rb.record->encoded());
    }
    return std::visit(
        [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, v4::EnrResponse>) {
                return false;
            } else {
                return x == std::get<T>(b);
            }
        },
        a);
}

void check(ByteView datagram, const std::optional<rlpx::PublicKey>& signer) {
    auto d = v4::decode(datagram);
    if (!d) {
        if (d.error().category() != v4::wire_category()) fail("an error that is not a WireError");
        return;
    }
    if (datagram.size() > v4::kMaxPacketSize) fail("a packet above 1280 bytes decoded");
    const Hash32 hash = keccak256(datagram.subspan(32));
    if (!std::ranges::equal(hash, datagram.first(32)) || d->hash != hash) fail("the hash is not the packet's");
    if (signer && d->sender != *signer) fail("the sender is not the signer");
    auto again = v4::encode(key(), d->packet);
    if (!again) fail("a decoded packet does not encode");
    // A Neighbors of more than 12 nodes, or one whose odd-length IPs become 4 bytes, may not fit
    // one packet again; everything that fits must read back the same.
    if (again->datagram.size() > v4::kMaxPacketSize && !std::holds_alternative<v4::Neighbors>(d->packet)) {
        fail("a re-encoded packet is above 1280 bytes");
    }
    auto back = v4::decode(again->datagram);
    if (again->datagram.size() <= v4::kMaxPacketSize) {
        if (!back || !same(back->packet, d->packet)) fail("a re-encoded packet does not decode to itself");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const ByteView input(data, size);
    check(input, std::nullopt);
    if (size == 0 || size > v4::kMaxPacketSize - v4::kHeaderSize) return 0;
    // Frame the input as type || data, signed by key().
    Bytes framed(v4::kHeaderSize + size);
    std::copy(input.begin(), input.end(), framed.begin() + v4::kHeaderSize);
    auto sig = rlpx::sign_recoverable(key(), keccak256(ByteView{framed}.subspan(v4::kHeaderSize)));
    if (!sig) fail("cannot sign");
    std::copy(sig->begin(), sig->end(), framed.begin() + 32);
    const Hash32 h = keccak256(ByteView{framed}.subspan(32));
    std::copy(h.begin(), h.end(), framed.begin());
    check(framed, key().public_key());
    return 0;
}
