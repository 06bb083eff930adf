#include "load/runner.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

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
#include "load/reference_chain.hpp"
#include "p2p/client_session.hpp"
#include "p2p/peer_error.hpp"
#include "p2p/worker.hpp"

namespace headerd::load {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// Sleeps until `until` or until `flag` is set, in steps of at most 100 ms.
asio::awaitable<void> sleep_until(Clock::time_point until, const std::atomic<bool>& flag) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!flag.load(std::memory_order_relaxed)) {
        const auto now = Clock::now();
        if (now >= until) break;
        timer.expires_at(std::min(until, now + 100ms));
        co_await timer.async_wait(kTuple);
    }
}

std::string enode_url(const p2p::Enode& e) {
    return fmt::format("enode://{}@{}:{}", to_hex(e.key.bytes()), e.host, e.port);
}

}  // namespace

// ---- mix ---------------------------------------------------------------------------------------

Outcome<std::vector<MixEntry>> parse_mix(const std::string& text) {
    std::vector<MixEntry> mix;
    if (text == "mix") {
        for (const ProfileSpec& p : profiles()) {
            if (!p.history()) mix.push_back({&p, p.mix_weight});
        }
        return mix;
    }
    if (text == "history") {
        for (const ProfileSpec& p : profiles()) {
            if (p.history()) mix.push_back({&p, p.history_weight});
        }
        return mix;
    }
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t comma = std::min(text.find(',', pos), text.size());
        const std::string item = text.substr(pos, comma - pos);
        pos = comma + 1;
        if (item.empty()) return make_error(fmt::format("--profile {}: empty entry", text));
        const size_t colon = item.find(':');
        const std::string name = item.substr(0, colon);
        const ProfileSpec* spec = find_profile(name);
        if (spec == nullptr) {
            std::string names;
            for (const ProfileSpec& p : profiles()) names += (names.empty() ? "" : ", ") + std::string(p.name);
            return make_error(fmt::format("--profile: unknown profile '{}' (one of: mix, history, {})", name, names));
        }
        double weight = 1;
        if (colon != std::string::npos) {
            char* end = nullptr;
            const std::string w = item.substr(colon + 1);
            weight = std::strtod(w.c_str(), &end);
            if (w.empty() || end != w.c_str() + w.size() || !(weight > 0) || !std::isfinite(weight)) {
                return make_error(fmt::format("--profile {}: weight '{}' is not a positive number", text, w));
            }
        }
        for (const MixEntry& e : mix) {
            if (e.profile == spec) return make_error(fmt::format("--profile {}: '{}' is listed twice", text, name));
        }
        mix.push_back({spec, weight});
        if (comma == text.size()) break;
    }
    return mix;
}

std::vector<const ProfileSpec*> assign_profiles(const std::vector<MixEntry>& mix, size_t clients) {
    double total = 0;
    for (const auto& m : mix) total += std::max(0.0, m.weight);
    std::vector<double> exact(mix.size(), 0);
    std::vector<size_t> counts(mix.size(), 0);
    std::vector<std::pair<double, size_t>> remainders;
    size_t given = 0;
    for (size_t i = 0; i < mix.size(); ++i) {
        exact[i] = total > 0 && mix[i].weight > 0 ? static_cast<double>(clients) * mix[i].weight / total : 0;
        counts[i] = static_cast<size_t>(std::floor(exact[i]));
        given += counts[i];
        remainders.push_back({exact[i] - std::floor(exact[i]), i});
    }
    // Largest remainders take the clients the floors left.
    std::stable_sort(remainders.begin(), remainders.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t k = 0; given < clients && k < remainders.size(); ++k, ++given) ++counts[remainders[k].second];
    // Every weighted profile gets a client while clients last (heaviest first): each one without
    // takes a client from the profile furthest above its exact share that has two or more.
    std::vector<size_t> order;
    for (size_t i = 0; i < mix.size(); ++i) {
        if (mix[i].weight > 0) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mix[a].weight > mix[b].weight; });
    for (size_t i : order) {
        if (counts[i] != 0) continue;
        std::optional<size_t> donor;
        for (size_t j = 0; j < mix.size(); ++j) {
            const double surplus = static_cast<double>(counts[j]) - exact[j];
            if (counts[j] >= 2 && (!donor || surplus > static_cast<double>(counts[*donor]) - exact[*donor])) donor = j;
        }
        if (!donor) break;
        --counts[*donor];
        counts[i] = 1;
    }
    std::vector<const ProfileSpec*> out;
    for (size_t i = 0; i < mix.size(); ++i) out.insert(out.end(), counts[i], mix[i].profile);
    return out;
}

// ---- the run -----------------------------------------------------------------------------------

struct Client;

struct Runner::Impl {
    explicit Impl(LoadConfig c) : cfg(std::move(c)), pool(cfg.workers) {}

