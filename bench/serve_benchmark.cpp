// Serving one GetBlockHeaders request over devp2p, in process: request frame bytes in, reply frame
// bytes out, no sockets. Figures and commands: docs/performance.md ("Serving over devp2p", "Scaling
// and the crypto floor"); full runs: scripts/bench_p2p.sh, scripts/bench_scaling.sh.
//
// Fixture: the benchmark chain of bench/chain_db_benchmark.cpp (bench/bench_chain.hpp: 1,000,000
// generated headers by default, the newest 90,000 in LevelDB), or an existing datadir
// (HEADERD_BENCH_DATADIR, e.g. real mainnet headers), opened read-only. Two RLPx frame codecs from
// fixed secrets play client and server. Per placement (ancient: origins in the freezer; leveldb:
// origins in LevelDB; 1024 deterministic origins each, the same as chain_db_benchmark's):
//
//   serve/<placement>/threads:N
//                             what the server does for one request, in the order Connection and
//                             serve_peer do it: read_header + read_body (MAC checks, AES-CTR
//                             decrypt in place), decode_frame_data (snappy), GetBlockHeadersRequest::
//                             decode, HeaderServer::serve (192 headers, reused buffers),
//                             encode_frame_data (snappy compress), write_frame (AES-CTR + MAC).
//                             The request frames are encrypted by the client codec ahead of time,
//                             1024 at a time, outside the timing. N threads (1 to HEADERD_BENCH_THREADS,
//                             default 2) share the ChainDb and the HeaderServer; each has
//                             its own codec pair and buffers, as each worker thread of the server has
//                             its own reply buffers, and starts at its own place in the origins.
//                             Rates are per wall-clock second (UseRealTime), so threads:2 / threads:1
//                             is the scaling; the CPU column is CPU time per request, all threads.
//   lookup/<placement>/threads:N
//                             HeaderServer::serve alone (the database read and the reply splice).
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
// allocs_per_request = calls of global operator new plus OpenSSL allocations made by the benchmark's
// threads in their timed loops (bench_util.hpp, run_loop); reply_bytes = BlockHeaders payload;
// wire_bytes = the encrypted reply frame. HEADERD_BENCH_ITERATIONS fixes the iterations (per thread),
// for instruction counts under callgrind. The summary prints, from the same run, the crypto floor
// ratio (serve CPU time per request, 1 thread / reply_crypto CPU time per request) and the scaling
// (serve requests per second with N threads / with 1).

#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include <algorithm>
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
#include "bench/codec_pair.hpp"
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
// Request ids kFirstRequestId + origin index: all three bytes long, as a busy connection's are.
constexpr uint64_t kFirstRequestId = 0x10000;
constexpr uint64_t kEthOffset = 0x10;  // eth is the only capability: its ids start after p2p's 16
constexpr uint64_t kGetBlockHeadersId = kEthOffset + static_cast<uint64_t>(eth::MessageId::kGetBlockHeaders);
constexpr uint64_t kBlockHeadersId = kEthOffset + static_cast<uint64_t>(eth::MessageId::kBlockHeaders);

enum class Placement { kAncient, kLevelDb };
constexpr std::array kPlacements{Placement::kAncient, Placement::kLevelDb};

const char* placement_name(Placement p) { return p == Placement::kAncient ? "ancient" : "leveldb"; }

eth::GetBlockHeadersRequest request_for(uint64_t id, uint64_t origin) {
    eth::GetBlockHeadersRequest req;
    req.request_id = id;
    req.origin = eth::HashOrNumber::of(origin);
    req.amount = kRange;
    return req;
}

