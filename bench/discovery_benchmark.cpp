// What node discovery costs per packet, against its floor: one secp256k1 public key recovery (a
// discv4 packet's sender is recovered from its signature, so no valid discv4 packet is cheaper).
// In process, sans-I/O, one thread:
//   secp256k1/{recover,verify,sign}      the floor (rlpx::recover, rlpx::verify of r || s,
//                                        rlpx::sign_recoverable), all over a 32-byte hash;
//   v4/decode_ping                       v4::decode of one Ping (hash, signature recovery, RLP);
//   v4/handle_ping                       decode + v4::encode of the signed Pong that answers it;
//   v4/find_node                         decode a FindNode + Table::closest(target, 16) on a table
//                                        filled from 10,000 random nodes + encode the Neighbors
//                                        packets (12 + 4 nodes), as V4Service answers it;
//   v5/decode_message                    v5::Codec::decode of a PING over an established session
//                                        (unmask, AES-128-GCM open, RLP);
//   v5/answer_ping                       decode that PING + encode the PONG over the session;
//   v5/handshake_responder/{0,1}         the responder's side of a handshake: decode the random
//                                        packet (Unknown), encode WHOAREYOU, decode the handshake
//                                        (ECDH, key derivation, ID signature verification, and
//                                        with /0 the initiator's record, which it verifies too);
//                                        the initiator's part is paused;
//   v5/handshake_full/{0,1}              both sides, as above plus the initiator's decode of the
//                                        WHOAREYOU and encode_handshake (ephemeral key, ECDH, ID
//                                        signature);
//   memory/node_db_and_table             heap bytes (glibc mallinfo2, in use) and VmRSS added by
//                                        filling a NodeDb and a Table with 10,000 nodes that
//                                        have records, and the size of the saved nodes file.
// Counters: packets/s (per CPU second of this thread) and x_recover, the thread CPU time of one
// iteration over that of one recover measured at start-up (the floor, printed first).
//
//   build-release/bench/discovery_benchmark --benchmark_repetitions=5 --benchmark_display_aggregates_only=true
//
// Figures: docs/performance.md ("Discovery").

#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/keccak.hpp"
#include "disc/enr.hpp"
#include "disc/node_db.hpp"
#include "disc/table.hpp"
#include "disc/v4_udp.hpp"
#include "disc/v4wire.hpp"
#include "disc/v5wire.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace {

using namespace headerd;
using namespace headerd::disc;
namespace asio = boost::asio;

constexpr size_t kKnownNodes = 10000;

double thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

rlpx::PrivateKey key_of(uint64_t i) {
    std::array<uint8_t, 32> b{};
    b[0] = 0x11;
    for (int k = 0; k < 8; ++k) b[31 - k] = static_cast<uint8_t>(i >> (8 * k));
    return rlpx::PrivateKey::from_bytes(b).value();
}

Hash32 hash_of(uint64_t i) {
    std::array<uint8_t, 8> b{};
    for (int k = 0; k < 8; ++k) b[k] = static_cast<uint8_t>(i >> (8 * k));
    return keccak256(b);
}

uint64_t expiration() {
    return static_cast<uint64_t>(
               std::chrono::duration_cast<std::chrono::seconds>(WallClock::now().time_since_epoch()).count()) +
           3600;
}

// One recover, in thread CPU nanoseconds: the median of 9 runs of 500.
double floor_ns() {
    static const double ns = [] {
        const auto key = key_of(1);
        const Hash32 h = hash_of(1);
        const auto sig = rlpx::sign_recoverable(key, h).value();
        std::vector<double> runs;
        for (int r = 0; r < 9; ++r) {
            const double t0 = thread_cpu_ns();
            for (int i = 0; i < 500; ++i) benchmark::DoNotOptimize(rlpx::recover(sig, h));
            runs.push_back((thread_cpu_ns() - t0) / 500);
        }
        std::sort(runs.begin(), runs.end());
        return runs[runs.size() / 2];
    }();
    return ns;
}

