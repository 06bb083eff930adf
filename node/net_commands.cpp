// `headerd serve` and `headerd get`: the devp2p side of the binary.

#include <sys/resource.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "core/block_body.hpp"
#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "db/era_store.hpp"
#include "disc/disc_metrics.hpp"
#include "metrics/http_server.hpp"
#include "metrics/metrics.hpp"
#include "node/cli.hpp"
#include "node/commands.hpp"
#include "node/common.hpp"
#include "node/crawler.hpp"
#include "node/discovery.hpp"
#include "p2p/client_session.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/eth/history.hpp"
#include "p2p/eth/status.hpp"
#include "p2p/inbound_limit.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/peer.hpp"
#include "p2p/server.hpp"
#include "rpc/json_rpc.hpp"
#include "sync/follower.hpp"
#include "sync/repair.hpp"
#include "sync/scrubber.hpp"

namespace headerd::node {
namespace {

namespace asio = boost::asio;
using p2p::tcp;

// serve's inbound limits: --max-per-ip, --max-per-subnet, --inbound-throttle, --inbound-burst,
// --inbound-exempt (docs/wire.md, "Inbound limits").
Outcome<p2p::InboundLimits> inbound_limits(const Args& args) {
    p2p::InboundLimits l = p2p::InboundLimits::defaults();
    auto per_ip = args.get_u64("max-per-ip", l.max_per_ip);
    if (!per_ip) return per_ip.error();
    auto per_subnet = args.get_u64("max-per-subnet", l.max_per_subnet);
    if (!per_subnet) return per_subnet.error();
    auto burst = args.get_u64("inbound-burst", l.throttle_burst);
    if (!burst || *burst == 0) return make_error("--inbound-burst must be a positive number");
    const std::string window_text = args.get_or("inbound-throttle", "30");
    auto window = parse_seconds("inbound-throttle", window_text);
    if (!window) return make_error(fmt::format("--inbound-throttle {}: expected seconds (0: off)", window_text));
    const std::string exempt_text = args.get_or("inbound-exempt", "lan");
    auto exempt = p2p::parse_ip_prefixes(exempt_text);
    if (!exempt) return make_error(fmt::format("--inbound-exempt {}: {}", exempt_text, exempt.error().message));
    l.max_per_ip = *per_ip;
    l.max_per_subnet = *per_subnet;
    l.throttle_burst = *burst;
    l.throttle_window = std::chrono::duration_cast<p2p::Clock::duration>(std::chrono::duration<double>(*window));
    l.exempt = std::move(*exempt);
    return l;
}

}  // namespace

// serve --rpc's HTTP server on a thread of its own: a batch of blocks read from era1 files never
// holds up the control thread's accepts and scrapes. The server is used on that thread only, so
// stop() (and the destructor, on an early return) stops it there and waits for the thread.
struct RpcThread {
    asio::io_context io{1};
    std::optional<metrics::HttpServer> http;
    std::thread thread;

