// Junk for a discovery port: COUNT UDP datagrams to 127.0.0.1:PORT (loopback only; any other
// address is refused), paced evenly over SECONDS (sent in 10 ms batches). scripts/bench_discovery.sh runs it against
// `headerd serve --discovery v4,v5` while `headerd load` measures serving throughput, and
// tests/discv5_flood_test.sh (--v5-only) while it checks the server's bounds.
//
//   disc_flood --port PORT --server-key HEX64 [--count 100000] [--seconds 20] [--keys 1000] [--sockets 1]
//              [--v5-only]
//
// The packets are made before the first is sent (the sender's own CPU then stays small; it prints
// "ready: ..." then), in
// turn: random bytes (40 to 1280 bytes), and validly signed discv4 packets nobody asked for —
// Ping (answered with a Pong, and the server pings back), Pong and Neighbors (unsolicited: dropped),
// FindNode and ENRRequest (no endpoint proof: dropped) — and discv5 random packets addressed to
// the server's node id (each provokes a WHOAREYOU and a pending challenge), from --keys different
// keys. Prints what it sent.
//
// --v5-only: every datagram is a discv5 random packet (an ordinary message packet whose 20-byte
// "ciphertext" no session can open: what a node sends to provoke a WHOAREYOU) addressed to the
// server's node id, each from a fresh random source node id that nobody holds a key for, so each
// one the server answers makes a new pending challenge. They are assembled here (masking-iv ||
// masked(static header || src-id) || 20 random bytes), not by a v5::Codec, which would need a key
// and a signed record per source id; a codec of our own decodes one first, as a check of the
// layout (it must read Unknown from the source id written). --keys does not apply.
//
// --sockets N: the datagrams leave from N UDP sockets on 127.0.0.1 (ephemeral ports) in turn, so a
// flood comes from N source ports of one address (1 by default). Nothing is read from them: the
// server's answers (WHOAREYOU, Pong, Ping) fill their receive buffers and the rest is dropped by
// the kernel.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "core/bytes.hpp"
#include "core/hex.hpp"
#include "disc/enr.hpp"
#include "disc/v4wire.hpp"
#include "disc/v5crypto.hpp"
#include "disc/v5wire.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace {

using namespace headerd;
using namespace headerd::disc;
namespace asio = boost::asio;

constexpr std::array<uint8_t, 6> kV5ProtocolId = {'d', 'i', 's', 'c', 'v', '5'};
constexpr uint8_t kV5FlagMessage = 0;
constexpr size_t kV5SrcIdSize = 32;  // the authdata of an ordinary message packet

void fill_random(std::span<uint8_t> out, std::mt19937_64& rng) {
    for (auto& b : out) b = static_cast<uint8_t>(rng());
}

// A discv5 random packet from `src_id` to `dest_id` (devp2p discv5-wire.md, "Ordinary Message
// Packet"): random masking-iv and nonce, authdata = src-id, then v5::kRandomMessageSize random bytes
// where the AES-GCM ciphertext would be. The receiver finds no session with (src_id, our address),
// reads it as v5::Unknown and answers WHOAREYOU, keeping a challenge for (src_id, our address).
Bytes v5_random_packet(const Hash32& dest_id, const Hash32& src_id, std::mt19937_64& rng) {
    Bytes p(v5::kHeaderStart + kV5SrcIdSize + v5::kRandomMessageSize);
    uint8_t* const h = p.data() + v5::kMaskingIvSize;  // the static header
    fill_random(std::span<uint8_t>(p.data(), v5::kMaskingIvSize), rng);
    std::copy(kV5ProtocolId.begin(), kV5ProtocolId.end(), h);
    store_be16(h + 6, v5::kProtocolVersion);
    h[8] = kV5FlagMessage;
    fill_random(std::span<uint8_t>(h + 9, v5::kNonceSize), rng);
    store_be16(h + 21, static_cast<uint16_t>(kV5SrcIdSize));
    std::copy(src_id.begin(), src_id.end(), p.data() + v5::kHeaderStart);
    fill_random(std::span<uint8_t>(p).subspan(v5::kHeaderStart + kV5SrcIdSize), rng);
    v5::MaskingIv iv;
    std::copy_n(p.begin(), iv.size(), iv.begin());
    if (!v5::apply_mask(dest_id, iv,
                        std::span<uint8_t>(p).subspan(v5::kMaskingIvSize, v5::kStaticHeaderSize + kV5SrcIdSize))) {
        std::fprintf(stderr, "disc_flood: AES-CTR failed\n");
        std::exit(1);
    }
    return p;
}

