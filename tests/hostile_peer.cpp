// hostile_peer: the misbehaving and crowding peers of tests/hostile_test.sh, against a running
// `headerd serve`. Every mode is bounded in time and connections, dials loopback only, and prints
// one line of `key=value` counts that the script checks. Client sockets can be bound to any address
// of 127.0.0.0/8 (all of it is loopback on Linux), so the server sees them as distinct addresses
// and subnets.
//
//   hostile_peer open  --peer ENODE --from IP[,IP...] --count K [--sequential] [--wait-ms W]
//       K connections from each address that send nothing; after W ms (300) those the server has
//       closed were refused by its inbound limits (an accepted one waits for the auth packet).
//       --sequential: one at a time, each closed by us after its check (the reconnect throttle).
//   hostile_peer slow  --peer ENODE --from IP[,IP...] --count K [--seconds S]
//       K connections (spread over the addresses) that each send a valid auth packet one byte per
//       second, for at most S seconds (20): refused at once, and closed by the server's handshake
//       deadline (with the time it took).
//   hostile_peer storm --peer ENODE --count N [--parallel P] [--abrupt]
//       N sessions (P at a time) from 127.0.0.1 that complete Hello and Status, ask for one header and
//       leave at once: with Disconnect, or (--abrupt) by closing the socket.
//   hostile_peer fill  --peer ENODE --max M [--hold S]
//       established sessions until the server refuses one (at most M): how many it took, and the
//       refusal's reason; all held S seconds (2), answering Pings.
//   hostile_peer flood --peer ENODE --sessions K --requests N
//       K sessions, each on a thread of its own, each sending N GetBlockHeaders (192 headers, random
//       origins) at once; every reply must hold the 192 headers from its origin.

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "p2p/client_session.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/rlpx/handshake.hpp"
#include "tests/loopback_dial.hpp"

namespace headerd {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr, "hostile_peer: %s\n", why.c_str());
    std::exit(2);
}

struct Options {
    std::string mode;
    std::optional<p2p::Enode> peer;
    std::vector<std::string> from{"127.0.0.1"};
    size_t count{1};
    size_t parallel{8};
    size_t max{64};
    size_t sessions{1};
    size_t requests{1};
    int wait_ms{300};
    int seconds{20};
    int hold{2};
    bool sequential{false};
    bool abrupt{false};
};

size_t number(const std::string& option, const std::string& text, size_t max) {
    size_t v = 0;
    try {
        v = std::stoul(text);
    } catch (...) {
        usage(option + ": not a number: " + text);
    }
    if (v > max) usage(fmt::format("{}: at most {}", option, max));
    return v;
}

Options parse(int argc, char** argv) {
    if (argc < 2) usage("usage: hostile_peer open|slow|storm|fill|flood --peer ENODE ...");
    Options o;
    o.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--peer") {
            auto e = p2p::parse_enode(value());
            if (!e) usage(e.error().message);
            if (e->host.rfind("127.", 0) != 0) usage("--peer must be a loopback address");
            o.peer = *e;
        } else if (a == "--from") {
            o.from.clear();
            std::string list = value();
            for (size_t start = 0; start <= list.size();) {
                const size_t comma = std::min(list.find(',', start), list.size());
                const std::string ip = list.substr(start, comma - start);
                if (ip.rfind("127.", 0) != 0) usage("--from: loopback addresses only: " + ip);
                o.from.push_back(ip);
                start = comma + 1;
            }
        } else if (a == "--count") {
            o.count = number(a, value(), 10000);
        } else if (a == "--parallel") {
            o.parallel = std::max<size_t>(1, number(a, value(), 256));
        } else if (a == "--max") {
            o.max = number(a, value(), 1000);
        } else if (a == "--sessions") {
            o.sessions = std::max<size_t>(1, number(a, value(), 64));
        } else if (a == "--requests") {
            o.requests = std::max<size_t>(1, number(a, value(), 100000));
        } else if (a == "--wait-ms") {
            o.wait_ms = static_cast<int>(number(a, value(), 10000));
        } else if (a == "--seconds") {
            o.seconds = static_cast<int>(number(a, value(), 120));
        } else if (a == "--hold") {
            o.hold = static_cast<int>(number(a, value(), 120));
        } else if (a == "--sequential") {
            o.sequential = true;
        } else if (a == "--abrupt") {
            o.abrupt = true;
        } else {
            usage("unknown option " + a);
        }
    }
    if (!o.peer) usage("--peer is required");
    return o;
}

