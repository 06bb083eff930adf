#include "sim/simulation.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "core/keccak.hpp"
#include "disc/address_policy.hpp"
#include "disc/enr.hpp"
#include "disc/env.hpp"
#include "disc/lookup.hpp"
#include "disc/node_db.hpp"
#include "disc/table.hpp"
#include "disc/v4_udp.hpp"
#include "disc/v4wire.hpp"
#include "disc/v5_udp.hpp"
#include "sim/adversary.hpp"

namespace headerd::sim {

namespace asio = boost::asio;
namespace v4 = disc::v4;
using disc::Clock;
using disc::Enr;
using disc::Node;
using disc::NodeId;
using disc::NodeIdHash;

namespace {

constexpr uint16_t kPort = 30303;
// Key domains: honest nodes, adversaries, spoofers.
constexpr uint64_t kHonestKeys = 1;
constexpr uint64_t kAdversaryKeys = 2;
constexpr uint64_t kSpooferKeys = 3;
// Who sends a datagram (SimulationResult::traffic_*).
constexpr uint8_t kHonestSender = 0;
constexpr uint8_t kAdversarySender = 1;
constexpr uint8_t kSpooferSender = 2;

// A private key from (seed, domain, i): keccak256 of them, again with a counter in the rare case
// the hash is not a valid scalar.
rlpx::PrivateKey derive_key(uint64_t seed, uint64_t domain, uint64_t i) {
    for (uint64_t attempt = 0;; ++attempt) {
        Bytes in{'h', 'e', 'a', 'd', 'e', 'r', 'd', '-', 's', 'i', 'm'};
        for (uint64_t v : {seed, domain, i, attempt}) {
            for (int k = 0; k < 8; ++k) in.push_back(static_cast<uint8_t>(v >> (8 * k)));
        }
        if (auto key = rlpx::PrivateKey::from_bytes(keccak256(in))) return *key;
    }
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

long peak_rss_kb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto s = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return s(u.ru_utime) + s(u.ru_stime);
}

uint32_t bucket_index(const NodeId& self, const NodeId& other) {
    const int d = disc::log_distance(self, other);
    return d <= disc::kBucketMinDistance + 1 ? 0 : static_cast<uint32_t>(d - disc::kBucketMinDistance - 1);
}

void set_bit(std::vector<uint64_t>& bits, size_t i) {
    if (bits.size() <= i / 64) bits.resize(i / 64 + 1, 0);
    bits[i / 64] |= uint64_t{1} << (i % 64);
}

bool has_bit(const std::vector<uint64_t>& bits, size_t i) {
    return i / 64 < bits.size() && ((bits[i / 64] >> (i % 64)) & 1) != 0;
}

size_t count_and(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
    size_t n = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += static_cast<size_t>(std::popcount(a[i] & b[i]));
    return n;
}

// What a measured lookup saw of its queries.
struct Trace {
    std::unordered_map<NodeId, int, NodeIdHash> depth;  // the hop a node was (or would be) asked in
    int hops = 0;
    size_t queries = 0;

    int ask(const NodeId& id) {
        auto [it, fresh] = depth.try_emplace(id, 1);
        ++queries;
        hops = std::max(hops, it->second);
        return it->second;
    }
    void named(const std::vector<Node>& found, int hop) {
        for (const Node& n : found) depth.try_emplace(n.id, hop + 1);
    }
};

asio::awaitable<std::optional<std::vector<Node>>> traced_v4(std::shared_ptr<disc::V4Service> s,
                                                            std::shared_ptr<Trace> t, Node n, v4::NodeKey target) {
    const int hop = t->ask(n.id);
    auto found = co_await s->find_node(std::move(n), target);
    if (found) t->named(*found, hop);
    co_return found;
}

asio::awaitable<std::optional<std::vector<Node>>> traced_v5(std::shared_ptr<disc::V5Service> s,
                                                            std::shared_ptr<Trace> t, Node n, NodeId target) {
    const int hop = t->ask(n.id);
    auto distances = lookup_distances(target, n.id);
    auto found = co_await s->find_node(std::move(n), std::move(distances));
    if (found) t->named(*found, hop);
    co_return found;
}

struct LookupOutcome {
    size_t protocol = 0;
    double found = 0;
    double hops = 0;
    double queries = 0;
    double millis = 0;
};

}  // namespace

Quantiles quantiles(std::vector<double> values) {
    Quantiles q;
    q.n = values.size();
    if (values.empty()) return q;
    std::sort(values.begin(), values.end());
    double sum = 0;
    for (double v : values) sum += v;
    q.mean = sum / static_cast<double>(values.size());
    // Nearest rank.
    const auto at = [&](double p) {
        const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
        return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
    };
    q.p10 = at(0.1);
    q.median = at(0.5);
    q.p90 = at(0.9);
    q.max = values.back();
    return q;
}

// ---- the world --------------------------------------------------------------------------------

namespace {

struct Honest {
    uint32_t index = 0;
    rlpx::PrivateKey key;
    NodeId id{};
    bool v4 = false;  // runs discv4 (otherwise its discv4 service only holds the socket)
    bool v5 = false;
    bool nat = false;
    bool bootnode = false;
    udp::endpoint ep;
    std::vector<udp::endpoint> former;  // where it was before it moved
    Clock::time_point moved_at = Clock::time_point::max();
    Clock::time_point started{};  // when its services last started
    uint64_t seq = 1;
    std::optional<Enr> record;
    bool alive = false;
    bool joined_late = false;
    std::shared_ptr<MeteredTransport> transport;
    std::shared_ptr<disc::V4Service> s4;
    std::shared_ptr<disc::V5Service> s5;
    std::array<std::vector<uint64_t>, 2> found;  // honest indexes its tables ever held, per protocol
    HonestRef ref;