// The client: one GetBlockHeaders per origin, with request id kFirstRequestId + the origin's index.
Outcome<FrameStream> request_stream(rlpx::FrameCodec codec, const std::vector<uint64_t>& origins) {
    std::vector<Bytes> data;
    Bytes payload;
    Bytes encoded;
    for (uint64_t origin : origins) {
        payload.clear();
        request_for(kFirstRequestId + data.size(), origin).encode(payload);
        auto frame = p2p::encode_frame_data(kGetBlockHeadersId, payload, true, encoded);
        if (!frame) return make_error("request: " + frame.error().message());
        data.emplace_back(frame->begin(), frame->end());
    }
    return FrameStream(std::move(codec), std::move(data));
}

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
        if (auto r = check_chain_sides(*f->chain_, kRange); !r) return r.error();
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
            const std::vector<uint64_t> first(origins(p).begin(), origins(p).begin() + kBaselineReplies);
            auto stream = request_stream(std::move(codecs.client), first);
            if (!stream) return stream.error();
            FrameStream& client = *stream;
            ServerSide server(std::move(codecs.server), *server_);
            if (auto r = client.refill(); !r) return r;
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

// `origins` starting at the place of this thread (thread i of n at i/n of the way), so that the
// threads of one run read different ranges at any moment, as different peers would.
std::vector<uint64_t> origins_of_thread(const benchmark::State& state, const std::vector<uint64_t>& all) {
    std::vector<uint64_t> mine(all);
    const auto shift = static_cast<std::ptrdiff_t>(all.size() * static_cast<size_t>(state.thread_index()) /
                                                   static_cast<size_t>(state.threads()));
    std::rotate(mine.begin(), mine.begin() + shift, mine.end());
    return mine;
}

struct Tally {
    uint64_t reply_bytes{0};
    uint64_t wire_bytes{0};
};

void report(benchmark::State& state, const LoopTotals& totals, const Tally& t) {
    state.SetItemsProcessed(static_cast<int64_t>(totals.items));
    state.counters["allocs_per_request"] = per_iteration(totals.allocations);
    if (t.reply_bytes > 0) state.counters["reply_bytes"] = per_iteration(t.reply_bytes);
    if (t.wire_bytes > 0) state.counters["wire_bytes"] = per_iteration(t.wire_bytes);
}

Error served_count_error(size_t served) { return make_error("served " + std::to_string(served) + " headers"); }

void bm_serve(benchmark::State& state, Placement placement) {
    const Fixture& f = *g_fixture;
    const std::vector<uint64_t> origins = origins_of_thread(state, f.origins(placement));
    CodecPair codecs = make_codecs();
    auto stream = request_stream(std::move(codecs.client), origins);
    if (!stream) {
        state.SkipWithError(stream.error().message.c_str());
        return;
    }
    FrameStream& client = *stream;
    ServerSide server(std::move(codecs.server), f.server());
    // An untimed pass over every origin: the buffers reach the capacity a long-lived connection has
    // (and the client's, which refills inside the loop, theirs).
    std::optional<Error> error;
    if (auto r = client.refill(); !r) error = r.error();
    for (size_t i = 0; !error && i < client.size(); ++i) {
        if (auto r = server.serve_one(client.frame(i)); !r) error = r.error();
    }
    if (!error) {
        if (auto r = client.refill(); !r) error = r.error();
    }
    if (error) {
        state.SkipWithError(error->message.c_str());
        return;
    }
    Tally t;
    size_t next = 0;
    const auto totals = run_loop(state, [&]() -> Outcome<uint64_t> {
        if (next == client.size()) [[unlikely]] {
            state.PauseTiming();  // the client's work; allocation-free (see FrameStream)
            auto r = client.refill();
            state.ResumeTiming();
            if (!r) return r.error();
            next = 0;
        }
        auto served = server.serve_one(client.frame(next++));
        if (!served) [[unlikely]]
            return served.error();
        if (*served != kRange) [[unlikely]]
            return served_count_error(*served);
        t.reply_bytes += server.reply().size();
        t.wire_bytes += server.wire().size();
        benchmark::DoNotOptimize(server.wire().data());
        return uint64_t{*served};
    });
    if (totals) report(state, *totals, t);
}

