// Serving one GetBlockHeaders request over devp2p, in process: request frame bytes in, reply frame
// bytes out, no sockets. Figures and commands: docs/performance.md ("Serving over devp2p"); full run:
// scripts/bench_p2p.sh.
//
// Fixture: the benchmark chain of bench/chain_db_benchmark.cpp (bench/bench_chain.hpp: 1,000,000
// generated headers by default, the newest 90,000 in LevelDB), opened read-only. Two RLPx frame codecs
// from fixed secrets play client and server. Per placement (ancient: origins in the freezer;
// leveldb: origins in LevelDB; 1024 deterministic origins each, the same as chain_db_benchmark's):
//
//   serve/<placement>         what the server does for one request, in the order Connection and
//                             serve_peer do it: read_header + read_body (MAC checks, AES-CTR
//                             decrypt in place), decode_frame_data (snappy), GetBlockHeadersRequest::
//                             decode, HeaderServer::serve (192 headers, reused buffers),
//                             encode_frame_data (snappy compress), write_frame (AES-CTR + MAC).
//                             The request frames are encrypted by the client codec ahead of time,
//                             1024 at a time, outside the timing.
//   lookup/<placement>        HeaderServer::serve alone (the database read and the reply splice).
//   reply_crypto/<placement>  the unavoidable part, on replies of the same placement: snappy
//                             compression of the reply (encode_frame_data) + write_frame.
//   reply_frame/<placement>   write_frame alone (AES-256-CTR + keccak/AES MACs) of the compressed
//                             reply.
//   aes_ctr/<placement>, keccak/<placement>
//                             the two primitives inside write_frame on the same compressed bytes:
//                             AES-256-CTR alone; keccak-256 absorbing them and finishing a digest.
//
// The baselines cycle over the replies of the first kBaselineReplies origins, kept in memory (about
// 0.9 MB, cache-warm like the reply the server has just built). Counters per iteration (one request):
// allocs_per_request = calls of global operator new plus OpenSSL allocations made by this thread in
// the timed loop; reply_bytes = BlockHeaders payload; wire_bytes = the encrypted reply frame.

#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/allocation_counter.hpp"
#include "bench/bench_chain.hpp"
#include "bench/bench_util.hpp"
#include "core/block_header.hpp"
#include "core/item_buffer.hpp"
#include "core/keccak.hpp"
#include "core/synthetic.hpp"
#include "db/chain_db.hpp"
#include "p2p/connection.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/eth/serve.hpp"
#include "p2p/rlpx/evp.hpp"
#include "p2p/rlpx/frame.hpp"
#include "p2p/rlpx/secrets.hpp"
#include "p2p/wire/message_codec.hpp"

namespace headerd::bench {
namespace {

constexpr uint64_t kRange = 192;          // headers per request
constexpr uint64_t kOriginSeed = 0x5eed;  // chain_db_benchmark's, so both use the same origins
constexpr size_t kOrigins = 1024;         // distinct origins per placement, cycled
constexpr size_t kBaselineReplies = 8;    // replies the crypto baselines cycle over
constexpr uint64_t kEthOffset = 0x10;     // eth is the only capability: its ids start after p2p's 16
constexpr uint64_t kGetBlockHeadersId = kEthOffset + static_cast<uint64_t>(eth::MessageId::kGetBlockHeaders);
constexpr uint64_t kBlockHeadersId = kEthOffset + static_cast<uint64_t>(eth::MessageId::kBlockHeaders);

enum class Placement { kAncient, kLevelDb };
constexpr std::array kPlacements{Placement::kAncient, Placement::kLevelDb};

const char* placement_name(Placement p) { return p == Placement::kAncient ? "ancient" : "leveldb"; }

Hash32 fixed_hash(std::string_view label) {
    return keccak256(ByteView{reinterpret_cast<const uint8_t*>(label.data()), label.size()});
}

// A matching pair of frame codecs from fixed secrets, as an RLPx handshake would leave them: what
// the client encrypts, the server decrypts, and the other way round.
struct CodecPair {
    rlpx::FrameCodec client;
    rlpx::FrameCodec server;
};

CodecPair make_codecs() {
    const Hash32 shared = fixed_hash("serve_benchmark ephemeral shared secret");
    const Hash32 nonce_a = fixed_hash("serve_benchmark initiator nonce");
    const Hash32 nonce_b = fixed_hash("serve_benchmark recipient nonce");
    const Bytes auth(307, 0xa1);  // stand-ins for the two handshake packets the secrets hash
    const Bytes ack(210, 0xb2);
    const Hash32 key_a = fixed_hash("serve_benchmark client key");
    const Hash32 key_b = fixed_hash("serve_benchmark server key");
    const auto client_key = rlpx::PrivateKey::from_bytes(key_a).value();
    const auto server_key = rlpx::PrivateKey::from_bytes(key_b).value();
    return CodecPair{
        rlpx::FrameCodec(
            rlpx::derive_secrets(rlpx::Role::kInitiator, shared, nonce_a, nonce_b, auth, ack, server_key.public_key()),
            p2p::Connection::kMaxFrameSize),
        rlpx::FrameCodec(
            rlpx::derive_secrets(rlpx::Role::kRecipient, shared, nonce_a, nonce_b, auth, ack, client_key.public_key()),
            p2p::Connection::kMaxFrameSize),
    };
}

eth::GetBlockHeadersRequest request_for(uint64_t id, uint64_t origin) {
    eth::GetBlockHeadersRequest req;
    req.request_id = id;
    req.origin = eth::HashOrNumber::of(origin);
    req.amount = kRange;
    return req;
}

// The client: encrypts request frames for the given origins back to back, in the order the server
// will read them (each frame advances the MAC and CTR state of the pair).
class RequestStream {
  public:
    explicit RequestStream(rlpx::FrameCodec codec) : codec_(std::move(codec)) {}

