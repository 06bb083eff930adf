// loopback_bench: a devp2p client that measures a real `headerd serve` over loopback TCP. It starts
// the server itself (so it knows its pid), reads DATADIR/enode, and connects with the p2p library
// (p2p::ClientSession: dial, RLPx, Hello, Status, tracked requests), exactly as `headerd get` does. Figures and
// commands: docs/performance.md ("Serving over devp2p", "Workers, memory and handshake storms");
// scripts/bench_p2p.sh runs every mode.
//
//   loopback_bench --headerd PATH --datadir DIR throughput [--rows 1x1,1x8,4x8,16x8] [--duration S]
//                  [--warmup S] [--origins all|ancient|leveldb]
//       Per row CxW: C connections, each pipelining 192-header GetBlockHeaders with W requests in
//       flight (a new request as soon as a reply arrives) for warmup + duration seconds. Counted
//       over the last `duration` seconds: headers/s, request latency (send -> reply decoded,
//       queueing behind the W-1 earlier requests included) p50/p99, server CPU (utime + stime of
//       /proc/PID/stat, every thread), this client's CPU (getrusage), and the fewest and most
//       requests answered on one connection (equal when the server is fair). Each row prints the
//       server's worker count and the 1-minute load average when the row started.
//   loopback_bench ... requests --requests N [--rows 1x8]
//       Exactly N requests per connection, then stop (for counting server syscalls with --wrap).
//   loopback_bench ... idle [--peers 1000] [--handshakes 64] [--idle S]
//       N peers complete RLPx + Hello + Status (at most --handshakes at a time) and stay idle, their
//       sessions answering Pings; the server's VmRSS and RssAnon (/proc/PID/status) before, with N
//       idle peers, and after each peer was served one 192-header request (all at once).
//   loopback_bench ... storm --peers N [--handshakes K] [--baseline S] [--after S]
//       One established peer requests 192-header ranges continuously (one in flight) on this
//       thread and records every request's latency. After 1 s of warm-up and --baseline seconds,
//       N new peers connect from a second client thread, K at a time (default: all N at once),
//       each doing RLPx + Hello + Status and then staying idle. Reported: the wall time until all N
//       are established, failed attempts (each retried) and peers given up, the established peer's
//       latency p50/p99/max before, during and --after seconds after the storm, and the server's
//       CPU per handshake: its CPU during the storm minus the established peer's requests at the
//       baseline's cost per request, all in the same run. --samples FILE writes every request of the
//       established peer (seconds from the storm's start, latency in ms).
//
// Connecting (idle, storm): every attempt that fails (TCP, RLPx, Hello or Status, within
// --handshake-timeout, default 120 s) is counted by its kind and retried with a new node key, at
// most --attempts times per peer (default 5); a peer that fails every attempt is counted as given
// up, and the figures are per established peer.
//
// Common options: --workers N (serve's worker threads; default one per core of this machine,
// always passed to serve explicitly), --max-peers N (passed to serve; default 2000, or peers + 100
// when that is more), --server-log FILE (serve's stdout and stderr, default /dev/null),
// --serve-args "ARGS" (whitespace-separated arguments appended to the `headerd serve` command line,
// e.g. "--metrics 127.0.0.1:0 --max-pending 64"; no quoting), --wrap "CMD ARGS" (run serve under
// CMD, e.g. strace -f -c -o FILE; the server pid is then the wrapper's child, or the wrapper itself
// when it has none, as valgrind), --before-stop "CMD" (after the last row, with the server still
// running, run `/bin/sh -c CMD`; the benchmark fails if CMD does, e.g. to scrape the server's
// /metrics). The client is one thread (one io_context), plus the storm's connecting thread;
// RLIMIT_NOFILE is raised for it (serve raises its own from --max-peers).

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "core/synthetic.hpp"
#include "db/chain_db.hpp"
#include "p2p/client_session.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/peer.hpp"
#include "p2p/peer_error.hpp"
#include "p2p/worker.hpp"

