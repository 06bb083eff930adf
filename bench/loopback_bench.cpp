// loopback_bench: a devp2p client that measures a real `headerd serve` over loopback TCP. It starts
// the server itself (so it knows its pid), reads DATADIR/enode, and connects with the p2p library
// (p2p::ClientSession: dial, RLPx, Hello, Status, tracked requests), exactly as `headerd get` does. Figures and
// commands: docs/performance.md ("Serving over devp2p"); scripts/bench_p2p.sh runs every mode.
//
//   loopback_bench --headerd PATH --datadir DIR throughput [--rows 1x1,1x8,4x8,16x8] [--duration S]
//                  [--warmup S] [--origins all|ancient|leveldb]
//       Per row CxW: C connections, each pipelining 192-header GetBlockHeaders with W requests in
//       flight (a new request as soon as a reply arrives) for warmup + duration seconds. Counted
//       over the last `duration` seconds: headers/s, request latency (send -> reply decoded,
//       queueing behind the W-1 earlier requests included) p50/p99, server CPU (utime + stime of
//       /proc/PID/stat) and this client's CPU (getrusage).
//   loopback_bench ... requests --requests N [--rows 1x8]
//       Exactly N requests per connection, then stop (for counting server syscalls with --wrap).
//   loopback_bench ... idle [--peers 1000] [--handshakes 32] [--idle S]
//       N peers complete RLPx + Hello + Status (at most --handshakes at a time, below the server's
//       256 pending handshakes) and stay idle, answering Pings; the server's VmRSS and RssAnon
//       (/proc/PID/status) before, with N idle peers, and after each peer was served one 192-header
//       request.
//
// Common options: --max-peers N (passed to serve, default 2000), --server-log FILE (serve's
// stdout and stderr, default /dev/null), --serve-args "ARGS" (whitespace-separated arguments appended
// to the `headerd serve` command line, e.g. "--metrics 127.0.0.1:0"; no quoting), --wrap "CMD ARGS"
// (run serve under CMD, e.g. strace -f -c -o FILE; the server pid is then the wrapper's child, or the
// wrapper itself when it has none, as valgrind), --before-stop "CMD" (after the last row, with the
// server still running, run `/bin/sh -c CMD`; the benchmark fails if CMD does, e.g. to scrape the
// server's /metrics). The client is one thread (one io_context); RLIMIT_NOFILE is raised for it and
// for the server it starts.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "core/synthetic.hpp"
#include "db/chain_db.hpp"
#include "p2p/client_session.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/node_key.hpp"
#include "p2p/peer.hpp"

extern char** environ;

namespace headerd::bench {
namespace {

namespace asio = boost::asio;
using p2p::Clock;
using p2p::tcp;

constexpr uint64_t kRange = 192;
constexpr auto kReplyTimeout = std::chrono::seconds(30);
// Generous: with thousands of peers connecting at once a handshake waits its turn on the server.
constexpr auto kHandshakeTimeout = std::chrono::seconds(60);

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "loopback_bench: %s\n", what.c_str());
    std::exit(1);
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// ---- options -------------------------------------------------------------------------------------

struct Row {
    size_t connections{1};
    size_t inflight{8};
};

struct Options {
    std::string headerd;
    std::string datadir;
    std::string mode;
    std::vector<Row> rows;
    double duration{5};
    double warmup{1};
    std::string origins{"all"};
    uint64_t requests{0};
    size_t peers{1000};
    size_t handshakes{32};
    double idle{2};
    uint64_t max_peers{2000};
    std::string server_log{"/dev/null"};
    std::string serve_args;
    std::string wrap;
    std::string before_stop;
};

std::vector<Row> parse_rows(const std::string& text) {
    std::vector<Row> rows;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        const size_t x = item.find('x');
        if (x == std::string::npos) die("--rows: expected CONNECTIONSxINFLIGHT items, got " + item);
        Row r{std::stoul(item.substr(0, x)), std::stoul(item.substr(x + 1))};
        if (r.connections == 0 || r.inflight == 0) die("--rows: zero in " + item);
        rows.push_back(r);
    }
    return rows;
}

