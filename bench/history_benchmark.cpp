// Serving block bodies and receipt lists from era1 files (docs/history.md), in process: request
// frame bytes in, reply frame bytes out, no sockets, as bench/serve_benchmark.cpp does for headers.
// Figures and commands: docs/performance.md, "History".
//
// Fixture: two datadirs built at start under BUILD_DIR/bench-history from tests/data: mainnet's
// epoch 0 (blocks 0..8191: uncles, no transactions) imported from the genesis, and Sepolia's epoch
// 21 (blocks 172032..180223: 93 transactions and receipts) anchored on its accumulator root, both
// with `import --history`, mainnet's headers then frozen (the anchored chain stays in LevelDB);
// beside each, a freezer table (snappy, as geth's) holding the same bodies and one holding the
// same receipt lists, to compare the two ways of storing them. Requests are
// geth's downloader's: 128 bodies (MaxBlockFetch) or 256 receipt lists (MaxReceiptFetch) by hash,
// from 32 origins spread over the epoch, cycled. Per network (mainnet0, sepolia21):
//
//   serve/<kind>/<net>   what the server does for one request: read_header + read_body (MAC, AES-CTR),
//                        decode_frame_data (snappy), eth::serve_history (hash -> number through
//                        LevelDB, canonical check, the era1 records decompressed with their CRCs,
//                        eth/69's receipts rewritten without blooms), encode_frame_data (snappy),
//                        write_frame (AES-CTR + MAC). kind: bodies (eth/68), receipts68, receipts69.
//   floor/<kind>/<net>   the unavoidable part of the same reply: the records decompressed from the
//                        mapped era1 file (era1::Archive, no lookups) and appended, then
//                        encode_frame_data + write_frame. kind: bodies, receipts.
//   store/<form>/<kind>/<net>
//                        reading the items of one request from storage only: form era1 (EraStore, its
//                        LRU, the framed snappy records with CRC-32C) or freezer (ancient::Table with
//                        snappy blocks, geth's freezer form), kind bodies or receipts.
//
// Items are bodies or receipt lists; the summary prints CPU per item and the serve / floor ratio.

#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ancient/file_system.hpp"
#include "ancient/table.hpp"
#include "bench/allocation_counter.hpp"
#include "bench/bench_util.hpp"
#include "bench/codec_pair.hpp"
#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "core/era1.hpp"
#include "core/hex.hpp"
#include "core/item_buffer.hpp"
#include "db/chain_db.hpp"
#include "db/era_store.hpp"
#include "db/import.hpp"
#include "db/mapped_file.hpp"
#include "p2p/eth/history.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/wire/message_codec.hpp"