    Outcome<void> refill(const std::vector<uint64_t>& origins) {
        wire_.clear();
        ends_.clear();
        for (uint64_t origin : origins) {
            payload_.clear();
            request_for(next_id_++, origin).encode(payload_);
            auto data = p2p::encode_frame_data(kGetBlockHeadersId, payload_, true, encoded_);
            if (!data) return make_error("request: " + data.error().message());
            if (auto r = codec_.write_frame(*data, wire_); !r) return make_error("request: " + r.error().message());
            ends_.push_back(wire_.size());
        }
        return {};
    }
    size_t size() const noexcept { return ends_.size(); }
    ByteView frame(size_t i) const noexcept {
        const size_t begin = i == 0 ? 0 : ends_[i - 1];
        return ByteView{wire_}.subspan(begin, ends_[i] - begin);
    }
    rlpx::FrameCodec& codec() noexcept { return codec_; }

  private:
    rlpx::FrameCodec codec_;
    uint64_t next_id_{1};
    Bytes payload_;
    Bytes encoded_;
    Bytes wire_;
    std::vector<size_t> ends_;
};

// The server's side of one connection: the codec and every buffer p2p::Connection and serve_peer
// keep per connection, reused for each request.
class ServerSide {
  public:
    ServerSide(rlpx::FrameCodec codec, const eth::HeaderServer& server) : codec_(std::move(codec)), server_(server) {}

    // One request frame (header + body, as read from the socket) to one reply frame in wire().
    // Returns the number of headers served.
    Outcome<size_t> serve_one(ByteView request) {
        // Connection::read_message: the 32-byte header, then the body into frame_ (the socket read's
        // copy), checked and decrypted in place.
        if (request.size() < rlpx::kFrameHeaderSize) return make_error("short request frame");
        auto size = codec_.read_header(request.first(rlpx::kFrameHeaderSize));
        if (!size) return make_error("frame header: " + size.error().message());
        const size_t body = rlpx::FrameCodec::body_size(*size);
        if (request.size() != rlpx::kFrameHeaderSize + body) return make_error("request frame size");
        frame_.resize(body);
        std::memcpy(frame_.data(), request.data() + rlpx::kFrameHeaderSize, body);
        auto data = codec_.read_body(std::span<uint8_t>(frame_));
        if (!data) return make_error("frame: " + data.error().message());
        auto msg = p2p::decode_frame_data(*data, true, message_, eth::kMaxMessageSize);
        if (!msg) return make_error("message: " + msg.error().message());
        if (msg->id != kGetBlockHeadersId) return make_error("not a GetBlockHeaders");
        // serve_peer, GetBlockHeaders case.
        auto req = eth::GetBlockHeadersRequest::decode(msg->payload);
        if (!req) return make_error("GetBlockHeaders: " + req.error().message());
        auto served = server_.serve(*req, scratch_, reply_);
        if (!served) return served.error();
        // Connection::write_message.
        auto out = p2p::encode_frame_data(kBlockHeadersId, reply_, true, encoded_);
        if (!out) return make_error("encode: " + out.error().message());
        wire_.clear();
        if (auto r = codec_.write_frame(*out, wire_); !r) return make_error("frame: " + r.error().message());
        return served->headers;
    }