Options parse_options(int argc, char** argv) {
    Options o;
    std::string rows;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--headerd") {
            o.headerd = value();
        } else if (a == "--datadir") {
            o.datadir = value();
        } else if (a == "--rows") {
            rows = value();
        } else if (a == "--duration") {
            o.duration = std::stod(value());
        } else if (a == "--warmup") {
            o.warmup = std::stod(value());
        } else if (a == "--origins") {
            o.origins = value();
        } else if (a == "--requests") {
            o.requests = std::stoull(value());
        } else if (a == "--peers") {
            o.peers = std::stoul(value());
        } else if (a == "--handshakes") {
            o.handshakes = std::stoul(value());
        } else if (a == "--idle") {
            o.idle = std::stod(value());
        } else if (a == "--max-peers") {
            o.max_peers = std::stoull(value());
        } else if (a == "--server-log") {
            o.server_log = value();
        } else if (a == "--serve-args") {
            o.serve_args = value();
        } else if (a == "--wrap") {
            o.wrap = value();
        } else if (a == "--before-stop") {
            o.before_stop = value();
        } else if (a == "throughput" || a == "requests" || a == "idle") {
            o.mode = a;
        } else {
            die("unknown argument " + a + " (see the comment at the top of bench/loopback_bench.cpp)");
        }
    }
    if (o.headerd.empty() || o.datadir.empty() || o.mode.empty()) {
        die("usage: loopback_bench --headerd PATH --datadir DIR throughput|requests|idle [options]");
    }
    if (o.mode == "requests" && o.requests == 0) die("requests mode needs --requests N");
    if (o.origins != "all" && o.origins != "ancient" && o.origins != "leveldb") die("--origins all|ancient|leveldb");
    o.rows = parse_rows(rows.empty() ? (o.mode == "requests" ? "1x8" : "1x1,1x8,4x8,16x8") : rows);
    if (o.handshakes == 0 || o.handshakes > 200) die("--handshakes must be 1..200 (the server allows 256 pending)");
    return o;
}

// ---- the datadir ---------------------------------------------------------------------------------

struct ChainInfo {
    ChainConfig config;
    db::Head head;
    uint64_t ancient_items{0};
};

// Read before the server starts: it holds the LevelDB lock afterwards.
ChainInfo read_chain_info(const std::string& datadir) {
    db::ChainDbOptions opts;
    opts.read_only = true;
    auto opened = db::ChainDb::open(datadir, opts);
    if (!opened) die(opened.error().message);
    const db::ChainDb& chain = **opened;
    if (chain.config() == nullptr || !chain.head()) die("datadir " + datadir + " holds no chain");
    return ChainInfo{*chain.config(), *chain.head(), chain.ancient_items()};
}

// ---- the server process --------------------------------------------------------------------------

struct ProcCpu {
    double user{0};
    double system{0};
    double total() const { return user + system; }
};

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

ProcCpu proc_cpu(pid_t pid) {
    const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) die("cannot read /proc/" + std::to_string(pid) + "/stat");
    std::stringstream in(stat.substr(paren + 2));
    std::string field;
    for (int i = 3; i < 14; ++i) in >> field;  // fields 3..13: state .. cmajflt
    unsigned long long utime = 0;
    unsigned long long stime = 0;
    in >> utime >> stime;
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    return ProcCpu{static_cast<double>(utime) / tick, static_cast<double>(stime) / tick};
}

// A "Name:   1234 kB" line of /proc/PID/status, in KiB.
uint64_t proc_status_kib(pid_t pid, const std::string& name) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(name + ":", 0) == 0) return std::stoull(line.substr(name.size() + 1));
    }
    die("no " + name + " in /proc/" + std::to_string(pid) + "/status");
}

std::string proc_max_open_files(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("Max open files", 0) == 0) {
            std::stringstream s(line.substr(14));
            std::string soft;
            s >> soft;
            return soft;
        }
    }
    return "?";
}

