// libFuzzer target for the discv5.1 wire (disc/v5wire.hpp): the input is decoded as a message
// plaintext (decode_message), and as a datagram by two codecs: one with no session and no
// challenge, one that has a session with the sender and a pending WHOAREYOU for it (so mutated
// message and handshake packets reach decryption, the record and signature checks). The seeds
// (fuzz/corpus/v5wire) are the spec's packets, which this target's keys and session reproduce.
//
// It asserts: no crash; a message that decodes encodes to the very input; a decoded datagram's
// message encodes and decodes to itself; a decoded WHOAREYOU's challenge data is the unmasked
// header of the input; and every error is a WireError.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <variant>

#include "disc/v5wire.hpp"

using namespace headerd;
using namespace headerd::disc::v5;
using headerd::disc::Enr;
using headerd::disc::EnrBuilder;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "v5wire_fuzz: %s\n", what);
    std::abort();
}

// The spec's test-vector keys (devp2p discv5-wire-test-vectors.md).
const rlpx::PrivateKey& key_a() {
    static const rlpx::PrivateKey k = *rlpx::PrivateKey::from_bytes(
        Bytes{0xee, 0xf7, 0x7a, 0xcb, 0x6c, 0x6a, 0x6e, 0xeb, 0xc5, 0xb3, 0x63, 0xa4, 0x75, 0xac, 0x58, 0x3e,
              0xc7, 0xec, 0xcd, 0xb4, 0x2b, 0x64, 0x81, 0x42, 0x4c, 0x60, 0xf5, 0x9a, 0xa3, 0x26, 0x54, 0x7f});
    return k;
}
const rlpx::PrivateKey& key_b() {
    static const rlpx::PrivateKey k = *rlpx::PrivateKey::from_bytes(
        Bytes{0x66, 0xfb, 0x62, 0xbf, 0xbd, 0x66, 0xb9, 0x17, 0x7a, 0x13, 0x8c, 0x1e, 0x5c, 0xdd, 0xbe, 0x4f,
              0x7c, 0x30, 0xc3, 0x43, 0xe9, 0x4e, 0x68, 0xdf, 0x87, 0x69, 0x45, 0x9c, 0xb1, 0xcd, 0xe6, 0x28});
    return k;
}

Enr record(const rlpx::PrivateKey& k) { return *EnrBuilder(1).ip({127, 0, 0, 1}).sign(k); }

const Endpoint kFrom = Endpoint::ipv4({127, 0, 0, 1}, 30301);
const Endpoint kSelf = Endpoint::ipv4({127, 0, 0, 1}, 30302);

// Fixed randomness and time, as the vectors have them: zero masking IV, nonce 0xff..., id-nonce
// 01..10, so a run is reproducible.
CodecOptions fixed() {
    CodecOptions o;
    o.hooks.now = [] { return std::chrono::steady_clock::time_point{}; };
    o.hooks.random = [](std::span<uint8_t> out) -> Result<void> {
        std::fill(out.begin(), out.end(), uint8_t{0x5a});
        return {};
    };
    o.hooks.masking_iv = []() -> Result<MaskingIv> { return MaskingIv{}; };
    o.hooks.nonce = [](uint32_t) -> Result<Nonce> {
        Nonce n;
        n.fill(0xff);
        return n;
    };
    o.hooks.id_nonce = []() -> Result<IdNonce> {
        IdNonce n;
        for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<uint8_t>(i + 1);
        return n;
    };
    return o;
}

void check_message(const Message& m) {
    if (request_id(m).size() > kMaxRequestIdSize) fail("a request id above 8 bytes decoded");
    auto again = decode_message(encode_message(m));
    if (!again || *again != m) fail("a decoded message does not encode and decode to itself");
}

void check(const Result<Decoded>& r, ByteView input) {
    if (!r) {
        if (r.error().category() != wire_category()) fail("an error that is not a WireError");
        return;
    }
    if (const auto* m = std::get_if<Message>(&r->packet)) check_message(*m);
    if (const auto* w = std::get_if<Whoareyou>(&r->packet)) {
        if (w->challenge_data.size() != kHeaderStart + kIdNonceSize + 8) fail("challenge data of the wrong size");
        if (!std::equal(w->challenge_data.begin(), w->challenge_data.begin() + kMaskingIvSize, input.begin())) {
            fail("challenge data does not start with the masking IV");
        }
    }
    if (r->record && r->record->node_id() != r->src_id) fail("a handshake record of another node");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const ByteView input{data, size};
    if (auto m = decode_message(input)) {
        const Bytes enc = encode_message(*m);
        if (!std::ranges::equal(enc, input)) fail("a decoded message does not encode to its input");
        check_message(*m);
    }

    static const Enr record_a = record(key_a());
    static const Enr record_b = record(key_b());
    // B with nothing: every message packet is Unknown, every handshake unexpected.
    {
        Codec fresh(key_b(), record_b, fixed());
        check(fresh.decode(input, kFrom), input);
    }
    // B with the ping vector's session (read key zero) and a pending challenge for A (enr-seq 1,
    // as in the handshake vector). A new codec per input: decoding changes its state.
    {
        Codec b(key_b(), record_b, fixed());
        const Key zero{};
        b.store_session(key_a().public_key().node_id(), kFrom, zero, zero, record_a);
        Nonce request{};
        for (size_t i = 0; i < request.size(); ++i) request[i] = static_cast<uint8_t>(i + 1);
        if (!b.encode_whoareyou(key_a().public_key().node_id(), kFrom, request, &record_a)) {
            fail("encode_whoareyou failed");
        }
        check(b.decode(input, kFrom), input);
        // Whatever came in, the codec still works: a session packet to A encodes.
        if (!b.encode(key_a().public_key().node_id(), kFrom, Ping{{1}, 1})) fail("encode failed after decode");
    }
    // A reading the same bytes: they unmask under another id, so the header checks see other values.
    {
        Codec a(key_a(), record_a, fixed());
        check(a.decode(input, kSelf), input);
    }
    return 0;
}