namespace headerd::bench {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBodiesPerRequest = 128;    // geth's MaxBlockFetch
constexpr size_t kReceiptsPerRequest = 256;  // geth's MaxReceiptFetch
constexpr size_t kOrigins = 32;
constexpr uint64_t kEthOffset = 0x10;
constexpr uint64_t kFirstRequestId = 0x10000;

enum class Kind { kBodies, kReceipts68, kReceipts69 };
const char* kind_name(Kind k) {
    return k == Kind::kBodies ? "bodies" : k == Kind::kReceipts68 ? "receipts68" : "receipts69";
}
size_t kind_items(Kind k) { return k == Kind::kBodies ? kBodiesPerRequest : kReceiptsPerRequest; }
uint64_t kind_version(Kind k) { return k == Kind::kReceipts69 ? eth::kEth69 : eth::kEth68; }
eth::MessageId kind_request(Kind k) {
    return k == Kind::kBodies ? eth::MessageId::kGetBlockBodies : eth::MessageId::kGetReceipts;
}

// One network's fixture: the datadir, its history, the mapped file, the freezer tables and the
// origins (indices into the epoch) of the requests.
struct Net {
    std::string name;
    std::unique_ptr<db::ChainDb> chain;
    std::unique_ptr<db::EraStore> store;
    std::unique_ptr<db::MappedFile> file;
    std::unique_ptr<era1::Archive> archive;
    std::unique_ptr<ancient::PosixFileSystem> fs;
    std::unique_ptr<ancient::Table> bodies_table;
    std::unique_ptr<ancient::Table> receipts_table;
    uint64_t first{0};
    std::vector<Hash32> hashes;  // of the epoch's blocks
    std::vector<size_t> origins;
};

std::vector<std::unique_ptr<Net>> g_nets;

Outcome<std::unique_ptr<Net>> make_net(const fs::path& root, const std::string& name, const std::string& file,
                                       const ChainConfig& config, std::optional<Hash32> trusted) {
    auto net = std::make_unique<Net>();
    net->name = name;
    const fs::path dir = root / name;
    fs::remove_all(dir);
    db::ChainDbOptions opts;
    opts.create_if_missing = true;
    auto chain = db::ChainDb::open(dir.string(), opts);
    if (!chain) return chain.error();
    net->chain = std::move(*chain);
    if (auto r = db::import_file(*net->chain, config, file, {}, db::ImportOptions{trusted}); !r) return r.error();
    auto store = db::EraStore::open((dir / "history").string());
    if (!store) return store.error();
    net->store = std::move(*store);
    if (auto r = db::import_history(*net->chain, *net->store, file); !r) return r.error();
    // A mainnet history node's pre-merge headers are in its freezer; an anchored chain stays in
    // LevelDB (freeze leaves it).
    db::FreezeOptions freeze;
    freeze.keep = 0;
    if (auto r = net->chain->freeze(freeze); !r) return r.error();

    auto mapped = db::MappedFile::open(file);
    if (!mapped) return mapped.error();
    net->file = std::make_unique<db::MappedFile>(std::move(*mapped));
    auto archive = era1::Archive::parse(net->file->bytes());
    if (!archive) return make_error(name + ": " + archive.error().message());
    net->archive = std::make_unique<era1::Archive>(std::move(*archive));
    net->first = net->archive->start_number();

    // The same items in freezer tables, as geth's freezer keeps bodies and receipts.
    net->fs = std::make_unique<ancient::PosixFileSystem>();
    ancient::TableOptions topts;
    topts.compressed = true;
    auto bodies = ancient::Table::open(*net->fs, (dir / "freezer").string(), "bodies", topts);
    if (!bodies) return bodies.error();
    auto receipts = ancient::Table::open(*net->fs, (dir / "freezer").string(), "receipts", topts);
    if (!receipts) return receipts.error();
    net->bodies_table = std::move(*bodies);
    net->receipts_table = std::move(*receipts);
    Bytes scratch;
    for (size_t i = 0; i < net->archive->count(); ++i) {
        auto b = net->archive->body(i, scratch);
        if (!b) return make_error(name + ": body: " + b.error().message());
        const ByteView body = *b;
        if (auto r = net->bodies_table->append(std::span<const ByteView>(&body, 1)); !r) return r.error();
        auto rc = net->archive->receipts(i, scratch);
        if (!rc) return make_error(name + ": receipts: " + rc.error().message());
        const ByteView list = *rc;
        if (auto r = net->receipts_table->append(std::span<const ByteView>(&list, 1)); !r) return r.error();
        auto h = net->archive->header(i, scratch);
        if (!h) return make_error(name + ": header: " + h.error().message());
        net->hashes.push_back(header_hash(*h));
    }
    if (auto r = net->bodies_table->sync(); !r) return r.error();
    if (auto r = net->receipts_table->sync(); !r) return r.error();
    const size_t span = net->archive->count() - kReceiptsPerRequest;
    for (size_t i = 0; i < kOrigins; ++i) net->origins.push_back(span * i / kOrigins);
    return net;
}

// The client: one request of `kind` per origin, encrypted ahead of time by the client codec.
FrameStream requests(const Net& net, Kind kind, rlpx::FrameCodec client) {
    std::vector<Bytes> data;
    Bytes payload, encoded;
    for (size_t i = 0; i < net.origins.size(); ++i) {
        payload.clear();
        const std::span<const Hash32> hashes(net.hashes.data() + net.origins[i], kind_items(kind));
        eth::encode_history_request(payload, kind_version(kind), kind_request(kind), kFirstRequestId + i, hashes);
        auto frame =
            p2p::encode_frame_data(kEthOffset + static_cast<uint64_t>(kind_request(kind)), payload, true, encoded);
        data.emplace_back(frame->begin(), frame->end());
    }
    return FrameStream(std::move(client), std::move(data));
}

// The server's side of one connection, as p2p::Connection and the server session run it.
class ServerSide {
  public:
    ServerSide(rlpx::FrameCodec codec, const Net& net, uint64_t version)
        : codec_(std::move(codec)), net_(net), version_(version) {}