double client_cpu() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Raises the soft RLIMIT_NOFILE to at least `want` (up to the hard limit); the server inherits it.
void raise_nofile(rlim_t want) {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) != 0) die("getrlimit failed");
    if (r.rlim_cur >= want) return;
    r.rlim_cur = std::min(want, r.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) die("setrlimit failed");
    if (r.rlim_cur < want) {
        std::fprintf(stderr, "loopback_bench: RLIMIT_NOFILE hard limit %llu is below %llu\n",
                     static_cast<unsigned long long>(r.rlim_max), static_cast<unsigned long long>(want));
    }
}

class ServerProcess {
  public:
    explicit ServerProcess(const Options& o) {
        const std::string enode_path = (std::filesystem::path(o.datadir) / "enode").string();
        std::error_code ec;
        std::filesystem::remove(enode_path, ec);
        std::vector<std::string> args;
        std::stringstream wrap(o.wrap);
        for (std::string w; wrap >> w;) args.push_back(w);
        wrapped_ = !args.empty();
        for (const char* a :
             {o.headerd.c_str(), "serve", "--datadir", o.datadir.c_str(), "--listen", "127.0.0.1:0", "--max-peers"}) {
            args.emplace_back(a);
        }
        args.push_back(std::to_string(o.max_peers));
        std::stringstream extra(o.serve_args);
        for (std::string a; extra >> a;) args.push_back(a);
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, o.server_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                         0644);
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
        const int rc = posix_spawnp(&spawned_, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) die(std::string("cannot start ") + argv[0] + ": " + std::strerror(rc));
        running_ = true;

        const auto deadline = Clock::now() + std::chrono::seconds(60);
        while (enode_.empty()) {
            int status = 0;
            if (waitpid(spawned_, &status, WNOHANG) == spawned_) {
                running_ = false;
                die("headerd serve exited before writing " + enode_path + " (log: " + o.server_log + ")");
            }
            if (std::filesystem::exists(enode_path, ec)) {
                std::string line = read_text(enode_path);
                while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
                enode_ = line;
            }
            if (Clock::now() > deadline) die("headerd serve did not write " + enode_path + " within 60 s");
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        // Once serve has written its enode, a forking wrapper (strace) has forked it; a wrapper that
        // runs it in its own process (valgrind) has no child.
        pid_ = spawned_;
        if (wrapped_) {
            if (const pid_t child = first_child(spawned_); child != 0) pid_ = child;
        }
        auto parsed = p2p::parse_enode(enode_);
        if (!parsed) die("enode " + enode_ + ": " + parsed.error().message);
        endpoint_ = tcp::endpoint(asio::ip::make_address(parsed->host), parsed->port);
        key_.emplace(parsed->key);
    }
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;
    ~ServerProcess() { stop(); }

    pid_t pid() const noexcept { return pid_; }
    const std::string& enode() const noexcept { return enode_; }
    const tcp::endpoint& endpoint() const noexcept { return endpoint_; }
    const rlpx::PublicKey& key() const noexcept { return *key_; }