void bm_lookup(benchmark::State& state, Placement placement) {
    const Fixture& f = *g_fixture;
    std::vector<eth::GetBlockHeadersRequest> requests;
    for (uint64_t origin : origins_of_thread(state, f.origins(placement))) {
        requests.push_back(request_for(kFirstRequestId + requests.size(), origin));
    }
    ItemBuffer scratch;
    Bytes reply;
    for (const auto& req : requests) (void)f.server().serve(req, scratch, reply);
    Tally t;
    size_t i = 0;
    const auto totals = run_loop(state, [&]() -> Outcome<uint64_t> {
        auto served = f.server().serve(requests[i++ % requests.size()], scratch, reply);
        if (!served) [[unlikely]]
            return served.error();
        if (served->headers != kRange) [[unlikely]]
            return served_count_error(served->headers);
        t.reply_bytes += reply.size();
        benchmark::DoNotOptimize(reply.data());
        return uint64_t{served->headers};
    });
    if (totals) report(state, *totals, t);
}

// snappy + write_frame of the reply payloads (compress = true), or write_frame alone of the
// already-compressed frame data (compress = false).
void bm_reply(benchmark::State& state, Placement placement, bool compress) {
    const Fixture& f = *g_fixture;
    const std::vector<Bytes>& inputs = compress ? f.replies(placement) : f.frame_data(placement);
    rlpx::FrameCodec codec = make_codecs().server;
    Bytes encoded;
    Bytes wire;
    Tally t;
    const auto one = [&](const Bytes& input) -> Outcome<uint64_t> {
        ByteView data{input};
        if (compress) {
            auto e = p2p::encode_frame_data(kBlockHeadersId, input, true, encoded);
            if (!e) [[unlikely]]
                return make_error("encode: " + e.error().message());
            data = *e;
        }
        wire.clear();
        if (auto r = codec.write_frame(data, wire); !r) [[unlikely]]
            return make_error("frame: " + r.error().message());
        return kRange;
    };
    for (const Bytes& input : inputs) {
        if (auto r = one(input); !r) {
            state.SkipWithError(r.error().message.c_str());
            return;
        }
    }
    size_t i = 0;
    const auto totals = run_loop(state, [&]() -> Outcome<uint64_t> {
        const Bytes& input = inputs[i++ % inputs.size()];
        auto r = one(input);
        if (compress) t.reply_bytes += input.size();
        t.wire_bytes += wire.size();
        benchmark::DoNotOptimize(wire.data());
        return r;
    });
    if (totals) report(state, *totals, t);
}

// The two primitives inside write_frame, on the same compressed replies: AES-256-CTR alone
// (aes = true) or keccak-256 absorbing the bytes and finishing a digest (the MAC's running hash).
void bm_primitive(benchmark::State& state, Placement placement, bool aes) {
    const Fixture& f = *g_fixture;
    const std::vector<Bytes>& inputs = f.frame_data(placement);
    const Hash32 key = fixed_hash("serve_benchmark aes key");
    const uint8_t iv[16] = {};
    rlpx::EvpCipherCtx ctx = rlpx::make_cipher(EVP_aes_256_ctr(), key.data(), iv);
    if (ctx == nullptr) {
        state.SkipWithError("AES-CTR setup failed");
        return;
    }
    Keccak256 mac;
    Bytes out;
    for (const Bytes& in : inputs) out.resize(std::max(out.size(), in.size()));
    size_t i = 0;
    const auto totals = run_loop(state, [&]() -> Outcome<uint64_t> {
        const Bytes& in = inputs[i++ % inputs.size()];
        if (aes) {
            if (!rlpx::cipher_update(ctx.get(), out.data(), in.data(), in.size())) [[unlikely]]
                return make_error("AES-CTR failed");
            benchmark::DoNotOptimize(out.data());
        } else {
            mac.update(in);
            const Hash32 digest = mac.digest();
            benchmark::DoNotOptimize(digest.data());
        }
        return kRange;
    });
    if (totals) report(state, *totals, Tally{});
}

std::string threads_suffix(int threads) { return "/threads:" + std::to_string(threads); }

