// libFuzzer target for the RLPx bytes a peer controls before and after the handshake: the auth
// packet a recipient reads (first input byte 0) and frames read by a codec (first byte 1). Both must
// end in an error or a clean result, never a crash, and never read past what they were given.

#include <cstddef>
#include <cstdint>

#include "p2p/rlpx/frame.hpp"
#include "p2p/rlpx/handshake.hpp"
#include "p2p/rlpx/secrets.hpp"

using namespace headerd;

namespace {

const rlpx::PrivateKey& node_key() {
    static const rlpx::PrivateKey key = [] {
        Hash32 scalar{};
        scalar.fill(0x11);
        return rlpx::PrivateKey::from_bytes(scalar).value();
    }();
    return key;
}

void fuzz_auth(ByteView in) {
    rlpx::Handshake hs = rlpx::Handshake::recipient(node_key());
    while (!in.empty() && hs.bytes_needed() > 0) {
        auto r = hs.read(in);
        if (!r || *r == 0) break;
    }
}

void fuzz_frames(ByteView in) {
    Hash32 aes{};
    Hash32 mac{};
    aes.fill(0x22);
    mac.fill(0x33);
    rlpx::FrameCodec codec(rlpx::Secrets{aes, mac, Keccak256(), Keccak256(), node_key().public_key()}, 1 << 16);
    Bytes body;
    while (in.size() >= rlpx::kFrameHeaderSize) {
        auto size = codec.read_header(in.first(rlpx::kFrameHeaderSize));
        in = in.subspan(rlpx::kFrameHeaderSize);
        if (!size) return;
        const size_t need = rlpx::FrameCodec::body_size(*size);
        if (in.size() < need) return;
        if (!codec.read_body(in.first(need), body)) return;
        in = in.subspan(need);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const ByteView in{data + 1, size - 1};
    if (data[0] % 2 == 0) {
        fuzz_auth(in);
    } else {
        fuzz_frames(in);
    }
    return 0;
}