    // SIGTERM to headerd (not to a wrapper, which exits with it), then wait; SIGKILL after 20 s.
    void stop() {
        if (!running_) return;
        running_ = false;
        kill(pid_, SIGTERM);
        int status = 0;
        for (int i = 0; i < 400; ++i) {
            if (waitpid(spawned_, &status, WNOHANG) == spawned_) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        std::fprintf(stderr, "loopback_bench: server %d still running 20 s after SIGTERM; killing it\n", pid_);
        kill(pid_, SIGKILL);
        if (pid_ != spawned_) kill(spawned_, SIGKILL);
        waitpid(spawned_, &status, 0);
    }

  private:
    static pid_t first_child(pid_t parent) {
        const std::string text =
            read_text("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
        std::stringstream s(text);
        long child = 0;
        return s >> child ? static_cast<pid_t>(child) : 0;
    }

    pid_t spawned_{0};
    pid_t pid_{0};
    bool wrapped_{false};
    bool running_{false};
    std::string enode_;
    tcp::endpoint endpoint_;
    std::optional<rlpx::PublicKey> key_;
};

// Runs `/bin/sh -c command` with this process's stdout and stderr and waits for it; its exit status.
int run_shell(const std::string& command) {
    std::string sh = "/bin/sh";
    std::string flag = "-c";
    std::string text = command;
    std::array<char*, 4> argv{sh.data(), flag.data(), text.data(), nullptr};
    pid_t pid = 0;
    if (const int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ); rc != 0) {
        die("cannot start /bin/sh: " + std::string(std::strerror(rc)));
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) die("waitpid failed for /bin/sh -c " + command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// ---- client connections --------------------------------------------------------------------------

struct Peer {
    std::optional<rlpx::PrivateKey> key;  // one node id per connection: the server refuses duplicates
    p2p::LocalNode local;
    std::shared_ptr<p2p::ClientSession> session;
};

// `local` without a key: each peer gets a fresh one. REQUIRES: `peer` does not move while connected.
asio::awaitable<void> connect_peer(Peer& peer, const ServerProcess& server, const p2p::LocalNode& local) {
    auto key = rlpx::PrivateKey::generate();
    if (!key) throw std::runtime_error("cannot generate a key");
    peer.key.emplace(*key);
    peer.local = local;
    peer.local.key = &*peer.key;
    p2p::ClientOptions options;
    options.limits.handshake = kHandshakeTimeout;
    options.request_timeout = kReplyTimeout;
    const p2p::Enode enode{server.key(), server.endpoint().address().to_string(), server.endpoint().port()};
    peer.session = co_await p2p::ClientSession::connect(enode, peer.local, options);
}

asio::awaitable<void> sleep_for(Clock::duration d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

// Polls `done` every 5 ms; false after `timeout`.
asio::awaitable<bool> wait_until(const std::function<bool()>& done, Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!done()) {
        if (Clock::now() > deadline) co_return false;
        co_await sleep_for(std::chrono::milliseconds(5));
    }
    co_return true;
}

// Counts coroutines still running and keeps the first error.
struct Group {
    size_t running{0};
    std::string error;

    template <class Awaitable>
    void spawn(asio::io_context& io, Awaitable a) {
        ++running;
        asio::co_spawn(io, std::move(a), [this](std::exception_ptr e) {
            --running;
            if (!e || !error.empty()) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                error = ex.what();
            }
        });
    }
};

// Where request origins are drawn from, uniformly: [lo, hi].
struct OriginRange {
    uint64_t lo{0};
    uint64_t hi{0};
};

OriginRange origin_range(const Options& o, const ChainInfo& chain) {
    const uint64_t last = chain.head.number + 1 - kRange;  // the last origin with a full range
    if (o.origins == "ancient") return {0, chain.ancient_items - kRange};
    if (o.origins == "leveldb") return {chain.ancient_items, last};
    return {0, last};
}

// One 192-header request through the session (which matched the reply to it by id and checked
// every header's RLP); checks the count and the first and last block numbers.
asio::awaitable<size_t> fetch_range(Peer& peer, uint64_t origin) {
    eth::GetBlockHeadersRequest req;
    req.origin = eth::HashOrNumber::of(origin);
    req.amount = kRange;
    auto reply = co_await peer.session->request(req);
    if (!reply) throw std::runtime_error("request: " + reply.error().message);
    if (reply->headers.size() != kRange) {
        throw std::runtime_error("reply holds " + std::to_string(reply->headers.size()) + " headers");
    }
    auto first = peek_header(reply->headers.front());
    auto last = peek_header(reply->headers.back());
    if (!first || !last || first->number != origin || last->number != origin + kRange - 1) {
        throw std::runtime_error("reply holds other blocks than asked");
    }
    co_return reply->headers.size();
}

// ---- throughput ----------------------------------------------------------------------------------

struct Sample {
    Clock::time_point when;
    ProcCpu server;
    double client{0};
};

Sample take_sample(const ServerProcess& server) { return Sample{Clock::now(), proc_cpu(server.pid()), client_cpu()}; }

struct LoadState {
    // Requests are sent while now < stop_sending (duration mode) or until `requests` per connection.
    Clock::time_point stop_sending;
    uint64_t requests{0};
    std::optional<Sample> window_start;  // set by the sampler; replies count once it is set
    std::optional<Sample> window_end;
    uint64_t replies{0};
    uint64_t headers{0};
    std::vector<double> latencies_ms;
};

bool in_window(const LoadState& s) { return s.window_start.has_value() && !s.window_end.has_value(); }

// One of the W request loops of a connection: a new request as soon as its reply is checked.
asio::awaitable<void> load_loop(Peer& peer, OriginRange range, uint64_t seed, LoadState& s, uint64_t& sent) {
    synthetic::Rng rng(seed);
    const auto more = [&] { return s.requests > 0 ? sent < s.requests : Clock::now() < s.stop_sending; };
    while (more()) {
        ++sent;
        const uint64_t origin = range.lo + rng.below(range.hi - range.lo + 1);
        const auto start = Clock::now();
        const size_t headers = co_await fetch_range(peer, origin);
        if (s.requests > 0 || in_window(s)) {
            ++s.replies;
            s.headers += headers;
            s.latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        }
    }
}

double percentile(std::vector<double>& v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

asio::awaitable<void> close_all(std::vector<Peer>& peers) {
    for (Peer& p : peers) {
        if (p.session) co_await p.session->close();
    }
}

asio::awaitable<void> throughput(asio::io_context& io, const Options& o, const ChainInfo& chain,
                                 const ServerProcess& server, const p2p::LocalNode& local, int& rc) {
    const OriginRange range = origin_range(o, chain);
    const bool timed = o.mode == "throughput";
    std::printf("%5s %8s %9s %12s %8s %8s %9s %12s %11s %10s %10s\n", "conns", "inflight", "requests", "headers/s",
                "p50 ms", "p99 ms", "server %", "server us/h", "srv usr/sys", "server us/req", "client %");
    for (const Row& row : o.rows) {
        std::vector<Peer> peers(row.connections);
        for (Peer& p : peers) co_await connect_peer(p, server, local);
        LoadState s;
        s.requests = timed ? 0 : o.requests;
        const auto start = Clock::now();
        const auto window_start =
            start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timed ? o.warmup : 0));
        const auto window_end =
            window_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration));
        s.stop_sending = window_end;
        if (!timed) s.window_start = take_sample(server);
        Group load;
        std::vector<uint64_t> sent(peers.size(), 0);  // requests per connection (requests mode)
        for (size_t i = 0; i < peers.size(); ++i) {
            for (size_t w = 0; w < row.inflight; ++w) {
                load.spawn(io, load_loop(peers[i], range, 1000 * (1000 * row.connections + i) + w, s, sent[i]));
            }
        }
        if (timed) {
            asio::steady_timer timer(io);
            timer.expires_at(window_start);
            co_await timer.async_wait(asio::use_awaitable);
            s.window_start = take_sample(server);
            timer.expires_at(window_end);
            co_await timer.async_wait(asio::use_awaitable);
            s.window_end = take_sample(server);
        }
        if (!co_await wait_until([&] { return load.running == 0; }, std::chrono::seconds(120))) {
            throw std::runtime_error("requests did not finish within 120 s");
        }
        if (!timed) s.window_end = take_sample(server);
        if (!load.error.empty()) throw std::runtime_error("load: " + load.error);
        co_await close_all(peers);

