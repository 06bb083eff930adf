#include "disc/lookup.hpp"

#include <algorithm>
#include <memory>
#include <unordered_set>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/awaitable.hpp"

namespace headerd::disc {

namespace asio = boost::asio;

asio::awaitable<std::vector<Node>> iterative_lookup(asio::io_context& io, NodeId self, NodeId target,
                                                    const std::vector<Node>& seeds, LookupHooks hooks) {
    struct State {
        std::vector<Node> result;  // closest first, at most kLookupResults
        std::unordered_set<NodeId, NodeIdHash> asked, seen;
        size_t in_flight{0};
        asio::steady_timer wake;
        LookupHooks hooks;
        State(asio::io_context& io, LookupHooks h) : wake(io), hooks(std::move(h)) {}
    };
    auto s = std::make_shared<State>(io, std::move(hooks));
    auto offer = [s, target, self](const Node& n) {
        if (n.id == self || !s->seen.insert(n.id).second) return;
        auto pos = std::lower_bound(s->result.begin(), s->result.end(), n, [&](const Node& a, const Node& b) {
            return compare_distance(target, a.id, b.id) < 0;
        });
        s->result.insert(pos, n);
        if (s->result.size() > kLookupResults) s->result.pop_back();
    };
    for (const auto& n : seeds) offer(n);
    while (!s->hooks.stopped()) {
        for (const Node& n : s->result) {
            if (s->in_flight >= kLookupAlpha) break;
            if (!s->asked.insert(n.id).second) continue;
            ++s->in_flight;
            asio::co_spawn(
                io,
                [s, n, offer]() -> asio::awaitable<void> {
                    auto found = co_await s->hooks.query(n);
                    if (found) {
                        for (const auto& f : *found) {
                            if (s->hooks.on_found) s->hooks.on_found(f);
                            offer(f);
                        }
                    }
                    --s->in_flight;
                    s->wake.cancel();
                },
                asio::detached);
        }
        if (s->in_flight == 0) break;
        s->wake.expires_at(asio::steady_timer::time_point::max());
        co_await s->wake.async_wait(kTuple);
    }
    co_return s->result;
}

std::chrono::milliseconds refresh_delay(std::chrono::seconds interval, std::mt19937_64& rng) {
    const auto half = std::chrono::duration_cast<std::chrono::milliseconds>(interval) / 2;
    std::uniform_int_distribution<int64_t> jitter(0, std::max<int64_t>(half.count() - 1, 0));
    return half + std::chrono::milliseconds(jitter(rng));
}

}  // namespace headerd::disc