    // One request frame to one reply frame in wire_; returns the items served.
    Outcome<size_t> serve_one(ByteView request) {
        auto size = codec_.read_header(request.first(rlpx::kFrameHeaderSize));
        if (!size) return make_error("frame header: " + size.error().message());
        const size_t body = rlpx::FrameCodec::body_size(*size);
        frame_.assign(request.begin() + rlpx::kFrameHeaderSize, request.begin() + rlpx::kFrameHeaderSize + body);
        auto data = codec_.read_body(std::span<uint8_t>(frame_));
        if (!data) return make_error("frame: " + data.error().message());
        auto msg = p2p::decode_frame_data(*data, true, message_, eth::kMaxMessageSize);
        if (!msg) return make_error("message: " + msg.error().message());
        const auto id = static_cast<eth::MessageId>(msg->id - kEthOffset);
        auto served =
            eth::serve_history(version_, id, msg->payload, *net_.chain, *net_.store, limits_, scratch_, reply_);
        if (!served) return make_error("serve_history: " + served.error().message());
        auto out = p2p::encode_frame_data(kEthOffset + static_cast<uint64_t>(served->reply), reply_, true, encoded_);
        if (!out) return make_error("encode: " + out.error().message());
        wire_.clear();
        if (auto r = codec_.write_frame(*out, wire_); !r) return make_error("frame: " + r.error().message());
        return served->items;
    }
    const Bytes& reply() const { return reply_; }
    const Bytes& wire() const { return wire_; }

  private:
    rlpx::FrameCodec codec_;
    const Net& net_;
    uint64_t version_;
    eth::HistoryLimits limits_;
    Bytes frame_, message_, scratch_, reply_, encoded_, wire_;
};

struct Tally {
    uint64_t reply_bytes{0};
    uint64_t wire_bytes{0};
};

void report(benchmark::State& state, const LoopTotals& totals, const Tally& t) {
    state.SetItemsProcessed(static_cast<int64_t>(totals.items));
    state.counters["allocs_per_request"] = per_iteration(totals.allocations);
    state.counters["reply_bytes"] = per_iteration(t.reply_bytes);
    if (t.wire_bytes > 0) state.counters["wire_bytes"] = per_iteration(t.wire_bytes);
}

void bm_serve(benchmark::State& state, const Net* net, Kind kind) {
    CodecPair codecs = make_codecs();
    FrameStream client = requests(*net, kind, std::move(codecs.client));
    ServerSide server(std::move(codecs.server), *net, kind_version(kind));
    std::optional<Error> error;
    // An untimed pass: the buffers reach a long-lived connection's capacity; every reply is whole.
    if (auto r = client.refill(); !r) error = r.error();
    for (size_t i = 0; !error && i < client.size(); ++i) {
        auto r = server.serve_one(client.frame(i));
        if (!r)
            error = r.error();
        else if (*r != kind_items(kind))
            error = make_error("served " + std::to_string(*r) + " items");
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
            state.PauseTiming();
            auto r = client.refill();
            state.ResumeTiming();
            if (!r) return r.error();
            next = 0;
        }
        auto served = server.serve_one(client.frame(next++));
        if (!served) [[unlikely]]
            return served.error();
        t.reply_bytes += server.reply().size();
        t.wire_bytes += server.wire().size();
        benchmark::DoNotOptimize(server.wire().data());
        return uint64_t{*served};
    });
    if (totals) report(state, *totals, t);
}