// Thread CPU time of the benchmark loop, for x_recover.
struct CpuTimer {
    double start = thread_cpu_ns();
    double paused = 0;
    double pause_start = 0;
    void pause() { pause_start = thread_cpu_ns(); }
    void resume() { paused += thread_cpu_ns() - pause_start; }
    void finish(benchmark::State& state, double packets_per_iteration = 1) const {
        const double per = (thread_cpu_ns() - start - paused) / static_cast<double>(state.iterations());
        state.counters["packets/s"] = benchmark::Counter(
            packets_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
        state.counters["x_recover"] = per / floor_ns();
    }
};

// ---- the floor --------------------------------------------------------------------------------------

void secp_recover(benchmark::State& state) {
    const auto key = key_of(1);
    const Hash32 h = hash_of(1);
    const auto sig = rlpx::sign_recoverable(key, h).value();
    CpuTimer t;
    for (auto _ : state) {
        auto pub = rlpx::recover(sig, h);
        if (!pub) state.SkipWithError("recover failed");
        benchmark::DoNotOptimize(pub);
    }
    t.finish(state);
}
BENCHMARK(secp_recover)->Name("secp256k1/recover");

void secp_verify(benchmark::State& state) {
    const auto key = key_of(1);
    const Hash32 h = hash_of(1);
    const auto sig = rlpx::sign_recoverable(key, h).value();
    const ByteView rs{sig.data(), rlpx::kPlainSignatureSize};
    CpuTimer t;
    for (auto _ : state) {
        auto ok = rlpx::verify(rs, h, key.public_key());
        if (!ok) state.SkipWithError("verify failed");
        benchmark::DoNotOptimize(ok);
    }
    t.finish(state);
}
BENCHMARK(secp_verify)->Name("secp256k1/verify");

void secp_sign(benchmark::State& state) {
    const auto key = key_of(1);
    const Hash32 h = hash_of(1);
    CpuTimer t;
    for (auto _ : state) benchmark::DoNotOptimize(rlpx::sign_recoverable(key, h));
    t.finish(state);
}
BENCHMARK(secp_sign)->Name("secp256k1/sign");

// ---- discv4 -----------------------------------------------------------------------------------------

const asio::ip::address kLoopback = asio::ip::make_address("127.0.0.1");

Bytes ping_datagram(const rlpx::PrivateKey& from) {
    const v4::Ping ping{4, {kLoopback, 30304, 30304}, {kLoopback, 30303, 30303}, expiration(), 7};
    return v4::encode(from, ping).value().datagram;
}

void v4_decode_ping(benchmark::State& state) {
    const Bytes datagram = ping_datagram(key_of(2));
    CpuTimer t;
    for (auto _ : state) {
        auto d = v4::decode(datagram);
        if (!d) state.SkipWithError("decode failed");
        benchmark::DoNotOptimize(d);
    }
    t.finish(state);
}
BENCHMARK(v4_decode_ping)->Name("v4/decode_ping");

void v4_handle_ping(benchmark::State& state) {
    const auto server = key_of(1);
    const Bytes datagram = ping_datagram(key_of(2));
    CpuTimer t;
    for (auto _ : state) {
        auto d = v4::decode(datagram);
        if (!d) state.SkipWithError("decode failed");
        const auto& p = std::get<v4::Ping>(d->packet);
        auto pong = v4::encode(server, v4::Pong{{kLoopback, 30304, p.from.tcp}, d->hash, expiration(), 3});
        benchmark::DoNotOptimize(pong);
    }
    t.finish(state);
}
BENCHMARK(v4_handle_ping)->Name("v4/handle_ping");

// A node with a record (ip 127.x.y.z, tcp and udp 30303, an eth entry), as the table and the
// database keep them. Loopback is exempt from the /24 limits, as on a test network; nothing is sent.
Node node_with_record(uint64_t i) {
    const auto key = key_of(1000 + i);
    const std::array<uint8_t, 4> ip{127, static_cast<uint8_t>(i >> 16), static_cast<uint8_t>(i >> 8),
                                    static_cast<uint8_t>(i)};
    auto enr = EnrBuilder(1).ip(ip).tcp(30303).udp(30303).eth(ForkId{{0x9f, 0x3d, 0x22, 0x54}, 0}).sign(key).value();
    return *Node::from_enr(enr);
}

const std::vector<Node>& known_nodes() {
    static const std::vector<Node> nodes = [] {
        std::vector<Node> out;
        out.reserve(kKnownNodes);
        for (uint64_t i = 0; i < kKnownNodes; ++i) out.push_back(node_with_record(i));
        return out;
    }();
    return nodes;
}

void v4_find_node(benchmark::State& state) {
    const auto server = key_of(1);
    Table table(server.public_key().node_id());
    const auto now = Clock::now();
    for (const Node& n : known_nodes()) table.add(n, now, Origin::kDirect, 1);
    std::vector<Bytes> requests;
    for (uint64_t i = 0; i < 64; ++i) {
        v4::FindNode f{key_of(50000 + i).public_key().bytes(), expiration()};
        requests.push_back(v4::encode(key_of(2), f).value().datagram);
    }
    size_t next = 0;
    size_t out_packets = 0;
    size_t answered = 0;
    CpuTimer t;
    for (auto _ : state) {
        auto d = v4::decode(requests[next++ % requests.size()]);
        if (!d) state.SkipWithError("decode failed");
        const auto& f = std::get<v4::FindNode>(d->packet);
        std::vector<Node> closest = table.closest(keccak256(f.target), 16, true);
        std::erase_if(closest, [&](const Node& n) { return !relay_allowed(kLoopback, n.ip); });
        answered += closest.size();
        for (const auto& reply : neighbors_packets(closest, expiration())) {
            auto e = v4::encode(server, reply);
            if (!e || e->datagram.size() > v4::kMaxPacketSize) state.SkipWithError("encode failed");
            benchmark::DoNotOptimize(e);
            ++out_packets;
        }
    }
    t.finish(state);
    state.counters["table_nodes"] = static_cast<double>(table.size());
    state.counters["nodes_answered"] = static_cast<double>(answered) / static_cast<double>(state.iterations());
    state.counters["packets_out"] = static_cast<double>(out_packets) / static_cast<double>(state.iterations());
}
BENCHMARK(v4_find_node)->Name("v4/find_node");

// ---- discv5 -----------------------------------------------------------------------------------------

const v5::Endpoint kAddrA = v5::Endpoint::ipv4({127, 0, 0, 1}, 30301);
const v5::Endpoint kAddrB = v5::Endpoint::ipv4({127, 0, 0, 1}, 30302);

Enr record_of(const rlpx::PrivateKey& k) {
    return EnrBuilder(1).ip({127, 0, 0, 1}).udp(30301).tcp(30301).sign(k).value();
}

// A and B with a session: the full exchange of disc/v5wire_test.cpp (V5Codec.FullRoundTrip).
struct V5Pair {
    rlpx::PrivateKey key_a = key_of(3);
    rlpx::PrivateKey key_b = key_of(4);
    Enr record_a = record_of(key_a);
    Enr record_b = record_of(key_b);
    Hash32 id_a = record_a.node_id();
    Hash32 id_b = record_b.node_id();
    v5::Codec a{key_a, record_a};
    v5::Codec b{key_b, record_b};

