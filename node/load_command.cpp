// `headerd load`: synthetic syncing clients against one or more header servers (docs/load.md).

#include <sys/resource.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include "core/hex.hpp"
#include "core/synthetic.hpp"
#include "load/html_report.hpp"
#include "load/load_metrics.hpp"
#include "load/reference_chain.hpp"
#include "load/report.hpp"
#include "load/runner.hpp"
#include "load/server_scrape.hpp"
#include "metrics/http_server.hpp"
#include "metrics/metrics.hpp"
#include "node/commands.hpp"
#include "node/common.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/net_metrics.hpp"

namespace headerd::node {
namespace {

namespace asio = boost::asio;

std::atomic<int> g_signals{0};
extern "C" void on_signal(int) { g_signals.fetch_add(1); }

// Seconds since the Unix epoch, with the clock's resolution.
double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Unix seconds as 2026-12-05T10:00:00Z (fractions of a second as .fff when there are any).
std::string utc_at(double unix_seconds) {
    const auto t = static_cast<std::time_t>(std::floor(unix_seconds));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    const auto ms = static_cast<int>(std::lround((unix_seconds - static_cast<double>(t)) * 1000));
    return ms == 0 || ms == 1000 ? fmt::format("{}Z", buf) : fmt::format("{}.{:03d}Z", buf, ms);
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::string human_bytes(double b) {
    if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
    if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
    return fmt::format("{:.0f} kB", b / 1e3);
}

}  // namespace

// load --rtt-log keeps at most this many samples (16 bytes each).
constexpr size_t kMaxRttSamples = 20'000'000;

int cmd_load(int argc, char** argv) {
    const CommandSpec spec{
        "load",
        "load-test header and history servers with synthetic syncing clients",
        "--peer ENODE [--peer ENODE ...] [--clients N] [--duration S | --requests K] [--profile NAME[:WEIGHT],...] "
        "[--rate R] [--ramp S] [--depth D] [--eth V] [--chain FILE|DATADIR ...] [--threshold EXPR ...] "
        "[--json FILE] [--html FILE] [--metrics HOST:PORT] [--server-metrics URL] [--seed S] [--run-id ID] "
        "[--start-at TIME] [--bind ADDR] [--rtt-log FILE]",
        {{"peer", "ENODE", "server to load (enode://...@HOST:PORT); clients are spread over all given", "", true, true},
         {"clients", "N", "synthetic clients, each its own connection and node key", "16", false},
         {"duration", "S", "seconds to run; 0 runs until interrupted (or --requests)", "30", false},
         {"requests", "K", "stop after K requests in total", "", false},
         {"profile", "LIST",
          "mix (header profiles), history (bodies and receipts), or NAME[:WEIGHT],... of geth-skeleton nethermind "
          "besu erigon reth ethereumjs probes legacy edge geth-history nethermind-history besu-history reth-history",
          "mix", false},
         {"rate", "R", "open loop: R requests/s in total, latency from the intended send time", "", false},
         {"ramp", "S", "seconds over which the clients connect", "0", false},
         {"depth", "D", "requests in flight per client instead of the profile's", "", false},
         {"eth", "V", "offer only eth/V (68..72) instead of the profile's versions", "", false},
         {"timeout", "S", "every request's timeout instead of the profile's", "", false},
         {"handshakes", "N", "connections in the handshake at once", "64", false},
         {"workers", "N", "threads (0: one per core)", "0", false},
         {"chain", "SRC",
          "reference chain: .era1/.rlp files or a datadir; headers are compared byte for byte (bodies and receipt "
          "lists are checked against their headers' roots in any case)",
          "", false, true},
         {"synthetic", "N[:SEED]",
          "the clients claim the network of `headerd generate --count N --seed SEED` (seed 1 if not given), not "
          "mainnet",
          "", false},
         {"threshold", "EXPR",
          "pass/fail rule, e.g. 'p99<50ms', 'errors==0', 'verified', 'besu.p99<1s', 'bodies>0', "
          "'receipts_p99<2s'",
          "", false, true},
         {"json", "FILE", "write the JSON report (docs/load-report.md)", "", false},
         {"html", "FILE", "write a self-contained HTML report", "", false},
         {"metrics", "HOST:PORT", "serve the load generator's /metrics", "", false},
         {"server-metrics", "URL", "the server's /metrics, read before and after: its CPU per header, serve times", "",
          false},
         {"seed", "S", "seed for profile walks and jitter", "1", false},
         {"run-id", "ID",
          "the run this generator belongs to (letters, digits, . _ -): in the JSON report, where report --merge "
          "matches it, and as the label run=\"ID\" of every headerd_load_* series",
          "", false},
         {"bind", "ADDR", "the local IP address the clients connect from (e.g. one of several on this machine)", "",
          false},
         {"rtt-log", "FILE",
          "write every reply's round-trip time to FILE (PROFILE MESSAGE NANOSECONDS per line; at most 20 million "
          "replies): the raw samples the report's histograms count, to check or analyse elsewhere",
          "", false},
         {"start-at", "TIME",
          "begin at this wall-clock time (UTC 2026-12-05T10:00:00Z, Unix seconds, or +S from now), so that "
          "generators on several machines measure the same window (docs/load.md, \"Load from many machines\")",
          "", false},
         verbosity_option()},
        false,
        "",
    };
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    const auto usage = [](const std::string& m) {
        std::fprintf(stderr, "error: load: %s\n", m.c_str());
        return kExitUsage;
    };

    load::LoadConfig cfg;
    auto peers = parse_enodes(*args, "peer");
    if (!peers) return usage(peers.error().message);
    cfg.peers = std::move(*peers);
    auto clients = args->get_u64("clients", 16);
    if (!clients || *clients == 0 || *clients > 100'000) return usage("--clients must be 1..100000");
    cfg.clients = *clients;
    auto duration = parse_seconds("duration", args->get_or("duration", "30"));
    if (!duration) return usage(duration.error().message);
    cfg.duration = std::chrono::duration_cast<load::Clock::duration>(std::chrono::duration<double>(*duration));
    if (args->has("requests")) {
        auto k = args->get_u64("requests", 0);
        if (!k || *k == 0) return usage("--requests must be a positive number");
        cfg.requests = *k;
        if (!args->has("duration")) cfg.duration = {};
    }
    auto mix = load::parse_mix(args->get_or("profile", "mix"));
    if (!mix) return usage(mix.error().message);
    cfg.mix = *mix;
    if (auto r = args->get("rate")) {
        auto v = parse_seconds("rate", *r);
        if (!v || *v <= 0) return usage("--rate must be a positive number of requests per second");
        cfg.rate = *v;
    }
    auto ramp = parse_seconds("ramp", args->get_or("ramp", "0"));
    if (!ramp) return usage(ramp.error().message);
    cfg.ramp = std::chrono::duration_cast<load::Clock::duration>(std::chrono::duration<double>(*ramp));
    if (args->has("depth")) {
        auto d = args->get_u64("depth", 1);
        if (!d || *d == 0 || *d > 1024) return usage("--depth must be 1..1024");
        cfg.depth = static_cast<uint32_t>(*d);
    }
    if (args->has("eth")) {
        auto v = args->get_u64("eth", 68);
        if (!v || *v < 68 || *v > 72) return usage("--eth must be one of 68, 69, 70, 71, 72");
        cfg.eth = *v;
    }
    if (auto t = args->get("timeout")) {
        auto v = parse_seconds("timeout", *t);
        if (!v || *v <= 0) return usage("--timeout must be a positive number of seconds");
        cfg.timeout = std::chrono::duration_cast<load::Clock::duration>(std::chrono::duration<double>(*v));
    }
    auto handshakes = args->get_u64("handshakes", 64);
    if (!handshakes || *handshakes == 0) return usage("--handshakes must be a positive number");
    cfg.max_handshakes = *handshakes;
    auto workers = args->get_u64("workers", 0);
    if (!workers || *workers > 1024) return usage("--workers must be 0..1024");
    cfg.workers = *workers;
    auto seed = args->get_u64("seed", 1);
    if (!seed) return usage(seed.error().message);
    cfg.seed = *seed;
    const std::string run_id = args->get_or("run-id", "");
    if (args->has("run-id") &&
        (run_id.empty() || run_id.size() > 64 || !std::all_of(run_id.begin(), run_id.end(), [](unsigned char c) {
             return std::isalnum(c) || c == '.' || c == '_' || c == '-';
         }))) {
        return usage(fmt::format("--run-id {}: expected 1 to 64 letters, digits, '.', '_' or '-'", run_id));
    }
    std::optional<double> start_at;  // Unix seconds
    if (auto t = args->get("start-at")) {
        const double now = wall_seconds();
        auto at = parse_wall_time("start-at", *t, now);
        if (!at) return usage(at.error().message);
        if (*at < now - 1) {
            return usage(
                fmt::format("--start-at {}: that was {:.0f} s ago; give a time every generator is started "
                            "before",
                            *t, now - *at));
        }
        if (*at > now + 86400) return usage(fmt::format("--start-at {}: more than a day from now", *t));
        start_at = *at;
    }
    if (auto b = args->get("bind")) {
        boost::system::error_code ec;
        cfg.bind = asio::ip::make_address(*b, ec);
        if (ec) return usage(fmt::format("--bind {}: not an IP address", *b));
    }
    const auto rtt_log = args->get("rtt-log");
    if (rtt_log) cfg.max_samples = kMaxRttSamples;
    std::vector<load::Threshold> thresholds;
    for (const std::string& t : args->get_all("threshold")) {
        auto th = load::parse_threshold(t);
        if (!th) return usage(th.error().message);
        thresholds.push_back(*th);
    }
    std::optional<asio::ip::tcp::endpoint> metrics_at;
    if (auto m = args->get("metrics")) {
        auto e = parse_endpoint("metrics", *m);
        if (!e) return usage(e.error().message);
        metrics_at = *e;
    }
    const auto server_url = args->get("server-metrics");
    if (server_url) {
        if (auto u = load::parse_http_url(*server_url); !u) return usage("--server-metrics " + u.error().message);
    }
    if (auto r = ensure_descriptors(cfg.clients + kSpareDescriptors, fmt::format("--clients {}", cfg.clients)); !r) {
        return fail(r.error().message);
    }

    std::unique_ptr<load::ReferenceChain> reference;
    if (const auto sources = args->get_all("chain"); !sources.empty()) {
        spdlog::info("Opening the reference chain               source={}", fmt::join(sources, ","));
        auto r = load::ReferenceChain::open(sources);
        if (!r) return fail(r.error().message);
        reference = std::move(*r);
        spdlog::info("Reference chain ready                     head={} genesis={}", reference->head(),
                     to_hex0x(reference->genesis_hash()));
        cfg.reference = reference.get();
    }
    cfg.config = reference && reference->db().config() != nullptr ? reference->db().config() : &mainnet_config();
    std::optional<synthetic::Generator> generated;  // holds the synthetic network's config
    if (args->has("synthetic")) {
        if (reference) return usage("--synthetic and --chain both name the network: give one");
        auto named = network_from_args(*args, generated);
        if (!named) return usage(named.error().message);
        cfg.config = *named;
    }

    // Metrics: the registry, served on a thread of its own.
    std::unique_ptr<metrics::Metrics> registry;
    std::unique_ptr<load::LoadMetrics> meters;
    std::unique_ptr<p2p::NetMetrics> net_meters;
    asio::io_context http_io(1);
    std::optional<metrics::HttpServer> http;
    std::thread http_thread;
    if (metrics_at) {
        registry = std::make_unique<metrics::Metrics>(kVersion, kCommit);
        std::vector<std::string> names;
        for (const auto& e : cfg.mix) names.emplace_back(e.profile->name);
        meters = std::make_unique<load::LoadMetrics>(registry->registry(), names, run_id);
        cfg.metrics = meters.get();
        net_meters = std::make_unique<p2p::NetMetrics>(registry->families());
        cfg.net_metrics = net_meters.get();
        http.emplace(http_io, registry->collectables(), std::function<metrics::Health()>{});
        if (auto r = http->listen(*metrics_at); !r) return fail(r.error().message);
        http->start();
        const auto at = http->local_endpoint();
        spdlog::info("Metrics enabled                          url=http://{}:{}/metrics", at.address().to_string(),
                     at.port());
        http_thread = std::thread([&http_io] { http_io.run(); });
    }

    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    if (start_at) {
        // Everything that can fail has been checked: the wait ends in the run.
        spdlog::info("Waiting for the start                    at={} in={:.1f}s run={}", utc_at(*start_at),
                     std::max(0.0, *start_at - wall_seconds()), run_id.empty() ? "-" : run_id);
        while (wall_seconds() < *start_at) {
            if (g_signals.load() != 0) {
                spdlog::warn("Interrupted before the start: no run, no report");
                return 130;
            }
            const double left = *start_at - wall_seconds();
            std::this_thread::sleep_for(std::chrono::duration<double>(std::clamp(left, 0.0, 0.05)));
        }
    }
    const bool tty = isatty(STDERR_FILENO) != 0;
    spdlog::info(
        "Load starting                            peers={} clients={} profile={} {} duration={}", cfg.peers.size(),
        cfg.clients, args->get_or("profile", "mix"),
        cfg.rate ? fmt::format("open loop at {:g} requests/s", *cfg.rate) : std::string("closed loop"),
        cfg.duration > load::Clock::duration::zero() ? fmt::format("{:g}s", *duration) : std::string("unbounded"));
    const double window_start = wall_seconds();
    const std::string started_at = utc_at(std::floor(window_start));
    std::optional<load::ServerSnapshot> server_before;
    if (server_url) {
        // A server that cannot be read now fails at once, before the run (exit 1).
        auto snap = load::scrape_server(*server_url, std::chrono::seconds(10));
        if (!snap) return fail("--server-metrics: " + snap.error().message);
        if (!snap->has_any()) {
            spdlog::warn(
                "--server-metrics {}: none of process_cpu_seconds_total, headerd_headers_served_total, "
                "headerd_header_requests_total, headerd_p2p_serve_seconds; the server's figures will be null",
                *server_url);
        }
        server_before = *snap;
    }
    load::Runner runner(cfg);
    const double cpu_before = cpu_seconds();
    std::thread watcher([&runner] {
        // Signals: the first ends the run cleanly, the second exits at once.
        while (g_signals.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        runner.stop();
        while (g_signals.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::_Exit(130);
    });
    watcher.detach();
    load::RunResult result = runner.run([&](const load::StatusLine& s) {
        const auto& p = s.second;
        const std::string line = fmt::format(
            "{:6.0f}s clients {:>5}  req/s {:>7}  headers/s {:>9}  {:>9}/s  p50 {:>7.2f} ms  p99 {:>8.2f} ms  "
            "in flight {:>5}  errors {}",
            s.t, s.clients, p.requests, p.headers, human_bytes(static_cast<double>(p.bytes)), p.p50_ms, p.p99_ms,
            s.in_flight, s.errors_total);
        if (tty) {
            std::fprintf(stderr, "\r%s", line.c_str());
        } else if (static_cast<int64_t>(s.t) % 10 == 0) {
            spdlog::info("Load                                     {}", line);
        }
    });
    const double cpu_used = cpu_seconds() - cpu_before;
    const double window_end = wall_seconds();
    if (tty) std::fprintf(stderr, "\n");
    if (http) {
        // HttpServer is used on its io thread only: stop it there, then its io runs out of work.
        asio::post(http_io, [&http] { http->stop(); });
        http_thread.join();
    }

    const auto checked = load::check_thresholds(result, thresholds);
    load::ReportContext ctx;
    if (server_url) {
        // The server's counters settle once the last replies are written; the run has drained.
        auto after = load::scrape_server(*server_url, std::chrono::seconds(10));
        if (!after) {
            // The run's results stand: the report is written with server_metrics null.
            spdlog::warn("--server-metrics: {}; the report has no server figures", after.error().message);
        } else {
            ctx.server_metrics = load::server_delta(*server_url, *server_before, *after);
        }
    }
    for (int i = -1; i < argc; ++i) ctx.command.emplace_back(i < 0 ? "headerd load" : argv[i]);
    ctx.command.front() = "headerd";
    ctx.command.insert(ctx.command.begin() + 1, "load");
    ctx.started_at = started_at;
    ctx.run_id = run_id;
    if (start_at) ctx.start_at = utc_at(*start_at);
    ctx.window = {window_start, window_end};
    ctx.load_cpu_seconds = cpu_used;
    ctx.seed = cfg.seed;
    ctx.clients_requested = cfg.clients;
    ctx.target_rate = cfg.rate;
    if (reference) ctx.reference = reference->description();
    ctx.network_id = cfg.config->network_id;
    ctx.genesis = cfg.config->genesis_hash;
    ctx.eth = cfg.eth;
    ctx.generator = {kVersion, kCommit, host_name()};
    const boost::json::object report = load::build_report(result, ctx, checked);

    std::fputs(load::summary_table(result).c_str(), stdout);
    const bool ok = load::verified(result);
    std::printf("verified: %s", ok ? "true" : "false");
    if (!ok) {
        std::string first = result.failures.empty() ? "no reply was received" : result.failures.front().reason;
        if (result.failures.empty() && !result.connect_errors.empty()) {
            // Nothing was answered because nothing connected: say why (e.g. another network's genesis).
            const auto most = std::max_element(result.connect_errors.begin(), result.connect_errors.end(),
                                               [](const auto& a, const auto& b) { return a.second < b.second; });
            first += fmt::format(", {} of {} connections failed: {}", result.connect_failures, result.connect_attempts,
                                 most->first);
        }
        std::printf(" (%llu failures; first: %s)", static_cast<unsigned long long>(result.failures_seen),
                    first.c_str());
    }
    std::printf("\n");
    for (const auto& f : result.failures) {
        if (&f - &result.failures.front() >= 5) break;
        std::printf("  client %llu (%s), request %s: %s\n", static_cast<unsigned long long>(f.client),
                    f.profile.c_str(), f.request.c_str(), f.reason.c_str());
    }
    if (ctx.server_metrics) {
        const auto& sm = *ctx.server_metrics;
        const auto num = [&](const char* k) {
            const auto* v = sm.if_contains(k);
            return v != nullptr && v->is_number() ? fmt::format("{:.3f}", v->to_number<double>()) : std::string("-");
        };
        const auto& serve = sm.at("serve_seconds").as_object();
        const auto q = [&](const char* k) {  // in ms
            return serve.at(k).is_number() ? fmt::format("{:.3f}", serve.at(k).to_number<double>() * 1000)
                                           : std::string("-");
        };
        std::printf("server: %s us CPU per header, %s us per request; serve time p50 %s ms, p99 %s ms\n",
                    num("cpu_us_per_header").c_str(), num("cpu_us_per_request").c_str(), q("p50").c_str(),
                    q("p99").c_str());
    }
    if (auto path = args->get("json")) {
        if (auto r = p2p::write_file_atomic(*path, boost::json::serialize(report) + "\n", 0644); !r)
            return fail(r.error().message);
        spdlog::info("Wrote the JSON report                    path={}", *path);
    }
    if (auto path = args->get("html")) {
        if (auto r = p2p::write_file_atomic(*path, load::render_html_report(report), 0644); !r)
            return fail(r.error().message);
        spdlog::info("Wrote the HTML report                    path={}", *path);
    }
    if (rtt_log) {
        std::string text;
        text.reserve(result.samples.size() * 32);
        for (const auto& x : result.samples) {
            fmt::format_to(std::back_inserter(text), "{} {} {}\n", result.profile_specs[x.profile]->name,
                           load::kMessageNames[static_cast<size_t>(x.message)], x.nanos);
        }
        if (auto r = p2p::write_file_atomic(*rtt_log, text, 0644); !r) return fail(r.error().message);
        if (result.samples_truncated) {
            spdlog::warn("--rtt-log: more replies than the {} kept; {} has the first of each worker's share",
                         kMaxRttSamples, *rtt_log);
        }
        spdlog::info("Wrote the RTT samples                    path={} samples={}", *rtt_log, result.samples.size());
    }
    bool all = true;
    for (const auto& t : checked) {
        std::printf("threshold %-24s %s (%s)\n", t.expr.c_str(), t.ok ? "ok" : "FAILED", t.value.c_str());
        all = all && t.ok;
    }
    return all ? kExitOk : kExitFailure;
}

}  // namespace headerd::node