// The records decompressed straight from the mapped file and framed: what any server of these
// files must spend on the same reply.
void bm_floor(benchmark::State& state, const Net* net, bool receipts) {
    const size_t n = receipts ? kReceiptsPerRequest : kBodiesPerRequest;
    const auto reply_id =
        kEthOffset + static_cast<uint64_t>(receipts ? eth::MessageId::kReceipts : eth::MessageId::kBlockBodies);
    CodecPair codecs = make_codecs();
    rlpx::FrameCodec& codec = codecs.server;
    Bytes item, payload, encoded, wire;
    Tally t;
    size_t next = 0;
    const auto totals = run_loop(state, [&]() -> Outcome<uint64_t> {
        const size_t origin = net->origins[next++ % net->origins.size()];
        payload.clear();
        for (size_t i = origin; i < origin + n; ++i) {
            auto r = receipts ? net->archive->receipts(i, item) : net->archive->body(i, item);
            if (!r) [[unlikely]]
                return make_error(r.error().message());
            append(payload, *r);
        }
        auto out = p2p::encode_frame_data(reply_id, payload, true, encoded);
        if (!out) [[unlikely]]
            return make_error(out.error().message());
        wire.clear();
        if (auto r = codec.write_frame(*out, wire); !r) [[unlikely]]
            return make_error(r.error().message());
        t.reply_bytes += payload.size();
        t.wire_bytes += wire.size();
        benchmark::DoNotOptimize(wire.data());
        return uint64_t{n};
    });
    if (totals) report(state, *totals, t);
}

void bm_store(benchmark::State& state, const Net* net, bool freezer, bool receipts) {
    const size_t n = receipts ? kReceiptsPerRequest : kBodiesPerRequest;
    Bytes out;
    ItemBuffer items;
    ancient::ReadScratch scratch;
    const ancient::Table& table = receipts ? *net->receipts_table : *net->bodies_table;
    Tally t;
    size_t next = 0;
    const auto totals = run_loop(state, [&]() -> Outcome<uint64_t> {
        const size_t origin = net->origins[next++ % net->origins.size()];
        if (freezer) {
            items.clear();
            if (auto r = table.read_range(origin, n, UINT64_MAX, items, scratch); !r) [[unlikely]]
                return r.error();
            t.reply_bytes += items.bytes.size();
        } else {
            out.clear();
            for (size_t i = origin; i < origin + n; ++i) {
                auto r = receipts ? net->store->append_receipts(net->first + i, out)
                                  : net->store->append_body(net->first + i, out);
                if (!r || !*r) [[unlikely]]
                    return make_error("block not read");
            }
            t.reply_bytes += out.size();
        }
        return uint64_t{n};
    });
    if (totals) report(state, *totals, t);
}

void print_summary(const RecordingReporter& r) {
    std::printf(
        "\nSummary: CPU per item (a body or a receipt list) of geth-sized requests (128 bodies, 256 receipt "
        "lists); floor = the records decompressed + snappy + AES-CTR + MAC of the same reply\n");
    std::printf("%-10s %-11s %10s %10s %7s %12s %12s %12s\n", "network", "kind", "serve us", "floor us", "x floor",
                "reply B/req", "era1 us", "freezer us");
    for (const auto& net : g_nets) {
        for (Kind k : {Kind::kBodies, Kind::kReceipts68, Kind::kReceipts69}) {
            const std::string suffix = std::string("/") + net->name;
            const auto cpu = r.get(std::string("serve/") + kind_name(k) + suffix, "cpu_seconds");
            if (!cpu) continue;
            const double items = static_cast<double>(kind_items(k));
            const bool rec = k != Kind::kBodies;
            const auto floor = r.get(std::string("floor/") + (rec ? "receipts" : "bodies") + suffix, "cpu_seconds");
            const auto era1 = r.get(std::string("store/era1/") + (rec ? "receipts" : "bodies") + suffix, "cpu_seconds");
            const auto freezer =
                r.get(std::string("store/freezer/") + (rec ? "receipts" : "bodies") + suffix, "cpu_seconds");
            const auto bytes = r.get(std::string("serve/") + kind_name(k) + suffix, "reply_bytes");
            auto per_item = [&](std::optional<double> s) -> std::optional<double> {
                if (!s) return std::nullopt;
                return *s / items * 1e6;
            };
            std::optional<double> ratio;
            if (floor && *floor > 0) ratio = *cpu / *floor;
            std::printf("%-10s %-11s %10s %10s %7s %12s %12s %12s\n", net->name.c_str(), kind_name(k),
                        cell(per_item(cpu), "%.3f").c_str(), cell(per_item(floor), "%.3f").c_str(),
                        cell(ratio, "%.2f").c_str(), cell(bytes, "%.0f").c_str(), cell(per_item(era1), "%.3f").c_str(),
                        cell(per_item(freezer), "%.3f").c_str());
        }
    }
}

}  // namespace
}  // namespace headerd::bench

