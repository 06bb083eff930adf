// `headerd discover`: a crawler in the manner of geth's `devp2p discv4 crawl` (discv5 too when a
// bootnode is an enr: record). It asks the
// bootnodes, then every node it hears of, for nodes near random targets, fetches each node's record
// (EIP-868) and checks the record's `eth` fork id against our chain; records from DNS node lists
// (--discovery.dns) are checked the same way.

#include <chrono>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include "core/awaitable.hpp"
#include "core/hex.hpp"
#include "core/synthetic.hpp"
#include "node/cli.hpp"
#include "node/commands.hpp"
#include "node/common.hpp"
#include "node/crawler.hpp"
#include "node/discovery.hpp"
#include "p2p/enode/node_key.hpp"

namespace headerd::node {
namespace {

namespace asio = boost::asio;
using asio::awaitable;

using Found = Crawler::Found;

std::string fork_text(const ForkId& id) { return fmt::format("{}/{}", to_hex0x(id.hash), id.next); }

boost::json::object node_json(const Found& f) {
    boost::json::object o{{"id", to_hex(f.node.id)}, {"enode", f.node.enode()}, {"found_by", f.found_by}};
    o["record"] = f.record ? boost::json::value(f.record->text()) : boost::json::value(nullptr);
    o["seq"] = f.record ? boost::json::value(f.record->seq()) : boost::json::value(nullptr);
    if (f.record && f.record->eth()) {
        o["fork_id"] = boost::json::object{{"hash", to_hex0x(f.record->eth()->hash)}, {"next", f.record->eth()->next}};
    } else {
        o["fork_id"] = nullptr;
    }
    o["compatible"] = f.compatibility ? boost::json::value(*f.compatibility == "yes") : boost::json::value(nullptr);
    if (f.compatibility && *f.compatibility != "yes") o["incompatible_because"] = f.compatibility->substr(4);
    return o;
}

}  // namespace

int cmd_discover(int argc, char** argv) {
    CommandSpec spec{
        "discover",
        "find nodes through discv4, discv5 and DNS node lists and tell which serve our chain (their records' eth fork "
        "ids)",
        "(--bootnodes LIST | --discovery.dns LIST) [--duration S] [--json FILE] [--listen HOST:PORT] [--network NAME | "
        "--synthetic N | "
        "--datadir DIR]",
        {{"listen", "HOST:PORT", "UDP address to send from and listen on (port 0: any free port)", "0.0.0.0:0", false},
         {"duration", "SECONDS", "how long to crawl", "30", false},
         {"json", "FILE", "write every node found (enode, record, fork id, compatibility) as JSON", "", false},
         {"datadir", "DIR", "judge fork ids against this datadir's chain and head (instead of --network)", "", false},
         network_option("judge fork ids against this network, fully synced"),
         synthetic_option(),
         verbosity_option()},
        false,
        ""};
    for (auto& o : discovery_client_options()) spec.options.push_back(std::move(o));
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    auto settings = parse_discovery(*args, "v4");
    if (!settings) return fail(settings.error().message);
    auto duration = parse_seconds("duration", args->get_or("duration", "30"));
    if (!duration || *duration <= 0) return fail("--duration must be a positive number of seconds");
    auto listen_tcp = parse_endpoint("listen", args->get_or("listen", "0.0.0.0:0"));
    if (!listen_tcp) return fail(listen_tcp.error().message);

    std::optional<synthetic::Generator> generator;
    std::unique_ptr<db::ChainDb> chain;
    const ChainConfig* config = nullptr;
    // Fully synced by default: past every fork the config knows.
    uint64_t head_number = std::numeric_limits<uint64_t>::max() / 2;
    uint64_t head_time = std::numeric_limits<uint64_t>::max() / 2;
    if (auto datadir = args->get("datadir")) {
        auto opened = open_existing(*datadir, true);
        if (!opened) return fail(opened.error().message);
        chain = std::move(*opened);
        if (!chain->config() || !chain->head()) return fail(fmt::format("datadir {} holds no chain", *datadir));
        config = chain->config();
        head_number = chain->head()->number;
        head_time = chain->head()->timestamp;
    } else {
        auto named = network_from_args(*args, generator);
        if (!named) return fail(named.error().message);
        config = *named;
    }
    const bool anyone = !settings->bootnodes.empty() || !settings->dns_trees.empty();
    if (!anyone) {
        spdlog::warn(
            "No --bootnodes and no --discovery.dns: there is nobody to ask (public lists are used only when named, as "
            "in --bootnodes mainnet)");
    }

    auto key = rlpx::PrivateKey::generate();
    if (!key) return fail("cannot make a node key");
    asio::io_context io(1);
    const asio::ip::udp::endpoint listen(listen_tcp->address(), listen_tcp->port());
    // The crawler's record: no address (others see where its packets come from) and no eth entry.
    auto record = disc::EnrBuilder(1).sign(*key);
    if (!record) return fail("cannot sign a node record");
    auto service = start_discovery(io, *key, *settings, *record, listen, "");
    if (!service) return fail(service.error().message);
    auto crawl = std::make_shared<Crawler>(*service, *config, head_number, head_time);
    std::shared_ptr<disc::V5Service> v5;
    if (settings->v5) v5 = start_discv5(io, *key, *settings, *record, *service);
    crawl->use_v5(v5);
    auto dns = start_dns_source(io, *settings, crawl);
    if (!dns) {
        if (v5) v5->stop();
        (*service)->stop();
        io.run();
        return fail(dns.error().message);
    }

    const auto started = std::chrono::steady_clock::now();
    asio::steady_timer deadline(io, std::chrono::milliseconds(static_cast<int64_t>(*duration * 1000)));
    asio::steady_timer progress(io);
    StopSignals signals(io);
    bool finished = false;
    auto finish = [&] {
        finished = true;
        crawl->stop();
        deadline.cancel();
        progress.cancel();
        signals.cancel();
        if (*dns) (*dns)->stop();
        if (v5) v5->stop();
        (*service)->stop();
    };
    signals.async_wait([&](const boost::system::error_code& ec, int) {
        if (!ec) finish();
    });
    deadline.async_wait([&](const boost::system::error_code& ec) {
        if (!ec) finish();
    });
    std::function<void()> report = [&] {
        progress.expires_after(std::chrono::seconds(5));
        progress.async_wait([&](const boost::system::error_code& ec) {
            // finish() cannot cancel a wait that completed in the same reactor pass as the deadline
            // (--duration a multiple of 5 s): re-arming then would keep io.run() going for ever.
            if (ec || finished) return;
            spdlog::info("Crawling                                 found={} records={} compatible={} table={}",
                         crawl->found().size(), crawl->records(), crawl->compatible(), (*service)->table().size());
            report();
        });
    };
    report();
    if (anyone) {
        crawl->start(io);
        for (const auto& b : settings->bootnodes) crawl->add(b, "bootnode");
    }
    io.run();

    const size_t records = crawl->records();
    const size_t compatible = crawl->compatible();
    boost::json::array nodes;
    for (const auto& [id, f] : crawl->found()) {
        nodes.push_back(node_json(f));
        std::cout << fmt::format("{} record={} eth={} compatible={}\n", f.node.enode(), f.record ? "yes" : "no",
                                 f.record && f.record->eth() ? fork_text(*f.record->eth()) : "-",
                                 f.compatibility ? *f.compatibility : "unknown");
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    spdlog::info("Crawl done                               found={} records={} compatible={} seconds={:.1f}",
                 crawl->found().size(), records, compatible, seconds);
    if (auto path = args->get("json")) {
        boost::json::object out{{"network", config->name}, {"seconds", seconds},       {"found", crawl->found().size()},
                                {"records", records},      {"compatible", compatible}, {"nodes", std::move(nodes)}};
        if (auto r = p2p::write_file_atomic(*path, boost::json::serialize(out) + "\n", 0644); !r) {
            return fail(r.error().message);
        }
    }
    return kExitOk;
}

}  // namespace headerd::node