    void stop() {
        if (!thread.joinable()) return;
        asio::post(io, [this] { http->stop(); });
        thread.join();
    }
    ~RpcThread() { stop(); }
};

int cmd_serve(int argc, char** argv) {
    CommandSpec spec{
        "serve",
        "serve the stored headers to devp2p peers (RLPx, eth/68 to eth/72)",
        "--datadir DIR [--listen HOST:PORT] [--max-peers N] [--max-pending N] [--workers N] [--metrics HOST:PORT] "
        "[--max-per-ip N] [--max-per-subnet N] [--inbound-throttle S] [--inbound-burst N] [--inbound-exempt LIST] "
        "[--discovery v4|v5|v4,v5] [--bootnodes LIST] [--nat extip:IP] [--rpc HOST:PORT]",
        {datadir_option(),
         {"listen", "[HOST:]PORT", "TCP address to accept peers on (host 127.0.0.1 if absent; port 0: any free port)",
          "127.0.0.1:30303", false},
         {"metrics", "[HOST:]PORT",
          "serve Prometheus metrics on http://HOST:PORT/metrics and /healthz (host 127.0.0.1 if absent; off when "
          "absent)",
          "", false},
         {"rpc", "[HOST:]PORT",
          "serve read-only JSON-RPC (blocks, headers, raw receipts; docs/rpc.md) on http://HOST:PORT/ (host "
          "127.0.0.1 if absent; off when absent)",
          "", false},
         {"rpc.batch-limit", "N", "calls in one JSON-RPC batch; a larger batch is refused whole", "1000", false},
         {"rpc.body-limit", "BYTES", "largest JSON-RPC request body; a larger one is answered HTTP 413", "5242880",
          false},
         {"rpc.response-limit", "BYTES",
          "bytes of one batch's reply; calls after it is reached fail with -32003 \"response too large\"", "26214400",
          false},
         {"max-peers", "N", "peers served at once; more get Disconnect \"too many peers\"", "50", false},
         {"max-pending", "N",
          "connections in the RLPx handshake at once; more wait in the listen backlog until one finishes", "64", false},
         {"workers", "N", "threads serving peers (0: one per core)", "0", false},
         {"max-per-ip", "N", "inbound connections from one IP address (IPv6: one /64); 0: no limit", "4", false},
         {"max-per-subnet", "N", "inbound connections from one IPv4 /24 or IPv6 /48; 0: no limit", "10", false},
         {"inbound-throttle", "SECONDS", "window of the reconnect throttle per IP address (0: off)", "30", false},
         {"inbound-burst", "N", "connections accepted from one IP address per --inbound-throttle window", "3", false},
         {"inbound-exempt", "LIST",
          "addresses the inbound limits do not apply to: CIDR ranges, addresses, lan, loopback or none, "
          "comma-separated",
          "lan", false},
         {"follow", "ENODE",
          "keep the datadir current from this peer (repeat; a head is adopted when a majority, at least two, agree)",
          "", false, true},
         {"follow-discovered", "N",
          "keep the datadir current from N peers found by discovery whose records carry our fork id (needs "
          "--discovery v4 or --bootnodes); beside or instead of --follow",
          "0", false},
         {"follow-interval", "SECONDS", "how often eth/68 followed peers are asked for their head", "12", false},
         {"follow-reconnect", "SECONDS",
          "wait before dialling a followed peer again after its session ended (doubled after each failed dial in a "
          "row, up to 5 min; a discovered peer is replaced by a spare after 3)",
          "5", false},
         {"keep", "N", "with --follow: recent headers kept in LevelDB, older ones are frozen as the chain grows",
          "90000", false},
         {"reply-delay", "MS",
          "test option: wait MS milliseconds before serving each GetBlockHeaders (plays a slow peer)", "0", false},
         {"scrub-rate", "N",
          "headers per second the background scrubber rehashes against the chain's links (0: off); damaged "
          "headers are never served, and with --follow they are fetched again",
          "20000", false},
         {"scrub-pause", "SECONDS", "rest between two scrubber passes (head down to the genesis)", "1", false},
         {"scrub-history-rate", "N",
          "blocks per second whose body and receipts the scrubber checks against the header, after each header "
          "pass (when DATADIR/history holds epochs; 0: off); damaged ones are never served",
          "500", false},
         {"cache", "MB",
          "LevelDB block cache in MiB (recent headers and the hash index); it fills to this size as the node "
          "serves and compacts",
          "32", false},
         {"reply-cache", "MB",
          "MiB of compressed header lists each worker keeps for ranges asked again, sent without reading or "
          "compressing them again (0: off)",
          "16", false},
         verbosity_option()},
        false,
        ""};
    for (auto& o : discovery_options("off")) spec.options.push_back(std::move(o));
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    auto discovery = parse_discovery(*args, "off");
    if (!discovery) return fail(discovery.error().message);
    auto listen = parse_endpoint("listen", args->get_or("listen", "127.0.0.1:30303"));
    if (!listen) return fail(listen.error().message);
    std::optional<tcp::endpoint> metrics_at;
    if (auto text = args->get("metrics")) {
        auto endpoint = parse_endpoint("metrics", *text);
        if (!endpoint) return fail(endpoint.error().message);
        metrics_at = *endpoint;
    }
    std::optional<tcp::endpoint> rpc_at;
    if (auto text = args->get("rpc")) {
        auto endpoint = parse_endpoint("rpc", *text);
        if (!endpoint) return fail(endpoint.error().message);
        rpc_at = *endpoint;
    }
    rpc::RpcLimits rpc_limits;
    for (auto [name, limit] :
         {std::pair{"rpc.batch-limit", &rpc_limits.max_batch}, std::pair{"rpc.body-limit", &rpc_limits.max_body_bytes},
          std::pair{"rpc.response-limit", &rpc_limits.max_response_bytes}}) {
        auto v = args->get_u64(name, *limit);
        if (!v || *v == 0)
            return fail(fmt::format("--{} {}: expected a positive number", name, args->get_or(name, "")));
        *limit = static_cast<size_t>(*v);
    }
    auto max_peers = args->get_u64("max-peers", 50);
    if (!max_peers) return fail(max_peers.error().message);
    auto max_pending = args->get_u64("max-pending", 64);
    if (!max_pending || *max_pending == 0) return fail("--max-pending must be a positive number");
    auto reply_delay = parse_seconds("reply-delay", args->get_or("reply-delay", "0"));
    if (!reply_delay) {
        return fail(
            fmt::format("--reply-delay {}: expected milliseconds (a number >= 0)", args->get_or("reply-delay", "")));
    }
    auto scrub_rate = parse_seconds("scrub-rate", args->get_or("scrub-rate", "20000"));
    if (!scrub_rate) {
        return fail(fmt::format("--scrub-rate {}: expected headers per second (a number >= 0)",
                                args->get_or("scrub-rate", "")));
    }
    auto scrub_pause = parse_seconds("scrub-pause", args->get_or("scrub-pause", "1"));
    if (!scrub_pause) return fail(scrub_pause.error().message);
    auto scrub_history_rate = parse_seconds("scrub-history-rate", args->get_or("scrub-history-rate", "500"));
    if (!scrub_history_rate) {
        return fail(fmt::format("--scrub-history-rate {}: expected blocks per second (a number >= 0)",
                                args->get_or("scrub-history-rate", "")));
    }
    auto reply_cache_mb = args->get_u64("reply-cache", 16);
    if (!reply_cache_mb || *reply_cache_mb > (1u << 20)) {
        return fail(
            fmt::format("--reply-cache {}: expected MiB per worker, 0 to 1048576", args->get_or("reply-cache", "")));
    }
    auto cache_mb = args->get_u64("cache", 32);
    if (!cache_mb || *cache_mb == 0 || *cache_mb > (1u << 20))
        return fail(fmt::format("--cache {}: expected MiB from 1 to 1048576", args->get_or("cache", "")));
    auto inbound = inbound_limits(*args);
    if (!inbound) return fail(inbound.error().message);
    auto workers = args->get_u64("workers", 0);
    if (!workers || *workers > 1024) return fail("--workers must be a number from 0 (one per core) to 1024");
    if (auto r = ensure_descriptors(*max_peers + *max_pending + kSpareDescriptors,
                                    fmt::format("--max-peers {} with --max-pending {}", *max_peers, *max_pending));
        !r) {
        return fail(r.error().message);
    }
    sync::FollowConfig follow;
    auto followed = parse_enodes(*args, "follow");
    if (!followed) return fail(followed.error().message);
    follow.peers = std::move(*followed);
    auto follow_discovered = args->get_u64("follow-discovered", 0);
    if (!follow_discovered || *follow_discovered > 64) return fail("--follow-discovered must be 0..64");
    if (*follow_discovered > 0 && !discovery->enabled()) {
        return fail(
            "--follow-discovered needs discovery: --discovery v4|v5|v4,v5, --bootnodes LIST or --discovery.dns LIST");
    }
    if (!discovery->dns_trees.empty() && *follow_discovered == 0) {
        spdlog::warn("--discovery.dns is read only for --follow-discovered (serving dials no one): ignored");
    }
    if (follow.peers.size() + *follow_discovered == 1) {
        return fail(fmt::format("{} needs at least two peers: a head is adopted only when two or more agree on it",
                                follow.peers.empty() ? "--follow-discovered" : "--follow"));
    }
    const bool following = !follow.peers.empty() || *follow_discovered > 0;
    auto follow_interval = parse_seconds("follow-interval", args->get_or("follow-interval", "12"));
    if (!follow_interval || *follow_interval <= 0)
        return fail("--follow-interval must be a positive number of seconds");
    auto follow_reconnect = parse_seconds("follow-reconnect", args->get_or("follow-reconnect", "5"));
    if (!follow_reconnect) return fail(follow_reconnect.error().message);
    auto keep = args->get_u64("keep", 90'000);
    if (!keep) return fail(keep.error().message);
    follow.poll_interval =
        std::chrono::duration_cast<p2p::Clock::duration>(std::chrono::duration<double>(*follow_interval));
    follow.reconnect_delay =
        std::chrono::duration_cast<p2p::Clock::duration>(std::chrono::duration<double>(*follow_reconnect));
    follow.sync.freeze_options.keep = *keep;
    const std::string datadir = *args->get("datadir");

    auto chain = open_existing(datadir, false, static_cast<size_t>(*cache_mb) << 20);
    if (!chain) return fail(chain.error().message);
    db::ChainDb& db = **chain;
    if (db.config() == nullptr || !db.head()) {
        return fail(fmt::format("datadir {} holds no headers to serve; import or generate first", datadir));
    }
    auto key = p2p::load_or_create_node_key(datadir);
    if (!key) return fail(key.error().message);

    // The control thread (this one) accepts connections and serves /metrics, /healthz and signals;
    // the workers serve peers. A scrape never waits behind a busy worker.
    asio::io_context control(1);
    p2p::WorkerPool pool(*workers);
    // Metrics are created only when asked for: with them off, sessions skip every meter.
    std::unique_ptr<metrics::Metrics> registry;
    std::unique_ptr<p2p::NetMetrics> net_metrics;
    std::unique_ptr<sync::SyncMetrics> sync_metrics;
    std::unique_ptr<p2p::InboundMetrics> inbound_metrics;
    std::unique_ptr<sync::ScrubMetrics> scrub_metrics;
    if (metrics_at) {
        registry = std::make_unique<metrics::Metrics>(kVersion, kCommit);
        net_metrics = std::make_unique<p2p::NetMetrics>(registry->families());
        net_metrics->set_chain(db.head()->number, db.ancient_items());
        if (following) {
            sync_metrics = std::make_unique<sync::SyncMetrics>(registry->registry());
            follow.sync.metrics = sync_metrics.get();
        }
        db.set_read_observer(net_metrics.get());
        inbound_metrics = std::make_unique<p2p::InboundMetrics>(registry->registry());
        scrub_metrics = std::make_unique<sync::ScrubMetrics>(registry->registry());
        registry->add_scraped_gauge("headerd_db_block_cache_bytes",
                                    "Bytes of LevelDB blocks in its block cache (at most --cache).",
                                    [&db] { return std::optional<double>(db.memory_use().block_cache_bytes); });
        registry->add_scraped_gauge("headerd_db_memtable_bytes",
                                    "Bytes of LevelDB's memtables (writes not yet in a table file).",
                                    [&db] { return std::optional<double>(db.memory_use().memtable_bytes); });
    }
    // History (docs/history.md): the era1 files `headerd import --history` put in DATADIR/history.
    std::unique_ptr<db::EraStore> history;
    if (std::filesystem::exists(std::filesystem::path(datadir) / "history")) {
        auto opened = db::EraStore::open((std::filesystem::path(datadir) / "history").string());
        if (!opened) return fail(opened.error().message);
        if (!(*opened)->epochs().empty()) history = std::move(*opened);
    }
    if (history) {
        const auto range = history->range();
        const auto head = *db.head();
        const uint64_t earliest = eth::announced_earliest(head, range);
        spdlog::info("Serving history                          epochs={} range={}..{} announced={}..{}",
                     history->epochs().size(), range->first, range->last, earliest, head.number);
        if (earliest == head.number && range->first != head.number) {
            spdlog::warn(
                "The history ends at block {} but the headers reach block {}: eth/69 can announce one range "
                "up to the head, so only the head is announced (bodies and receipts are still served "
                "when asked; docs/history.md, \"What is announced\")",
                range->last, head.number);
        }
    }
    p2p::ServerOptions options;
    options.history = history.get();
    options.listen = *listen;
    options.max_peers = *max_peers;
    options.max_pending = *max_pending;
    options.metrics = net_metrics.get();
    options.client_id = kClientId;
    options.reply_delay = std::chrono::microseconds(static_cast<int64_t>(*reply_delay * 1000.0));
    options.reply_cache_bytes = static_cast<size_t>(*reply_cache_mb) << 20;
    options.inbound = std::move(*inbound);
    options.inbound_metrics = inbound_metrics.get();
    p2p::Server server(control, pool, db, *key, options);
    if (auto r = server.listen(); !r) return fail(r.error().message);
    const tcp::endpoint bound = server.local_endpoint();
    const std::string enode_path = (std::filesystem::path(datadir) / "enode").string();

    // Our node record (DATADIR/enr): the advertised address, the ports and the eth fork id of the
    // stored head; re-signed with a higher seq when the head passes a fork.
    std::optional<asio::ip::address> advertised = discovery->extip;
    if (!advertised && !bound.address().is_unspecified()) advertised = bound.address();
    // The enode URL (printed, DATADIR/enode) names the advertised address: nobody can dial 0.0.0.0.
    // Until one is known (listening on 0.0.0.0 without --nat extip), loopback, which reaches us
    // from this host; the predicted address replaces it once discovery has one.
    auto enode_for = [&](const asio::ip::address& ip) {
        return p2p::enode_url(key->public_key(), ip.to_string(), bound.port());
    };
    const bool wildcard_v6 = bound.address().is_v6() && bound.address().is_unspecified();
    std::string enode =
        enode_for(advertised.value_or(wildcard_v6 ? asio::ip::address(asio::ip::address_v6::loopback())
                                                  : asio::ip::address(asio::ip::address_v4::loopback())));
    const uint16_t udp_port = discovery->udp_port.value_or(bound.port());
    LocalRecord local_record(*key, datadir, advertised, bound.port(), discovery->enabled() ? udp_port : 0);
    auto fork_id_now = [&db] { return compute_fork_id(*db.config(), db.head()->number, db.head()->timestamp); };
    auto record = local_record.update(fork_id_now());
    if (!record) return fail(record.error().message);
    spdlog::info("Node record                              seq={} enr={}", record->seq(), record->text());
    std::shared_ptr<disc::V4Service> discv4;
    std::shared_ptr<disc::V5Service> discv5;
    if (discovery->enabled()) {
        // discv4 owns the UDP socket; discv5 shares it (geth's layout).
        auto started = start_discovery(control, *key, *discovery, *record,
                                       asio::ip::udp::endpoint(bound.address(), udp_port), datadir);
        if (!started) return fail(started.error().message);
        discv4 = *started;
        if (discovery->v5) discv5 = start_discv5(control, *key, *discovery, *record, discv4);
        if (registry) registry->add_collectable(std::make_shared<disc::DiscoveryCollector>(discv4, discv5));
    }
    // Without an address to advertise, the record has no `ip`, and geth neither adds such a node to
    // its table nor dials it: predict the address from what peers say they see (geth's endpoint
    // predictor) and re-sign the record with it, and say so loudly until then.
    std::shared_ptr<disc::EndpointPredictor> predictor;
    if (discovery->enabled() && !advertised) {
        spdlog::warn(
            "Node record has no IP address            listen={}:{} hint=\"geth does not add or dial a node whose "
            "record "
            "has no address; it is predicted from {} peers' statements, or set --nat extip:IP\"",
            bound.address().to_string(), bound.port(), discovery->predict_statements);
        predictor = std::make_shared<disc::EndpointPredictor>(std::chrono::minutes(5), discovery->predict_statements);
        auto on_statement = [&, predictor](const asio::ip::udp::endpoint& from, const asio::ip::udp::endpoint& stated) {
            const auto now = std::chrono::steady_clock::now();
            predictor->add_statement(from, stated, now);
            const auto predicted = predictor->predict(now);
            if (!predicted) return;
            if (const auto [ip, udp] = local_record.endpoint();
                ip == predicted->address() && udp == predicted->port()) {
                return;
            }
            local_record.set_endpoint(predicted->address(), predicted->port());
            auto updated = local_record.update(fork_id_now());
            if (!updated) {
                spdlog::warn("Node record not updated: {}", updated.error().message);
                return;
            }
            spdlog::info("Predicted our address                    ip={} udp={} peers={} seq={} enr={}",
                         predicted->address().to_string(), predicted->port(), predictor->senders(now), updated->seq(),
                         updated->text());
            discv4->set_record(*updated);
            if (discv5) discv5->set_record(*updated);
            enode = enode_for(predicted->address());
            if (auto r = p2p::write_file_atomic(enode_path, enode + "\n", 0644); !r) {
                spdlog::warn("{}", r.error().message);
            }
        };
        discv4->on_statement = on_statement;
        if (discv5) discv5->on_statement = on_statement;
    }
    // After every collector is registered: the HTTP server takes the list once.
    std::optional<metrics::HttpServer> http;
    if (metrics_at) {
        http.emplace(control, registry->collectables(), [&server, &db] {
            return metrics::Health{true, fmt::format("ok head={} peers={}\n", db.head()->number, server.peers())};
        });
        if (auto r = http->listen(*metrics_at); !r) return fail(r.error().message);
        http->start();
        const auto at = http->local_endpoint();
        spdlog::info("Metrics enabled                          url=http://{}:{}/metrics", at.address().to_string(),
                     at.port());
    }

    // JSON-RPC on a thread of its own: a batch of blocks read from era1 files never holds up the
    // control thread's accepts and scrapes.
    std::optional<rpc::Handler> rpc_handler;
    RpcThread rpc_server;
    if (rpc_at) {
        if (!rpc_at->address().is_loopback()) {
            spdlog::warn(
                "JSON-RPC listens beyond loopback           rpc={} hint=\"it is read-only, but anyone who reaches "
                "the port can read the node's chain at its cost\"",
                rpc_at->address().to_string());
        }
        rpc_handler.emplace(db, history.get(), db.first_block(), kClientId, rpc_limits);
        metrics::HttpOptions http_options;
        http_options.max_body_bytes = rpc_limits.max_body_bytes;
        http_options.name = "JSON-RPC";
        auto& http_server = rpc_server.http.emplace(rpc_server.io, rpc_handler->http_handler(), http_options);
        if (auto r = http_server.listen(*rpc_at); !r) return fail(r.error().message);
        http_server.start();
        const auto at = http_server.local_endpoint();
        spdlog::info("JSON-RPC enabled                         url=http://{}:{}/", at.address().to_string(), at.port());
        rpc_server.thread = std::thread([&io = rpc_server.io] { io.run(); });
    }

    // DATADIR/enode last: scripts wait for it, and everything the start writes (DATADIR/enr) is
    // in place by then.
    if (auto r = p2p::write_file_atomic(enode_path, enode + "\n", 0644); !r) return fail(r.error().message);

    // The only writer of the datadir while serving; stopped before the server. With
    // --follow-discovered it starts once discovery has found its peers.
    std::optional<sync::Follower> follower;
    std::mutex follow_mutex;  // follow.peers grows on the control thread; the scrubber's repair reads it
    auto start_follower = [&] {
        follower.emplace(db, kClientId, net_metrics.get(), follow,
                         [&server, &db, &net_metrics, &control, &local_record, &fork_id_now, &discv4,
                          &discv5](const db::Head& head) {
                             server.announce(head);
                             if (net_metrics) net_metrics->set_chain(head.number, db.ancient_items());
                             // A new fork id means a new record (the follower calls from its own thread).
                             asio::post(control, [&local_record, &fork_id_now, &discv4, &discv5] {
                                 auto updated = local_record.update(fork_id_now());
                                 if (!updated) {
                                     spdlog::warn("Node record not updated: {}", updated.error().message);
                                 } else if (discv4 && updated->seq() != discv4->record().seq()) {
                                     spdlog::info("Node record                              seq={} enr={}",
                                                  updated->seq(), updated->text());
                                     discv4->set_record(*updated);
                                     if (discv5) discv5->set_record(*updated);
                                 }
                             });
                         });
        follower->start();
    };
    bool shutting_down = false;
    std::shared_ptr<Crawler> follow_crawler;
    std::unique_ptr<DnsSource> follow_dns;
    if (*follow_discovered > 0) {
        follow_crawler = std::make_shared<Crawler>(discv4, *db.config(), db.head()->number, db.head()->timestamp);
        follow_crawler->use_v5(discv5);
        follow_crawler->start(control);
        for (const auto& b : discovery->bootnodes) follow_crawler->add(b, "bootnode");
        auto dns = start_dns_source(control, *discovery, follow_crawler);
        if (!dns) return fail(dns.error().message);
        follow_dns = std::move(*dns);
        // What the search found, by fork compatibility: compatible, incompatible (the record's
        // fork id fails our filter) and unknown (no record, or no eth entry in it).
        prometheus::Family<prometheus::Gauge>* found_family = nullptr;
        if (registry) {
            found_family = &prometheus::BuildGauge()
                                .Name("headerd_discovery_found_nodes")
                                .Help(
                                    "Nodes serve --follow-discovered's search found, by fork compatibility of "
                                    "their records: compatible, incompatible, unknown (no record or no eth entry).")
                                .Register(registry->registry());
        }
        auto note_found = [found_family, crawler = follow_crawler] {
            if (found_family == nullptr) return;
            const size_t all = crawler->found().size(), yes = crawler->compatible(), no = crawler->incompatible();
            found_family->Add({{"compatibility", "compatible"}}).Set(static_cast<double>(yes));
            found_family->Add({{"compatibility", "incompatible"}}).Set(static_cast<double>(no));
            found_family->Add({{"compatibility", "unknown"}}).Set(static_cast<double>(all - yes - no));
        };
        note_found();
        asio::co_spawn(
            control,
            [&, want = static_cast<size_t>(*follow_discovered), note_found]() -> asio::awaitable<void> {
                std::set<disc::NodeId> exclude;
                for (const auto& e : follow.peers) exclude.insert(e.key.node_id());
                std::vector<p2p::Enode> found;
                // Until the majority rule can work (two peers in all), then with what was found.
                while (!shutting_down && found.size() < want) {
                    found = co_await follow_crawler->wait_for(want, std::chrono::seconds(30), exclude);
                    note_found();
                    if (found.size() + follow.peers.size() >= 2) break;
                }
                if (shutting_down) {
                    follow_crawler->stop();
                    if (follow_dns) follow_dns->stop();
                    co_return;
                }
                for (const auto& e : found) {
                    spdlog::info("Following discovered peer                enode={}",
                                 p2p::enode_url(e.key, e.host, e.port));
                }
                // A discovered peer whose dials keep failing is replaced by a spare: another compatible
                // node found (the --follow peers are never replaced). The follower starts at once;
                // the spares are looked for 5 s more, then discovery's candidate search ends.
                auto spares = std::make_shared<std::vector<p2p::Enode>>();
                {
                    std::lock_guard lock(follow_mutex);
                    std::set<disc::NodeId> named;
                    for (const auto& e : follow.peers) named.insert(e.key.node_id());
                    follow.peers.insert(follow.peers.end(), found.begin(), found.end());
                    // On the follower's thread; follow_mutex guards the spares and follow.peers.
                    follow.replace = [&follow, &follow_mutex, spares,
                                      named](const p2p::Enode& lost) -> std::optional<p2p::Enode> {
                        std::lock_guard l(follow_mutex);
                        if (named.count(lost.key.node_id()) != 0 || spares->empty()) return std::nullopt;
                        const p2p::Enode spare = spares->front();
                        spares->erase(spares->begin());
                        for (auto& e : follow.peers) {
                            if (e.key.node_id() == lost.key.node_id()) e = spare;
                        }
                        return spare;
                    };
                }
                start_follower();
                for (const auto& e : found) exclude.insert(e.key.node_id());
                auto more = co_await follow_crawler->wait_for(2 * want, std::chrono::seconds(5), exclude);
                note_found();
                follow_crawler->stop();
                if (follow_dns) follow_dns->stop();
                size_t count = 0;
                {
                    std::lock_guard lock(follow_mutex);
                    *spares = std::move(more);
                    count = spares->size();
                }
                spdlog::info("Spare discovered peers                   count={}", count);
            },
            asio::detached);
    }
    // The scrubber: damaged headers are marked (never served); with --follow, fetched again from the
    // followed peers under a throwaway identity (the follower's sessions hold the node key's).
    sync::ScrubberOptions scrub;
    scrub.rate = *scrub_rate;
    scrub.pause = std::chrono::milliseconds(static_cast<int64_t>(*scrub_pause * 1000.0));
    scrub.metrics = scrub_metrics.get();
    if (*scrub_history_rate > 0) {
        scrub.history = history.get();
        scrub.history_rate = *scrub_history_rate;
    }
    auto repair_key = rlpx::PrivateKey::generate();
    if (following && repair_key) {
        scrub.repair = [&db, &follow, &follow_mutex, &repair_key] {
            p2p::LocalNode local;
            local.key = &*repair_key;
            local.client_id = kClientId;
            local.config = db.config();
            local.head = *db.head();
            sync::RepairConfig config;
            {
                std::lock_guard lock(follow_mutex);
                config.peers = follow.peers;
            }
            const sync::RepairResult r = sync::repair_damaged(db, local, config);
            for (const std::string& note : r.notes) spdlog::warn("Repair                                   {}", note);
            return r.repaired;
        };
    }
    sync::Scrubber scrubber(db, scrub);
    StopSignals signals(control);
    signals.async_wait([&](const boost::system::error_code& ec, int signo) {
        if (ec) return;
        spdlog::info("Shutting down                            signal={} peers={}", signo, server.peers());
        scrubber.stop();
        shutting_down = true;
        if (follow_crawler) follow_crawler->stop();
        if (follow_dns) follow_dns->stop();
        if (discv5) {
            discv5->on_statement = nullptr;
            discv5->stop();
        }
        if (discv4) {
            discv4->on_statement = nullptr;
            discv4->stop();
        }
        if (follower) follower->stop();
        server.stop();
        if (http) http->stop();
        rpc_server.stop();
    });
    pool.start();
    server.start();
    if (!follow.peers.empty() && *follow_discovered == 0) start_follower();
    scrubber.start();
    const auto head = db.head();
    spdlog::info("Serving headers                          network={} head={} hash={} listen={}:{} workers={}",
                 db.config()->name, head->number, to_hex0x(head->hash), bound.address().to_string(), bound.port(),
                 pool.size());
    std::cout << enode << std::endl;
    control.run();
    // Every session has been told to quit; the workers finish their goodbyes and return.
    pool.release();
    pool.join();
    db.set_read_observer(nullptr);
    spdlog::info("Stopped                                  datadir={}", datadir);
    return kExitOk;
}

namespace {

// The receipts in the receipt list `list` (0 for bytes that are not one RLP list).
size_t receipt_count(ByteView list) {
    auto receipts = rlp::list_items(list);
    return receipts ? receipts->size() : 0;
}

}  // namespace

int cmd_get(int argc, char** argv) {
    const CommandSpec spec{
        "get",
        "ask a peer for headers with one GetBlockHeaders request, and for their bodies or receipts",
        "--peer ENODE --origin NUM|HASH --amount N [--skip K] [--reverse] [--bodies | --receipts] "
        "[--network mainnet|sepolia] [--format rlp|json] [--timeout S]",
        {{"peer", "ENODE", "enode://ID@HOST:PORT of the peer", "", true},
         {"origin", "NUM|HASH", "first block: a number, or a 0x-prefixed 32-byte hash", "", true},
         {"amount", "N", "headers to ask for", "", true},
         {"skip", "K", "blocks to skip between headers", "0", false},
         {"reverse", "", "walk towards the genesis", "", false},
         {"bodies", "",
          "then ask for those blocks' bodies (GetBlockBodies) and print them instead, each checked against its "
          "header",
          "", false},
         {"receipts", "",
          "then ask for their receipt lists (GetReceipts) and print them instead (in the session's eth form), "
          "each checked against its header",
          "", false},
         network_option("the peer's network: the Status names its genesis"),
         {"format", "rlp|json", "one item per line: RLP hex, or JSON with its block and hash", "rlp", false},
         {"timeout", "SECONDS", "deadline for connecting and for each reply", "10", false},
         verbosity_option()},
        false,
        ""};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    auto peer = p2p::parse_enode(*args->get("peer"));
    if (!peer) return fail(peer.error().message);
    eth::GetBlockHeadersRequest request;
    const std::string origin = *args->get("origin");
    if (origin.size() == 66 && origin.rfind("0x", 0) == 0) {
        auto hash = hash_from_hex(origin);
        if (!hash) return fail(fmt::format("--origin {}: not a 32-byte hash", origin));
        request.origin = eth::HashOrNumber::of(*hash);
    } else {
        auto number = parse_u64(origin);
        if (!number) return fail(fmt::format("--origin: {}", number.error().message));
        request.origin = eth::HashOrNumber::of(*number);
    }
    auto amount = args->get_u64("amount", 0);
    auto skip = args->get_u64("skip", 0);
    auto timeout = args->get_u64("timeout", 10);
    if (!amount) return fail(amount.error().message);
    if (!skip) return fail(skip.error().message);
    if (!timeout || *timeout == 0) return fail("--timeout must be a positive number of seconds");
    request.amount = *amount;
    request.skip = *skip;
    request.reverse = args->has("reverse");
    const std::string format = args->get_or("format", "rlp");
    if (format != "rlp" && format != "json") return fail(fmt::format("--format {}: expected rlp or json", format));
    if (args->has("bodies") && args->has("receipts")) return fail("--bodies and --receipts: one at a time");
    const bool want_bodies = args->has("bodies");
    const bool want_receipts = args->has("receipts");
    const bool want_history = want_bodies || want_receipts;
    const auto history_request = want_bodies ? eth::MessageId::kGetBlockBodies : eth::MessageId::kGetReceipts;
    std::optional<synthetic::Generator> synthetic_network;
    auto network = network_from_args(*args, synthetic_network);
    if (!network) return fail(network.error().message);
    const ChainConfig& config = **network;

    auto key = rlpx::PrivateKey::generate();  // a throwaway identity: get keeps no state
    if (!key) return fail("cannot generate a key: " + key.error().message());
    // Without a chain of our own we present the network's genesis as our head: every peer of that
    // network accepts that fork id (a node that has not synced yet).
    p2p::LocalNode local;
    local.key = &*key;
    local.client_id = kClientId;
    local.config = &config;
    local.head = db::Head{0, config.genesis_hash, U256(17'179'869'184u), 0};

    asio::io_context io(1);
    p2p::ClientOptions options;
    options.limits.handshake = std::chrono::seconds(*timeout);
    options.request_timeout = std::chrono::seconds(*timeout);
    std::optional<p2p::HeadersReply> reply;
    // One per header, when asked: the item as it came (a body, or the block's receipt list in the
    // session's form, joined when eth/70 cut it); empty until received (an item is never empty RLP).
    std::vector<Bytes> items;
    uint64_t version = 0;
    p2p::Clock::duration history_rtt{};
    size_t history_requests = 0;
    std::string error;
    // Dial, handshake, Hello + Status, the header request, the history requests, goodbye.
    auto fetch = [&]() -> asio::awaitable<void> {
        auto session = co_await p2p::ClientSession::connect(*peer, local, options);
        version = session->link().version;
        spdlog::debug("Connected                                peer={} client=\"{}\" eth={}",
                      session->connection().remote_address(), session->link().client_id, version);
        auto result = co_await session->request(request);
        if (!result) {
            error = result.error().message;
            co_await session->close();
            co_return;
        }
        reply = std::move(*result);
        std::vector<Hash32> hashes;
        for (ByteView h : reply->headers) hashes.push_back(header_hash(h));
        items.resize(want_history ? hashes.size() : 0);
        // A reply may end early (the peer holds no more); ask again from the first block missing, and
        // for a receipt list eth/70 cut, from its first receipt missing. Stops at a reply that brings
        // nothing new.
        for (size_t next = 0; want_history && next < hashes.size();) {
            const uint64_t first_receipt = want_receipts ? receipt_count(items[next]) : 0;
            auto got = co_await session->request_history(history_request, std::span<const Hash32>(hashes).subspan(next),
                                                         std::nullopt, first_receipt);
            ++history_requests;
            if (!got) {
                error = got.error().message;
                break;
            }
            history_rtt += got->rtt;
            if (got->items.empty()) break;
            for (size_t i = 0; i < got->items.size(); ++i) {
                Bytes& item = items[next + i];
                if (!item.empty()) {
                    if (auto j = eth::join_receipt_lists(item, got->items[i]); !j) {
                        error = fmt::format("block {}: a partial receipt list is not an RLP list: {}",
                                            decode_block_header(reply->headers[next + i])->number, j.error().message());
                        break;
                    }
                } else {
                    item.assign(got->items[i].begin(), got->items[i].end());
                }
            }
            if (!error.empty()) break;
            if (got->last_block_incomplete && got->items.back().size() == 1) {  // 0xc0: a cut list that is empty
                error = "a receipt list marked incomplete holds no receipt";
                break;
            }
            next += got->items.size() - (got->last_block_incomplete ? 1 : 0);
        }
        co_await session->close();
    };
    // Every step has its own deadline; the guard stops the loop should anything still hang.
    const auto rounds = want_history ? 2 + request.amount : 1;
    asio::steady_timer guard(io, 2 * options.limits.handshake * rounds + std::chrono::seconds(5));
    guard.async_wait([&](const boost::system::error_code& ec) {
        if (!ec) {
            error = "timed out";
            io.stop();
        }
    });
    asio::co_spawn(io, fetch(), [&](std::exception_ptr e) {
        guard.cancel();
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            error = ex.what();
        }
    });
    io.run();
    if (!error.empty() || !reply) {
        return fail(fmt::format("peer {}:{}: {}", peer->host, peer->port, error.empty() ? "no reply" : error));
    }

    if (!want_history) {
        for (ByteView rlp : reply->headers) {
            if (format == "rlp") {
                std::cout << to_hex0x(rlp) << "\n";
                continue;
            }
            const BlockHeader h = *decode_block_header(rlp);  // the session checked every header
            boost::json::object o{{"number", h.number},
                                  {"hash", to_hex0x(header_hash(rlp))},
                                  {"parent_hash", to_hex0x(h.parent_hash)},
                                  {"timestamp", h.timestamp},
                                  {"difficulty", h.difficulty.str()},
                                  {"gas_limit", h.gas_limit},
                                  {"gas_used", h.gas_used},
                                  {"fields", h.field_count()},
                                  {"rlp", to_hex0x(rlp)}};
            std::cout << boost::json::serialize(o) << "\n";
        }
        std::cout.flush();
        spdlog::info("Received headers                         peer={}:{} request={} count={} rtt={:.3f}ms", peer->host,
                     peer->port, reply->request_id, reply->headers.size(),
                     std::chrono::duration<double, std::milli>(reply->rtt).count());
        return kExitOk;
    }

    // Every item is checked against its header before anything is printed: a peer that lies gets
    // an error naming the block, not output.
    size_t held = 0;
    for (size_t i = 0; i < items.size() && !items[i].empty(); ++i, ++held) {
        const BlockHeader h = *decode_block_header(reply->headers[i]);
        const auto reply_id = want_receipts ? eth::MessageId::kReceipts : eth::MessageId::kBlockBodies;
        if (auto v = eth::verify_history_item(version, reply_id, h, items[i]); !v) {
            return fail(fmt::format("peer {}:{}: block {}: {} (eth/{})", peer->host, peer->port, h.number,
                                    v.error().message(), version));
        }
    }
    const std::string_view what = want_bodies ? "bodies" : "receipt lists";
    for (size_t i = 0; i < held; ++i) {
        const ByteView rlp = items[i];
        if (format == "rlp") {
            std::cout << to_hex0x(rlp) << "\n";
            continue;
        }
        const BlockHeader h = *decode_block_header(reply->headers[i]);
        boost::json::object o{{"number", h.number}, {"hash", to_hex0x(header_hash(reply->headers[i]))}};
        if (want_bodies) {
            const BodyView body = *parse_body(rlp);  // verified above
            o["transactions"] = body.transactions.size();
            o["uncles"] = body.uncle_count;
            if (body.withdrawals) o["withdrawals"] = body.withdrawals->size();
        } else {
            o["receipts"] = receipt_count(rlp);
        }
        o["verified"] = true;
        o["rlp"] = to_hex0x(rlp);
        std::cout << boost::json::serialize(o) << "\n";
    }
    std::cout.flush();
    if (held < items.size()) {
        spdlog::warn("{:<41}from={} received={} of {}", fmt::format("The peer holds no more {}", what),
                     decode_block_header(reply->headers[held])->number, held, items.size());
    }
    spdlog::info("{:<41}peer={}:{} eth={} count={} verified={} requests={} rtt={:.3f}ms",
                 fmt::format("Received {}", what), peer->host, peer->port, version, held, held, history_requests,
                 std::chrono::duration<double, std::milli>(history_rtt).count());
    return held == items.size() ? kExitOk : kExitFailure;
}

}  // namespace headerd::node