        const double wall = seconds_between(s.window_start->when, s.window_end->when);
        const double server_cpu = s.window_end->server.total() - s.window_start->server.total();
        const double server_user = s.window_end->server.user - s.window_start->server.user;
        const double server_sys = s.window_end->server.system - s.window_start->server.system;
        const double client = s.window_end->client - s.window_start->client;
        const double headers = static_cast<double>(s.headers);
        const double p50 = percentile(s.latencies_ms, 0.50);
        const double p99 = percentile(s.latencies_ms, 0.99);
        char split[32];
        std::snprintf(split, sizeof split, "%.0f/%.0f", 100 * server_user / std::max(server_cpu, 1e-9),
                      100 * server_sys / std::max(server_cpu, 1e-9));
        std::printf("%5zu %8zu %9llu %12.0f %8.3f %8.3f %9.1f %12.3f %11s %10.1f %10.1f\n", row.connections,
                    row.inflight, static_cast<unsigned long long>(s.replies), headers / wall, p50, p99,
                    100 * server_cpu / wall, 1e6 * server_cpu / std::max(headers, 1.0), split,
                    1e6 * server_cpu / std::max(static_cast<double>(s.replies), 1.0), 100 * client / wall);
        std::fflush(stdout);
    }
    rc = 0;
}

