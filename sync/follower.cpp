#include "sync/follower.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/awaitable.hpp"
#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "p2p/eth/messages.hpp"

namespace headerd::sync {
namespace {}  // namespace

std::optional<std::pair<uint64_t, Hash32>> agreed_head(const std::vector<FollowedPeer>& peers, size_t followed) {
    std::map<std::pair<uint64_t, Hash32>, size_t> votes;
    for (const FollowedPeer& p : peers) {
        if (p.connected && p.head_number && p.head_hash) ++votes[{*p.head_number, *p.head_hash}];
    }
    std::optional<std::pair<uint64_t, Hash32>> best;
    for (const auto& [head, count] : votes) {
        if (count < 2 || count * 2 <= followed) continue;
        if (!best || head.first > best->first) best = head;
    }
    return best;
}

struct Follower::Impl {
    Impl(db::ChainDb& d, std::string id, const p2p::NetMetrics* m, FollowConfig c,
         std::function<void(const db::Head&)> h)
        : db(d), client_id(std::move(id)), metrics(m), config(std::move(c)), on_head(std::move(h)) {
        for (const auto& e : config.peers) {
            FollowedPeer p;
            p.address = fmt::format("{}:{}", e.host, e.port);
            peers.push_back(std::move(p));
        }
        sessions.resize(config.peers.size());
        locals.resize(config.peers.size());
        for (size_t i = 0; i < config.peers.size(); ++i) {
            timers.push_back(std::make_unique<asio::steady_timer>(io));
        }
    }

    db::ChainDb& db;
    std::string client_id;
    const p2p::NetMetrics* metrics;
    FollowConfig config;
    std::function<void(const db::Head&)> on_head;

    asio::io_context io{1};
    std::thread thread;
    std::vector<FollowedPeer> peers;
    std::vector<std::shared_ptr<p2p::ClientSession>> sessions;
    std::vector<std::unique_ptr<p2p::LocalNode>> locals;
    std::vector<std::unique_ptr<asio::steady_timer>> timers;
    Syncer* syncer{nullptr};
    // The last head whose fetch failed, and when it may be tried again.
    std::optional<Hash32> failed;
    p2p::Clock::time_point retry_at{};
    bool syncing{false};
    bool stopping{false};
    std::atomic<uint64_t> adopted{0};
    std::promise<void> done;

    std::unique_ptr<p2p::LocalNode> local_node(const rlpx::PrivateKey& k) const {
        auto l = std::make_unique<p2p::LocalNode>();
        l->key = &k;
        l->client_id = client_id;
        l->config = db.config();
        l->head = *db.head();
        l->metrics = metrics;
        return l;
    }

    asio::awaitable<void> sleep(size_t i, p2p::Clock::duration d) {
        if (stopping) co_return;
        timers[i]->expires_after(d);
        co_await timers[i]->async_wait(kTuple);
    }

    // Learns peer i's head: eth/69+ from its Status and BlockRangeUpdates, eth/68 by asking for up
    // to 1024 headers upwards (the last one it has is its head, or the highest of the 1024).
    asio::awaitable<void> learn_head(size_t i, p2p::ClientSession& s) {
        FollowedPeer& p = peers[i];
        if (eth::has_block_range(s.link().version)) {
            p.head_number = s.link().chain.head_number;
            p.head_hash = s.link().chain.head_hash;
            co_return;
        }
        // Asked from the highest head any followed peer reports, so that its answer can agree with
        // theirs; from our own head when it does not have that block.
        const uint64_t ours = db.head()->number;
        uint64_t highest = ours;
        for (const FollowedPeer& other : peers) highest = std::max(highest, other.head_number.value_or(0));
        eth::GetBlockHeadersRequest req;
        req.origin = eth::HashOrNumber::of(highest);
        req.amount = 1024;
        auto reply = co_await s.request(req, config.sync.request_timeout);
        if (reply && reply->headers.empty() && highest > ours) {
            req.origin = eth::HashOrNumber::of(ours);
            reply = co_await s.request(req, config.sync.request_timeout);
        }
        if (!reply) co_return;  // a timeout is counted by the session; a closed one ends the watch
        if (reply->headers.empty()) {
            p.head_number.reset();  // it does not have our head's number: behind us, or elsewhere
            p.head_hash.reset();
            co_return;
        }
        auto last = peek_header(reply->headers.back());
        if (!last) co_return;
        p.head_number = last->number;
        p.head_hash = header_hash(reply->headers.back());
    }