    explicit Honest(const rlpx::PrivateKey& k) : key(k), id(k.public_key().node_id()) {}
    bool runs(size_t p) const { return p == kV4 ? v4 : v5; }
    const disc::Table& table(size_t p) const { return p == kV4 ? s4->table() : s5->table(); }
};

}  // namespace

struct Simulation::Impl {
    SimulationConfig cfg;
    disc::VirtualEnv env;
    asio::io_context io;
    disc::SimNetwork net;
    std::mt19937_64 rng;
    Amplification amp;
    Coalition coalition;
    std::vector<std::unique_ptr<Honest>> honest;
    std::vector<std::unique_ptr<Adversary>> adversaries;
    std::vector<bool> sybil;
    std::vector<std::unique_ptr<Spoofer>> spoofers;
    std::unordered_map<NodeId, uint32_t, NodeIdHash> honest_by_id;
    std::unordered_map<NodeId, uint32_t, NodeIdHash> adversary_by_id;
    std::unordered_set<uint32_t> used_ips;
    std::unordered_set<uint64_t> victims;
    std::unordered_map<uint64_t, uint8_t> sender_at;  // endpoint -> kHonestSender, ...
    std::array<uint64_t, 4> traffic_packets{};
    std::array<uint64_t, 4> traffic_bytes{};
    std::vector<Node> boot4;
    std::vector<Node> boot5;
    // The adversaries' view of the honest nodes, rebuilt when it changed.
    bool directory_dirty = true;
    Clock::time_point directory_built{};
    std::vector<NodeId> v4_sorted_ids;
    std::vector<uint32_t> v4_sorted_index;
    std::array<std::vector<uint32_t>, 2> live_public;  // per protocol
    std::vector<uint32_t> live_any_public;
    Clock::time_point t0;
    Clock::time_point end;
    Clock::time_point quiet;  // periodic senders stop here
    uint64_t next_key = 0;
    SimulationResult result;
    std::vector<LookupOutcome> outcomes;
    size_t lookups_running = 0;
    std::chrono::steady_clock::time_point wall_start;

    explicit Impl(SimulationConfig c)
        : cfg(c), env(c.seed), net(env, network_config(c)), rng(c.seed * 0x9e3779b97f4a7c15ULL + 7) {}

    static disc::SimNetworkConfig network_config(const SimulationConfig& c) {
        disc::SimNetworkConfig n = c.network;
        n.loss = c.loss;
        n.seed = c.seed;
        return n;
    }

    double uniform() { return std::uniform_real_distribution<double>(0, 1)(rng); }
    Clock::duration uniform_within(Clock::duration d) {
        if (d.count() <= 0) return Clock::duration::zero();
        return Clock::duration{std::uniform_int_distribution<Clock::rep>(0, d.count() - 1)(rng)};
    }
    template <class T>
    size_t pick(const std::vector<T>& v) {
        return std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng);
    }

    // A public IPv4 address nobody holds: drawn at random, refused ranges skipped (the address
    // policy as a node on the internet applies it).
    asio::ip::address_v4 public_ip() {
        static const asio::ip::address internet = asio::ip::make_address("8.8.8.8");
        for (;;) {
            const auto v = static_cast<uint32_t>(rng());
            const asio::ip::address_v4 a(v);
            if (v >> 24 == 0 || v >> 24 >= 224 || used_ips.contains(v)) continue;
            if (!disc::relay_allowed(internet, a)) continue;
            used_ips.insert(v);
            return a;
        }
    }

    Enr sign(const Honest& h) const {
        disc::EnrBuilder b(h.seq);
        // Behind a NAT a node does not know the address the internet sees: its record has none.
        if (!h.nat) b.ip(h.ep.address().to_v4().to_bytes());
        return b.udp(h.ep.port()).tcp(h.ep.port()).sign(h.key).value();
    }

    Honest& make_honest(bool bootnode) {
        auto h = std::make_unique<Honest>(derive_key(cfg.seed, kHonestKeys, next_key++));
        h->index = static_cast<uint32_t>(honest.size());
        h->bootnode = bootnode;
        if (bootnode) {
            h->v4 = h->v5 = true;
        } else {
            const double u = uniform();
            h->v4 = u >= cfg.v4_only + cfg.v5_only || u < cfg.v4_only;
            h->v5 = u >= cfg.v4_only;
            h->nat = uniform() < cfg.nat;
        }
        h->ep = udp::endpoint(public_ip(), kPort);
        h->record = sign(*h);
        honest_by_id[h->id] = h->index;
        honest.push_back(std::move(h));
        return *honest.back();
    }

    void start_honest(Honest& h, std::optional<disc::NodeDb> db = std::nullopt) {
        auto st = net.attach(h.ep, h.nat);
        h.transport = std::make_shared<MeteredTransport>(
            st, env, h.id, amp, [this](const udp::endpoint& from) { return victims.contains(endpoint_key(from)); });
        disc::V4Config c4;
        c4.bootnodes = boot4;
        c4.response_timeout = cfg.v4_response_timeout;
        c4.revalidate_interval = cfg.revalidate_interval;
        c4.refresh_interval = cfg.refresh_interval;
        c4.passive = !h.v4;
        if (!db) db.emplace(disc::NodeDbConfig{cfg.node_db_max_nodes});
        h.s4 = std::make_shared<disc::V4Service>(io, env, h.transport, h.key, *h.record, std::move(*db), c4);
        if (h.v5) {
            disc::V5Config c5;
            c5.bootnodes = boot5;
            c5.response_timeout = cfg.v5_response_timeout;
            c5.revalidate_interval = cfg.revalidate_interval;
            c5.refresh_interval = cfg.refresh_interval;
            c5.codec = deterministic_codec(std::make_shared<std::mt19937_64>(env.seed()), env, cfg.v5_session_capacity);
            h.s5 = std::make_shared<disc::V5Service>(io, env, h.key, *h.record, nullptr, c5);
            disc::share_socket(h.s4, h.s5);
        }
        h.s4->start();
        if (h.s5) h.s5->start();
        h.alive = true;
        h.started = env.now();
        h.ref = HonestRef{h.id, h.key.public_key().bytes(), h.ep, &*h.record, h.v4, h.v5};
        sender_at[endpoint_key(h.ep)] = kHonestSender;
        directory_dirty = true;
    }

