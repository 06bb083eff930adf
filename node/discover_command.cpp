// `headerd discover`: a discv4 crawler in the manner of geth's `devp2p discv4 crawl`. It asks the
// bootnodes, then every node it hears of, for nodes near random targets, fetches each node's record
// (EIP-868) and checks the record's `eth` fork id against our chain.

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
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include "core/awaitable.hpp"
#include "core/hex.hpp"
#include "core/synthetic.hpp"
#include "node/cli.hpp"
#include "node/commands.hpp"
#include "node/common.hpp"
#include "node/discovery.hpp"
#include "p2p/node_key.hpp"

namespace headerd::node {
namespace {

namespace asio = boost::asio;
using asio::awaitable;

// Records fetched at once: enough to keep up with lookups, few enough not to look like a flood.
constexpr size_t kParallelRecordRequests = 8;

struct Found {
    disc::Node node;
    std::optional<disc::Enr> record;
    bool asked{false};
    std::optional<std::string> compatibility;  // "yes", "no: <why>"; unset without a record or eth entry
};

std::string fork_text(const ForkId& id) { return fmt::format("{}/{}", to_hex0x(id.hash), id.next); }

struct Crawl {
    std::shared_ptr<disc::V4Service> service;
    const ChainConfig* config{nullptr};
    uint64_t head_number{0};
    uint64_t head_time{0};
    std::map<disc::NodeId, Found> found;
    bool stopping{false};

    void judge(Found& f) {
        if (!f.record || !f.record->eth()) return;
        auto ok = validate_fork_id(*config, head_number, head_time, *f.record->eth());
        f.compatibility = ok ? std::string("yes") : "no: " + ok.error().message();
    }
};

awaitable<void> fetch_records(std::shared_ptr<Crawl> crawl) {
    while (!crawl->stopping) {
        disc::Node* next = nullptr;
        for (auto& [id, f] : crawl->found) {
            if (!f.asked) {
                f.asked = true;
                next = &f.node;
                break;
            }
        }
        if (!next) {
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(200));
            co_await t.async_wait(kTuple);
            continue;
        }
        const disc::Node node = *next;
        auto record = co_await crawl->service->request_enr(node);
        if (record) {
            Found& f = crawl->found.at(node.id);
            f.record = *record;
            crawl->judge(f);
        }
    }
}

awaitable<void> keep_looking(std::shared_ptr<Crawl> crawl) {
    std::mt19937_64 rng(std::random_device{}());
    while (!crawl->stopping) {
        disc::v4::NodeKey target;
        for (auto& b : target) b = static_cast<uint8_t>(rng());
        co_await crawl->service->lookup(target);
        if (crawl->found.empty()) {  // nobody answered yet: do not spin
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(500));
            co_await t.async_wait(kTuple);
        }
    }
}

boost::json::object node_json(const Found& f) {
    boost::json::object o{{"id", to_hex(f.node.id)}, {"enode", f.node.enode()}, {"found_by", "discv4"}};
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
        "find nodes through discv4 and tell which serve our chain (their records' eth fork ids)",
        "--bootnodes LIST [--duration S] [--json FILE] [--listen HOST:PORT] [--network NAME | --synthetic N | "
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
    for (auto& o : discovery_options("v4")) {
        if (o.name != "discovery" && o.name != "discovery.port" && o.name != "nat") spec.options.push_back(o);
    }
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    auto settings = parse_discovery(*args, "v4");
    if (!settings) return fail(settings.error().message);
    auto duration = parse_seconds("duration", args->get_or("duration", "30"));
    if (!duration || *duration <= 0) return fail("--duration must be a positive number of seconds");
    auto listen_tcp = parse_endpoint("listen", args->get_or("listen", "0.0.0.0:0"));
    if (!listen_tcp) return fail(listen_tcp.error().message);

    auto crawl = std::make_shared<Crawl>();
    std::optional<synthetic::Generator> generator;
    std::unique_ptr<db::ChainDb> chain;
    if (auto datadir = args->get("datadir")) {
        auto opened = open_existing(*datadir, true);
        if (!opened) return fail(opened.error().message);
        chain = std::move(*opened);
        if (!chain->config() || !chain->head()) return fail(fmt::format("datadir {} holds no chain", *datadir));
        crawl->config = chain->config();
        crawl->head_number = chain->head()->number;
        crawl->head_time = chain->head()->timestamp;
    } else {
        auto config = network_from_args(*args, generator);
        if (!config) return fail(config.error().message);
        crawl->config = *config;
        // Fully synced: past every fork the config knows.
        crawl->head_number = std::numeric_limits<uint64_t>::max() / 2;
        crawl->head_time = std::numeric_limits<uint64_t>::max() / 2;
    }
    if (settings->bootnodes.empty()) {
        spdlog::warn(
            "No --bootnodes: there is nobody to ask (public lists are used only when named, as in "
            "--bootnodes mainnet)");
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
    crawl->service = *service;
    crawl->service->on_found = [crawl](const disc::Node& n) {
        auto [it, added] = crawl->found.try_emplace(n.id, Found{n, std::nullopt, false, std::nullopt});
        if (added) spdlog::debug("Found node                               enode={}", n.enode());
    };
    for (const auto& b : settings->bootnodes) crawl->service->on_found(b);

    const auto started = std::chrono::steady_clock::now();
    asio::steady_timer deadline(io, std::chrono::milliseconds(static_cast<int64_t>(*duration * 1000)));
    asio::steady_timer progress(io);
    asio::signal_set signals(io, SIGINT, SIGTERM);
    auto finish = [&] {
        crawl->stopping = true;
        deadline.cancel();
        progress.cancel();
        signals.cancel();
        crawl->service->stop();
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
            if (ec || crawl->stopping) return;
            size_t records = 0, compatible = 0;
            for (const auto& [id, f] : crawl->found) {
                records += f.record.has_value();
                compatible += f.compatibility == "yes";
            }
            spdlog::info("Crawling                                 found={} records={} compatible={} table={}",
                         crawl->found.size(), records, compatible, crawl->service->table().size());
            report();
        });
    };
    report();
    if (!settings->bootnodes.empty()) {
        asio::co_spawn(io, keep_looking(crawl), asio::detached);
        for (size_t i = 0; i < kParallelRecordRequests; ++i) asio::co_spawn(io, fetch_records(crawl), asio::detached);
    }
    io.run();

    size_t records = 0, compatible = 0;
    boost::json::array nodes;
    for (const auto& [id, f] : crawl->found) {
        records += f.record.has_value();
        compatible += f.compatibility == "yes";
        nodes.push_back(node_json(f));
        std::cout << fmt::format("{} record={} eth={} compatible={}\n", f.node.enode(), f.record ? "yes" : "no",
                                 f.record && f.record->eth() ? fork_text(*f.record->eth()) : "-",
                                 f.compatibility ? *f.compatibility : "unknown");
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    spdlog::info("Crawl done                               found={} records={} compatible={} seconds={:.1f}",
                 crawl->found.size(), records, compatible, seconds);
    if (auto path = args->get("json")) {
        boost::json::object out{{"network", crawl->config->name}, {"seconds", seconds},
                                {"found", crawl->found.size()},   {"records", records},
                                {"compatible", compatible},       {"nodes", std::move(nodes)}};
        if (auto r = p2p::write_file_atomic(*path, boost::json::serialize(out) + "\n", 0644); !r) {
            return fail(r.error().message);
        }
    }
    return kExitOk;
}

}  // namespace headerd::node