    const Bytes& reply() const noexcept { return reply_; }
    const Bytes& wire() const noexcept { return wire_; }

  private:
    rlpx::FrameCodec codec_;
    const eth::HeaderServer& server_;
    Bytes frame_;
    Bytes message_;
    ItemBuffer scratch_;
    Bytes reply_;
    Bytes encoded_;
    Bytes wire_;
};

// ---- fixture -------------------------------------------------------------------------------------

class Fixture {
  public:
    static Outcome<std::unique_ptr<Fixture>> create(const ChainSettings& s) {
        if (auto r = prepare_chain(s); !r) return r.error();
        auto f = std::unique_ptr<Fixture>(new Fixture());
        db::ChainDbOptions opts;
        opts.read_only = true;
        auto opened = db::ChainDb::open(s.dir, opts);
        if (!opened) return opened.error();
        f->chain_ = std::move(*opened);
        f->server_ = std::make_unique<eth::HeaderServer>(*f->chain_);
        f->make_origins();
        if (auto r = f->check_and_warm(); !r) return r.error();
        return f;
    }

    const db::ChainDb& chain() const { return *chain_; }
    const eth::HeaderServer& server() const { return *server_; }
    const std::vector<uint64_t>& origins(Placement p) const { return origins_[static_cast<size_t>(p)]; }
    const std::vector<Bytes>& replies(Placement p) const { return replies_[static_cast<size_t>(p)]; }
    const std::vector<Bytes>& frame_data(Placement p) const { return frame_data_[static_cast<size_t>(p)]; }

  private:
    Fixture() = default;

    void make_origins() {
        const uint64_t ancient = chain_->ancient_items();
        const uint64_t head = chain_->head()->number;
        synthetic::Rng rng(kOriginSeed);
        for (Placement p : kPlacements) {
            std::vector<uint64_t>& o = origins_[static_cast<size_t>(p)];
            o.resize(kOrigins);
            for (uint64_t& origin : o) {
                origin = p == Placement::kAncient ? rng.below(ancient - kRange + 1)
                                                  : ancient + rng.below(head + 1 - ancient - kRange + 1);
            }
        }
    }

    // Reads every origin's range once (page cache warm), runs the first origins of each placement
    // through a full client -> server -> client round trip and checks the reply the client decodes
    // against ChainDb::header_range, and keeps the baseline replies.
    Outcome<void> check_and_warm() {
        ItemBuffer range;
        for (Placement p : kPlacements) {
            for (uint64_t origin : origins(p)) {
                if (auto r = chain_->header_range(origin, kRange, db::Order::kAscending, range); !r) return r;
            }
            CodecPair codecs = make_codecs();
            RequestStream client(std::move(codecs.client));
            ServerSide server(std::move(codecs.server), *server_);
            const std::vector<uint64_t> first(origins(p).begin(), origins(p).begin() + kBaselineReplies);
            if (auto r = client.refill(first); !r) return r;
            Bytes body;
            Bytes inflated;
            for (size_t i = 0; i < first.size(); ++i) {
                auto served = server.serve_one(client.frame(i));
                if (!served) return served.error();
                // The client reads the reply frame back.
                ByteView wire{server.wire()};
                auto size = client.codec().read_header(wire.first(rlpx::kFrameHeaderSize));
                if (!size) return make_error("check: reply header: " + size.error().message());
                auto data = client.codec().read_body(wire.subspan(rlpx::kFrameHeaderSize), body);
                if (!data) return make_error("check: reply body: " + data.error().message());
                frame_data_[static_cast<size_t>(p)].emplace_back(data->begin(), data->end());
                auto msg = p2p::decode_frame_data(*data, true, inflated, eth::kMaxMessageSize);
                if (!msg || msg->id != kBlockHeadersId) return make_error("check: reply is not BlockHeaders");
                auto reply = eth::BlockHeadersMessage::decode(msg->payload);
                if (!reply) return make_error("check: BlockHeaders: " + reply.error().message());
                if (auto r = chain_->header_range(first[i], kRange, db::Order::kAscending, range); !r) return r;
                if (reply->headers.size() != kRange || range.size() != kRange) {
                    return make_error("check: reply holds " + std::to_string(reply->headers.size()) + " headers");
                }
                for (size_t h = 0; h < kRange; ++h) {
                    const ByteView got = reply->headers[h];
                    const ByteView want = range.item(h);
                    if (!std::equal(got.begin(), got.end(), want.begin(), want.end())) {
                        return make_error("check: header " + std::to_string(first[i] + h) + " differs");
                    }
                }
                replies_[static_cast<size_t>(p)].emplace_back(msg->payload.begin(), msg->payload.end());
            }
        }
        return {};
    }

