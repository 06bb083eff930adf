#include "node/common.hpp"

#include <unistd.h>

#include <sys/resource.h>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string_view>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "node/commands.hpp"
#include "node/config.hpp"
#include "node/logging.hpp"

namespace headerd::node {

const char* const kVersion = HEADERD_VERSION;
const char* const kClientId = "headerd/v" HEADERD_VERSION;
namespace {

// Set while command_specs() runs a command only to learn its spec: start() stores it here.
thread_local CommandSpec* describing = nullptr;

}  // namespace

OptionSpec datadir_option() { return {"datadir", "DIR", "data directory (chaindata/, nodekey, enode)", "", true}; }
OptionSpec verbosity_option() { return {"verbosity", "N", "log level: 0 silent .. 3 info .. 5 trace", "3", false}; }

std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown";
    return name;
}

int fail(const std::string& message) {
    spdlog::error("{}", message);
    return kExitFailure;
}

CommandSpec with_common_options(CommandSpec spec) {
    const auto add = [&spec](OptionSpec option) {
        for (const auto& o : spec.options) {
            if (o.name == option.name) return;
        }
        spec.options.push_back(std::move(option));
    };
    add({"config", "FILE", "read options from a TOML file; options given here override it", "", false});
    add({"log.json", "", "log to stderr as JSON lines instead of text", "", false});
    return spec;
}

std::optional<Args> start(const CommandSpec& command_spec, int argc, char** argv, int* code) {
    CommandSpec spec = with_common_options(command_spec);
    if (describing != nullptr) {
        *describing = std::move(spec);
        *code = kExitOk;
        return std::nullopt;
    }
    const auto usage_error = [code](const std::string& message) {
        std::fprintf(stderr, "error: %s\n", message.c_str());
        *code = kExitUsage;
        return std::nullopt;
    };
    auto args = parse_command_line(spec, argc, argv);
    if (!args) return usage_error(args.error().message);
    if (args->help()) {
        std::fputs(help_text(spec).c_str(), stdout);
        *code = kExitOk;
        return std::nullopt;
    }
    // The file fills in what the command line left out, before required options are checked: a
    // datadir may come from either.
    if (auto path = args->get("config")) {
        auto values = load_config(*path, spec, command_specs());
        if (!values) return usage_error(values.error().message);
        args->merge_defaults(*values);
    }
    if (auto r = check_required(spec, *args); !r) return usage_error(r.error().message);
    auto verbosity = args->get_u64("verbosity", 3);
    if (!verbosity || *verbosity > 5) return usage_error("--verbosity must be 0..5");
    (void)setup_logging(static_cast<int>(*verbosity), args->has("log.json"));
    return std::move(*args);
}

std::vector<CommandSpec> command_specs() {
    std::vector<CommandSpec> specs;
    for (const Command& c : kCommands) {
        CommandSpec spec;
        describing = &spec;
        char* no_args[] = {nullptr};
        try {
            (void)c.run(0, no_args);
        } catch (...) {
            describing = nullptr;
            throw;
        }
        describing = nullptr;
        specs.push_back(std::move(spec));
    }
    return specs;
}

db::ProgressFn progress_fn(Progress& p) {
    return [&p](std::string_view, uint64_t done, uint64_t total) { p.update(done, total); };
}

// HOST:PORT with a numeric host (IPv4, or [IPv6]); PORT or :PORT alone means loopback, so that
// nothing is exposed beyond the machine unless asked for; port 0 picks a free port. Errors name
// `option`.
Outcome<boost::asio::ip::tcp::endpoint> parse_endpoint(const std::string& option, const std::string& text) {
    const size_t colon = text.rfind(':');
    std::string host = colon == std::string::npos ? "" : text.substr(0, colon);
    if (host.empty()) host = "127.0.0.1";
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    auto port = parse_u64(colon == std::string::npos ? text : text.substr(colon + 1));
    if (!port || *port > 65535) return make_error(fmt::format("--{} {}: bad port", option, text));
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(host, ec);
    if (ec) return make_error(fmt::format("--{} {}: '{}' is not an IP address", option, text, host));
    return boost::asio::ip::tcp::endpoint(address, static_cast<uint16_t>(*port));
}

