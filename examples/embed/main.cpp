// embed: a program of its own that serves Ethereum block headers with headerd's server
// (docs/embedding.md). It keeps the headers of an era1 file in memory, answers GetBlockHeaders on
// devp2p (RLPx, eth/68 and up) from them, first asks itself for a few ranges to show the request
// tracker at work, then serves until SIGINT or SIGTERM.
//
//     embed FILE.era1 [HOST:PORT]     (default 127.0.0.1:0; prints its enode URL on stdout)

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

#include <boost/asio.hpp>

#include "core/block_header.hpp"
#include "core/era1.hpp"
#include "core/header_source.hpp"
#include "p2p/client_session.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/server.hpp"

namespace asio = boost::asio;
using namespace headerd;

// The whole store: canonical header RLP and hash by number, numbers by hash. Filled before the
// server starts and never changed, so concurrent reads from the workers need no lock.
class MemoryHeaders final : public HeaderSource {
  public:
    std::vector<Bytes> rlp;
    std::vector<Hash32> hashes;  // hashed once, when filled
    std::map<Hash32, uint64_t> numbers;
    Head top;

    const ChainConfig* config() const noexcept override { return &mainnet_config(); }
    std::optional<Head> head() const override { return top; }
    Outcome<void> append_header_range(uint64_t from, uint64_t count, Order order, ItemBuffer& out,
                                      size_t max_bytes) const override {
        const size_t start = out.bytes.size();
        for (uint64_t i = 0, n = from; i < count && n < rlp.size(); ++i) {
            if (i > 0 && out.bytes.size() - start >= max_bytes) break;
            out.push(rlp[n]);
            if (order == Order::kDescending && n-- == 0) break;
            if (order == Order::kAscending) ++n;
        }
        return {};
    }
    Outcome<std::optional<uint64_t>> number_by_hash(const Hash32& hash) const override {
        auto it = numbers.find(hash);
        return it == numbers.end() ? std::nullopt : std::optional<uint64_t>(it->second);
    }
    Outcome<std::optional<Hash32>> canonical_hash(uint64_t number) const override {
        if (number >= hashes.size()) return std::optional<Hash32>();
        return std::optional<Hash32>(hashes[number]);
    }
    Outcome<bool> header_by_hash(const Hash32& hash, Bytes& out) const override {
        out.clear();
        auto it = numbers.find(hash);
        if (it != numbers.end()) out = rlp[it->second];
        return it != numbers.end();
    }
};

int main(int argc, char** argv) {
    if (argc < 2) return std::fprintf(stderr, "usage: embed FILE.era1 [HOST:PORT]\n"), 2;
    std::ifstream in(argv[1], std::ios::binary);
    const Bytes file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto archive = era1::Archive::parse(file);
    if (!in || !archive || archive->start_number() != 0)
        return std::fprintf(stderr, "%s: no era1 from 0\n", argv[1]), 1;
    MemoryHeaders store;
    for (size_t i = 0; i < archive->count(); ++i) {
        Bytes header;
        if (!archive->header(i, header)) return std::fprintf(stderr, "block %zu does not decode\n", i), 1;
        store.hashes.push_back(header_hash(header));
        store.numbers.emplace(store.hashes.back(), i);
        store.rlp.push_back(std::move(header));
    }
    const uint64_t last = store.rlp.size() - 1;
    store.top = Head{last, store.hashes[last], archive->total_difficulty(last),
                     decode_block_header(store.rlp[last])->timestamp};

    // The control thread accepts connections (and runs our own client below); workers serve.
    const auto key = rlpx::PrivateKey::generate().value();
    asio::io_context control(1);
    p2p::WorkerPool workers(2);
    p2p::ServerOptions options;
    const std::string listen = argc > 2 ? argv[2] : "127.0.0.1:0";
    options.listen = asio::ip::tcp::endpoint(asio::ip::make_address(listen.substr(0, listen.rfind(':'))),
                                             static_cast<uint16_t>(std::stoi(listen.substr(listen.rfind(':') + 1))));
    options.client_id = "embed/v1";
    p2p::Server server(control, workers, store, key, options);
    if (auto r = server.listen(); !r) return std::fprintf(stderr, "%s\n", r.error().message.c_str()), 1;
    const auto at = server.local_endpoint();
    const std::string enode = p2p::enode_url(key.public_key(), at.address().to_string(), at.port());
    workers.start();
    server.start();

    // Our own requests: 16 ranges of 192 headers from ourselves, each reply compared with the
    // store; the session's tracker times every request and its capacity estimate learns from them.
    const auto client_key = rlpx::PrivateKey::generate().value();  // a peer may not dial its own id
    p2p::LocalNode local{&client_key, "embed/v1", &mainnet_config(), store.top};
    int status = 0;
    asio::signal_set signals(control, SIGINT, SIGTERM);
    asio::co_spawn(
        control,
        [&]() -> asio::awaitable<void> {
            auto session = co_await p2p::ClientSession::connect(*p2p::parse_enode(enode), local, {});
            int equal = 0;  // replies whose 192 headers are the store's, byte for byte
            for (uint64_t from = 0; from < 16 * 192; from += 192) {
                auto reply = co_await session->request({0, eth::HashOrNumber::of(from), 192, 0, false});
                bool same = reply && reply->headers.size() == 192;
                for (size_t i = 0; same && i < 192; ++i)
                    same = std::ranges::equal(store.rlp[from + i], reply->headers[i]);
                equal += same;
            }
            if (equal != 16) status = 1;
            std::fprintf(stderr, "embed: %llu requests to ourselves, %d verified replies, rtt estimate %.3f ms\n",
                         static_cast<unsigned long long>(session->stats().requests), equal,
                         std::chrono::duration<double, std::milli>(session->capacity().rtt()).count());
            co_await session->close();
            std::printf("%s\n", enode.c_str());  // ready: scripts wait for this line
            std::fflush(stdout);
        },
        [&](std::exception_ptr e) {
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::fprintf(stderr, "embed: self-check: %s\n", ex.what());
            }
            status = 1;
            signals.cancel();
            server.stop();
        });
    signals.async_wait([&](auto, int) { server.stop(); });
    control.run();
    workers.release();
    workers.join();
    std::fprintf(stderr, "embed: stopped (%s)\n", status == 0 ? "self-check passed" : "SELF-CHECK FAILED");
    return status;
}