    void stop_honest(Honest& h) {
        if (h.s5) h.s5->stop();
        h.s4->stop();  // closes the transport
        h.s5.reset();
        h.s4.reset();
        h.transport.reset();
        h.alive = false;
        directory_dirty = true;
    }

    void leave(Honest& h) {
        stop_honest(h);
        ++result.leaves;
    }

    // A new address and a record with a higher seq; the node database is kept, the table is not
    // (a restart at the new address).
    void move(Honest& h) {
        disc::NodeDb db = h.s4->db();
        const Enr old = *h.record;
        stop_honest(h);
        h.former.push_back(h.ep);
        h.ep = udp::endpoint(public_ip(), kPort);
        ++h.seq;
        h.record = sign(h);
        h.moved_at = env.now();
        if (!h.nat) coalition.add_stale(old);  // its old record, replayed by the adversaries
        start_honest(h, std::move(db));
        ++result.moves;
    }

    // At most once a virtual second: the adversaries' crawl lags a little behind the network.
    void refresh_directory() {
        if (!directory_dirty || env.now() < directory_built + std::chrono::seconds(1)) return;
        directory_dirty = false;
        directory_built = env.now();
        for (auto& v : live_public) v.clear();
        live_any_public.clear();
        for (const auto& h : honest) {
            if (!h->alive || h->nat) continue;
            live_any_public.push_back(h->index);
            for (size_t p : {kV4, kV5}) {
                if (h->runs(p)) live_public[p].push_back(h->index);
            }
        }
        v4_sorted_index = live_public[kV4];
        std::sort(v4_sorted_index.begin(), v4_sorted_index.end(),
                  [&](uint32_t a, uint32_t b) { return honest[a]->id < honest[b]->id; });
        v4_sorted_ids.clear();
        for (uint32_t i : v4_sorted_index) v4_sorted_ids.push_back(honest[i]->id);
    }

    // ---- building ---------------------------------------------------------------------------

    void build() {
        const size_t n_adv = static_cast<size_t>(std::llround(static_cast<double>(cfg.nodes) * cfg.adversaries));
        const size_t n_honest = cfg.nodes - std::min(cfg.nodes, n_adv);
        const size_t n_boot = std::min(cfg.bootnodes, n_honest);
        result.honest = n_honest;
        result.adversaries = n_adv;
        for (size_t i = 0; i < n_honest; ++i) make_honest(i < n_boot);
        for (size_t i = 0; i < n_boot; ++i) {
            const Node b = *Node::from_enr(*honest[i]->record);
            boot4.push_back(b);
            boot5.push_back(b);
        }

        // Adversaries: the sybils on one /24 (every address of it public), the others anywhere.
        const size_t n_sybil = static_cast<size_t>(std::llround(static_cast<double>(n_adv) * cfg.sybil_share));
        result.sybils = n_sybil;
        uint32_t sybil_net = 0;
        for (bool ok = false; !ok;) {
            sybil_net = public_ip().to_uint() & 0xffffff00u;
            ok = true;
            for (uint32_t host = 1; host < 255; ++host) {
                const uint32_t a = sybil_net | host;
                ok = ok && !used_ips.contains(a) &&
                     disc::relay_allowed(asio::ip::make_address("8.8.8.8"), asio::ip::address_v4(a));
            }
        }
        for (uint32_t host = 1; host < 255; ++host) used_ips.insert(sybil_net | host);
        for (size_t i = 0; i < n_adv; ++i) {
            const auto key = derive_key(cfg.seed, kAdversaryKeys, i);
            const bool is_sybil = i < n_sybil;
            udp::endpoint ep = is_sybil
                                   ? udp::endpoint(asio::ip::address_v4(sybil_net | static_cast<uint32_t>(1 + i % 254)),
                                                   static_cast<uint16_t>(kPort + i / 254))
                                   : udp::endpoint(public_ip(), kPort);
            const Enr record =
                disc::EnrBuilder(1).ip(ep.address().to_v4().to_bytes()).udp(ep.port()).tcp(ep.port()).sign(key).value();
            const auto rlp = record.encoded();
            coalition.add_member(Coalition::Member{key.public_key().node_id(), key.public_key().bytes(), ep,
                                                   Bytes(rlp.begin(), rlp.end())});
            adversaries.push_back(
                std::make_unique<Adversary>(env, net.attach(ep), coalition, key, record, env.seed(), 256));
            sybil.push_back(is_sybil);
            adversary_by_id[key.public_key().node_id()] = static_cast<uint32_t>(i);
            sender_at[endpoint_key(ep)] = kAdversarySender;
        }
        coalition.closest_honest = [this](const NodeId& target, size_t n, std::vector<const HonestRef*>& out) {
            refresh_directory();
            out.clear();
            for (size_t pos : closest_positions(v4_sorted_ids, target, n)) {
                out.push_back(&honest[v4_sorted_index[pos]]->ref);
            }
        };
        coalition.random_honest = [this](bool v5, std::mt19937_64& r) -> const HonestRef* {
            refresh_directory();
            const auto& live = live_public[v5 ? kV5 : kV4];
            if (live.empty()) return nullptr;
            return &honest[live[std::uniform_int_distribution<size_t>(0, live.size() - 1)(r)]]->ref;
        };

        // Spoofers, each at its victim's endpoint.
        for (size_t i = 0; i < cfg.spoofers; ++i) {
            const auto key = derive_key(cfg.seed, kSpooferKeys, i);
            const udp::endpoint victim(public_ip(), kPort);
            const Enr record =
                disc::EnrBuilder(1).ip(victim.address().to_v4().to_bytes()).udp(victim.port()).sign(key).value();
            spoofers.push_back(std::make_unique<Spoofer>(env, net.attach(victim), key, record, env.seed()));
            victims.insert(endpoint_key(victim));
            sender_at[endpoint_key(victim)] = kSpooferSender;
        }

        net.intercept = [this](const udp::endpoint& from, const udp::endpoint&, ByteView d) {
            const auto it = sender_at.find(endpoint_key(from));
            const size_t who = it == sender_at.end() ? 3 : it->second;
            ++traffic_packets[who];
            traffic_bytes[who] += d.size();
            return true;
        };
    }