    bool handshake() {
        const v5::Message ping = v5::Ping{{7, 7}, 1};
        auto first = a.encode(id_b, kAddrB, ping);
        if (!first) return false;
        auto unknown = b.decode(first->datagram, kAddrA);
        if (!unknown || !std::holds_alternative<v5::Unknown>(unknown->packet)) return false;
        auto who = b.encode_whoareyou(id_a, kAddrA, first->nonce, nullptr);
        if (!who) return false;
        auto challenge = a.decode(who->datagram, kAddrB);
        if (!challenge) return false;
        auto hs = a.encode_handshake(id_b, kAddrB, ping, std::get<v5::Whoareyou>(challenge->packet), record_b);
        if (!hs) return false;
        return static_cast<bool>(b.decode(hs->datagram, kAddrA));
    }
};

void v5_decode_message(benchmark::State& state) {
    V5Pair p;
    if (!p.handshake()) return state.SkipWithError("handshake failed");
    const Bytes datagram = p.a.encode(p.id_b, kAddrB, v5::Ping{{1, 2, 3, 4}, 1}).value().datagram;
    CpuTimer t;
    for (auto _ : state) {
        auto d = p.b.decode(datagram, kAddrA);
        if (!d || !std::holds_alternative<v5::Message>(d->packet)) state.SkipWithError("decode failed");
        benchmark::DoNotOptimize(d);
    }
    t.finish(state);
}
BENCHMARK(v5_decode_message)->Name("v5/decode_message");

void v5_answer_ping(benchmark::State& state) {
    V5Pair p;
    if (!p.handshake()) return state.SkipWithError("handshake failed");
    const Bytes datagram = p.a.encode(p.id_b, kAddrB, v5::Ping{{1, 2, 3, 4}, 1}).value().datagram;
    CpuTimer t;
    for (auto _ : state) {
        auto d = p.b.decode(datagram, kAddrA);
        if (!d || !std::holds_alternative<v5::Message>(d->packet)) state.SkipWithError("decode failed");
        const auto& ping = std::get<v5::Ping>(std::get<v5::Message>(d->packet));
        auto pong = p.b.encode(d->src_id, kAddrA, v5::Pong{ping.req_id, 1, kAddrA});
        if (!pong || pong->random_packet) state.SkipWithError("encode failed");
        benchmark::DoNotOptimize(pong);
    }
    t.finish(state);
}
BENCHMARK(v5_answer_ping)->Name("v5/answer_ping");

// Arg 1: B knows A's record (the WHOAREYOU names its seq, the handshake carries no record); 0: it
// does not, and verifies the record A sends.
void v5_handshake(benchmark::State& state, bool responder_only) {
    V5Pair p;
    const bool knows_a = state.range(0) != 0;
    const v5::Message ping = v5::Ping{{7, 7}, 1};
    // A's first packet, made while A has no session: a random packet B cannot read.
    const auto first = p.a.encode(p.id_b, kAddrB, ping).value();
    CpuTimer t;
    for (auto _ : state) {
        auto unknown = p.b.decode(first.datagram, kAddrA);
        if (!unknown || !std::holds_alternative<v5::Unknown>(unknown->packet)) state.SkipWithError("not Unknown");
        auto who = p.b.encode_whoareyou(p.id_a, kAddrA, first.nonce, knows_a ? &p.record_a : nullptr);
        if (!who) state.SkipWithError("whoareyou failed");
        if (responder_only) {
            state.PauseTiming();
            t.pause();
        }
        auto challenge = p.a.decode(who->datagram, kAddrB);
        if (!challenge) state.SkipWithError("challenge decode failed");
        auto hs = p.a.encode_handshake(p.id_b, kAddrB, ping, std::get<v5::Whoareyou>(challenge->packet), p.record_b);
        if (!hs) state.SkipWithError("encode_handshake failed");
        if (responder_only) {
            t.resume();
            state.ResumeTiming();
        }
        auto got = p.b.decode(hs->datagram, kAddrA);
        if (!got || !std::holds_alternative<v5::Message>(got->packet)) state.SkipWithError("handshake decode failed");
        benchmark::DoNotOptimize(got);
    }
    t.finish(state, responder_only ? 2 : 4);  // packets handled: B reads 2 (and A 2 more)
}
BENCHMARK_CAPTURE(v5_handshake, responder, true)->Name("v5/handshake_responder")->Arg(0)->Arg(1);
BENCHMARK_CAPTURE(v5_handshake, full, false)->Name("v5/handshake_full")->Arg(0)->Arg(1);

// ---- memory -----------------------------------------------------------------------------------------

size_t heap_in_use() {
    malloc_trim(0);
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

size_t rss_bytes() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    }
    return 0;
}