    LoadConfig cfg;
    p2p::WorkerPool pool;
    std::vector<std::unique_ptr<Shard>> shards;  // one per worker
    std::vector<const ProfileSpec*> specs;       // profile index -> spec
    std::vector<const ProfileSpec*> assignment;  // client -> spec
    std::atomic<bool> stopping{false};           // no new requests
    std::atomic<bool> closing{false};            // close every session now
    std::atomic<uint64_t> sent{0};
    std::atomic<int64_t> in_flight{0};
    std::atomic<int64_t> clients_up{0};
    std::atomic<int64_t> clients_up_max{0};
    std::atomic<int64_t> handshakes{0};
    std::atomic<size_t> clients_done{0};
    size_t samples_per_shard{0};  // cfg.max_samples over the shards
    std::atomic<bool> samples_truncated{false};
    Clock::time_point start;
    std::mutex server_mu;
    std::optional<ServerInfo> server;
    std::mutex connect_errors_mu;
    std::map<std::string, uint64_t> connect_errors;  // reason -> failures (kMaxConnectErrorReasons reasons)
    std::mutex sessions_mu;
    std::vector<std::weak_ptr<Client>> clients;

    size_t profile_index(const ProfileSpec* s) const {
        return static_cast<size_t>(std::find(specs.begin(), specs.end(), s) - specs.begin());
    }
    asio::awaitable<void> client_main(std::shared_ptr<Client> c);
    asio::awaitable<bool> connect(Client& c);
    asio::awaitable<void> lane(std::shared_ptr<Client> c);
    asio::awaitable<bool> learn_head(Client& c);
    static void learn_growth(Client& c, const ReplyFacts& facts, std::span<const ByteView> headers);
    // One request: sends, waits, verifies, judges, records. Returns false when the session ended.
    asio::awaitable<bool> one_request(Client& c, Planned p, std::optional<Clock::time_point> intended);
    // The same for a GetBlockBodies or GetReceipts request of a history profile.
    asio::awaitable<bool> one_history(Client& c, Planned p, std::optional<Clock::time_point> intended);
    // The request's timeout by the profile's rule; nullopt: the session's (geth msgrate).
    std::optional<Clock::duration> timeout_for(const Client& c) const;
    // The client's view of the server's chain for its walk to plan from.
    void refresh_view(Client& c) const;
    // Counts replies to ids that were not pending since the last call, as failures of `p`.
    void count_stale(Client& c, const Planned& p, ProfileMeters* meters, const char* reply);
    // Records a verdict of the client's judge.
    void record_verdict(Client& c, const std::optional<VerdictEvent>& verdict, ProfileMeters* meters);
    // Counts a request sent: in its profile's stats, the second's (the timeline) and the metrics.
    void count_request(Client& c, Message m = Message::kHeaders);
    // Counts a reply, good or not, that took `rtt`: replies, headers, header bytes and the RTT, in
    // the profile's stats, the second's and the metrics.
    void record_reply(Client& c, std::span<const ByteView> headers, Clock::duration rtt);
    // Keeps a reply's RTT for RunResult::samples (LoadConfig::max_samples); under the shard's lock.
    void keep_sample(Client& c, Message m, std::chrono::nanoseconds rtt);
    // Counts a reply that failed verification, or a protocol breach the session saw in one, as a
    // verification failure, and records the failure.
    void record_invalid(Client& c, const Planned& p, const std::string& reason, Message m = Message::kHeaders);
    void record_failure(Client& c, const Planned& p, const std::string& reason);
    // A request of message `m` that got no reply: a timeout (counted lost), the session ended by the
    // server's breach (kInvalid) or otherwise (kClosed, which clears session_alive); kNotSent when it
    // was rejected before it was sent or the run is ending, which the caller hands back to the walk.
    RequestOutcome failed(Client& c, const Planned& p, Message m, const p2p::RequestFailure& error,
                          ProfileMeters* meters, bool& session_alive);
    void count_error(Client& c, const char* kind);
};

struct Client {
    size_t index{0};
    const ProfileSpec* spec{nullptr};
    size_t profile{0};
    Shard* shard{nullptr};
    const p2p::Enode* peer{nullptr};
    std::shared_ptr<Walk> walk;
    std::unique_ptr<Judge> judge;
    std::mt19937_64 rng;
    std::optional<rlpx::PrivateKey> key;
    p2p::LocalNode local;
    std::shared_ptr<p2p::ClientSession> session;
    ChainView view;
    Clock::duration reth_timeout{20s};
    VerifyScratch scratch;
    uint64_t stale_seen{0};
    int lanes{0};
    std::optional<asio::steady_timer> lanes_done;
    // Lanes whose walk has nothing to ask wait on this; every finished request cancels it.
    std::optional<asio::steady_timer> wake;
    // Open loop: this client's share of the rate.
    Clock::duration interval{};
    Clock::time_point next_slot{};
};

