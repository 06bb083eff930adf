// Junk for a discovery port: COUNT UDP datagrams to 127.0.0.1:PORT (loopback only; any other
// address is refused), paced evenly over SECONDS (sent in 10 ms batches). scripts/bench_discovery.sh runs it against
// `headerd serve --discovery v4,v5` while `headerd load` measures serving throughput.
//
//   disc_flood --port PORT --server-key HEX64 [--count 100000] [--seconds 20] [--keys 1000]
//
// The packets are made before the first is sent (the sender's own CPU then stays small; it prints
// "ready: ..." then), in
// turn: random bytes (40 to 1280 bytes), and validly signed discv4 packets nobody asked for —
// Ping (answered with a Pong, and the server pings back), Pong and Neighbors (unsolicited: dropped),
// FindNode and ENRRequest (no endpoint proof: dropped) — and discv5 random packets addressed to
// the server's node id (each provokes a WHOAREYOU and a pending challenge), from --keys different
// keys and source ports 127.0.0.1:EPHEMERAL (one socket). Prints what it sent.

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "core/hex.hpp"
#include "disc/enr.hpp"
#include "disc/v4wire.hpp"
#include "disc/v5wire.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace {

using namespace headerd;
using namespace headerd::disc;
namespace asio = boost::asio;

rlpx::PrivateKey key_of(uint64_t i) {
    std::array<uint8_t, 32> b{};
    b[0] = 0x22;
    for (int k = 0; k < 8; ++k) b[31 - k] = static_cast<uint8_t>(i >> (8 * k));
    return rlpx::PrivateKey::from_bytes(b).value();
}

int usage() {
    std::fprintf(stderr, "usage: disc_flood --port PORT --server-key HEX64 [--count N] [--seconds S] [--keys K]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    uint16_t port = 0;
    std::string server_key;
    size_t count = 100000;
    double seconds = 20;
    size_t keys = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const std::string v = argv[i + 1];
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
    for (size_t i = 0; i < keys; ++i) senders.push_back(key_of(i + 1));

    constexpr int kKinds = 7;
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
    asio::ip::udp::socket socket(io, asio::ip::udp::endpoint(loopback, 0));
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
        socket.send_to(asio::buffer(packets[i]), to, 0, ec);
        if (ec) {
            ++errors;
        } else {
            ++sent_by_kind[static_cast<size_t>(kinds[i])];
        }
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("sent %zu datagrams to 127.0.0.1:%u in %.1f s (%zu send errors):", packets.size() - errors,
                static_cast<unsigned>(port), took, errors);
    for (int k = 0; k < kKinds; ++k) std::printf(" %s %zu;", names[k], sent_by_kind[static_cast<size_t>(k)]);
    std::printf("\n");
    return 0;
}