    // ---- the schedule -----------------------------------------------------------------------

    void schedule() {
        // Bootnodes first, the rest of the initial nodes and the adversaries within the join window.
        for (auto& h : honest) {
            Honest* p = h.get();
            env.at(p->bootnode ? t0 : t0 + uniform_within(cfg.join_window), [this, p] { start_honest(*p); });
        }
        for (size_t i = 0; i < adversaries.size(); ++i) {
            env.at(t0 + uniform_within(cfg.join_window), [this, i] {
                adversaries[i]->start();
                adversary_tick(i);
            });
        }
        if (cfg.spoof_rate > 0) {
            for (size_t i = 0; i < spoofers.size(); ++i) {
                env.at(t0 + cfg.join_window + uniform_within(std::chrono::seconds(1)), [this, i] { spoof_tick(i, 0); });
            }
        }
        // Churn: leaving nodes at exponential intervals (a Poisson process), each replaced at once.
        const double per_second = cfg.churn_per_hour * static_cast<double>(result.honest) / 3600.0;
        if (per_second > 0) schedule_churn(t0 + cfg.join_window, per_second);
        // Moves: public initial nodes (not bootnodes), once each, at random times.
        std::vector<uint32_t> movable;
        for (const auto& h : honest) {
            if (!h->bootnode && !h->nat) movable.push_back(h->index);
        }
        std::shuffle(movable.begin(), movable.end(), rng);
        const auto n_moves = static_cast<size_t>(std::llround(static_cast<double>(movable.size()) * cfg.move_share));
        const auto span = std::chrono::duration_cast<Clock::duration>(cfg.duration - cfg.join_window) * 9 / 10;
        for (size_t i = 0; i < std::min(n_moves, movable.size()); ++i) {
            Honest* h = honest[movable[i]].get();
            env.at(t0 + cfg.join_window + uniform_within(span), [this, h] {
                if (h->alive) move(*h);
            });
        }
        // Table scans, coverage reports, progress.
        for (auto t = cfg.coverage_interval; t < cfg.duration; t += cfg.coverage_interval) {
            env.at(t0 + t, [this, t] {
                scan_tables();
                if (cfg.report_interval.count() > 0 && t.count() % cfg.report_interval.count() == 0) report_coverage();
            });
        }
        if (cfg.progress) {
            for (auto t = std::chrono::seconds(60); t <= cfg.duration; t += std::chrono::seconds(60)) {
                env.at(t0 + t, [this] { progress(); });
            }
        }
    }

    void schedule_churn(Clock::time_point from, double per_second) {
        const double wait = std::exponential_distribution<double>(per_second)(rng);
        const auto at = from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
        if (at >= end) return;
        env.at(at, [this, at, per_second] {
            std::vector<uint32_t> candidates;
            for (const auto& h : honest) {
                if (h->alive && !h->bootnode) candidates.push_back(h->index);
            }
            if (!candidates.empty()) leave(*honest[candidates[pick(candidates)]]);
            Honest& fresh = make_honest(false);
            fresh.joined_late = true;
            start_honest(fresh);
            ++result.joins;
            schedule_churn(at, per_second);
        });
    }

    void adversary_tick(size_t i) {
        if (env.now() >= quiet) return;
        refresh_directory();
        if (!live_any_public.empty()) adversaries[i]->ping(honest[live_any_public[pick(live_any_public)]]->ref);
        const auto interval = std::chrono::duration_cast<Clock::duration>(cfg.adversary_ping_interval);
        env.after(interval / 2 + uniform_within(interval), [this, i] { adversary_tick(i); });
    }

