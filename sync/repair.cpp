#include "sync/repair.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "p2p/client_session.hpp"

namespace headerd::sync {
namespace {

namespace asio = boost::asio;

// Consecutive damaged blocks as [first, last] runs, highest run first.
std::vector<std::pair<uint64_t, uint64_t>> runs_of(const std::vector<uint64_t>& blocks) {
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (uint64_t b : blocks) {
        if (!runs.empty() && runs.back().second + 1 == b) {
            runs.back().second = b;
        } else {
            runs.emplace_back(b, b);
        }
    }
    std::reverse(runs.begin(), runs.end());
    return runs;
}

asio::awaitable<void> repair(db::ChainDb& db, const p2p::LocalNode& local, const RepairConfig& config,
                             RepairResult& result) {
    std::map<size_t, std::shared_ptr<p2p::ClientSession>> sessions;
    std::vector<bool> unusable(config.peers.size(), false);
    p2p::ClientOptions options;
    options.limits.handshake = config.handshake_timeout;
    auto session_of = [&](size_t i) -> asio::awaitable<std::shared_ptr<p2p::ClientSession>> {
        if (auto it = sessions.find(i); it != sessions.end()) co_return it->second;
        std::shared_ptr<p2p::ClientSession> s;
        try {
            s = co_await p2p::ClientSession::connect(config.peers[i], local, options);
        } catch (const std::exception& e) {
            result.notes.push_back(
                fmt::format("peer {}:{} unreachable: {}", config.peers[i].host, config.peers[i].port, e.what()));
            unusable[i] = true;
        }
        if (s) sessions[i] = s;
        co_return s;
    };

    for (auto [first, last] : runs_of(db.damaged_blocks())) {
        // Highest first within the run as well, max_request at a time.
        for (uint64_t hi = last;;) {
            const uint64_t lo = hi - std::min<uint64_t>(hi - first, config.max_request - 1);
            bool done = false;
            for (size_t i = 0; i < config.peers.size() && !done; ++i) {
                if (unusable[i]) continue;
                auto session = co_await session_of(i);
                if (!session) continue;
                eth::GetBlockHeadersRequest req;
                req.origin = eth::HashOrNumber::of(lo);
                req.amount = hi - lo + 1;
                auto reply = co_await session->request(req, config.request_timeout);
                const std::string peer = fmt::format("{}:{}", config.peers[i].host, config.peers[i].port);
                if (!reply) {
                    result.notes.push_back(
                        fmt::format("peer {}: blocks {}..{}: {}", peer, lo, hi, reply.error().message));
                    continue;
                }
                if (reply->headers.size() != hi - lo + 1) {
                    result.notes.push_back(fmt::format("peer {}: blocks {}..{}: {} headers in the reply", peer, lo, hi,
                                                       reply->headers.size()));
                    continue;
                }
                done = true;
                for (uint64_t n = hi + 1; n-- > lo;) {
                    auto r = db.repair_header(n, reply->headers[n - lo]);
                    if (!r) {
                        result.notes.push_back(fmt::format("peer {}: {}", peer, r.error().message));
                        done = false;
                        break;
                    }
                    ++result.repaired;
                    spdlog::info("Repaired header                          block={} peer={}", n, peer);
                }
            }
            if (lo == first) break;
            hi = lo - 1;
        }
    }
    for (auto& [i, s] : sessions) co_await s->close();
}

}  // namespace

RepairResult repair_damaged(db::ChainDb& db, const p2p::LocalNode& local, const RepairConfig& config) {
    RepairResult result;
    result.damaged = db.damaged_blocks().size();
    if (result.damaged == 0) return result;
    asio::io_context io(1);
    asio::co_spawn(io, repair(db, local, config, result), [&result](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            result.notes.push_back(fmt::format("repair stopped: {}", ex.what()));
        }
    });
    io.run();
    result.left = db.damaged_blocks();
    return result;
}

}  // namespace headerd::sync