// ---- idle peers ----------------------------------------------------------------------------------

struct IdleState {
    bool wake{false};     // set before the sockets are cancelled: leave the idle read, send a request
    bool closing{false};  // set before the sockets are closed
    size_t established{0};
    size_t served{0};
    uint64_t pings{0};
};

// An idle peer: connected, its session answering the server's Pings, until `wake`; then one request.
asio::awaitable<void> idle_peer(Peer& peer, IdleState& s, uint64_t origin) {
    if (!co_await wait_until([&] { return s.wake || peer.session->closed(); }, std::chrono::hours(24))) co_return;
    if (peer.session->closed())
        throw std::runtime_error(std::string("idle peer dropped: ") + peer.session->error()->what());
    (void)co_await fetch_range(peer, origin);
    ++s.served;
}

// What the connectors share. Outlives them (idle() waits for them).
struct IdleJob {
    asio::io_context& io;
    std::vector<Peer>& peers;
    size_t& next;
    IdleState& state;
    Group& idlers;
    const ServerProcess& server;
    const p2p::LocalNode& local;
    OriginRange range;
    synthetic::Rng& rng;
};

// Connects the next peer that nobody connects yet, until none is left; each one then idles.
asio::awaitable<void> connector(IdleJob& job) {
    while (job.next < job.peers.size()) {
        Peer& p = job.peers[job.next++];
        co_await connect_peer(p, job.server, job.local);
        ++job.state.established;
        job.idlers.spawn(job.io,
                         idle_peer(p, job.state, job.range.lo + job.rng.below(job.range.hi - job.range.lo + 1)));
    }
}

asio::awaitable<void> idle(asio::io_context& io, const Options& o, const ChainInfo& chain, const ServerProcess& server,
                           const p2p::LocalNode& local, int& rc) {
    const OriginRange range = origin_range(o, chain);
    co_await sleep_for(std::chrono::milliseconds(500));
    const uint64_t rss0 = proc_status_kib(server.pid(), "VmRSS");
    const uint64_t anon0 = proc_status_kib(server.pid(), "RssAnon");
    const ProcCpu cpu0 = proc_cpu(server.pid());
    std::vector<Peer> peers(o.peers);
    IdleState s;
    Group idlers;
    Group connectors;
    size_t next = 0;
    synthetic::Rng rng(7);
    const auto start = Clock::now();
    IdleJob job{io, peers, next, s, idlers, server, local, range, rng};
    for (size_t c = 0; c < o.handshakes; ++c) connectors.spawn(io, connector(job));
    if (!co_await wait_until([&] { return connectors.running == 0; }, std::chrono::seconds(120))) {
        throw std::runtime_error("connecting did not finish within 120 s");
    }
    if (!connectors.error.empty()) throw std::runtime_error("connect: " + connectors.error);
    const double connect_wall = seconds_between(start, Clock::now());
    const ProcCpu cpu1 = proc_cpu(server.pid());
    // Let the server finish with the last Status messages, then measure while everyone is idle.
    co_await sleep_for(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.idle)));
    if (!idlers.error.empty()) throw std::runtime_error("idle peer: " + idlers.error);
    const uint64_t rss1 = proc_status_kib(server.pid(), "VmRSS");
    const uint64_t anon1 = proc_status_kib(server.pid(), "RssAnon");
    const double idle_after = seconds_between(start, Clock::now());

    s.wake = true;
    if (!co_await wait_until([&] { return s.served == peers.size() || !idlers.error.empty(); },
                             std::chrono::seconds(120))) {
        throw std::runtime_error("requests did not finish within 120 s");
    }
    if (!idlers.error.empty()) throw std::runtime_error("idle peer: " + idlers.error);
    co_await sleep_for(std::chrono::milliseconds(500));
    const uint64_t rss2 = proc_status_kib(server.pid(), "VmRSS");
    const uint64_t anon2 = proc_status_kib(server.pid(), "RssAnon");

    s.closing = true;
    for (const Peer& p : peers) s.pings += p.session->stats().pings;
    co_await close_all(peers);
    (void)co_await wait_until([&] { return idlers.running == 0; }, std::chrono::seconds(10));

    const double n = static_cast<double>(peers.size());
    std::printf("peers established:            %zu (RLPx + Hello + Status), %zu at a time\n", s.established,
                o.handshakes);
    std::printf("connect phase:                %.2f s wall, server CPU %.2f s = %.3f ms per peer\n", connect_wall,
                cpu1.total() - cpu0.total(), 1e3 * (cpu1.total() - cpu0.total()) / n);
    std::printf("server VmRSS before:          %llu KiB (RssAnon %llu KiB)\n", static_cast<unsigned long long>(rss0),
                static_cast<unsigned long long>(anon0));
    std::printf("server VmRSS, peers idle:     %llu KiB (RssAnon %llu KiB), %.1f s after the first connect\n",
                static_cast<unsigned long long>(rss1), static_cast<unsigned long long>(anon1), idle_after);
    std::printf("per idle peer:                %.1f KiB VmRSS, %.1f KiB RssAnon\n",
                static_cast<double>(rss1 - rss0) / n, static_cast<double>(anon1 - anon0) / n);
    std::printf("server VmRSS, each served once: %llu KiB (RssAnon %llu KiB)\n", static_cast<unsigned long long>(rss2),
                static_cast<unsigned long long>(anon2));
    std::printf("per peer served once:         %.1f KiB VmRSS, %.1f KiB RssAnon (one 192-header reply each)\n",
                static_cast<double>(rss2 - rss0) / n, static_cast<double>(anon2 - anon0) / n);
    std::printf("pings answered:               %llu\n", static_cast<unsigned long long>(s.pings));
    rc = 0;
}

}  // namespace
}  // namespace headerd::bench