    void spoof_tick(size_t i, size_t turn) {
        static constexpr std::array<PacketClass, 6> kKinds{PacketClass::kV4Ping,       PacketClass::kV4FindNode,
                                                           PacketClass::kV4EnrRequest, PacketClass::kV5Random,
                                                           PacketClass::kV5Whoareyou,  PacketClass::kV5Handshake};
        if (env.now() >= quiet) return;
        refresh_directory();
        if (!live_any_public.empty()) {
            const HonestRef& target = honest[live_any_public[pick(live_any_public)]]->ref;
            for (size_t k = 0; k < kKinds.size(); ++k) {
                if (spoofers[i]->send(target, kKinds[(turn + k) % kKinds.size()])) break;
            }
        }
        const auto interval =
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / cfg.spoof_rate));
        env.after(interval / 2 + uniform_within(interval), [this, i, turn] { spoof_tick(i, turn + 1); });
    }

    void progress() {
        size_t live = 0;
        size_t t4 = 0;
        size_t t5 = 0;
        for (const auto& h : honest) {
            if (!h->alive) continue;
            ++live;
            if (h->v4) t4 += h->s4->table().size();
            if (h->s5) t5 += h->s5->table().size();
        }
        const auto wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
        std::fprintf(stderr,
                     "[disc-sim] t=%.0f min live=%zu table entries v4=%zu v5=%zu events=%llu datagrams=%llu "
                     "wall=%.0f s cpu=%.0f s rss=%ld MB\n",
                     seconds_between(t0, env.now()) / 60, live, t4, t5, static_cast<unsigned long long>(env.events()),
                     static_cast<unsigned long long>(net.stats().sent), wall, cpu_seconds(), peak_rss_kb() / 1024);
    }

    // ---- measuring --------------------------------------------------------------------------

    // What a protocol's tables can hold: live nodes running it, for discv5 only those with an address
    // in their record (discv4 holds a NATed node at its NAT's endpoint once it bonded).
    static bool can_hold(const Honest& j, size_t p) { return j.alive && j.runs(p) && (p == kV4 || !j.nat); }
    // Measuring reads the node list itself: it must not touch the adversaries' view (its rebuild times
    // would change what they do, and the figures would depend on when they are taken).
    std::vector<uint32_t> holdable(size_t p) const {
        std::vector<uint32_t> out;
        for (const auto& h : honest) {
            if (can_hold(*h, p)) out.push_back(h->index);
        }
        return out;
    }

    // The honest node an entry names, if it is that node at its true endpoint and alive.
    const Honest* correct(const Node& n) const {
        const auto it = honest_by_id.find(n.id);
        if (it == honest_by_id.end()) return nullptr;
        const Honest& j = *honest[it->second];
        if (!j.alive || udp::endpoint(n.ip, n.udp) != j.ep) return nullptr;
        return &j;
    }

    void scan_tables() {
        for (auto& h : honest) {
            if (!h->alive) continue;
            for (size_t p : {kV4, kV5}) {
                if (!h->runs(p)) continue;
                for (const Node& n : h->table(p).nodes()) {
                    const Honest* j = correct(n);
                    if (j && can_hold(*j, p)) set_bit(h->found[p], j->index);
                }
            }
        }
    }

    void report_coverage() {
        CoveragePoint c;
        c.minutes = seconds_between(t0, env.now()) / 60;
        for (size_t p : {kV4, kV5}) {
            const auto live = holdable(p);
            c.live[p] = live.size();
            std::vector<uint64_t> live_bits;
            for (uint32_t j : live) set_bit(live_bits, j);
            std::vector<double> found;
            std::vector<double> fill;
            for (const auto& h : honest) {
                if (!h->alive || !h->runs(p)) continue;
                const bool self_live = has_bit(live_bits, h->index);
                const size_t others = live.size() - (self_live ? 1 : 0);
                if (others == 0) continue;
                size_t known = count_and(h->found[p], live_bits) - (has_bit(h->found[p], h->index) ? 1 : 0);
                found.push_back(static_cast<double>(known) / static_cast<double>(others));
                // The most its buckets could hold of the live nodes: 16 of those at each bucket's distances.
                std::array<size_t, disc::kBucketCount> per_bucket{};
                for (uint32_t j : live) {
                    if (j != h->index) ++per_bucket[bucket_index(h->id, honest[j]->id)];
                }
                size_t ideal = 0;
                for (size_t b : per_bucket) ideal += std::min<size_t>(b, 16);
                size_t held = 0;
                for (const Node& n : h->table(p).nodes()) {
                    const Honest* j = correct(n);
                    if (j && can_hold(*j, p)) ++held;
                }
                fill.push_back(ideal ? static_cast<double>(held) / static_cast<double>(ideal) : 0);
            }
            c.found[p] = quantiles(std::move(found));
            c.fill[p] = quantiles(std::move(fill));
        }
        result.coverage.push_back(c);
    }

    void measure_eclipse() {
        std::array<std::vector<double>, 2> shares;
        std::vector<EclipseCase> cases;
        for (const auto& h : honest) {
            if (!h->alive) continue;
            bool over = false;
            bool measured = false;
            for (size_t p : {kV4, kV5}) {
                if (!h->runs(p)) continue;
                EclipseFigures& e = result.eclipse[p];
                const disc::Table& table = h->table(p);
                EclipseCase ec;
                ec.node = h->index;
                ec.protocol = p;
                ec.nat = h->nat;
                ec.minutes_up = seconds_between(h->started, env.now()) / 60;
                size_t& entries = ec.entries;
                size_t& bad = ec.adversarial;
                for (const Node& n : table.nodes()) {
                    ++entries;
                    ++e.entries;
                    const disc::Table::Entry* entry = table.find(n.id);
                    const bool verified = entry && entry->liveness_checks > 0;
                    if (verified) ++ec.verified;
                    if (const auto a = adversary_by_id.find(n.id); a != adversary_by_id.end()) {
                        ++bad;
                        if (verified) ++ec.verified_adversarial;
                        ++e.adversary;
                        if (sybil[a->second]) ++e.sybil;
                        continue;
                    }
                    const auto it = honest_by_id.find(n.id);
                    if (it == honest_by_id.end()) continue;
                    const Honest& j = *honest[it->second];
                    const udp::endpoint at(n.ip, n.udp);
                    if (at == j.ep) {
                        if (!j.alive) ++e.dead;
                        if (j.nat) ++e.nat;
                        continue;
                    }
                    ++bad;
                    if (verified) ++ec.verified_adversarial;
                    if (std::find(j.former.begin(), j.former.end(), at) != j.former.end()) {
                        ++e.stale;
                        if (verified && entry->added >= j.moved_at) ++e.replayed_verified;
                    } else {
                        ++e.poisoned;
                        if (verified) ++e.poisoned_verified;
                    }
                }
                const double share = entries ? static_cast<double>(bad) / static_cast<double>(entries) : 0;
                ++e.tables;
                measured = true;
                if (share > 0.5) {
                    ++e.over_half;
                    over = true;
                }
                shares[p].push_back(share);
                cases.push_back(ec);
            }
            if (measured) ++result.nodes_measured;
            if (over) ++result.nodes_over_half;
        }
        for (size_t p : {kV4, kV5}) result.eclipse[p].share = quantiles(std::move(shares[p]));
        const auto share = [](const EclipseCase& c) {
            return c.entries ? static_cast<double>(c.adversarial) / static_cast<double>(c.entries) : 0.0;
        };
        std::stable_sort(cases.begin(), cases.end(),
                         [&](const EclipseCase& a, const EclipseCase& b) { return share(a) > share(b); });
        cases.resize(std::min<size_t>(cases.size(), 5));
        result.worst = std::move(cases);
    }

    asio::awaitable<void> measured_lookup(uint32_t index, size_t p, NodeId target, v4::NodeKey target_key,
                                          std::vector<uint32_t> truth) {
        Honest& h = *honest[index];
        auto trace = std::make_shared<Trace>();
        const auto started = env.now();
        // As the services' own lookups: the table's closest as seeds, the bootnodes when it is empty.
        std::vector<Node> seeds = h.table(p).closest(target, disc::kLookupResults);
        if (seeds.empty()) seeds = p == kV4 ? boot4 : boot5;
        for (const Node& s : seeds) trace->depth.emplace(s.id, 1);
        disc::LookupHooks hooks;
        if (p == kV4) {
            hooks.query = [s = h.s4, trace, target_key](Node n) {
                return traced_v4(s, trace, std::move(n), target_key);
            };
        } else {
            hooks.query = [s = h.s5, trace, target](Node n) { return traced_v5(s, trace, std::move(n), target); };
        }
        hooks.stopped = [] { return false; };
        const auto found = co_await disc::iterative_lookup(io, h.id, target, seeds, std::move(hooks));
        size_t hits = 0;
        for (const Node& n : found) {
            const Honest* j = correct(n);
            if (j && std::find(truth.begin(), truth.end(), j->index) != truth.end()) ++hits;
        }
        LookupOutcome o;
        o.protocol = p;
        o.found = truth.empty() ? 1.0 : static_cast<double>(hits) / static_cast<double>(truth.size());
        o.hops = trace->hops;
        o.queries = static_cast<double>(trace->queries);
        o.millis = seconds_between(started, env.now()) * 1000;
        outcomes.push_back(o);
        --lookups_running;
    }

    void start_lookups() {
        const std::array<std::vector<uint32_t>, 2> live{holdable(kV4), holdable(kV5)};
        std::vector<uint32_t> candidates;
        for (const auto& h : honest) {
            if (h->alive && !h->bootnode) candidates.push_back(h->index);
        }
        std::shuffle(candidates.begin(), candidates.end(), rng);
        candidates.resize(std::min(candidates.size(), cfg.lookup_samples));
        for (size_t p : {kV4, kV5}) result.lookup[p].truth = live[p].size();
        for (uint32_t index : candidates) {
            for (size_t p : {kV4, kV5}) {
                if (!honest[index]->runs(p)) continue;
                v4::NodeKey key;
                for (auto& b : key) b = static_cast<uint8_t>(rng());
                NodeId target = keccak256(key);
                if (p == kV5) {
                    for (auto& b : target) b = static_cast<uint8_t>(rng());
                }
                // The true 16 closest live nodes the protocol can hold, the sampler left out.
                std::vector<uint32_t> truth = live[p];
                std::erase(truth, index);
                const size_t k = std::min(truth.size(), disc::kLookupResults);
                std::partial_sort(truth.begin(), truth.begin() + static_cast<std::ptrdiff_t>(k), truth.end(),
                                  [&](uint32_t a, uint32_t b) {
                                      return disc::compare_distance(target, honest[a]->id, honest[b]->id) < 0;
                                  });
                truth.resize(k);
                ++lookups_running;
                asio::co_spawn(io, measured_lookup(index, p, target, key, std::move(truth)), asio::detached);
            }
        }
    }

    void collect_lookups() {
        for (size_t p : {kV4, kV5}) {
            std::vector<double> found, hops, queries, millis;
            for (const auto& o : outcomes) {
                if (o.protocol != p) continue;
                found.push_back(o.found);
                hops.push_back(o.hops);
                queries.push_back(o.queries);
                millis.push_back(o.millis);
            }
            LookupFigures& f = result.lookup[p];
            f.lookups = found.size();
            f.found = quantiles(std::move(found));
            f.hops = quantiles(std::move(hops));
            f.queries = quantiles(std::move(queries));
            f.millis = quantiles(std::move(millis));
        }
    }

    void collect_amplification() {
        static constexpr std::array<PacketClass, 6> kUnsolicited{PacketClass::kV4Ping,       PacketClass::kV4FindNode,
                                                                 PacketClass::kV4EnrRequest, PacketClass::kV5Random,
                                                                 PacketClass::kV5Handshake,  PacketClass::kV5Message};
        static constexpr std::array<PacketClass, 6> kSpoofed{PacketClass::kV4Ping,       PacketClass::kV4FindNode,
                                                             PacketClass::kV4EnrRequest, PacketClass::kV5Random,
                                                             PacketClass::kV5Whoareyou,  PacketClass::kV5Handshake};
        const auto row = [](const Tally& t, PacketClass c) {
            const auto i = static_cast<size_t>(c);
            return AmplificationRow{c, t.packets[i], t.answered[i], t.bytes_in[i], t.bytes_out[i]};
        };
        for (PacketClass c : kUnsolicited) result.amplification.push_back(row(amp.regular, c));
        for (PacketClass c : kSpoofed) result.spoofed.push_back(row(amp.spoofed, c));
        for (const auto& s : spoofers) {
            for (uint64_t b : s->sent_bytes) result.spoofed_sent_bytes += b;
            result.victim_bytes += s->victim_bytes;
        }
        result.poisoned_sent = coalition.poisoned_sent;
        result.stale_sent = coalition.stale_sent;
    }

    void shut_down() {
        for (auto& h : honest) {
            if (h->alive) stop_honest(*h);
        }
        adversaries.clear();
        spoofers.clear();
        // The services' coroutines end once their waits are cancelled.
        env.run_for(io, std::chrono::seconds(5));
    }

    SimulationResult run() {
        wall_start = std::chrono::steady_clock::now();
        const double cpu_start = cpu_seconds();
        result.config = cfg;
        t0 = env.now();
        end = t0 + cfg.duration;
        // Periodic senders keep on while the measured lookups run.
        quiet = end + std::chrono::minutes(10);
        build();
        result.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
        schedule();
        env.run_until(io, end);
        scan_tables();
        report_coverage();
        measure_eclipse();
        start_lookups();
        env.run_until(io, end + std::chrono::minutes(10), [this] { return lookups_running == 0; });
        collect_lookups();
        collect_amplification();
        for (const auto& h : honest) result.live_at_end += h->alive ? 1 : 0;
        result.virtual_seconds = seconds_between(t0, env.now());
        result.events = env.events();
        result.network = net.stats();
        result.traffic_packets = {traffic_packets[0], traffic_packets[1], traffic_packets[2]};
        result.traffic_bytes = {traffic_bytes[0], traffic_bytes[1], traffic_bytes[2]};
        shut_down();
        result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
        result.cpu_seconds = cpu_seconds() - cpu_start;
        result.peak_rss_kb = peak_rss_kb();
        return result;
    }
};