int main(int argc, char** argv) {
    using namespace headerd;
    using namespace headerd::bench;
    const std::string data = HEADERD_BENCH_DATA_DIR;
    const fs::path root = fs::path(HEADERD_BENCH_DEFAULT_DIR) / "bench-history";
    struct Source {
        const char* name;
        std::string file;
        const ChainConfig* config;
        std::optional<Hash32> trusted;
    };
    const Source sources[] = {
        {"mainnet0", data + "/mainnet-00000-5ec1ffb8.era1", &mainnet_config(), std::nullopt},
        {"sepolia21", data + "/sepolia-00021-b8814b14.era1", &sepolia_config(),
         hash_from_hex("b8814b146889489efd392d80c7ca4e418d39302e25323a55882ca8cc0ef013e3")},
    };
    // Registered with the networks' index, resolved once the fixture exists.
    static std::array<Net*, 2> nets{};
    const auto setup = [&](bool list_only) -> int {
        for (size_t n = 0; n < std::size(sources); ++n) {
            const std::string suffix = std::string("/") + sources[n].name;
            auto* net_slot = &nets[n];
            for (Kind k : {Kind::kBodies, Kind::kReceipts68, Kind::kReceipts69}) {
                benchmark::RegisterBenchmark((std::string("serve/") + kind_name(k) + suffix).c_str(),
                                             [net_slot, k](benchmark::State& s) { bm_serve(s, *net_slot, k); })
                    ->Unit(benchmark::kMicrosecond);
            }
            for (bool rec : {false, true}) {
                const std::string what = rec ? "receipts" : "bodies";
                benchmark::RegisterBenchmark(("floor/" + what + suffix).c_str(), [net_slot, rec](benchmark::State& s) {
                    bm_floor(s, *net_slot, rec);
                })->Unit(benchmark::kMicrosecond);
                for (bool freezer : {false, true}) {
                    benchmark::RegisterBenchmark(
                        (std::string("store/") + (freezer ? "freezer/" : "era1/") + what + suffix).c_str(),
                        [net_slot, freezer, rec](benchmark::State& s) { bm_store(s, *net_slot, freezer, rec); })
                        ->Unit(benchmark::kMicrosecond);
                }
            }
        }
        if (list_only) return 0;
        for (size_t n = 0; n < std::size(sources); ++n) {
            auto net = make_net(root, sources[n].name, sources[n].file, *sources[n].config, sources[n].trusted);
            if (!net) {
                std::fprintf(stderr, "bench: %s: %s\n", sources[n].name, net.error().message.c_str());
                return 1;
            }
            nets[n] = net->get();
            g_nets.push_back(std::move(*net));
        }
        std::fprintf(stderr, "bench: fixtures in %s\n", root.string().c_str());
        return 0;
    };
    const int rc = benchmark_main(argc, argv, setup, [](const RecordingReporter& r) { print_summary(r); });
    g_nets.clear();
    fs::remove_all(root);
    return rc;
}