Runner::Runner(LoadConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Runner::~Runner() = default;

void Runner::Impl::count_error(Client& c, const char* kind) {
    {
        std::lock_guard lock(c.shard->mu);
        ++c.shard->profiles[c.profile].errors[kind];
        ++c.shard->interval.errors;
    }
    if (cfg.metrics != nullptr) {
        cfg.metrics->profile(c.profile)
            .errors->Add({{"profile", std::string(c.spec->name)}, {"kind", kind}})
            .Increment();
    }
}

void Runner::Impl::count_request(Client& c, Message m) {
    {
        std::lock_guard lock(c.shard->mu);
        ++c.shard->profiles[c.profile].requests;
        ++c.shard->profiles[c.profile].message(m).requests;
        ++c.shard->interval.requests;
    }
    if (cfg.metrics != nullptr) cfg.metrics->profile(c.profile).requests->Increment();
}

void Runner::Impl::keep_sample(Client& c, Message m, std::chrono::nanoseconds rtt) {
    if (c.shard->samples.size() >= samples_per_shard) {
        if (cfg.max_samples > 0) samples_truncated.store(true);
        return;
    }
    c.shard->samples.push_back(RttSample{static_cast<uint32_t>(c.profile), m, static_cast<uint64_t>(rtt.count())});
}

void Runner::Impl::record_reply(Client& c, std::span<const ByteView> headers, Clock::duration rtt) {
    uint64_t bytes = 0;
    for (ByteView h : headers) bytes += h.size();
    const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(rtt);
    {
        std::lock_guard lock(c.shard->mu);
        ProfileStats& s = c.shard->profiles[c.profile];
        IntervalStats& second = c.shard->interval;
        ++s.replies;
        ++second.replies;
        s.headers += headers.size();
        second.headers += headers.size();
        s.bytes += bytes;
        second.bytes += bytes;
        s.rtt.record(nanos);
        second.rtt.record(nanos);
        MessageStats& m = s.message(Message::kHeaders);
        ++m.replies;
        m.items += headers.size();
        m.bytes += bytes;
        m.rtt.record(nanos);
        keep_sample(c, Message::kHeaders, nanos);
    }
    if (cfg.metrics != nullptr) {
        ProfileMeters& meters = cfg.metrics->profile(c.profile);
        meters.rtt->Observe(std::chrono::duration<double>(rtt).count());
        meters.headers->Increment(static_cast<double>(headers.size()));
    }
}

void Runner::Impl::record_invalid(Client& c, const Planned& p, const std::string& reason, Message m) {
    {
        std::lock_guard lock(c.shard->mu);
        ProfileStats& s = c.shard->profiles[c.profile];
        ++s.verification_failures;
        ++s.message(m).verification_failures;
        ++s.errors["verification"];
        ++c.shard->interval.errors;
    }
    if (cfg.metrics != nullptr) cfg.metrics->profile(c.profile).verification_failures->Increment();
    record_failure(c, p, reason);
}

void Runner::Impl::record_failure(Client& c, const Planned& p, const std::string& reason) {
    std::lock_guard lock(c.shard->mu);
    ++c.shard->failures_seen;
    if (c.shard->failures.size() < cfg.max_failures) {
        const auto& r = p.request;
        FailureRecord f;
        f.client = c.index;
        f.profile = std::string(c.spec->name);
        f.reason = reason;
        f.id = r.request_id;
        if (p.history) {
            // A GetBlockBodies or GetReceipts request: its blocks instead of an origin.
            f.message = p.history->bodies() ? "GetBlockBodies" : "GetReceipts";
            f.request = fmt::format("id {}, {}", r.request_id, describe(*p.history));
            f.amount = p.history->blocks.size();
            if (!p.history->blocks.empty()) {
                f.origin = std::to_string(p.history->blocks.front()->number);
                f.blocks = {p.history->blocks.front()->number, p.history->blocks.back()->number};
            }
        } else {
            f.request = describe(r);
            f.origin = r.origin.is_hash ? to_hex0x(r.origin.hash) : std::to_string(r.origin.number);
            f.amount = r.amount;
            f.skip = r.skip;
            f.reverse = r.reverse;
        }
        c.shard->failures.push_back(std::move(f));
    }
}

asio::awaitable<bool> Runner::Impl::connect(Client& c) {
    // Bounded handshakes across all workers.
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (handshakes.fetch_add(1) >= static_cast<int64_t>(cfg.max_handshakes)) {
        handshakes.fetch_sub(1);
        if (closing.load()) co_return false;
        timer.expires_after(10ms);
        co_await timer.async_wait(kTuple);
    }
    {
        std::lock_guard lock(c.shard->mu);
        ++c.shard->connect_attempts;
    }
    std::string error;
    try {
        auto key = rlpx::PrivateKey::generate();
        if (!key) throw p2p::PeerError(p2p::PeerErrorKind::kNetwork, "cannot generate a node key");
        c.key = *key;
        c.local.key = &*c.key;
        p2p::ClientOptions options;
        options.limits = cfg.limits;
        options.bind = cfg.bind;
        options.max_in_flight = std::max<size_t>(16, cfg.depth.value_or(c.spec->depth));
        options.drop_on_stale = false;
        // With a reference chain every header is compared byte for byte, which decoding adds nothing to.
        options.check_headers = cfg.reference == nullptr;
        c.session = co_await p2p::ClientSession::connect(*c.peer, c.local, options);
    } catch (const p2p::PeerError& e) {
        error = e.what();
    }
    handshakes.fetch_sub(1);
    if (!error.empty()) {
        {
            std::lock_guard lock(c.shard->mu);
            ++c.shard->connect_failures;
        }
        count_error(c, "connect");
        bool first = false;
        {
            std::lock_guard lock(connect_errors_mu);
            auto it = connect_errors.find(error);
            if (it != connect_errors.end()) {
                ++it->second;
            } else if (connect_errors.size() < kMaxConnectErrorReasons) {
                connect_errors.emplace(error, 1);
                first = true;
            }
        }
        // Each reason once at warning level (a wrong --synthetic seed, a server that is down):
        // failed connections are retried, so the run itself goes on.
        if (first) {
            spdlog::warn("Client {} ({}) could not connect: {} (counted and retried; this reason is logged once)",
                         c.index, c.spec->name, error);
        } else {
            spdlog::debug("Client {} ({}) could not connect: {}", c.index, c.spec->name, error);
        }
        co_return false;
    }
    c.stale_seen = 0;
    const auto& chain = c.session->link().chain;
    c.view.head_hash = chain.head_hash;
    if (chain.head_number) c.view.head = *chain.head_number;
    {
        std::lock_guard lock(server_mu);
        if (!server) {
            server = ServerInfo{enode_url(*c.peer), c.session->link().client_id, c.session->link().version,
                                chain.head_number.value_or(0), chain.head_hash};
        }
    }
    co_return true;
}

asio::awaitable<bool> Runner::Impl::learn_head(Client& c) {
    // eth/68's Status names the head by hash only: ask for it, as Erigon does on connect.
    Planned p;
    p.request.origin = eth::HashOrNumber::of(c.view.head_hash);
    p.request.amount = 1;
    p.step = "head number";
    p.origin_on_chain = true;
    count_request(c);
    // In flight like any request, so that the end of the run drains it rather than cuts it.
    in_flight.fetch_add(1);
    auto r = co_await c.session->request(p.request, cfg.timeout.value_or(c.spec->timeout));
    in_flight.fetch_sub(1);
    if (r) record_reply(c, r->headers, r->rtt);
    if (!r && closing.load()) co_return false;  // cut by the end of the run: not an error
    if (!r || r->headers.size() != 1) {
        count_error(
            c, r ? "verification" : (r.error().kind == p2p::RequestFailure::Kind::kTimeout ? "timeout" : "closed"));
        record_failure(c, p,
                       r ? fmt::format("{} headers for the head hash of the server's Status", r->headers.size())
                         : "head probe failed: " + r.error().message);
        co_return false;
    }
    auto peek = peek_header(r->headers.front());
    if (!peek || header_hash(r->headers.front()) != c.view.head_hash) {
        record_failure(c, p, "the head hash of the server's Status does not give its head header");
        count_error(c, "verification");
        co_return false;
    }
    c.view.head = peek->number;
    std::lock_guard lock(server_mu);
    if (server && server->head == 0) server->head = peek->number;
    co_return true;
}

// A good reply holding headers above the client's view of the head shows that the server grew
// (eth/68 never says so after Status): its highest header becomes the head, number and hash together.
void Runner::Impl::learn_growth(Client& c, const ReplyFacts& facts, std::span<const ByteView> headers) {
    if (headers.empty()) return;
    const bool last_is_top = facts.last_number > facts.first_number;
    const uint64_t top = last_is_top ? facts.last_number : facts.first_number;
    if (top <= c.view.head) return;
    const Hash32& known = last_is_top ? facts.last_hash : facts.first_hash;  // when verification hashed it
    c.view.head = top;
    c.view.head_hash = known != Hash32{} ? known : header_hash(last_is_top ? headers.back() : headers.front());
}

std::optional<Clock::duration> Runner::Impl::timeout_for(const Client& c) const {
    if (cfg.timeout) return *cfg.timeout;
    if (c.spec->timeout_rule == TimeoutRule::kGethMsgrate) return std::nullopt;  // the session's msgrate timeout
    if (c.spec->timeout_rule == TimeoutRule::kRethAdaptive) return c.reth_timeout;
    return c.spec->timeout;
}

void Runner::Impl::refresh_view(Client& c) const {
    const p2p::ClientSession& session = *c.session;
    c.view.earliest.reset();
    if (eth::has_block_range(session.link().version)) c.view.earliest = session.link().chain.earliest;
    c.view.lowest = cfg.reference != nullptr ? cfg.reference->first() : 0;
    c.view.body_capacity = session.target_items(eth::MessageId::kGetBlockBodies, 1024);
    c.view.receipt_capacity = session.target_items(eth::MessageId::kGetReceipts, 1024);
}

void Runner::Impl::count_stale(Client& c, const Planned& p, ProfileMeters* meters, const char* reply) {
    // Replies to ids that were not pending: the session dropped them; the server sent them.
    if (const uint64_t stale = c.session->stats().stale; stale > c.stale_seen) {
        const uint64_t d = stale - c.stale_seen;
        c.stale_seen = stale;
        {
            std::lock_guard lock(c.shard->mu);
            c.shard->profiles[c.profile].stale += d;
        }
        if (meters != nullptr) meters->stale->Increment(static_cast<double>(d));
        record_failure(c, p, fmt::format("{} {} reply(s) to a request id that was not pending", d, reply));
    }
}

void Runner::Impl::record_verdict(Client& c, const std::optional<VerdictEvent>& verdict, ProfileMeters* meters) {
    if (!verdict) return;
    {
        std::lock_guard lock(c.shard->mu);
        ProfileStats& s = c.shard->profiles[c.profile];
        ++(verdict->drop ? s.drops : s.penalties);
        ++s.verdict_reasons[(verdict->drop ? "drop: " : "penalty: ") + verdict->reason];
    }
    if (verdict->drop && meters != nullptr) {
        meters->drops->Add({{"profile", std::string(c.spec->name)}, {"reason", verdict->reason}}).Increment();
    }
}

RequestOutcome Runner::Impl::failed(Client& c, const Planned& p, Message m, const p2p::RequestFailure& error,
                                    ProfileMeters* meters, bool& session_alive) {
    if (error.kind == p2p::RequestFailure::Kind::kTimeout) {
        {
            std::lock_guard lock(c.shard->mu);
            ++c.shard->profiles[c.profile].lost;
            ++c.shard->profiles[c.profile].message(m).lost;
        }
        if (meters != nullptr) meters->lost->Increment();
        count_error(c, "timeout");
        record_failure(c, p, "no reply: " + error.message);
        return RequestOutcome::kTimeout;
    }
    if (error.kind == p2p::RequestFailure::Kind::kRejected) {
        count_error(c, "rejected");
        return RequestOutcome::kNotSent;
    }
    session_alive = false;
    if (closing.load()) return RequestOutcome::kNotSent;  // the end of the run: not an error
    if (const auto& err = c.session->error(); err && p2p::is_misbehaviour(err->kind())) {
        // The server broke the protocol with its reply (e.g. more items than asked for).
        record_invalid(c, p, err->what(), m);
        return RequestOutcome::kInvalid;
    }
    count_error(c, "closed");
    spdlog::debug("Client {} ({}): session ended: {}", c.index, c.spec->name, error.message);
    return RequestOutcome::kClosed;
}

asio::awaitable<bool> Runner::Impl::one_request(Client& c, Planned p, std::optional<Clock::time_point> intended) {
    if (p.history) co_return co_await one_history(c, std::move(p), intended);
    ProfileMeters* meters = cfg.metrics != nullptr ? &cfg.metrics->profile(c.profile) : nullptr;
    const uint64_t head_low = c.view.head;
    count_request(c);
    if (meters != nullptr) cfg.metrics->in_flight().Increment();
    in_flight.fetch_add(1);
    auto result = co_await c.session->request(p.request, timeout_for(c));
    in_flight.fetch_sub(1);
    if (meters != nullptr) cfg.metrics->in_flight().Decrement();
    const auto now = Clock::now();
    count_stale(c, p, meters, "BlockHeaders");

    RequestOutcome outcome = RequestOutcome::kGood;
    std::optional<ReplyFacts> facts;
    bool session_alive = true;
    if (result) {
        p.request.request_id = result->request_id;
        // A BlockRangeUpdate (eth/69+) moved the server's head: take its number and hash together,
        // or a head probe by hash would expect the new number from the old hash.
        if (const auto& chain = c.session->link().chain; chain.head_number && *chain.head_number > c.view.head) {
            c.view.head = *chain.head_number;
            c.view.head_hash = chain.head_hash;
        }
        VerifyRequest vr{&p.request,
                         p.origin_number,
                         p.origin_on_chain,
                         head_low,
                         std::max(head_low, c.view.head),
                         c.session->link().version < 69};
        VerifyResult v = verify_reply(vr, result->headers, cfg.rules, cfg.reference, c.scratch);
        if (v.ok()) learn_growth(c, *v.facts, result->headers);
        // Open loop: the RTT counts from the slot the request was due in.
        record_reply(c, result->headers, intended ? now - *intended : result->rtt);
        if (c.spec->timeout_rule == TimeoutRule::kRethAdaptive)
            c.reth_timeout = reth_next_timeout(c.reth_timeout, result->rtt);
        if (v.ok()) {
            facts = *v.facts;
            c.walk->headers(p, result->headers);
        } else {
            outcome = RequestOutcome::kInvalid;
            record_invalid(c, p, v.failure);
        }
        // Done with the headers (the facts are copies): the next reply reuses the buffer.
        c.session->recycle(std::move(*result));
    } else {
        outcome = failed(c, p, Message::kHeaders, result.error(), meters, session_alive);
        if (outcome == RequestOutcome::kNotSent) {
            c.walk->done(p, RequestOutcome::kNotSent, nullptr);
            co_return session_alive;
        }
    }

    record_verdict(c, c.judge->judge(p, outcome, facts ? &*facts : nullptr, now), meters);
    c.walk->done(p, outcome, facts ? &*facts : nullptr);
    co_return session_alive;
}

asio::awaitable<bool> Runner::Impl::one_history(Client& c, Planned p, std::optional<Clock::time_point> intended) {
    ProfileMeters* meters = cfg.metrics != nullptr ? &cfg.metrics->profile(c.profile) : nullptr;
    const HistoryAsk& ask = *p.history;
    const Message m = ask.bodies() ? Message::kBodies : Message::kReceipts;
    count_request(c, m);
    if (meters != nullptr) cfg.metrics->in_flight().Increment();
    in_flight.fetch_add(1);
    auto result = co_await c.session->request_history(ask.request, ask.hashes, timeout_for(c), ask.first_receipt_index);
    in_flight.fetch_sub(1);
    if (meters != nullptr) cfg.metrics->in_flight().Decrement();
    const auto now = Clock::now();
    count_stale(c, p, meters, ask.bodies() ? "BlockBodies" : "Receipts");

    RequestOutcome outcome = RequestOutcome::kGood;
    std::optional<HistoryFacts> facts;
    bool session_alive = true;
    if (result) {
        p.request.request_id = result->request_id;
        const auto& link = c.session->link();
        HistoryContext ctx{link.version, std::nullopt};
        if (eth::has_block_range(link.version)) {
            ctx.announced = std::pair<uint64_t, uint64_t>{link.chain.earliest, link.chain.head_number.value_or(0)};
        }
        HistoryVerifyResult v = verify_history_reply(ask, ctx, result->items, result->last_block_incomplete);
        const auto rtt = intended ? now - *intended : result->rtt;
        uint64_t bytes = 0;
        for (ByteView i : result->items) bytes += i.size();
        {
            std::lock_guard lock(c.shard->mu);
            ProfileStats& s = c.shard->profiles[c.profile];
            IntervalStats& second = c.shard->interval;
            const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(rtt);
            ++s.replies;
            ++second.replies;
            s.rtt.record(nanos);
            second.rtt.record(nanos);
            second.bytes += bytes;
            (m == Message::kBodies ? second.bodies : second.receipt_lists) += result->items.size();
            MessageStats& ms = s.message(m);
            ++ms.replies;
            ms.items += result->items.size();
            ms.bytes += bytes;
            ms.rtt.record(nanos);
            keep_sample(c, m, nanos);
            if (v.ok()) {
                ms.receipts += v.facts->receipts;
                if (v.facts->items == 0 && !ask.blocks.empty()) ++ms.empty;
                if (v.facts->short_reply) ++ms.short_replies;
            }
        }
        if (meters != nullptr) meters->rtt->Observe(std::chrono::duration<double>(rtt).count());
        if (c.spec->timeout_rule == TimeoutRule::kRethAdaptive)
            c.reth_timeout = reth_next_timeout(c.reth_timeout, result->rtt);
        if (v.ok()) {
            facts = std::move(*v.facts);
            facts->rtt = result->rtt;
        } else {
            outcome = RequestOutcome::kInvalid;
            record_invalid(c, p, v.failure, m);
        }
    } else {
        outcome = failed(c, p, m, result.error(), meters, session_alive);
        if (outcome == RequestOutcome::kNotSent) {
            c.walk->done_history(p, RequestOutcome::kNotSent, nullptr);
            co_return session_alive;
        }
    }

    record_verdict(c, c.judge->judge_history(p, outcome, facts ? &*facts : nullptr, now), meters);
    c.walk->done_history(p, outcome, facts ? &*facts : nullptr);
    co_return session_alive;
}

asio::awaitable<void> Runner::Impl::lane(std::shared_ptr<Client> c) {
    const bool open_loop = cfg.rate.has_value();
    while (!stopping.load(std::memory_order_relaxed) && c->session && !c->session->closed()) {
        refresh_view(*c);
        std::optional<Planned> p = c->walk->next(c->view, c->rng);
        if (!p) {
            // Nothing to ask until a request in flight is done (a history walk waiting for its
            // headers): wait for the next one to finish, or 100 ms.
            c->wake->expires_after(100ms);
            co_await c->wake->async_wait(kTuple);
            continue;
        }
        std::optional<Clock::time_point> intended;
        if (open_loop) {
            intended = c->next_slot;
            c->next_slot += c->interval;
            co_await sleep_until(*intended, stopping);
            if (stopping.load()) {
                if (p->history) {
                    c->walk->done_history(*p, RequestOutcome::kNotSent, nullptr);
                } else {
                    c->walk->done(*p, RequestOutcome::kNotSent, nullptr);
                }
                break;
            }
        }
        if (cfg.requests && sent.fetch_add(1) >= *cfg.requests) {
            stopping.store(true);
            if (p->history) {
                c->walk->done_history(*p, RequestOutcome::kNotSent, nullptr);
            } else {
                c->walk->done(*p, RequestOutcome::kNotSent, nullptr);
            }
            break;
        }
        const bool alive = co_await one_request(*c, std::move(*p), intended);
        c->wake->cancel();
        if (!alive) break;
        if (c->spec->think > Clock::duration::zero() && !open_loop) {
            std::uniform_real_distribution<double> jitter(0.8, 1.2);
            const auto pause = std::chrono::duration_cast<Clock::duration>(c->spec->think * jitter(c->rng));
            co_await sleep_until(Clock::now() + pause, stopping);
        }
    }
    if (--c->lanes == 0) c->lanes_done->cancel();
}

asio::awaitable<void> Runner::Impl::client_main(std::shared_ptr<Client> c) {
    const size_t n = cfg.clients;
    const auto ramp_at = start + (n > 1 ? cfg.ramp * static_cast<int64_t>(c->index) / static_cast<int64_t>(n) : 0s);
    co_await sleep_until(ramp_at, stopping);
    auto backoff = 1s;
    while (!stopping.load()) {
        if (!co_await connect(*c)) {
            std::uniform_real_distribution<double> jitter(0.5, 1.5);
            co_await sleep_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(backoff * jitter(c->rng)),
                                 stopping);
            backoff = std::min<std::chrono::seconds>(backoff * 2, 30s);
            continue;
        }
        backoff = 1s;
        const int64_t up = clients_up.fetch_add(1) + 1;
        for (int64_t m = clients_up_max.load(); up > m && !clients_up_max.compare_exchange_weak(m, up);) {
        }
        if (cfg.metrics != nullptr) cfg.metrics->clients_connected().Increment();
        bool ready = true;
        if (!c->session->link().chain.head_number) ready = co_await learn_head(*c);
        if (ready && !stopping.load()) {
            const uint32_t depth = cfg.depth.value_or(c->spec->depth);
            if (cfg.rate) {
                c->interval = std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(static_cast<double>(n) / *cfg.rate));
                std::uniform_real_distribution<double> phase(0, 1);
                c->next_slot = std::max(Clock::now(), start) +
                               std::chrono::duration_cast<Clock::duration>(c->interval * phase(c->rng));
            }
            c->lanes = static_cast<int>(depth);
            c->lanes_done.emplace(co_await asio::this_coro::executor, Clock::time_point::max());
            c->wake.emplace(co_await asio::this_coro::executor, Clock::time_point::max());
            for (uint32_t i = 0; i < depth; ++i) asio::co_spawn(c->lanes_done->get_executor(), lane(c), asio::detached);
            while (c->lanes > 0) co_await c->lanes_done->async_wait(kTuple);
        }
        clients_up.fetch_sub(1);
        if (cfg.metrics != nullptr) cfg.metrics->clients_connected().Decrement();
        if (!c->session->closed()) co_await c->session->close();
        c->session.reset();
        if (!stopping.load()) co_await sleep_until(Clock::now() + backoff, stopping);
    }
    clients_done.fetch_add(1);
}