// The layout check of --v5-only: a codec of our own reads a packet made for it as Unknown from the
// source id written into it.
bool v5_random_packet_reads_as_unknown(std::mt19937_64& rng) {
    const auto key = rlpx::PrivateKey::from_bytes(std::array<uint8_t, 32>{0x33}).value();
    v5::Codec codec(key, EnrBuilder(1).ip({127, 0, 0, 1}).udp(30399).sign(key).value());
    Hash32 src{};
    fill_random(src, rng);
    const Bytes p = v5_random_packet(codec.local_id(), src, rng);
    auto d = codec.decode(p, v5::Endpoint::ipv4({127, 0, 0, 1}, 30398));
    return d && d->src_id == src && std::holds_alternative<v5::Unknown>(d->packet);
}

rlpx::PrivateKey key_of(uint64_t i) {
    std::array<uint8_t, 32> b{};
    b[0] = 0x22;
    for (int k = 0; k < 8; ++k) b[31 - k] = static_cast<uint8_t>(i >> (8 * k));
    return rlpx::PrivateKey::from_bytes(b).value();
}

int usage() {
    std::fprintf(stderr,
                 "usage: disc_flood --port PORT --server-key HEX64 [--count N] [--seconds S] [--keys K] [--sockets N] "
                 "[--v5-only]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    uint16_t port = 0;
    std::string server_key;
    size_t count = 100000;
    double seconds = 20;
    size_t keys = 1000;
    size_t sockets = 1;
    bool v5_only = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--v5-only") {
            v5_only = true;
            continue;
        }
        if (i + 1 >= argc) return usage();
        const std::string v = argv[++i];
        if (a == "--port") {
            port = static_cast<uint16_t>(std::stoul(v));
        } else if (a == "--server-key") {
            server_key = v;
        } else if (a == "--count") {
            count = std::stoul(v);
        } else if (a == "--seconds") {
            seconds = std::stod(v);
        } else if (a == "--keys") {
            keys = std::max<size_t>(1, std::stoul(v));
        } else if (a == "--sockets") {
            sockets = std::clamp<size_t>(std::stoul(v), 1, 1024);
        } else {
            return usage();
        }
    }
    const auto key_bytes = from_hex(server_key);
    if (port == 0 || !key_bytes) return usage();
    auto server = rlpx::PublicKey::from_bytes(*key_bytes);
    if (!server) return usage();
    const Hash32 server_id = server->node_id();

    const auto loopback = asio::ip::make_address("127.0.0.1");
    const asio::ip::udp::endpoint to(loopback, port);
    if (!to.address().is_loopback()) return usage();

    std::mt19937_64 rng(1);
    const uint64_t exp = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                                   std::chrono::system_clock::now().time_since_epoch())
                                                   .count()) +
                         3600;
    std::vector<rlpx::PrivateKey> senders;
    if (!v5_only) {
        for (size_t i = 0; i < keys; ++i) senders.push_back(key_of(i + 1));
    }

    if (v5_only && !v5_random_packet_reads_as_unknown(rng)) {
        std::fprintf(stderr,
                     "disc_flood: a discv5 random packet of ours does not read as Unknown from its source id\n");
        return 1;
    }

    constexpr int kKinds = 7;
    constexpr int kV5Random = kKinds - 1;
    const char* names[kKinds] = {"random",       "v4 ping",       "v4 pong",         "v4 findnode",
                                 "v4 neighbors", "v4 enrrequest", "v5 random packet"};
    std::vector<size_t> sent_by_kind(kKinds, 0);
    std::vector<Bytes> packets;
    std::vector<int> kinds;
    packets.reserve(count);
    const v4::Endpoint self_ep{loopback, 30399, 30399};
    const v4::Endpoint server_ep{loopback, port, port};
    const v5::Endpoint v5_server = v5::Endpoint::ipv4({127, 0, 0, 1}, port);
    std::vector<v4::NodeKey> neighbor_keys;
    for (uint64_t j = 0; j < 64; ++j) neighbor_keys.push_back(key_of(5000 + j).public_key().bytes());
    for (size_t i = 0; i < count; ++i) {
        if (v5_only) {
            Hash32 src{};
            fill_random(src, rng);
            packets.push_back(v5_random_packet(server_id, src, rng));
            kinds.push_back(kV5Random);
            continue;
        }
        const int kind = static_cast<int>(i % kKinds);
        const auto& k = senders[(i / kKinds) % senders.size()];
        Bytes p;
        switch (kind) {
            case 0: {
                p.resize(40 + rng() % (1280 - 40 + 1));
                for (auto& b : p) b = static_cast<uint8_t>(rng());
                break;
            }
            case 1:
                p = v4::encode(k, v4::Ping{4, self_ep, server_ep, exp, 1}).value().datagram;
                break;
            case 2: {
                Hash32 h{};
                for (auto& b : h) b = static_cast<uint8_t>(rng());
                p = v4::encode(k, v4::Pong{server_ep, h, exp, 1}).value().datagram;
                break;
            }
            case 3:
                p = v4::encode(k, v4::FindNode{k.public_key().bytes(), exp}).value().datagram;
                break;
            case 4: {
                v4::Neighbors n;
                n.expiration = exp;
                for (int j = 0; j < 12; ++j) n.nodes.push_back({self_ep, neighbor_keys[rng() % neighbor_keys.size()]});
                p = v4::encode(k, n).value().datagram;
                break;
            }
            case 5:
                p = v4::encode(k, v4::EnrRequest{exp}).value().datagram;
                break;
            default: {
                auto record = EnrBuilder(1).ip({127, 0, 0, 1}).udp(30399).sign(k).value();
                v5::Codec codec(k, record);
                p = codec.encode(server_id, v5_server, v5::Ping{{1}, 1}).value().datagram;
                break;
            }
        }
        packets.push_back(std::move(p));
        kinds.push_back(kind);
    }

    // The packets are ready: scripts/bench_discovery.sh starts the load when it reads this line.
    std::printf("ready: %zu datagrams made\n", packets.size());
    std::fflush(stdout);

    asio::io_context io;
    std::vector<asio::ip::udp::socket> socks;
    for (size_t i = 0; i < sockets; ++i) socks.emplace_back(io, asio::ip::udp::endpoint(loopback, 0));
    const auto start = std::chrono::steady_clock::now();
    const double gap = seconds / static_cast<double>(std::max<size_t>(1, count));
    size_t errors = 0;
    // Woken every kTick, it sends the packets due by then: the same rate as one packet every `gap`,
    // at 100 wake-ups a second instead of one per packet (5,000 a second at the defaults), so the
    // flooder's own CPU takes less from the 2 cores the measured server shares with it.
    constexpr auto kTick = std::chrono::milliseconds(10);
    auto wake = start;
    for (size_t i = 0; i < packets.size(); ++i) {
        const auto due = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(gap * static_cast<double>(i)));
        if (due > wake) {
            while (wake < due) wake += kTick;  // the first tick at or after it is due
            std::this_thread::sleep_until(wake);
        }
        boost::system::error_code ec;
        socks[i % socks.size()].send_to(asio::buffer(packets[i]), to, 0, ec);
        if (ec) {
            ++errors;
        } else {
            ++sent_by_kind[static_cast<size_t>(kinds[i])];
        }
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("sent %zu datagrams to 127.0.0.1:%u from %zu source port%s in %.1f s (%zu send errors)%s:",
                packets.size() - errors, static_cast<unsigned>(port), socks.size(), socks.size() == 1 ? "" : "s", took,
                errors, v5_only ? ", each discv5 packet from a fresh random source id" : "");
    for (int k = 0; k < kKinds; ++k) std::printf(" %s %zu;", names[k], sent_by_kind[static_cast<size_t>(k)]);
    std::printf("\n");
    return 0;
}