// Raises RLIMIT_NOFILE's soft limit to what `needed` descriptors take, as far as the hard limit
// allows; an error names the limit and both ways out when the hard limit is too low.
Outcome<void> ensure_descriptors(uint64_t needed, const std::string& why) {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return make_error("getrlimit(RLIMIT_NOFILE) failed");
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= needed) return {};
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
        return make_error(
            fmt::format("{} needs {} file descriptors but the hard limit RLIMIT_NOFILE is {}; raise it "
                        "(ulimit -Hn, or LimitNOFILE= in a systemd unit) or lower --max-peers",
                        why, needed, limit.rlim_max));
    }
    const rlim_t old = limit.rlim_cur;
    limit.rlim_cur = needed;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return make_error("setrlimit(RLIMIT_NOFILE) failed");
    spdlog::info("Raised the open file limit                old={} new={}", old, needed);
    return {};
}

Outcome<std::unique_ptr<db::ChainDb>> open_existing(const std::string& datadir, bool read_only, size_t cache_bytes) {
    db::ChainDbOptions opts;
    opts.read_only = read_only;
    if (cache_bytes != 0) opts.leveldb_cache_bytes = cache_bytes;
    return db::ChainDb::open(datadir, opts);
}

Outcome<std::vector<p2p::Enode>> parse_enodes(const Args& args, const std::string& name) {
    std::vector<p2p::Enode> out;
    for (const std::string& text : args.get_all(name)) {
        auto enode = p2p::parse_enode(text);
        if (!enode) return make_error(fmt::format("--{} {}: {}", name, text, enode.error().message));
        if (enode->port == 0) return make_error(fmt::format("--{} {}: TCP port 0, a discovery-only node", name, text));
        out.push_back(*enode);
    }
    return out;
}

Outcome<double> parse_seconds(const std::string& option, const std::string& text) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(v >= 0) || v > 1e7) {
        return make_error(fmt::format("--{} {}: expected seconds (a number >= 0)", option, text));
    }
    return v;
}

Outcome<double> parse_wall_time(const std::string& option, const std::string& text, double now) {
    const auto bad = [&] {
        return make_error(
            fmt::format("--{} {}: expected a UTC time as 2026-12-05T10:00:00Z, seconds since 1970 (1796464800), or "
                        "+SECONDS from now",
                        option, text));
    };
    if (!text.empty() && text[0] == '+') {
        auto s = parse_seconds(option, text.substr(1));
        if (!s) return bad();
        return now + *s;
    }
    if (text.find('T') == std::string::npos) {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !(v >= 0) || v > 1e11) return bad();
        return v;
    }
    std::tm tm{};
    const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (rest == nullptr) return bad();
    double fraction = 0;
    if (*rest == '.') {
        char* end = nullptr;
        fraction = std::strtod(rest, &end);
        rest = end;
    }
    if (std::string_view(rest) != "Z") return bad();
    return static_cast<double>(timegm(&tm)) + fraction;
}

OptionSpec network_option(const std::string& help) { return {"network", "NAME", help, "mainnet", false}; }

OptionSpec synthetic_option() {
    return {"synthetic", "N[:SEED]", "the network of `headerd generate --count N --seed SEED` (default seed 1)", "",
            false};
}

Outcome<const ChainConfig*> network_from_args(const Args& args, std::optional<synthetic::Generator>& holder) {
    if (auto text = args.get("synthetic")) {
        if (args.has("network")) return make_error("--synthetic and --network both name the network: give one");
        const size_t colon = text->find(':');
        auto count = parse_u64(text->substr(0, colon));
        auto seed = colon == std::string::npos ? Outcome<uint64_t>(uint64_t{1}) : parse_u64(text->substr(colon + 1));
        if (!count || *count == 0 || !seed)
            return make_error(fmt::format("--synthetic {}: expected N or N:SEED", *text));
        holder.emplace(*count, *seed);
        return &holder->config();
    }
    const std::string name = args.get_or("network", "mainnet");
    const ChainConfig* config = named_config(name);
    if (config == nullptr) {
        return make_error(
            fmt::format("--network {}: unknown network (mainnet, sepolia, or --synthetic N[:SEED] for a chain "
                        "of headerd generate)",
                        name));
    }
    return config;
}

namespace {

// A signal set for SIGINT and SIGTERM on an io_context that is never run: while it exists asio
// keeps its handler for the two signals. Made once and never destroyed, on purpose.
void keep_stop_signals_caught() {
    static auto* const io = new boost::asio::io_context(1);
    static auto* const set = new boost::asio::signal_set(*io, SIGINT, SIGTERM);
    (void)set;
}

}  // namespace

StopSignals::StopSignals(boost::asio::io_context& io) : set_(io, SIGINT, SIGTERM) { keep_stop_signals_caught(); }

}  // namespace headerd::node