void print_summary(const RecordingReporter& r, int max_threads) {
    const std::string one = threads_suffix(1);
    std::printf(
        "\nSummary: one %llu-header GetBlockHeaders, request frame in -> reply frame out; serve and lookup with 1 "
        "thread\n",
        static_cast<unsigned long long>(kRange));
    std::printf(
        "floor = serve CPU time / reply_crypto CPU time per request (snappy + AES-CTR + MAC of the same kind of "
        "reply); frame%%, aes%%, keccak%%: write_frame alone and its two primitives, as shares of the serve CPU "
        "time\n");
    std::printf("%-9s %12s %9s %9s %10s %9s %9s %12s %12s %7s %8s %8s %8s\n", "placement", "serve/s", "us/req",
                "crypto us", "allocs/req", "reply B", "wire B", "lookup/s", "crypto/s", "floor", "frame%", "aes%",
                "keccak%");
    for (Placement p : kPlacements) {
        const std::string suffix = std::string("/") + placement_name(p);
        const std::string serve = "serve" + suffix + one;
        const auto cpu = r.get(serve, "cpu_seconds");
        if (!cpu || *cpu <= 0) continue;
        const double serve_rate = static_cast<double>(kRange) / *cpu;  // headers per CPU second
        const auto crypto_cpu = r.get("reply_crypto" + suffix, "cpu_seconds");
        // Share of the serving CPU time.
        auto share = [&](const char* name) -> std::optional<double> {
            const auto base = r.get(name + suffix, "cpu_seconds");
            if (!base) return std::nullopt;
            return 100.0 * *base / *cpu;
        };
        auto rate = [&](const std::string& name) -> std::optional<double> {
            const auto s = r.get(name, "cpu_seconds");
            if (!s || *s <= 0) return std::nullopt;
            return static_cast<double>(kRange) / *s;
        };
        std::optional<double> floor;
        if (crypto_cpu && *crypto_cpu > 0) floor = *cpu / *crypto_cpu;
        std::printf("%-9s %12s %9s %9s %10s %9s %9s %12s %12s %7s %8s %8s %8s\n", placement_name(p),
                    cell(serve_rate, "%.0f").c_str(), cell(1e6 * *cpu, "%.1f").c_str(),
                    cell(crypto_cpu ? std::optional<double>(1e6 * *crypto_cpu) : std::nullopt, "%.1f").c_str(),
                    cell(r.get(serve, "allocs_per_request"), "%.2f").c_str(),
                    cell(r.get(serve, "reply_bytes"), "%.0f").c_str(), cell(r.get(serve, "wire_bytes"), "%.0f").c_str(),
                    cell(rate("lookup" + suffix + one), "%.0f").c_str(),
                    cell(rate("reply_crypto" + suffix), "%.0f").c_str(), cell(floor, "%.3fx").c_str(),
                    cell(share("reply_frame"), "%.1f").c_str(), cell(share("aes_ctr"), "%.1f").c_str(),
                    cell(share("keccak"), "%.1f").c_str());
    }
    if (max_threads < 2) return;
    std::printf(
        "\nScaling: requests/s per wall-clock second with N threads sharing the ChainDb and HeaderServer (own codecs "
        "and buffers); ratio = N threads / 1 thread; CPU us/req summed over threads\n");
    std::printf("%-9s %-7s %8s %12s %7s %11s %10s %12s %7s\n", "placement", "bench", "threads", "requests/s", "ratio",
                "CPU us/req", "allocs/req", "lookup req/s", "ratio");
    for (Placement p : kPlacements) {
        const std::string suffix = std::string("/") + placement_name(p);
        const auto base = r.get("serve" + suffix + one, "items_per_second");
        const auto lookup_base = r.get("lookup" + suffix + one, "items_per_second");
        for (int n = 1; n <= max_threads; ++n) {
            const std::string serve = "serve" + suffix + threads_suffix(n);
            const auto rate = r.get(serve, "items_per_second");
            const auto lookup = r.get("lookup" + suffix + threads_suffix(n), "items_per_second");
            if (!rate && !lookup) continue;
            auto requests = [](std::optional<double> headers) -> std::optional<double> {
                if (!headers) return std::nullopt;
                return *headers / static_cast<double>(kRange);
            };
            auto ratio = [](std::optional<double> a, std::optional<double> b) -> std::optional<double> {
                if (!a || !b || *b <= 0) return std::nullopt;
                return *a / *b;
            };
            const auto cpu = r.get(serve, "cpu_seconds");
            std::printf("%-9s %-7s %8d %12s %7s %11s %10s %12s %7s\n", placement_name(p), "serve", n,
                        cell(requests(rate), "%.1f").c_str(), cell(ratio(rate, base), "%.3fx").c_str(),
                        cell(cpu ? std::optional<double>(1e6 * *cpu) : std::nullopt, "%.1f").c_str(),
                        cell(r.get(serve, "allocs_per_request"), "%.2f").c_str(),
                        cell(requests(lookup), "%.1f").c_str(), cell(ratio(lookup, lookup_base), "%.3fx").c_str());
        }
    }
}

}  // namespace
}  // namespace headerd::bench

