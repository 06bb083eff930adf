// `headerd sync`: fill a datadir from devp2p peers, verified from a trusted head (docs/sync.md).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include "core/hex.hpp"
#include "core/synthetic.hpp"
#include "metrics/http_server.hpp"
#include "metrics/metrics.hpp"
#include "node/cli.hpp"
#include "node/commands.hpp"
#include "node/common.hpp"
#include "node/crawler.hpp"
#include "node/discovery.hpp"
#include "node/progress.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/net_metrics.hpp"
#include "sync/syncer.hpp"

namespace headerd::node {
namespace {

namespace asio = boost::asio;

int usage(const std::string& message) {
    std::fprintf(stderr, "error: sync: %s (see headerd sync --help)\n", message.c_str());
    return kExitUsage;
}

// The q-quantile of a peer's request round trips, in milliseconds (0 for none).
double rtt_ms(const sync::PeerSummary& p, double q) { return static_cast<double>(p.rtt.quantile(q)) / 1e6; }

void print_peers(const std::vector<sync::PeerSummary>& peers) {
    std::cout << fmt::format("{:<22} {:<28} {:>8} {:>9} {:>8} {:>6} {:>9} {:>9}  {}\n", "peer", "client", "requests",
                             "headers", "timeouts", "empty", "rtt_p50", "rtt_p99", "fate");
    for (const auto& p : peers) {
        std::string client = p.client.empty() ? "-" : p.client;
        if (client.size() > 28) client = client.substr(0, 25) + "...";
        std::cout << fmt::format("{:<22} {:<28} {:>8} {:>9} {:>8} {:>6} {:>7.1f}ms {:>7.1f}ms  {}\n", p.address, client,
                                 p.requests, p.headers, p.timeouts, p.empty, rtt_ms(p, 0.5), rtt_ms(p, 0.99), p.fate);
    }
    std::cout.flush();
}

boost::json::object summary_json(const sync::SyncResult& r, const std::optional<std::string>& error) {
    boost::json::array peers;
    for (const auto& p : r.peers) {
        peers.push_back(boost::json::object{{"address", p.address},
                                            {"client", p.client},
                                            {"requests", p.requests},
                                            {"headers", p.headers},
                                            {"timeouts", p.timeouts},
                                            {"empty", p.empty},
                                            {"rtt_p50_ms", rtt_ms(p, 0.5)},
                                            {"rtt_p99_ms", rtt_ms(p, 0.99)},
                                            {"connected", p.connected},
                                            {"dropped", p.dropped},
                                            {"fate", p.fate}});
    }
    boost::json::object o{{"ok", !error},
                          {"head", r.head.number},
                          {"head_hash", to_hex0x(r.head.hash)},
                          {"already", r.already},
                          {"resumed", r.resumed},
                          {"resumed_tail", r.resumed_tail},
                          {"fetched", r.fetched},
                          {"highest_requested", r.highest_requested},
                          {"replaced", r.replaced},
                          {"ancient_items", r.frozen},
                          {"peers", std::move(peers)}};
    if (error) o["error"] = *error;
    return o;
}

}  // namespace

int cmd_sync(int argc, char** argv) {
    CommandSpec spec{
        "sync",
        "download headers from devp2p peers into a datadir, verified from a trusted head",
        "--datadir DIR (--peer ENODE [--peer ENODE ...] | --discover --bootnodes LIST) (--head HASH | --head-number N) "
        "[--max-peers-in-flight K] [--metrics HOST:PORT]",
        {datadir_option(),
         {"peer", "ENODE", "enode://ID@HOST:PORT of a peer to download from (repeat for more)", "", false, true},
         {"discover", "",
          "find header servers through discovery (--bootnodes): nodes whose records carry a fork id compatible "
          "with ours; combines with --peer",
          "", false},
         {"max-peers", "N", "with --discover: how many discovered peers to sync from", "5", false},
         {"discover-wait", "SECONDS",
          "with --discover: how long to look for --max-peers compatible nodes before syncing with those found", "30",
          false},
         {"head", "HASH", "the trusted head: the 0x-prefixed hash of the last header to sync", "", false},
         {"head-number", "N",
          "sync to the hash that a majority (at least two) of the peers give for block N (trusts them)", "", false},
         {"max-peers-in-flight", "K", "requests in flight to each peer at once", "2", false},
         {"max-request", "N", "most headers per request (each peer's capacity estimate sizes requests below it)",
          "1024", false},
         {"request-timeout", "SECONDS",
          "deadline of each request (default: the peer's target timeout, 3 round trips, 6 s to 1 min)", "", false},
         {"handshake-timeout", "SECONDS", "deadline for connecting to a peer (TCP, RLPx, Hello, Status)", "10", false},
         {"max-timeouts", "N", "drop a peer after N timeouts (or N empty replies) in a row", "3", false},
         {"keep", "N", "recent headers kept in LevelDB; older ones go to the freezer as the chain grows", "90000",
          false},
         {"no-freeze", "", "leave every header in LevelDB", "", false},
         network_option("network of a fresh datadir; a datadir's own must match"),
         synthetic_option(),
         {"metrics", "[HOST:]PORT",
          "serve Prometheus metrics (request RTT, tracked, lost, stale requests, capacity) on http://HOST:PORT/metrics",
          "", false},
         {"summary", "FILE", "also write the result and every peer's summary as JSON to FILE", "", false},
         verbosity_option()},
        false,
        ""};
    for (auto& o : discovery_client_options()) spec.options.push_back(std::move(o));
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;

    sync::SyncConfig cfg;
    auto peers = parse_enodes(*args, "peer");
    if (!peers) return usage(peers.error().message);
    cfg.peers = std::move(*peers);
    const bool discover = args->has("discover");
    auto discovery = parse_discovery(*args, discover ? "v4" : "off");
    if (!discovery) return usage(discovery.error().message);
    if (discover && discovery->bootnodes.empty() && discovery->dns_trees.empty()) {
        return usage(
            "--discover needs --bootnodes or --discovery.dns (the public lists are used only when named: "
            "--bootnodes mainnet)");
    }
    if (!discover && cfg.peers.empty()) return usage("give the peers: --peer ENODE, or --discover --bootnodes LIST");
    auto max_peers = args->get_u64("max-peers", 5);
    if (!max_peers || *max_peers == 0 || *max_peers > 1000) return usage("--max-peers must be 1..1000");
    auto discover_wait = parse_seconds("discover-wait", args->get_or("discover-wait", "30"));
    if (!discover_wait || *discover_wait <= 0) return usage("--discover-wait must be a positive number of seconds");
    if (args->has("head") == args->has("head-number")) {
        return usage("give the trusted head: --head HASH, or --head-number N (trusting a majority of the peers)");
    }
    if (auto text = args->get("head")) {
        auto hash = hash_from_hex(*text);
        if (!hash || text->size() != 66) return usage(fmt::format("--head {}: not a 0x-prefixed 32-byte hash", *text));
        cfg.head_hash = *hash;
    }
    if (args->has("head-number")) {
        auto n = args->get_u64("head-number", 0);
        if (!n) return usage(n.error().message);
        if (cfg.peers.size() < 2 && !discover) {
            return usage("--head-number needs at least two peers to agree on the head; give --head HASH otherwise");
        }
        cfg.head_number = *n;
    }
    auto in_flight = args->get_u64("max-peers-in-flight", 2);
    if (!in_flight || *in_flight == 0 || *in_flight > 64) return usage("--max-peers-in-flight must be 1..64");
    cfg.requests_per_peer = *in_flight;
    auto max_request = args->get_u64("max-request", 1024);
    if (!max_request || *max_request == 0 || *max_request > 1024) return usage("--max-request must be 1..1024");
    cfg.max_request = *max_request;
    if (args->has("request-timeout")) {
        auto t = parse_seconds("request-timeout", *args->get("request-timeout"));
        if (!t || *t <= 0) return usage("--request-timeout must be a positive number of seconds");
        cfg.request_timeout = std::chrono::duration_cast<p2p::Clock::duration>(std::chrono::duration<double>(*t));
    }
    auto handshake = parse_seconds("handshake-timeout", args->get_or("handshake-timeout", "10"));
    if (!handshake || *handshake <= 0) return usage("--handshake-timeout must be a positive number of seconds");
    cfg.handshake_timeout = std::chrono::duration_cast<p2p::Clock::duration>(std::chrono::duration<double>(*handshake));
    auto max_timeouts = args->get_u64("max-timeouts", 3);
    if (!max_timeouts || *max_timeouts == 0 || *max_timeouts > 1000) return usage("--max-timeouts must be 1..1000");
    cfg.max_timeouts = static_cast<unsigned>(*max_timeouts);
    cfg.max_empty = cfg.max_timeouts;
    auto keep = args->get_u64("keep", 90'000);
    if (!keep) return usage(keep.error().message);
    cfg.freeze = !args->has("no-freeze");
    cfg.freeze_options.keep = *keep;
    std::optional<asio::ip::tcp::endpoint> metrics_at;
    if (auto text = args->get("metrics")) {
        auto endpoint = parse_endpoint("metrics", *text);
        if (!endpoint) return usage(endpoint.error().message);
        metrics_at = *endpoint;
    }

    // The network: the datadir's, or the one named for a fresh datadir.
    std::optional<synthetic::Generator> generated;  // holds a synthetic network's config
    auto named = network_from_args(*args, generated);
    if (!named) return usage(named.error().message);
    const ChainConfig* network = *named;

    const std::string datadir = *args->get("datadir");
    db::ChainDbOptions opts;
    opts.create_if_missing = true;
    auto chain = db::ChainDb::open(datadir, opts);
    if (!chain) return fail(chain.error().message);
    db::ChainDb& db = **chain;
    if (db.config() == nullptr) {
        if (auto r = db.set_config(*network); !r) return fail(r.error().message);
    } else if (args->has("synthetic") || args->has("network")) {
        if (auto r = db.set_config(*network); !r) return fail(r.error().message);  // names both networks
    }
    const ChainConfig& config = *db.config();

    auto key = rlpx::PrivateKey::generate();  // a fresh identity per run: sync serves nothing
    if (!key) return fail("cannot generate a key: " + key.error().message());
    p2p::LocalNode local;
    local.key = &*key;
    local.client_id = kClientId;
    local.config = &config;
    if (auto head = db.head()) {
        local.head = *head;
    } else {
        local.head = db::Head{0, config.genesis_hash, U256(0), config.genesis_time};
    }

    asio::io_context io(1);
    std::unique_ptr<metrics::Metrics> registry;
    std::unique_ptr<p2p::NetMetrics> net_metrics;
    std::unique_ptr<sync::SyncMetrics> sync_metrics;
    std::optional<metrics::HttpServer> http;
    if (metrics_at) {
        registry = std::make_unique<metrics::Metrics>(kVersion, kCommit);
        net_metrics = std::make_unique<p2p::NetMetrics>(registry->families());
        sync_metrics = std::make_unique<sync::SyncMetrics>(registry->registry());
        local.metrics = net_metrics.get();
        cfg.metrics = sync_metrics.get();
        http.emplace(io, registry->collectables(), std::function<metrics::Health()>{});
        if (auto r = http->listen(*metrics_at); !r) return fail(r.error().message);
        http->start();
        const auto at = http->local_endpoint();
        spdlog::info("Metrics enabled                          url=http://{}:{}/metrics", at.address().to_string(),
                     at.port());
    }

    if (discover) {
        auto found = discover_peers(io, *key, *discovery, config, local.head, cfg.peers, *max_peers,
                                    std::chrono::milliseconds(static_cast<int64_t>(*discover_wait * 1000)));
        if (!found) return fail(found.error().message);
        for (auto& e : *found) cfg.peers.push_back(std::move(e));
        if (cfg.peers.empty())
            return fail("discovery found no node with a compatible fork id, and no --peer was given");
        if (cfg.head_number && cfg.peers.size() < 2) {
            return fail("--head-number needs at least two peers to agree on the head; discovery found one");
        }
    }

    sync::Syncer syncer(io, db, local, cfg);
    StopSignals signals(io);
    signals.async_wait([&](const boost::system::error_code& ec, int signo) {
        if (ec) return;
        spdlog::info("Stopping                                 signal={}", signo);
        syncer.stop();
    });
    // Progress: blocks verified out of what lies between the target and where the download stops.
    Progress fetching("Fetching headers");
    Progress linking("Linking headers");
    asio::steady_timer ticker(io);
    bool finished = false;  // a wait that completed before cancel() must not re-arm the ticker
    std::function<void()> tick = [&] {
        const auto& p = syncer.progress();
        if (p.phase == "fetching" && p.target >= p.floor) {
            fetching.update(p.fetched,
                            std::max(p.fetched, p.next + 1 > p.floor ? p.next + 1 - p.floor + p.fetched : 0));
        } else if (p.phase == "linking") {
            linking.update(p.linked, std::max<uint64_t>(p.linked, 1));
        }
        ticker.expires_after(std::chrono::milliseconds(200));
        ticker.async_wait([&](const boost::system::error_code& ec) {
            if (!ec && !finished) tick();
        });
    };
    tick();

    std::optional<Outcome<sync::SyncResult>> outcome;
    asio::co_spawn(io, syncer.run(), [&](std::exception_ptr e, Outcome<sync::SyncResult> r) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                r = make_error(fmt::format("internal error: {}", ex.what()));
            }
        }
        outcome = std::move(r);
        finished = true;
        ticker.cancel();
        signals.cancel();
        if (http) http->stop();
    });
    io.run();

    const bool ok = outcome && *outcome;
    sync::SyncResult result = ok ? **outcome : sync::SyncResult{};
    if (!ok) result.peers = syncer.peer_summaries();
    std::optional<std::string> error;
    if (!ok) error = outcome ? (*outcome).error().message : std::string("the sync did not finish");
    if (ok && !result.already) fetching.finish(result.fetched);
    print_peers(result.peers);
    if (auto path = args->get("summary")) {
        const std::string text = boost::json::serialize(summary_json(result, error)) + "\n";
        if (auto r = p2p::write_file_atomic(*path, text, 0644); !r) spdlog::error("{}", r.error().message);
    }
    if (!ok) return fail(*error);
    if (result.already) {
        spdlog::info("Already synced                           head={} hash={}", db.head()->number,
                     to_hex0x(db.head()->hash));
        return kExitOk;
    }
    spdlog::info(
        "Synced                                   head={} hash={} fetched={} resumed={} replaced={} "
        "ancient={}",
        result.head.number, to_hex0x(result.head.hash), result.fetched, result.resumed, result.replaced,
        db.ancient_items());
    return kExitOk;
}

}  // namespace headerd::node