int main(int argc, char** argv) {
    using namespace headerd;
    using namespace headerd::bench;
    const Options o = parse_options(argc, argv);
    const ChainInfo chain = read_chain_info(o.datadir);
    if (chain.head.number + 1 < kRange || chain.ancient_items < kRange ||
        chain.head.number + 1 - chain.ancient_items < kRange) {
        die("the datadir needs at least 192 headers in each store");
    }
    raise_nofile(o.mode == "idle" ? 2 * o.peers + 512 : 4096);
    signal(SIGPIPE, SIG_IGN);

    p2p::LocalNode local;  // the key is set per connection
    local.client_id = "loopback_bench";
    local.config = &chain.config;
    local.head = chain.head;

    ServerProcess server(o);
    std::printf("server: pid %d, %s, max open files %s, head %llu, blocks [0, %llu) ancient, origins %s\n",
                static_cast<int>(server.pid()), server.enode().substr(0, 24).c_str(),
                proc_max_open_files(server.pid()).c_str(), static_cast<unsigned long long>(chain.head.number),
                static_cast<unsigned long long>(chain.ancient_items), o.origins.c_str());
    if (!o.serve_args.empty()) std::printf("server: serve args %s\n", o.serve_args.c_str());
    std::fflush(stdout);

    asio::io_context io(1);
    int rc = 1;
    std::string error;
    auto done = [&](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            error = ex.what();
        }
    };
    if (o.mode == "idle") {
        asio::co_spawn(io, idle(io, o, chain, server, local, rc), done);
    } else {
        asio::co_spawn(io, throughput(io, o, chain, server, local, rc), done);
    }
    io.run();
    if (error.empty() && rc == 0 && !o.before_stop.empty()) {
        std::fflush(stdout);
        if (const int status = run_shell(o.before_stop); status != 0) {
            error = "--before-stop command exited with status " + std::to_string(status);
        }
    }
    server.stop();
    if (!error.empty()) {
        std::fprintf(stderr, "loopback_bench: %s\n", error.c_str());
        return 1;
    }
    return rc;
}