extern char** environ;

namespace headerd::bench {
namespace {

namespace asio = boost::asio;
using p2p::Clock;
using p2p::tcp;

constexpr uint64_t kRange = 192;
constexpr auto kReplyTimeout = std::chrono::seconds(30);

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "loopback_bench: %s\n", what.c_str());
    std::exit(1);
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
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
    size_t handshakes{0};  // 0: the mode's default (idle 64, storm all peers)
    double idle{2};
    double baseline{3};
    double after{2};
    double handshake_timeout{120};
    unsigned attempts{5};
    size_t workers{0};      // 0: one per core
    uint64_t max_peers{0};  // 0: the mode's default
    std::string server_log{"/dev/null"};
    std::string serve_args;
    std::string wrap;
    std::string before_stop;
    std::string samples;  // storm: every request of the established peer, one line each
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
        } else if (a == "--baseline") {
            o.baseline = std::stod(value());
        } else if (a == "--after") {
            o.after = std::stod(value());
        } else if (a == "--handshake-timeout") {
            o.handshake_timeout = std::stod(value());
        } else if (a == "--attempts") {
            o.attempts = static_cast<unsigned>(std::stoul(value()));
        } else if (a == "--workers") {
            o.workers = std::stoul(value());
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
        } else if (a == "--samples") {
            o.samples = value();
        } else if (a == "throughput" || a == "requests" || a == "idle" || a == "storm") {
            o.mode = a;
        } else {
            die("unknown argument " + a + " (see the comment at the top of bench/loopback_bench.cpp)");
        }
    }
    if (o.headerd.empty() || o.datadir.empty() || o.mode.empty()) {
        die("usage: loopback_bench --headerd PATH --datadir DIR throughput|requests|idle|storm [options]");
    }
    if (o.mode == "requests" && o.requests == 0) die("requests mode needs --requests N");
    if (o.origins != "all" && o.origins != "ancient" && o.origins != "leveldb") die("--origins all|ancient|leveldb");
    o.rows = parse_rows(rows.empty() ? (o.mode == "requests" ? "1x8" : "1x1,1x8,4x8,16x8") : rows);
    const bool many = o.mode == "idle" || o.mode == "storm";
    if (many && o.peers == 0) die("--peers must be positive");
    if (o.handshakes == 0) o.handshakes = o.mode == "storm" ? o.peers : 64;
    if (many && o.handshakes > o.peers) o.handshakes = o.peers;
    if (o.attempts == 0) die("--attempts must be positive");
    if (o.handshake_timeout <= 0) die("--handshake-timeout must be positive");
    if (o.workers == 0) o.workers = p2p::WorkerPool::default_size();
    // Every peer, plus the storm's established one, must fit below serve's --max-peers.
    const uint64_t needed = many ? o.peers + 1 : 1;
    if (o.max_peers == 0) o.max_peers = std::max<uint64_t>(2000, needed + 99);
    if (o.max_peers < needed) {
        die("--max-peers " + std::to_string(o.max_peers) + " is below the " + std::to_string(needed) +
            " peers this run connects");
    }
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