    asio::awaitable<void> watch(size_t i) {
        FollowedPeer& p = peers[i];
        unsigned failures = 0;  // dials in a row that gave no session
        while (!stopping) {
            if (failures >= config.replace_after && config.replace) {
                if (auto spare = config.replace(config.peers[i])) {
                    const std::string address = fmt::format("{}:{}", spare->host, spare->port);
                    spdlog::warn("Replacing followed peer                  peer={} failures={} new={}", p.address,
                                 failures, address);
                    config.peers[i] = *spare;
                    p.address = address;
                    failures = 0;
                    count_dial("replaced");
                }
            }
            bool connected = false;
            // Outbound sessions use a key of their own: the followed peer may also dial our server.
            auto watch_key = rlpx::PrivateKey::generate();
            try {
                if (!watch_key) throw std::runtime_error("cannot generate a key");
                locals[i] = local_node(*watch_key);
                p2p::ClientOptions options;
                options.limits.handshake = config.sync.handshake_timeout;
                // Adoptions fetch on this session too, and the fetcher hashes every header into
                // the proven chain: a full decode of each would only cost (as in Syncer).
                options.check_headers = false;
                auto session = co_await p2p::ClientSession::connect(config.peers[i], *locals[i], options);
                sessions[i] = session;
                p.connected = true;
                connected = true;
                failures = 0;
                count_dial("connected");
                spdlog::info("Following peer                           peer={} client=\"{}\" eth={}", p.address,
                             session->link().client_id, session->link().version);
                const bool pushes = eth::has_block_range(session->link().version);
                auto last_poll = p2p::Clock::time_point{};
                while (!stopping && !session->closed()) {
                    const auto now = p2p::Clock::now();
                    if (pushes || now - last_poll >= config.poll_interval) {
                        co_await learn_head(i, *session);
                        last_poll = now;
                    }
                    evaluate();
                    // eth/69+ heads arrive by themselves: look at them often, it costs nothing.
                    co_await sleep(
                        i, pushes ? std::min<p2p::Clock::duration>(config.poll_interval, std::chrono::milliseconds(250))
                                  : config.poll_interval);
                }
                if (session->error()) {
                    spdlog::warn("Followed peer left                       peer={} reason=\"{}\"", p.address,
                                 session->error()->what());
                }
            } catch (const std::exception& e) {
                spdlog::warn("Cannot follow peer                       peer={} error=\"{}\"", p.address, e.what());
            }
            p.connected = false;
            p.head_number.reset();
            p.head_hash.reset();
            sessions[i].reset();
            evaluate();
            if (!connected) {
                ++failures;
                count_dial("failed");
            }
            if (!stopping) co_await sleep(i, reconnect_delay(failures));
        }
    }

    void count_dial(const char* outcome) const {
        if (config.sync.metrics != nullptr) config.sync.metrics->follow_dial(outcome).Increment();
    }

    // reconnect_delay, doubled for each failed dial in a row, at most max_reconnect_delay.
    p2p::Clock::duration reconnect_delay(unsigned failures) const {
        auto d = config.reconnect_delay;
        for (unsigned k = 1; k < failures && d < config.max_reconnect_delay; ++k) d *= 2;
        return std::min(d, std::max(config.reconnect_delay, config.max_reconnect_delay));
    }

    void evaluate() {
        if (syncing || stopping) return;
        const auto head = agreed_head(peers, config.peers.size());
        if (!head) return;
        const auto local = db.head();
        if (local && local->hash == head->second) return;
        if (auto c = db.canonical_hash(head->first); c && *c && **c == head->second) return;  // we have it
        if (failed == head->second && p2p::Clock::now() < retry_at) return;
        syncing = true;
        asio::co_spawn(io, adopt(head->first, head->second), asio::detached);
    }

    asio::awaitable<void> adopt(uint64_t number, Hash32 hash) {
        spdlog::info("Adopting head                            number={} hash={}", number, to_hex0x(hash));
        SyncConfig sc = config.sync;
        sc.peers = config.peers;
        // The sessions that watch the peers fetch too: no handshakes per adoption (a peer between
        // two watching sessions is dialled by the syncer).
        sc.sessions = sessions;
        sc.head_hash = hash;
        sc.head_number.reset();
        auto sync_key = rlpx::PrivateKey::generate();
        if (!sync_key) {
            syncing = false;
            co_return;
        }
        auto local = local_node(*sync_key);
        Syncer s(io, db, *local, sc);
        syncer = &s;
        auto r = co_await s.run();
        syncer = nullptr;
        if (r) {
            adopted.fetch_add(1, std::memory_order_relaxed);
            if (config.sync.metrics != nullptr) config.sync.metrics->adopted().Increment();
            spdlog::info("Followed head                            number={} hash={} fetched={} replaced={} ancient={}",
                         r->head.number, to_hex0x(r->head.hash), r->fetched, r->replaced, db.ancient_items());
            if (!r->already && on_head) on_head(r->head);
        } else if (!stopping) {
            failed = hash;
            retry_at = p2p::Clock::now() + config.retry_delay;
            spdlog::warn("Following head failed                    number={} hash={} error=\"{}\"", number,
                         to_hex0x(hash), r.error().message);
        }
        syncing = false;
        if (!stopping) evaluate();
    }

    void shutdown() {
        stopping = true;
        if (syncer != nullptr) syncer->stop();
        for (auto& t : timers) t->cancel();
        for (auto& s : sessions) {
            if (!s || s->closed()) continue;
            // The coroutine holds the session: the follower may drop it before the close ends.
            asio::co_spawn(
                io, [s]() -> asio::awaitable<void> { co_await s->close(p2p::DisconnectReason::kQuitting); },
                asio::detached);
        }
    }
};

Follower::Follower(db::ChainDb& db, std::string client_id, const p2p::NetMetrics* metrics, FollowConfig config,
                   std::function<void(const db::Head&)> on_head)
    : impl_(std::make_unique<Impl>(db, std::move(client_id), metrics, std::move(config), std::move(on_head))) {}

Follower::~Follower() { stop(); }

void Follower::start() {
    Impl& m = *impl_;
    for (size_t i = 0; i < m.peers.size(); ++i) asio::co_spawn(m.io, m.watch(i), asio::detached);
    m.thread = std::thread([&m] {
        m.io.run();
        m.done.set_value();
    });
}

void Follower::stop() {
    Impl& m = *impl_;
    if (!m.thread.joinable()) return;
    asio::post(m.io, [&m] { m.shutdown(); });
    // Goodbyes get a moment; then whatever still waits is cut off.
    if (m.done.get_future().wait_for(std::chrono::seconds(5)) != std::future_status::ready) m.io.stop();
    m.thread.join();
}

uint64_t Follower::adopted() const noexcept { return impl_->adopted.load(std::memory_order_relaxed); }

}  // namespace headerd::sync