    std::unique_ptr<db::ChainDb> chain_;
    std::unique_ptr<eth::HeaderServer> server_;
    std::array<std::vector<uint64_t>, kPlacements.size()> origins_;
    std::array<std::vector<Bytes>, kPlacements.size()> replies_;     // BlockHeaders payloads
    std::array<std::vector<Bytes>, kPlacements.size()> frame_data_;  // id + snappy(payload)
};

Fixture* g_fixture = nullptr;

// ---- benchmarks ----------------------------------------------------------------------------------

struct Tally {
    uint64_t headers{0};
    uint64_t reply_bytes{0};
    uint64_t wire_bytes{0};
};

void report(benchmark::State& state, const Tally& t, uint64_t allocations) {
    state.SetItemsProcessed(static_cast<int64_t>(t.headers));
    const auto per_request = [](uint64_t v) {
        return benchmark::Counter(static_cast<double>(v), benchmark::Counter::kAvgIterations);
    };
    state.counters["allocs_per_request"] = per_request(allocations);
    if (t.reply_bytes > 0) state.counters["reply_bytes"] = per_request(t.reply_bytes);
    if (t.wire_bytes > 0) state.counters["wire_bytes"] = per_request(t.wire_bytes);
}

void bm_serve(benchmark::State& state, Placement placement) {
    const Fixture& f = *g_fixture;
    const std::vector<uint64_t>& origins = f.origins(placement);
    CodecPair codecs = make_codecs();
    RequestStream client(std::move(codecs.client));
    ServerSide server(std::move(codecs.server), f.server());
    // Two untimed passes over every origin: the buffers reach the capacity a long-lived connection
    // has. Two, because request ids from 256 on take a byte more: the first pass has shorter ones.
    std::optional<Error> error;
    for (int pass = 0; pass < 2 && !error; ++pass) {
        if (auto r = client.refill(origins); !r) error = r.error();
        for (size_t i = 0; !error && i < client.size(); ++i) {
            if (auto r = server.serve_one(client.frame(i)); !r) error = r.error();
        }
    }
    if (!error) {
        if (auto r = client.refill(origins); !r) error = r.error();
    }
    if (error) {
        state.SkipWithError(error->message.c_str());
        return;
    }
    Tally t;
    size_t next = 0;
    AllocationScope allocations;
    for (auto _ : state) {
        if (next == client.size()) {
            allocations.pause();  // the benchmark library's own timer calls are not the server's
            state.PauseTiming();
            auto r = client.refill(origins);
            state.ResumeTiming();
            allocations.resume();
            if (!r) {
                error = r.error();
                break;
            }
            next = 0;
        }
        auto served = server.serve_one(client.frame(next++));
        if (!served || *served != kRange) [[unlikely]] {
            error = served ? make_error("served " + std::to_string(*served) + " headers") : served.error();
            break;
        }
        t.headers += *served;
        t.reply_bytes += server.reply().size();
        t.wire_bytes += server.wire().size();
        benchmark::DoNotOptimize(server.wire().data());
    }
    const uint64_t allocated = allocations.stop();
    if (error) {
        state.SkipWithError(error->message.c_str());
        return;
    }
    report(state, t, allocated);
}

void bm_lookup(benchmark::State& state, Placement placement) {
    const Fixture& f = *g_fixture;
    std::vector<eth::GetBlockHeadersRequest> requests;
    for (uint64_t origin : f.origins(placement)) requests.push_back(request_for(requests.size() + 1, origin));
    ItemBuffer scratch;
    Bytes reply;
    for (const auto& req : requests) (void)f.server().serve(req, scratch, reply);
    Tally t;
    size_t i = 0;
    std::optional<Error> error;
    AllocationScope allocations;
    for (auto _ : state) {
        auto served = f.server().serve(requests[i++ % requests.size()], scratch, reply);
        if (!served || served->headers != kRange) [[unlikely]] {
            error = served ? make_error("served " + std::to_string(served->headers) + " headers") : served.error();
            break;
        }
        t.headers += served->headers;
        t.reply_bytes += reply.size();
        benchmark::DoNotOptimize(reply.data());
    }
    const uint64_t allocated = allocations.stop();
    if (error) {
        state.SkipWithError(error->message.c_str());
        return;
    }
    report(state, t, allocated);
}

// snappy + write_frame of the reply payloads (compress = true), or write_frame alone of the
// already-compressed frame data (compress = false).
void bm_reply(benchmark::State& state, Placement placement, bool compress) {
    const Fixture& f = *g_fixture;
    const std::vector<Bytes>& inputs = compress ? f.replies(placement) : f.frame_data(placement);
    rlpx::FrameCodec codec = make_codecs().server;
    Bytes encoded;
    Bytes wire;
    std::optional<Error> error;
    const auto one = [&](const Bytes& input) -> bool {
        ByteView data{input};
        if (compress) {
            auto e = p2p::encode_frame_data(kBlockHeadersId, input, true, encoded);
            if (!e) {
                error = make_error("encode: " + e.error().message());
                return false;
            }
            data = *e;
        }
        wire.clear();
        if (auto r = codec.write_frame(data, wire); !r) {
            error = make_error("frame: " + r.error().message());
            return false;
        }
        return true;
    };
    for (const Bytes& input : inputs) {
        if (!one(input)) break;
    }
    Tally t;
    size_t i = 0;
    AllocationScope allocations;
    for (auto _ : state) {
        if (error || !one(inputs[i++ % inputs.size()])) [[unlikely]]
            break;
        t.headers += kRange;
        t.wire_bytes += wire.size();
        benchmark::DoNotOptimize(wire.data());
    }
    const uint64_t allocated = allocations.stop();
    if (error) {
        state.SkipWithError(error->message.c_str());
        return;
    }
    report(state, t, allocated);
}

// The two primitives inside write_frame, on the same compressed replies: AES-256-CTR alone
// (aes = true) or keccak-256 absorbing the bytes and finishing a digest (the MAC's running hash).
void bm_primitive(benchmark::State& state, Placement placement, bool aes) {
    const Fixture& f = *g_fixture;
    const std::vector<Bytes>& inputs = f.frame_data(placement);
    const Hash32 key = fixed_hash("serve_benchmark aes key");
    const uint8_t iv[16] = {};
    rlpx::EvpCipherCtx ctx = rlpx::make_cipher(EVP_aes_256_ctr(), key.data(), iv);
    Keccak256 mac;
    Bytes out;
    for (const Bytes& in : inputs) out.resize(std::max(out.size(), in.size()));
    Tally t;
    size_t i = 0;
    bool ok = ctx != nullptr;
    AllocationScope allocations;
    for (auto _ : state) {
        const Bytes& in = inputs[i++ % inputs.size()];
        if (aes) {
            ok = ok && rlpx::cipher_update(ctx.get(), out.data(), in.data(), in.size());
            benchmark::DoNotOptimize(out.data());
        } else {
            mac.update(in);
            const Hash32 digest = mac.digest();
            benchmark::DoNotOptimize(digest.data());
        }
        t.headers += kRange;
    }
    const uint64_t allocated = allocations.stop();
    if (!ok) {
        state.SkipWithError("AES-CTR failed");
        return;
    }
    report(state, t, allocated);
}

void print_summary(const RecordingReporter& r) {
    if (!r.any()) return;
    std::printf(
        "\nSummary: one %llu-header GetBlockHeaders, request frame in -> reply frame out; headers/s per core (CPU "
        "time)\n",
        static_cast<unsigned long long>(kRange));
    std::printf(
        "crypto%% = reply_crypto time / serve time (snappy + AES-CTR + MAC of the same reply); frame%%, aes%%, "
        "keccak%%: write_frame alone and its two primitives, as shares of the serve time\n");
    std::printf("%-9s %12s %9s %10s %9s %12s %12s %12s %8s %8s %8s %8s\n", "placement", "serve/s", "us/req",
                "allocs/req", "wire B", "lookup/s", "crypto/s", "frame/s", "crypto%", "frame%", "aes%", "keccak%");
    for (Placement p : kPlacements) {
        const std::string suffix = std::string("/") + placement_name(p);
        const auto serve = r.get("serve" + suffix, "items_per_second");
        if (!serve || *serve <= 0) continue;
        const auto rate = [&](const char* name) { return r.get(name + suffix, "items_per_second"); };
        auto cell = [](std::optional<double> v, const char* fmt) {
            char buf[32];
            if (v) {
                std::snprintf(buf, sizeof buf, fmt, *v);
            } else {
                std::snprintf(buf, sizeof buf, "-");
            }
            return std::string(buf);
        };
        // Share of the serving time: time ratio = inverse rate ratio.
        auto share = [&](std::optional<double> base) -> std::optional<double> {
            if (!base || *base <= 0) return std::nullopt;
            return 100.0 * *serve / *base;
        };
        std::printf("%-9s %12s %9s %10s %9s %12s %12s %12s %8s %8s %8s %8s\n", placement_name(p),
                    cell(serve, "%.0f").c_str(), cell(1e6 * static_cast<double>(kRange) / *serve, "%.1f").c_str(),
                    cell(r.get("serve" + suffix, "allocs_per_request"), "%.2f").c_str(),
                    cell(r.get("serve" + suffix, "wire_bytes"), "%.0f").c_str(), cell(rate("lookup"), "%.0f").c_str(),
                    cell(rate("reply_crypto"), "%.0f").c_str(), cell(rate("reply_frame"), "%.0f").c_str(),
                    cell(share(rate("reply_crypto")), "%.1f").c_str(), cell(share(rate("reply_frame")), "%.1f").c_str(),
                    cell(share(rate("aes_ctr")), "%.1f").c_str(), cell(share(rate("keccak")), "%.1f").c_str());
    }
}

}  // namespace
}  // namespace headerd::bench