// ---- raw sockets bound to a source address -------------------------------------------------------

int dial_from(const std::string& from, const p2p::Enode& peer) {
    return testing::dial_from(from, peer.host, peer.port);
}
using testing::closed_now;

int run_open(const Options& o) {
    size_t held = 0, refused = 0, failed = 0;
    if (o.sequential) {
        for (const std::string& from : o.from) {
            for (size_t i = 0; i < o.count; ++i) {
                const int fd = dial_from(from, *o.peer);
                if (fd < 0) {
                    ++failed;
                    continue;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(o.wait_ms));
                ++(closed_now(fd) ? refused : held);
                ::close(fd);
                // Let the server see the close (and free the address's slot) before the next one.
                std::this_thread::sleep_for(50ms);
            }
        }
    } else {
        std::vector<int> fds;
        for (const std::string& from : o.from) {
            for (size_t i = 0; i < o.count; ++i) {
                const int fd = dial_from(from, *o.peer);
                if (fd < 0) {
                    ++failed;
                } else {
                    fds.push_back(fd);
                }
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(o.wait_ms));
        for (int fd : fds) {
            ++(closed_now(fd) ? refused : held);
            ::close(fd);
        }
    }
    std::printf("held=%zu refused=%zu failed=%zu\n", held, refused, failed);
    return 0;
}

int run_slow(const Options& o) {
    struct Slow {
        int fd{-1};
        Bytes auth;
        size_t sent{0};
        Clock::time_point opened;
        std::optional<Clock::duration> closed_after;
    };
    auto key = *rlpx::PrivateKey::generate();
    std::vector<Slow> conns;
    size_t failed = 0;
    for (size_t i = 0; i < o.count; ++i) {
        Slow s;
        s.fd = dial_from(o.from[i % o.from.size()], *o.peer);
        if (s.fd < 0) {
            ++failed;
            continue;
        }
        auto hs = rlpx::Handshake::initiator(key, o.peer->key);
        auto auth = hs.write_auth();
        if (!auth) usage("write_auth: " + auth.error().message());
        s.auth = *auth;
        s.opened = Clock::now();
        conns.push_back(std::move(s));
    }
    // Connections the server refused are closed before their first byte; let them be seen.
    std::this_thread::sleep_for(300ms);
    size_t refused = 0;
    for (Slow& s : conns) {
        if (closed_now(s.fd)) {
            ++refused;
            ::close(s.fd);
            s.fd = -1;
        }
    }
    const auto end = Clock::now() + std::chrono::seconds(o.seconds);
    size_t open = conns.size() - refused;
    while (open > 0 && Clock::now() < end) {
        for (Slow& s : conns) {
            if (s.fd < 0) continue;
            if (closed_now(s.fd)) {
                s.closed_after = Clock::now() - s.opened;
                ::close(s.fd);
                s.fd = -1;
                --open;
                continue;
            }
            if (s.sent < s.auth.size()) {
                ::send(s.fd, s.auth.data() + s.sent, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                ++s.sent;
            }
        }
        // One byte per second per connection; the server's close is checked ten times a second.
        for (int t = 0; t < 10 && open > 0; ++t) {
            std::this_thread::sleep_for(100ms);
            for (Slow& s : conns) {
                if (s.fd >= 0 && closed_now(s.fd)) {
                    s.closed_after = Clock::now() - s.opened;
                    ::close(s.fd);
                    s.fd = -1;
                    --open;
                }
            }
        }
    }
    std::vector<double> times;
    for (Slow& s : conns) {
        if (s.closed_after) times.push_back(std::chrono::duration<double>(*s.closed_after).count());
        if (s.fd >= 0) ::close(s.fd);
    }
    std::sort(times.begin(), times.end());
    std::printf("refused=%zu closed_by_server=%zu still_open=%zu failed=%zu first_close_s=%.1f last_close_s=%.1f\n",
                refused, times.size(), open, failed, times.empty() ? 0.0 : times.front(),
                times.empty() ? 0.0 : times.back());
    return 0;
}

// ---- full sessions from 127.0.0.1 ----------------------------------------------------------------

struct Node {
    rlpx::PrivateKey key = *rlpx::PrivateKey::generate();
    p2p::LocalNode local;
    Node() {
        local.key = &key;
        local.client_id = "hostile_peer";
        local.config = &mainnet_config();
        local.head = Head{0, mainnet_config().genesis_hash, U256(17'179'869'184u), 0};
    }
};

// Counts the coroutines of a mode; the last one to end stops the io_context, so that run_for()
// returns at once when the work is done and at `limit` when it hangs.
struct Tasks {
    asio::io_context& io;
    size_t left{0};
    bool all_done{false};

    template <typename Awaitable>
    void spawn(Awaitable a) {
        ++left;
        asio::co_spawn(io, std::move(a), [this](std::exception_ptr) {
            if (--left == 0) {
                all_done = true;
                io.stop();
            }
        });
    }
    bool run(Clock::duration limit) {
        io.run_for(limit);
        return all_done;
    }
};

int run_storm(const Options& o) {
    asio::io_context io(1);
    size_t next = 0, ok = 0, failed = 0;
    std::map<std::string, size_t> errors;
    auto worker = [&]() -> asio::awaitable<void> {
        while (next < o.count) {
            ++next;
            Node node;
            try {
                p2p::ClientOptions options;
                options.request_timeout = 10s;
                auto s = co_await p2p::ClientSession::connect(*o.peer, node.local, options);
                eth::GetBlockHeadersRequest req;
                req.origin = eth::HashOrNumber::of(uint64_t{8000});
                req.amount = 1;
                auto r = co_await s->request(req);
                if (o.abrupt) {
                    // The socket closed under the session: no Disconnect. (The session's own API always
                    // says goodbye; a test tool may reach past it.)
                    const_cast<p2p::Connection&>(s->connection()).close();
                } else {
                    co_await s->close();
                }
                if (r) {
                    ++ok;
                } else {
                    ++failed;
                    ++errors[r.error().message];
                }
            } catch (const std::exception& e) {
                ++failed;
                ++errors[e.what()];
            }
        }
    };
    Tasks tasks{io};
    for (size_t i = 0; i < o.parallel; ++i) tasks.spawn(worker());
    const bool done = tasks.run(60s);
    std::printf("sessions=%zu failed=%zu done=%d\n", ok, failed, done ? 1 : 0);
    for (auto& [e, n] : errors) std::fprintf(stderr, "  %zu x %s\n", n, e.c_str());
    return 0;
}

int run_fill(const Options& o) {
    asio::io_context io(1);
    std::vector<std::unique_ptr<Node>> nodes;
    std::vector<std::shared_ptr<p2p::ClientSession>> held;
    std::string refusal = "none";
    auto fill = [&]() -> asio::awaitable<void> {
        while (held.size() < o.max) {
            nodes.push_back(std::make_unique<Node>());
            try {
                held.push_back(co_await p2p::ClientSession::connect(*o.peer, nodes.back()->local));
            } catch (const p2p::PeerError& e) {
                refusal = std::string(p2p::to_string(e.reason()));
                break;
            } catch (const std::exception& e) {
                refusal = e.what();
                break;
            }
        }
        asio::steady_timer wait(io, std::chrono::seconds(o.hold));
        co_await wait.async_wait(asio::use_awaitable);
        size_t alive = 0;
        for (auto& s : held) alive += s->closed() ? 0 : 1;
        std::printf("established=%zu alive_after_hold=%zu refusal=\"%s\"\n", held.size(), alive, refusal.c_str());
        for (auto& s : held) co_await s->close();
    };
    Tasks tasks{io};
    tasks.spawn(fill());
    return tasks.run(std::chrono::seconds(60 + o.hold)) ? 0 : 1;
}

// What one flooding session saw.
struct FloodResult {
    size_t good{0}, bad{0}, failed{0};
    double max_rtt{0};
    std::map<std::string, size_t> errors;
    bool done{false};
};

// One session sending `o.requests` requests at once, on the calling thread.
void flood_session(const Options& o, Node& node, uint64_t seed, FloodResult& out) {
    asio::io_context io(1);
    std::mt19937_64 rng(seed);
    auto one = [&](std::shared_ptr<p2p::ClientSession> s, uint64_t origin) -> asio::awaitable<void> {
        eth::GetBlockHeadersRequest req;
        req.origin = eth::HashOrNumber::of(origin);
        req.amount = 192;
        auto r = co_await s->request(req, 60s);
        if (!r) {
            ++out.failed;
            ++out.errors[r.error().message];
            co_return;
        }
        out.max_rtt = std::max(out.max_rtt, std::chrono::duration<double>(r->rtt).count());
        bool right = r->headers.size() == 192;
        for (size_t i = 0; right && i < r->headers.size(); ++i) {
            auto h = decode_block_header(r->headers[i]);
            right = h && h->number == origin + i;
        }
        ++(right ? out.good : out.bad);
    };
    auto session = [&]() -> asio::awaitable<void> {
        try {
            p2p::ClientOptions options;
            options.max_in_flight = o.requests;
            auto s = co_await p2p::ClientSession::connect(*o.peer, node.local, options);
            std::vector<uint64_t> origins(o.requests);
            for (auto& x : origins) x = rng() % (8192 - 192);
            // All at once: each request() writes its frame before it first waits.
            size_t left = o.requests;
            asio::steady_timer all_done(io, Clock::time_point::max());
            for (uint64_t origin : origins) {
                asio::co_spawn(io, one(s, origin), [&](std::exception_ptr) {
                    if (--left == 0) all_done.cancel();
                });
            }
            boost::system::error_code ec;
            co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            co_await s->close();
        } catch (const std::exception& e) {
            out.failed += o.requests;
            ++out.errors[e.what()];
        }
    };
    Tasks tasks{io};
    tasks.spawn(session());
    out.done = tasks.run(90s);
}

// Each session on a thread (and io_context) of its own: a ClientSession reads on without yielding
// while its socket has data, so on one shared thread a session whose replies kept coming held that
// thread, and the other sessions went unread (or stayed in their handshakes) past the server's 10 s
// write and 5 s handshake deadlines whenever this tool decoded replies slower than the server sent
// them (under ASan).
int run_flood(const Options& o) {
    std::vector<std::unique_ptr<Node>> nodes;
    for (size_t i = 0; i < o.sessions; ++i) nodes.push_back(std::make_unique<Node>());
    std::vector<FloodResult> results(o.sessions);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < o.sessions; ++i) {
        threads.emplace_back(
            [&o, &node = *nodes[i], &result = results[i], seed = 7 + i] { flood_session(o, node, seed, result); });
    }
    for (auto& t : threads) t.join();
    FloodResult all;
    all.done = true;
    for (const FloodResult& r : results) {
        all.good += r.good;
        all.bad += r.bad;
        all.failed += r.failed;
        all.max_rtt = std::max(all.max_rtt, r.max_rtt);
        for (const auto& [e, n] : r.errors) all.errors[e] += n;
        all.done = all.done && r.done;
    }
    std::printf("replies=%zu wrong=%zu failed=%zu max_rtt_s=%.3f done=%d\n", all.good, all.bad, all.failed, all.max_rtt,
                all.done ? 1 : 0);
    for (auto& [e, n] : all.errors) std::fprintf(stderr, "  %zu x %s\n", n, e.c_str());
    return 0;
}

}  // namespace
}  // namespace headerd

int main(int argc, char** argv) {
    spdlog::set_level(spdlog::level::warn);
    const auto o = headerd::parse(argc, argv);
    if (o.mode == "open") return headerd::run_open(o);
    if (o.mode == "slow") return headerd::run_slow(o);
    if (o.mode == "storm") return headerd::run_storm(o);
    if (o.mode == "fill") return headerd::run_fill(o);
    if (o.mode == "flood") return headerd::run_flood(o);
    headerd::usage("unknown mode " + o.mode);
}