void memory_node_db_and_table(benchmark::State& state) {
    const auto& nodes = known_nodes();  // made before measuring: the inputs are not counted
    const auto self = key_of(1).public_key().node_id();
    const auto dir = std::filesystem::temp_directory_path() / ("headerd-disc-bench-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "nodes").string();
    double db_bytes = 0, table_bytes = 0, rss = 0, file = 0, table_nodes = 0, replacements = 0, db_nodes = 0;
    for (auto _ : state) {
        std::filesystem::remove(path);
        const size_t heap0 = heap_in_use();
        const size_t rss0 = rss_bytes();
        {
            auto db = NodeDb::open(path).value();
            const auto now = WallClock::now();
            for (const Node& n : nodes) {
                db.seen(n, now, Origin::kDirect);
                db.set_last_pong(n, n.ip, now);
            }
            const size_t heap1 = heap_in_use();
            Table table(self);
            for (const Node& n : nodes) table.add(n, Clock::now(), Origin::kDirect, 1);
            const size_t heap2 = heap_in_use();
            rss = static_cast<double>(rss_bytes()) - static_cast<double>(rss0);
            db_bytes = static_cast<double>(heap1 - heap0);
            table_bytes = static_cast<double>(heap2 - heap1);
            table_nodes = static_cast<double>(table.size());
            replacements = static_cast<double>(table.replacement_count());
            db_nodes = static_cast<double>(db.size());
            if (!db.save(now)) state.SkipWithError("save failed");
            file = static_cast<double>(std::filesystem::file_size(path));
        }
    }
    std::filesystem::remove_all(dir);
    state.counters["db_nodes"] = db_nodes;
    state.counters["db_heap_bytes_per_node"] = db_bytes / db_nodes;
    state.counters["table_nodes"] = table_nodes;
    state.counters["table_replacements"] = replacements;
    state.counters["table_heap_bytes"] = table_bytes;
    state.counters["table_heap_bytes_per_node"] = table_bytes / (table_nodes + replacements);
    state.counters["rss_delta_bytes"] = rss;
    state.counters["file_bytes"] = file;
    state.counters["file_bytes_per_node"] = file / db_nodes;
}
BENCHMARK(memory_node_db_and_table)->Name("memory/node_db_and_table")->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    std::printf("floor: one rlpx::recover = %.0f ns thread CPU (median of 9 x 500)\n", floor_ns());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