Simulation::Simulation(SimulationConfig config) : impl_(std::make_unique<Impl>(config)) {}
Simulation::~Simulation() = default;

SimulationResult Simulation::run() { return impl_->run(); }

// ---- output -----------------------------------------------------------------------------------

namespace {

std::string pct(double v) { return fmt::format("{:.1f}%", v * 100); }

void amplification_table(std::string& out, const std::vector<AmplificationRow>& rows) {
    out += fmt::format("  {:<24} {:>10} {:>10} {:>12} {:>12} {:>8}\n", "incoming", "datagrams", "answered", "bytes in",
                       "bytes out", "out/in");
    for (const auto& r : rows) {
        out += fmt::format("  {:<24} {:>10} {:>10} {:>12} {:>12} {:>8.3f}\n", to_string(r.type), r.packets, r.answered,
                           r.bytes_in, r.bytes_out, r.ratio());
    }
}

}  // namespace

std::string deterministic_figures(const SimulationResult& r) {
    std::string out;
    const auto q = [](const Quantiles& x) {
        return fmt::format("n={} mean={:.6f} p10={:.6f} median={:.6f} p90={:.6f} max={:.6f}", x.n, x.mean, x.p10,
                           x.median, x.p90, x.max);
    };
    out += fmt::format("honest={} adversaries={} sybils={} joins={} leaves={} moves={} live={}\n", r.honest,
                       r.adversaries, r.sybils, r.joins, r.leaves, r.moves, r.live_at_end);
    for (size_t p : {kV4, kV5}) {
        const auto& l = r.lookup[p];
        out += fmt::format("lookup{} lookups={} truth={} found[{}] hops[{}] queries[{}] millis[{}]\n", p, l.lookups,
                           l.truth, q(l.found), q(l.hops), q(l.queries), q(l.millis));
        const auto& e = r.eclipse[p];
        out += fmt::format(
            "eclipse{} tables={} over_half={} share[{}] entries={} adversary={} sybil={} poisoned={} "
            "poisoned_verified={} stale={} replayed_verified={} dead={} nat={}\n",
            p, e.tables, e.over_half, q(e.share), e.entries, e.adversary, e.sybil, e.poisoned, e.poisoned_verified,
            e.stale, e.replayed_verified, e.dead, e.nat);
    }
    for (const auto& c : r.coverage) {
        for (size_t p : {kV4, kV5}) {
            out += fmt::format("coverage{} t={:.2f} live={} found[{}] fill[{}]\n", p, c.minutes, c.live[p],
                               q(c.found[p]), q(c.fill[p]));
        }
    }
    for (const auto* rows : {&r.amplification, &r.spoofed}) {
        for (const auto& a : *rows) {
            out +=
                fmt::format("amp {} {} {} {} {}\n", to_string(a.type), a.packets, a.answered, a.bytes_in, a.bytes_out);
        }
    }
    out += fmt::format("nodes_over_half={} measured={} spoofed_sent={} victim={} poisoned_sent={} stale_sent={}\n",
                       r.nodes_over_half, r.nodes_measured, r.spoofed_sent_bytes, r.victim_bytes, r.poisoned_sent,
                       r.stale_sent);
    for (const auto& w : r.worst) {
        out += fmt::format("worst {} {} {} {:.4f} {} {} {} {}\n", w.node, w.protocol, w.nat, w.minutes_up, w.entries,
                           w.adversarial, w.verified, w.verified_adversarial);
    }
    out += fmt::format("network sent={} delivered={} lost={} unreachable={} filtered={} bytes={} events={}\n",
                       r.network.sent, r.network.delivered, r.network.lost, r.network.unreachable, r.network.filtered,
                       r.network.bytes, r.events);
    for (size_t i = 0; i < r.traffic_packets.size(); ++i) {
        out += fmt::format("traffic{} {} {}\n", i, r.traffic_packets[i], r.traffic_bytes[i]);
    }
    return out;
}