double rusage_seconds(int who) {
    rusage u{};
    getrusage(who, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// This process (every thread), and the calling thread alone.
double client_cpu() { return rusage_seconds(RUSAGE_SELF); }
double thread_cpu() { return rusage_seconds(RUSAGE_THREAD); }

// TcpExt counters of /proc/net/netstat (the whole machine's, not only this benchmark's).
std::map<std::string, uint64_t> tcp_ext() {
    std::ifstream in("/proc/net/netstat");
    std::map<std::string, uint64_t> out;
    std::string names;
    std::string values;
    while (std::getline(in, names) && std::getline(in, values)) {
        if (names.rfind("TcpExt:", 0) != 0) continue;
        std::stringstream n(names.substr(7));
        std::stringstream v(values.substr(7));
        std::string name;
        uint64_t value = 0;
        while (n >> name && v >> value) out[name] = value;
    }
    return out;
}

// The 1-minute load average, as /proc/loadavg prints it.
std::string load1() {
    std::stringstream s(read_text("/proc/loadavg"));
    std::string first;
    s >> first;
    return first.empty() ? "?" : first;
}

// Raises the soft RLIMIT_NOFILE to at least `want` (up to the hard limit). The server inherits it and
// raises its own further when --max-peers needs more.
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
        args.emplace_back("--workers");
        args.push_back(std::to_string(o.workers));
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

void make_key(Peer& peer) {
    auto key = rlpx::PrivateKey::generate();
    if (!key) throw std::runtime_error("cannot generate a key");
    peer.key.emplace(*key);
}

// `local` without a key: the peer's own key (made now unless it has one). REQUIRES: `peer` does not
// move while connected.
asio::awaitable<void> connect_peer(Peer& peer, const ServerProcess& server, const p2p::LocalNode& local,
                                   double handshake_timeout) {
    if (!peer.key) make_key(peer);
    peer.local = local;
    peer.local.key = &*peer.key;
    p2p::ClientOptions options;
    // Generous: with thousands of peers connecting at once a connection waits its turn in the
    // server's listen backlog (and TCP retries a dropped SYN after 1, 3, 7, 15 ... s).
    options.limits.handshake = seconds(handshake_timeout);
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

double percentile(std::vector<double>& v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// Many peers connected by a few connector coroutines, each taking the next peer nobody has taken.
// Touched only on the thread running the connectors.
struct ConnectJob {
    std::vector<Peer>& peers;
    const ServerProcess& server;
    const p2p::LocalNode& local;
    const Options& o;
    Clock::time_point start;
    size_t next{0};
    size_t finished{0};  // established or given up
    size_t established{0};
    size_t failed_attempts{0};  // every one retried unless it was the peer's last
    size_t gave_up{0};
    std::map<std::string, std::pair<size_t, std::string>> failures{};  // kind -> count, first message
    std::vector<double> established_after{};                           // seconds from `start`, per peer
    // Called once, on the connectors' thread, when the last peer is established or given up.
    std::function<void()> on_finished{};
};

// Connects `peer`, retrying with a new key after a failure; false when every attempt failed.
asio::awaitable<bool> connect_retrying(Peer& peer, ConnectJob& job) {
    for (unsigned attempt = 1;; ++attempt) {
        std::string kind;
        std::string message;
        try {
            co_await connect_peer(peer, job.server, job.local, job.o.handshake_timeout);
            ++job.established;
            job.established_after.push_back(seconds_between(job.start, Clock::now()));
            co_return true;
        } catch (const p2p::PeerError& e) {
            kind = std::string(p2p::to_string(e.kind()));
            message = e.what();
        } catch (const std::exception& e) {
            kind = "other";
            message = e.what();
        }
        peer.session.reset();
        peer.key.reset();  // the server may still hold the old node id
        ++job.failed_attempts;
        auto& slot = job.failures[kind];
        if (slot.first++ == 0) slot.second = message;
        if (attempt >= job.o.attempts) {
            ++job.gave_up;
            co_return false;
        }
        co_await sleep_for(std::chrono::milliseconds(100));
    }
}

asio::awaitable<void> connector(ConnectJob& job) {
    while (job.next < job.peers.size()) {
        Peer& p = job.peers[job.next++];
        (void)co_await connect_retrying(p, job);
        if (++job.finished == job.peers.size() && job.on_finished) job.on_finished();
    }
}

void print_failures(const ConnectJob& job) {
    std::printf(
        "failed attempts:              %zu (each retried with a new key, up to %u attempts per peer); "
        "peers given up: %zu\n",
        job.failed_attempts, job.o.attempts, job.gave_up);
    for (const auto& [kind, f] : job.failures) {
        std::printf("  %-26s  %zu, first: %s\n", kind.c_str(), f.first, f.second.c_str());
    }
}

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

asio::awaitable<void> close_all(std::vector<Peer>& peers) {
    for (Peer& p : peers) {
        if (p.session) co_await p.session->close();
    }
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
    std::vector<uint64_t> per_connection;  // replies counted, per connection (fairness)
};

bool in_window(const LoadState& s) { return s.window_start.has_value() && !s.window_end.has_value(); }

// One of the W request loops of a connection: a new request as soon as its reply is checked.
asio::awaitable<void> load_loop(Peer& peer, size_t conn, OriginRange range, uint64_t seed, LoadState& s,
                                uint64_t& sent) {
    synthetic::Rng rng(seed);
    const auto more = [&] { return s.requests > 0 ? sent < s.requests : Clock::now() < s.stop_sending; };
    while (more()) {
        ++sent;
        const uint64_t origin = range.lo + rng.below(range.hi - range.lo + 1);
        const auto start = Clock::now();
        const size_t headers = co_await fetch_range(peer, origin);
        if (s.requests > 0 || in_window(s)) {
            ++s.replies;
            ++s.per_connection[conn];
            s.headers += headers;
            s.latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        }
    }
}

asio::awaitable<void> throughput(asio::io_context& io, const Options& o, const ChainInfo& chain,
                                 const ServerProcess& server, const p2p::LocalNode& local, int& rc) {
    const OriginRange range = origin_range(o, chain);
    const bool timed = o.mode == "throughput";
    std::printf("%7s %5s %8s %9s %12s %8s %8s %9s %12s %11s %10s %10s %13s %6s\n", "workers", "conns", "inflight",
                "requests", "headers/s", "p50 ms", "p99 ms", "server %", "server us/h", "srv usr/sys", "server us/req",
                "client %", "conn min/max", "load");
    for (const Row& row : o.rows) {
        const std::string load = load1();
        std::vector<Peer> peers(row.connections);
        for (Peer& p : peers) co_await connect_peer(p, server, local, o.handshake_timeout);
        LoadState s;
        s.requests = timed ? 0 : o.requests;
        s.per_connection.assign(peers.size(), 0);
        const auto start = Clock::now();
        const auto window_start = start + seconds(timed ? o.warmup : 0);
        const auto window_end = window_start + seconds(o.duration);
        s.stop_sending = window_end;
        if (!timed) s.window_start = take_sample(server);
        Group load_group;
        std::vector<uint64_t> sent(peers.size(), 0);  // requests per connection (requests mode)
        for (size_t i = 0; i < peers.size(); ++i) {
            for (size_t w = 0; w < row.inflight; ++w) {
                load_group.spawn(io,
                                 load_loop(peers[i], i, range, 1000 * (1000 * row.connections + i) + w, s, sent[i]));
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
        if (!co_await wait_until([&] { return load_group.running == 0; }, std::chrono::seconds(120))) {
            throw std::runtime_error("requests did not finish within 120 s");
        }
        if (!timed) s.window_end = take_sample(server);
        if (!load_group.error.empty()) throw std::runtime_error("load: " + load_group.error);
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
        // Requests answered per connection, fewest and most: equal when the server is fair.
        const auto [fewest, most] = std::minmax_element(s.per_connection.begin(), s.per_connection.end());
        char fairness[48];
        std::snprintf(fairness, sizeof fairness, "%llu/%llu", static_cast<unsigned long long>(*fewest),
                      static_cast<unsigned long long>(*most));
        std::printf("%7zu %5zu %8zu %9llu %12.0f %8.3f %8.3f %9.1f %12.3f %11s %10.1f %10.1f %13s %6s\n", o.workers,
                    row.connections, row.inflight, static_cast<unsigned long long>(s.replies), headers / wall, p50, p99,
                    100 * server_cpu / wall, 1e6 * server_cpu / std::max(headers, 1.0), split,
                    1e6 * server_cpu / std::max(static_cast<double>(s.replies), 1.0), 100 * client / wall, fairness,
                    load.c_str());
        std::fflush(stdout);
    }
    rc = 0;
}

// ---- idle peers ----------------------------------------------------------------------------------

size_t count_closed(const std::vector<Peer>& peers) {
    size_t n = 0;
    for (const Peer& p : peers) n += p.session && p.session->closed() ? 1 : 0;
    return n;
}

asio::awaitable<void> idle(asio::io_context& io, const Options& o, const ChainInfo& chain, const ServerProcess& server,
                           const p2p::LocalNode& local, int& rc) {
    const OriginRange range = origin_range(o, chain);
    co_await sleep_for(std::chrono::milliseconds(500));
    const uint64_t rss0 = proc_status_kib(server.pid(), "VmRSS");
    const uint64_t anon0 = proc_status_kib(server.pid(), "RssAnon");
    const ProcCpu cpu0 = proc_cpu(server.pid());
    std::vector<Peer> peers(o.peers);
    ConnectJob job{peers, server, local, o, Clock::now()};
    Group connectors;
    for (size_t c = 0; c < o.handshakes; ++c) connectors.spawn(io, connector(job));
    if (!co_await wait_until([&] { return connectors.running == 0; }, std::chrono::seconds(1800))) {
        throw std::runtime_error("connecting did not finish within 1800 s");
    }
    if (!connectors.error.empty()) throw std::runtime_error("connect: " + connectors.error);
    if (job.established == 0) throw std::runtime_error("no peer could connect");
    const double connect_wall = seconds_between(job.start, Clock::now());
    const ProcCpu cpu1 = proc_cpu(server.pid());
    // Let the server finish with the last Status messages, then measure while everyone is idle.
    co_await sleep_for(seconds(o.idle));
    const size_t dropped_idle = count_closed(peers);
    const uint64_t rss1 = proc_status_kib(server.pid(), "VmRSS");
    const uint64_t anon1 = proc_status_kib(server.pid(), "RssAnon");
    const double idle_after = seconds_between(job.start, Clock::now());

    // One 192-header request on every live peer, all at once.
    synthetic::Rng rng(7);
    Group requests;
    size_t served = 0;
    for (Peer& p : peers) {
        if (!p.session || p.session->closed()) continue;
        const uint64_t origin = range.lo + rng.below(range.hi - range.lo + 1);
        requests.spawn(io, [](Peer& peer, uint64_t from, size_t& done) -> asio::awaitable<void> {
            (void)co_await fetch_range(peer, from);
            ++done;
        }(p, origin, served));
    }
    if (!co_await wait_until([&] { return requests.running == 0; }, std::chrono::seconds(300))) {
        throw std::runtime_error("requests did not finish within 300 s");
    }
    if (!requests.error.empty()) throw std::runtime_error("idle peer's request: " + requests.error);
    co_await sleep_for(std::chrono::milliseconds(500));
    const uint64_t rss2 = proc_status_kib(server.pid(), "VmRSS");
    const uint64_t anon2 = proc_status_kib(server.pid(), "RssAnon");

    uint64_t pings = 0;
    for (const Peer& p : peers) pings += p.session ? p.session->stats().pings : 0;
    const size_t dropped = count_closed(peers);
    co_await close_all(peers);

    const double n = static_cast<double>(job.established);
    std::printf("peers established:            %zu of %zu (RLPx + Hello + Status), %zu at a time, server workers %zu\n",
                job.established, peers.size(), o.handshakes, o.workers);
    print_failures(job);
    std::printf("connect phase:                %.2f s wall, server CPU %.2f s = %.3f ms per peer\n", connect_wall,
                cpu1.total() - cpu0.total(), 1e3 * (cpu1.total() - cpu0.total()) / n);
    std::printf("server VmRSS before:          %llu KiB (RssAnon %llu KiB)\n", static_cast<unsigned long long>(rss0),
                static_cast<unsigned long long>(anon0));
    std::printf("server VmRSS, peers idle:     %llu KiB (RssAnon %llu KiB), %.1f s after the first connect\n",
                static_cast<unsigned long long>(rss1), static_cast<unsigned long long>(anon1), idle_after);
    std::printf("per idle peer:                %.1f KiB VmRSS, %.1f KiB RssAnon\n",
                (static_cast<double>(rss1) - static_cast<double>(rss0)) / n,
                (static_cast<double>(anon1) - static_cast<double>(anon0)) / n);
    std::printf("server VmRSS, each served once: %llu KiB (RssAnon %llu KiB), %zu peers served\n",
                static_cast<unsigned long long>(rss2), static_cast<unsigned long long>(anon2), served);
    std::printf("per peer served once:         %.1f KiB VmRSS, %.1f KiB RssAnon (one 192-header reply each)\n",
                (static_cast<double>(rss2) - static_cast<double>(rss0)) / n,
                (static_cast<double>(anon2) - static_cast<double>(anon0)) / n);
    std::printf("peers dropped:                %zu while idle, %zu by the end\n", dropped_idle, dropped);
    std::printf("pings answered:               %llu\n", static_cast<unsigned long long>(pings));
    rc = 0;
}

// ---- handshake storm -----------------------------------------------------------------------------

struct Timed {
    Clock::time_point sent;
    double ms{0};
};

struct MeasuredPeer {
    bool stop{false};
    std::vector<Timed> requests;
    size_t failures{0};
    std::string first_failure;
};

// One request in flight, a new one as soon as the reply is checked, until `stop`. A failed request
// is counted, not fatal; a closed session ends the loop.
asio::awaitable<void> measured_loop(Peer& peer, OriginRange range, MeasuredPeer& m) {
    synthetic::Rng rng(4242);
    while (!m.stop && !peer.session->closed()) {
        const uint64_t origin = range.lo + rng.below(range.hi - range.lo + 1);
        const auto start = Clock::now();
        std::string failure;
        try {
            (void)co_await fetch_range(peer, origin);
            m.requests.push_back({start, std::chrono::duration<double, std::milli>(Clock::now() - start).count()});
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (!failure.empty() && m.failures++ == 0) m.first_failure = failure;
    }
}

struct Phase {
    size_t requests{0};
    double p50{0};
    double p99{0};
    double max{0};
};

Phase phase(const std::vector<Timed>& all, Clock::time_point from, Clock::time_point to) {
    std::vector<double> ms;
    for (const Timed& t : all) {
        if (t.sent >= from && t.sent < to) ms.push_back(t.ms);
    }
    Phase p;
    p.requests = ms.size();
    if (ms.empty()) return p;
    p.p50 = percentile(ms, 0.50);
    p.p99 = percentile(ms, 0.99);
    p.max = ms.back();  // sorted by percentile()
    return p;
}

// What the storm's thread records when its last peer is established or given up; read by the main
// thread once `done` is set.
struct StormEnd {
    Clock::time_point when;
    ProcCpu server;
    double thread_cpu{0};
    std::atomic<bool> done{false};
};

asio::awaitable<void> storm(asio::io_context& io, const Options& o, const ChainInfo& chain, const ServerProcess& server,
                            const p2p::LocalNode& local, int& rc) {
    const OriginRange range = origin_range(o, chain);
    // Declared before the storm's peers, whose sessions live on it, so that it outlives them.
    asio::io_context storm_io(1);
    // The storm's node keys are made now, so that its thread does only the handshakes.
    std::vector<Peer> peers(o.peers);
    for (Peer& p : peers) make_key(p);

    Peer measured;
    co_await connect_peer(measured, server, local, o.handshake_timeout);
    MeasuredPeer m;
    Group load;
    load.spawn(io, measured_loop(measured, range, m));
    co_await sleep_for(std::chrono::seconds(1));  // warm-up
    const Sample base = take_sample(server);
    const std::string load_before = load1();
    co_await sleep_for(seconds(o.baseline));

    // The storm: K connectors on a thread of their own, started together.
    auto guard = asio::make_work_guard(storm_io);
    StormEnd end;
    const auto kernel0 = tcp_ext();
    const Sample storm_start = take_sample(server);
    const double main_cpu0 = thread_cpu();
    ConnectJob job{peers, server, local, o, storm_start.when};
    job.on_finished = [&end, &server] {
        end.when = Clock::now();
        end.server = proc_cpu(server.pid());
        end.thread_cpu = thread_cpu();  // the storm thread: every client handshake of the storm
        end.done.store(true, std::memory_order_release);
    };
    Group connectors;
    for (size_t c = 0; c < o.handshakes; ++c) connectors.spawn(storm_io, connector(job));
    std::thread storm_thread([&storm_io] { storm_io.run(); });
    const bool finished =
        co_await wait_until([&] { return end.done.load(std::memory_order_acquire); }, std::chrono::seconds(1800));
    const double main_cpu1 = thread_cpu();
    const auto kernel1 = tcp_ext();
    if (finished) co_await sleep_for(seconds(o.after));  // N idle peers more, the requests go on
    const Clock::time_point after_end = Clock::now();
    m.stop = true;
    (void)co_await wait_until([&] { return load.running == 0; }, std::chrono::seconds(60));
    const std::string load_after = load1();
    const uint64_t rss = proc_status_kib(server.pid(), "VmRSS");
    if (measured.session) co_await measured.session->close();

    // Close the storm's peers on their own thread, then let it run out of work.
    std::atomic<bool> closed{false};
    if (finished) {
        asio::co_spawn(
            storm_io,
            [](std::vector<Peer>& all, std::atomic<bool>& flag) -> asio::awaitable<void> {
                co_await close_all(all);
                flag.store(true, std::memory_order_release);
            }(peers, closed),
            asio::detached);
        guard.reset();
    }
    if (!finished ||
        !co_await wait_until([&] { return closed.load(std::memory_order_acquire); }, std::chrono::seconds(120))) {
        if (finished) std::fprintf(stderr, "loopback_bench: closing the storm's peers took over 120 s\n");
        storm_io.stop();
    }
    storm_thread.join();
    if (!finished) throw std::runtime_error("the storm did not finish within 1800 s");
    if (!connectors.error.empty()) throw std::runtime_error("storm connector: " + connectors.error);

    const Phase before = phase(m.requests, base.when, storm_start.when);
    const Phase during = phase(m.requests, storm_start.when, end.when);
    const Phase after = phase(m.requests, end.when, after_end);
    const double base_wall = seconds_between(base.when, storm_start.when);
    const double storm_wall = seconds_between(storm_start.when, end.when);
    const double base_server = storm_start.server.total() - base.server.total();
    const double per_request = base_server / std::max<double>(1, static_cast<double>(before.requests));
    const double storm_server = end.server.total() - storm_start.server.total();
    const double storm_user = end.server.user - storm_start.server.user;
    const double handshakes_cpu = storm_server - per_request * static_cast<double>(during.requests);
    const double n = static_cast<double>(std::max<size_t>(job.established, 1));
    const double attempts = static_cast<double>(job.established + job.failed_attempts);
    std::vector<double> ready = job.established_after;

    std::printf(
        "storm:                        %zu peers, %zu connecting at once, server workers %zu, load %s "
        "before, %s after\n",
        peers.size(), o.handshakes, o.workers, load_before.c_str(), load_after.c_str());
    std::printf(
        "established:                  %zu in %.2f s wall (%.0f per s); each peer established after "
        "p50 %.2f s, p99 %.2f s, max %.2f s\n",
        job.established, storm_wall, static_cast<double>(job.established) / storm_wall, percentile(ready, 0.50),
        percentile(ready, 0.99), ready.empty() ? 0.0 : ready.back());
    print_failures(job);
    const auto kernel = [&](const char* name) -> unsigned long long {
        const auto a = kernel0.find(name);
        const auto b = kernel1.find(name);
        return a == kernel0.end() || b == kernel1.end() ? 0 : b->second - a->second;
    };
    std::printf(
        "kernel (TcpExt, whole machine): ListenOverflows %llu, ListenDrops %llu, TCPSynRetrans %llu, "
        "SyncookiesSent %llu\n",
        kernel("ListenOverflows"), kernel("ListenDrops"), kernel("TCPSynRetrans"), kernel("SyncookiesSent"));
    std::printf("%-29s %9s %9s %9s %9s %9s\n", "established peer (1 in flight)", "requests", "req/s", "p50 ms",
                "p99 ms", "max ms");
    const auto print_phase = [](const char* name, const Phase& p, double wall) {
        std::printf("  %-27s %9zu %9.0f %9.3f %9.3f %9.3f\n", name, p.requests, static_cast<double>(p.requests) / wall,
                    p.p50, p.p99, p.max);
    };
    print_phase("before the storm", before, base_wall);
    print_phase("during the storm", during, storm_wall);
    print_phase("after, peers idle", after, seconds_between(end.when, after_end));
    if (m.failures > 0) std::printf("  failed requests: %zu, first: %s\n", m.failures, m.first_failure.c_str());
    std::printf("server CPU before:            %.1f %% of a core, %.1f us per request of the established peer\n",
                100 * base_server / base_wall, 1e6 * per_request);
    std::printf(
        "server CPU during the storm:  %.2f s (%.0f %% of a core, user %.0f %%); minus %zu requests at "
        "%.1f us: %.2f s\n",
        storm_server, 100 * storm_server / storm_wall, 100 * storm_user / std::max(storm_server, 1e-9), during.requests,
        1e6 * per_request, handshakes_cpu);
    std::printf("server CPU per handshake:     %.3f ms per established peer (%.3f ms per attempt, %.0f attempts)\n",
                1e3 * handshakes_cpu / n, 1e3 * handshakes_cpu / std::max(attempts, 1.0), attempts);
    std::printf(
        "client CPU during the storm:  %.2f s on the storm's thread (%.3f ms per established peer), "
        "%.2f s on the established peer's thread\n",
        end.thread_cpu, 1e3 * end.thread_cpu / n, main_cpu1 - main_cpu0);
    std::printf("server VmRSS at the end:      %llu KiB with %zu idle peers\n", static_cast<unsigned long long>(rss),
                job.established);
    if (!o.samples.empty()) {
        // Seconds from the storm's start at which each request was sent, and its latency.
        std::ofstream out(o.samples);
        out << "# sent_s latency_ms (0 = the storm starts; it ends at " << storm_wall << ")\n";
        for (const Timed& t : m.requests) out << seconds_between(storm_start.when, t.sent) << ' ' << t.ms << '\n';
        if (!out) throw std::runtime_error("cannot write " + o.samples);
    }
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
    const bool many = o.mode == "idle" || o.mode == "storm";
    raise_nofile(many ? o.peers + 512 : 4096);
    signal(SIGPIPE, SIG_IGN);

    p2p::LocalNode local;  // the key is set per connection
    local.client_id = "loopback_bench";
    local.config = &chain.config;
    local.head = chain.head;

    ServerProcess server(o);
    std::printf(
        "server: pid %d, %s, workers %zu, max peers %llu, max open files %s, head %llu, blocks [0, %llu) "
        "ancient, origins %s, load %s\n",
        static_cast<int>(server.pid()), server.enode().substr(0, 24).c_str(), o.workers,
        static_cast<unsigned long long>(o.max_peers), proc_max_open_files(server.pid()).c_str(),
        static_cast<unsigned long long>(chain.head.number), static_cast<unsigned long long>(chain.ancient_items),
        o.origins.c_str(), load1().c_str());
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
    } else if (o.mode == "storm") {
        asio::co_spawn(io, storm(io, o, chain, server, local, rc), done);
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