int main(int argc, char** argv) {
    using namespace headerd::bench;
    bool list_only = false;
    for (int i = 1; i < argc; ++i) list_only = list_only || std::string_view(argv[i]).starts_with("--benchmark_list");
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    const auto settings = read_chain_settings(HEADERD_BENCH_DEFAULT_DIR, kRange);
    if (!settings) return 2;
    if (!openssl_allocations_counted()) std::fprintf(stderr, "bench: OpenSSL allocations are not counted\n");

    for (Placement p : kPlacements) {
        const std::string suffix = std::string("/") + placement_name(p);
        for (auto* b : {benchmark::RegisterBenchmark(("serve" + suffix).c_str(), bm_serve, p),
                        benchmark::RegisterBenchmark(("lookup" + suffix).c_str(), bm_lookup, p),
                        benchmark::RegisterBenchmark(("reply_crypto" + suffix).c_str(), bm_reply, p, true),
                        benchmark::RegisterBenchmark(("reply_frame" + suffix).c_str(), bm_reply, p, false),
                        benchmark::RegisterBenchmark(("aes_ctr" + suffix).c_str(), bm_primitive, p, true),
                        benchmark::RegisterBenchmark(("keccak" + suffix).c_str(), bm_primitive, p, false)}) {
            b->Unit(benchmark::kMicrosecond);
        }
    }

    std::unique_ptr<Fixture> fixture;
    if (!list_only) {
        auto created = Fixture::create(*settings);
        if (!created) {
            std::fprintf(stderr, "%s\n", created.error().message.c_str());
            return 1;
        }
        fixture = std::move(*created);
        g_fixture = fixture.get();
        std::fprintf(stderr, "bench: datadir %s, %llu headers, blocks [0, %llu) ancient\n", settings->dir.c_str(),
                     static_cast<unsigned long long>(settings->headers),
                     static_cast<unsigned long long>(fixture->chain().ancient_items()));
    }

    RecordingReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                     : benchmark::ConsoleReporter::OO_Tabular);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    if (!list_only) print_summary(reporter);
    benchmark::Shutdown();
    return reporter.failed() ? 1 : 0;
}