std::string format_result(const SimulationResult& r) {
    const auto& c = r.config;
    std::string out;
    out += fmt::format(
        "Discovery simulation: {} nodes ({} honest at start, {} adversarial of which {} sybils on one /24), seed {}\n",
        c.nodes, r.honest, r.adversaries, r.sybils, c.seed);
    out += fmt::format(
        "  honest: {} discv4 only, {} discv5 only, the rest both; {} behind NAT; {} bootnodes; loss {}; "
        "churn {} per hour ({} left, {} joined); {} moved\n",
        pct(c.v4_only), pct(c.v5_only), pct(c.nat), c.bootnodes, pct(c.loss), pct(c.churn_per_hour), r.leaves, r.joins,
        r.moves);
    out += fmt::format(
        "  virtual time {:.1f} min (run {} min, then the measured lookups); refresh {} s, revalidation {} ms, "
        "timeouts {}/{} ms\n",
        r.virtual_seconds / 60, static_cast<double>(c.duration.count()) / 60.0, c.refresh_interval.count(),
        c.revalidate_interval.count(), c.v4_response_timeout.count(), c.v5_response_timeout.count());

    out +=
        "\nLookup convergence (after the run; truth: the 16 closest live honest nodes of the protocol, for discv5\n"
        "those with an address in their record; found: at their true endpoints):\n";
    out += fmt::format("  {:<8} {:>8} {:>7} {:>24} {:>14} {:>14} {:>22}\n", "protocol", "lookups", "truth",
                       "found: mean / p10", "hops: med/p90", "queries: mean", "virtual ms: med / p90");
    for (size_t p : {kV4, kV5}) {
        const auto& l = r.lookup[p];
        out += fmt::format("  {:<8} {:>8} {:>7} {:>24} {:>14} {:>14.1f} {:>22}\n", p == kV4 ? "discv4" : "discv5",
                           l.lookups, l.truth, fmt::format("{} / {}", pct(l.found.mean), pct(l.found.p10)),
                           fmt::format("{:.0f} / {:.0f}", l.hops.median, l.hops.p90), l.queries.mean,
                           fmt::format("{:.0f} / {:.0f}", l.millis.median, l.millis.p90));
    }

    out +=
        "\nCoverage (per live honest node: share of the live honest nodes of its protocol (discv5: with an address)\n"
        "its table has held; fill: live correct entries over the most its buckets could hold of them):\n";
    out += fmt::format("  {:>7} {:>7} {:>30} {:>24} {:>7} {:>30} {:>24}\n", "minutes", "v4 live", "v4 found",
                       "v4 fill: mean / p10", "v5 live", "v5 found", "v5 fill: mean / p10");
    for (const auto& cp : r.coverage) {
        out += fmt::format("  {:>7.1f} {:>7} {:>30} {:>24} {:>7} {:>30} {:>24}\n", cp.minutes, cp.live[kV4],
                           fmt::format("mean {} p10 {}", pct(cp.found[kV4].mean), pct(cp.found[kV4].p10)),
                           fmt::format("{} / {}", pct(cp.fill[kV4].mean), pct(cp.fill[kV4].p10)), cp.live[kV5],
                           fmt::format("mean {} p10 {}", pct(cp.found[kV5].mean), pct(cp.found[kV5].p10)),
                           fmt::format("{} / {}", pct(cp.fill[kV5].mean), pct(cp.fill[kV5].p10)));
    }

    out += fmt::format(
        "\nEclipse (tables of live honest nodes at the end; adversarial: an adversary identity, or an honest id at an\n"
        "endpoint not its own): {} of {} honest nodes have a table more than half adversarial (target 0)\n",
        r.nodes_over_half, r.nodes_measured);
    out += fmt::format("  {:<8} {:>7} {:>9} {:>28} {:>8} {:>9} {:>7} {:>9} {:>9} {:>7} {:>9} {:>6}\n", "protocol",
                       "tables", ">half", "adversarial share", "entries", "adversary", "sybil", "poisoned", "poisoned+",
                       "stale", "replayed+", "dead");
    for (size_t p : {kV4, kV5}) {
        const auto& e = r.eclipse[p];
        out += fmt::format("  {:<8} {:>7} {:>9} {:>28} {:>8} {:>9} {:>7} {:>9} {:>9} {:>7} {:>9} {:>6}\n",
                           p == kV4 ? "discv4" : "discv5", e.tables, e.over_half,
                           fmt::format("mean {} p90 {} max {}", pct(e.share.mean), pct(e.share.p90), pct(e.share.max)),
                           e.entries, e.adversary, e.sybil, e.poisoned, e.poisoned_verified, e.stale,
                           e.replayed_verified, e.dead);
    }
    out += fmt::format(
        "  (poisoned+: poisoned entries with liveness > 0, replayed+: entries at a former endpoint added after the\n"
        "  move with liveness > 0; both must be 0. Adversaries sent {} poisoned Neighbors entries, {} stale records)\n",
        r.poisoned_sent, r.stale_sent);
    out += "  The most adversarial tables: node protocol (NAT) minutes-up: adversarial/entries, of the verified ones\n";
    for (const auto& w : r.worst) {
        out += fmt::format("    node {} {}{} up {:.1f} min: {}/{} adversarial, verified {}/{}\n", w.node,
                           w.protocol == kV4 ? "discv4" : "discv5", w.nat ? " (NAT)" : "", w.minutes_up, w.adversarial,
                           w.entries, w.verified_adversarial, w.verified);
    }

    out +=
        "\nAmplification: unsolicited datagrams honest nodes got from senders at their own addresses, and the\n"
        "bytes they sent back to that address at once:\n";
    amplification_table(out, r.amplification);
    out += fmt::format(
        "Spoofed source addresses (the answers go to the victim; target: out/in <= 1); the spoofers sent {} bytes, "
        "their victims got {}:\n",
        r.spoofed_sent_bytes, r.victim_bytes);
    amplification_table(out, r.spoofed);

    out += fmt::format(
        "\nRun: {:.1f} s wall ({:.1f} s setup), {:.1f} s CPU, peak RSS {:.0f} MB, {} events, {} datagrams sent ({} "
        "delivered, {} lost, {} unreachable, {} NAT-filtered), {:.1f} MB\n",
        r.wall_seconds, r.setup_seconds, r.cpu_seconds, static_cast<double>(r.peak_rss_kb) / 1024, r.events,
        r.network.sent, r.network.delivered, r.network.lost, r.network.unreachable, r.network.filtered,
        static_cast<double>(r.network.bytes) / 1e6);
    out += fmt::format("  sent by honest nodes {} ({:.1f} MB), adversaries {} ({:.1f} MB), spoofers {} ({:.1f} MB)\n",
                       r.traffic_packets[0], static_cast<double>(r.traffic_bytes[0]) / 1e6, r.traffic_packets[1],
                       static_cast<double>(r.traffic_bytes[1]) / 1e6, r.traffic_packets[2],
                       static_cast<double>(r.traffic_bytes[2]) / 1e6);
    return out;
}

}  // namespace headerd::sim