RunResult Runner::run(const std::function<void(const StatusLine&)>& on_second) {
    Impl& m = *impl_;
    const LoadConfig& cfg = m.cfg;
    RunResult out;
    m.assignment = assign_profiles(cfg.mix, cfg.clients);
    for (const auto& e : cfg.mix) m.specs.push_back(e.profile);
    for (size_t i = 0; i < m.pool.size(); ++i) {
        auto shard = std::make_unique<Shard>();
        shard->profiles.resize(m.specs.size());
        m.shards.push_back(std::move(shard));
    }
    m.samples_per_shard = cfg.max_samples / m.shards.size();
    m.start = Clock::now() + 50ms;

    // Clients: fan-out groups (Erigon) share one walk and one worker.
    std::shared_ptr<Walk> group_walk;
    size_t group_left = 0;
    size_t group_worker = 0;
    size_t next_worker = 0;
    for (size_t i = 0; i < cfg.clients; ++i) {
        auto c = std::make_shared<Client>();
        c->index = i;
        c->spec = m.assignment[i];
        c->profile = m.profile_index(c->spec);
        c->peer = &cfg.peers[i % cfg.peers.size()];
        c->rng.seed(cfg.seed * 1'000'003 + i);
        c->judge = make_judge(*c->spec);
        size_t worker = 0;
        if (c->spec->fanout > 1) {
            if (group_left == 0) {
                group_walk = make_walk(*c->spec);
                group_left = c->spec->fanout;
                group_worker = next_worker++ % m.pool.size();
            }
            c->walk = group_walk;
            --group_left;
            worker = group_worker;
        } else {
            c->walk = make_walk(*c->spec);
            worker = next_worker++ % m.pool.size();
        }
        c->shard = m.shards[worker].get();
        const uint64_t lo = cfg.eth.value_or(c->spec->min_eth);
        const uint64_t hi = cfg.eth.value_or(c->spec->max_eth);
        c->local.client_id = fmt::format("headerd-load/{}/v1", c->spec->name);
        c->local.config = cfg.config;
        c->local.metrics = cfg.net_metrics;
        c->local.head = db::Head{0, cfg.config->genesis_hash, U256(17'179'869'184u), 0};
        c->local.offers = std::span<const p2p::ProtocolOffer>(p2p::kEthOffers).subspan(lo - 68, hi - lo + 1);
        {
            std::lock_guard lock(m.shards[worker]->mu);
            ++m.shards[worker]->profiles[c->profile].clients;
        }
        m.clients.push_back(c);
        asio::co_spawn(m.pool[worker].io(), m.client_main(c), asio::detached);
    }
    m.pool.start();

    // The main thread: a timeline point and a status line per second; the end of the run.
    auto collect = [&]() {
        IntervalStats sum;
        for (auto& s : m.shards) {
            std::lock_guard lock(s->mu);
            sum.merge(s->interval);
            s->interval = IntervalStats{};
        }
        return sum;
    };
    uint64_t errors_total = 0;
    auto next_tick = m.start + 1s;
    // The end of the counted window; none (max) for a run until stopped or --requests.
    const Clock::time_point end =
        cfg.duration > Clock::duration::zero() ? m.start + cfg.duration : Clock::time_point::max();
    while (true) {
        std::this_thread::sleep_until(std::min(next_tick, end));
        const auto now = Clock::now();
        if (stop_requested_.load()) {
            out.interrupted = true;
            m.stopping.store(true);
        }
        if (now >= end) m.stopping.store(true);
        if (now >= next_tick || m.stopping.load()) {
            IntervalStats s = collect();
            TimelinePoint p;
            p.t = std::chrono::duration<double>(now - m.start).count();
            p.clients = static_cast<uint64_t>(std::max<int64_t>(0, m.clients_up.load()));
            p.requests = s.requests;
            p.replies = s.replies;
            p.headers = s.headers;
            p.bodies = s.bodies;
            p.receipt_lists = s.receipt_lists;
            p.bytes = s.bytes;
            p.errors = s.errors;
            p.p50_ms = to_ms(s.rtt.quantile(0.5));
            p.p99_ms = to_ms(s.rtt.quantile(0.99));
            p.rtt = s.rtt.snapshot();
            errors_total += s.errors;
            out.timeline.push_back(p);
            if (on_second) {
                on_second(StatusLine{p.t, p.clients, static_cast<uint64_t>(std::max<int64_t>(0, m.in_flight.load())), p,
                                     errors_total});
            }
            next_tick += 1s;
        }
        if (m.stopping.load()) break;
    }
    out.seconds = std::chrono::duration<double>(Clock::now() - m.start).count();

    // Drain: replies in flight may still come, for at most cfg.drain; then close every session.
    const auto drain_end = Clock::now() + cfg.drain;
    while (m.in_flight.load() > 0 && Clock::now() < drain_end && !stop_requested_.load()) {
        std::this_thread::sleep_for(20ms);
    }
    m.closing.store(true);
    for (size_t w = 0; w < m.pool.size(); ++w) {
        asio::post(m.pool[w].io(), [&m, w] {
            for (auto& weak : m.clients) {
                auto c = weak.lock();
                if (!c || c->shard != m.shards[w].get() || !c->session || c->session->closed()) continue;
                // The coroutine holds the session: its client may drop it meanwhile.
                asio::co_spawn(
                    m.pool[w].io(), [session = c->session]() -> asio::awaitable<void> { co_await session->close(); },
                    asio::detached);
            }
        });
    }
    m.pool.release();
    m.pool.join();

    // The last partial second's replies (in the drain) count in the totals, not in the timeline.
    for (auto& s : m.shards) {
        out.connect_attempts += s->connect_attempts;
        out.connect_failures += s->connect_failures;
        out.failures_seen += s->failures_seen;
        for (auto& f : s->failures) {
            if (out.failures.size() < cfg.max_failures) out.failures.push_back(std::move(f));
        }
    }
    out.profiles.resize(m.specs.size());
    for (auto& s : m.shards) {
        for (size_t i = 0; i < m.specs.size(); ++i) out.profiles[i].merge(s->profiles[i]);
        out.samples.insert(out.samples.end(), s->samples.begin(), s->samples.end());
    }
    out.samples_truncated = m.samples_truncated.load();
    out.profile_specs = m.specs;
    out.connect_errors = m.connect_errors;
    out.clients_connected_max = static_cast<uint64_t>(m.clients_up_max.load());
    out.server = m.server;
    return out;
}

}  // namespace headerd::load