int main(int argc, char** argv) {
    using namespace headerd::bench;
    std::optional<ChainSettings> settings;
    std::unique_ptr<Fixture> fixture;
    int max_threads = 2;
    const auto setup = [&](bool list_only) -> int {
        settings = read_chain_settings(HEADERD_BENCH_DEFAULT_DIR, kRange);
        if (!settings) return 2;
        const auto threads = env_u64("HEADERD_BENCH_THREADS", 2);
        if (!threads || *threads < 1 || *threads > 64) {
            std::fprintf(stderr, "bench: HEADERD_BENCH_THREADS must be 1..64\n");
            return 2;
        }
        max_threads = static_cast<int>(*threads);
        // A fixed iteration count (per thread), for instruction counts under callgrind.
        const auto iterations = env_u64("HEADERD_BENCH_ITERATIONS", 0);
        if (!iterations) {
            std::fprintf(stderr, "bench: HEADERD_BENCH_ITERATIONS is not a number\n");
            return 2;
        }
        if (!openssl_allocations_counted()) std::fprintf(stderr, "bench: OpenSSL allocations are not counted\n");

        for (Placement p : kPlacements) {
            const std::string suffix = std::string("/") + placement_name(p);
            for (auto* b : {benchmark::RegisterBenchmark(("serve" + suffix).c_str(), bm_serve, p),
                            benchmark::RegisterBenchmark(("lookup" + suffix).c_str(), bm_lookup, p)}) {
                b->Unit(benchmark::kMicrosecond)->DenseThreadRange(1, max_threads)->UseRealTime();
                if (*iterations > 0) b->Iterations(static_cast<benchmark::IterationCount>(*iterations));
            }
            for (auto* b : {benchmark::RegisterBenchmark(("reply_crypto" + suffix).c_str(), bm_reply, p, true),
                            benchmark::RegisterBenchmark(("reply_frame" + suffix).c_str(), bm_reply, p, false),
                            benchmark::RegisterBenchmark(("aes_ctr" + suffix).c_str(), bm_primitive, p, true),
                            benchmark::RegisterBenchmark(("keccak" + suffix).c_str(), bm_primitive, p, false)}) {
                b->Unit(benchmark::kMicrosecond);
                if (*iterations > 0) b->Iterations(static_cast<benchmark::IterationCount>(*iterations));
            }
        }
        if (list_only) return 0;
        auto created = Fixture::create(*settings);
        if (!created) {
            std::fprintf(stderr, "%s\n", created.error().message.c_str());
            return 1;
        }
        fixture = std::move(*created);
        g_fixture = fixture.get();
        const auto head = fixture->chain().head();
        std::fprintf(stderr, "bench: datadir %s, %llu headers, blocks [0, %llu) ancient\n", settings->dir.c_str(),
                     static_cast<unsigned long long>(head ? head->number + 1 : 0),
                     static_cast<unsigned long long>(fixture->chain().ancient_items()));
        return 0;
    };
    return benchmark_main(argc, argv, setup, [&](const RecordingReporter& r) { print_summary(r, max_threads); });
}
