#include "disc/kademlia.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

namespace headerd::disc {
namespace {

namespace asio = boost::asio;
using asio::awaitable;

TableConfig table_config(const KademliaConfig& config, Env& env) {
    TableConfig t = config.table;
    t.revalidate_interval = config.revalidate_interval;
    if (!t.seed) t.seed = env.seed();
    return t;
}

}  // namespace

Kademlia::Kademlia(asio::io_context& io, Env& env, NodeId self, KademliaConfig config)
    : io_(io),
      env_(&env),
      config_(std::move(config)),
      table_(self, table_config(config_, env)),
      refresh_timer_(io, env),
      revalidate_timer_(io, env),
      rng_(env.seed()) {}

void Kademlia::start(std::shared_ptr<void> owner, KademliaProtocol& protocol, bool passive) {
    if (passive) return;
    asio::co_spawn(
        io_, [this, owner, &protocol]() -> awaitable<void> { co_await refresh_loop(protocol); }, asio::detached);
    asio::co_spawn(
        io_, [this, owner, &protocol]() -> awaitable<void> { co_await revalidate_loop(protocol); }, asio::detached);
}

void Kademlia::stop() {
    if (stopped_) return;
    stopped_ = true;
    refresh_timer_.cancel();
    revalidate_timer_.cancel();
}

// ---- the table --------------------------------------------------------------------------------

void Kademlia::note_table() noexcept {
    stats_.size = table_.size();
    const auto sizes = table_.bucket_sizes();
    for (size_t i = 0; i < sizes.size(); ++i) stats_.bucket_sizes[i] = sizes[i];
    stats_.replacements = table_.replacement_count();
}

void Kademlia::log(const char* what, const Node& n, std::string_view source) const {
    spdlog::debug("{} table: {:<8}                  id={} addr={}:{} source={} table={}", config_.log_name, what,
                  short_id(n.id), n.ip.to_string(), n.udp, source, table_.size());
}

Table::AddResult Kademlia::add(const Node& n, Origin origin, uint32_t checks, std::string_view source) {
    if (n.id == self()) return Table::AddResult::kSelf;
    if (config_.needs_record && !n.enr) return Table::AddResult::kUnroutable;  // no record: no way to reach it
    const auto r = table_.add(n, env_->now(), origin, checks);
    switch (r) {
        case Table::AddResult::kAdded:
            log("added", n, source);
            break;
        case Table::AddResult::kMoved:
            ++stats_.moves;
            log("moved", n, source);
            break;
        case Table::AddResult::kStale:
            ++stats_.refused_moves;
            log("refused", n, source);
            break;
        case Table::AddResult::kIpLimit:
            log("ip-limit", n, source);
            break;
        default:
            break;
    }
    note_table();
    return r;
}

void Kademlia::refused(const NodeId* id, const asio::ip::address& from, const asio::ip::address& addr,
                       AddressVerdict verdict) {
    ++stats_.refused_relays;
    spdlog::debug("{} node refused                   id={} from={} addr={} reason=\"{}\"", config_.log_name,
                  id ? short_id(*id) : std::string("-"), from.to_string(), addr.to_string(), to_string(verdict));
}

uint32_t Kademlia::findnode_failures(const NodeId& id) const {
    if (const auto it = failures_.find(id); it != failures_.end()) return it->second;
    if (const NodeDb* d = db()) return d->findnode_failures(id);
    return 0;
}

void Kademlia::track_findnode(const Node& n, bool answered) {
    const uint32_t fails = answered ? 0 : findnode_failures(n.id) + 1;
    // The database keeps the count of the nodes it holds (discv4 bonds again when it grows); the
    // table's nodes are counted here, whether the database holds them or not.
    if (NodeDb* d = db()) d->set_findnode_failures(n.id, fails);
    if (fails == 0) {
        failures_.erase(n.id);
    } else if (table_.find(n.id)) {
        failures_[n.id] = fails;
        // Bounded by the table: counts of nodes that left it go at the next sweep.
        if (failures_.size() > 4 * kBucketCount * config_.table.bucket_size) {
            std::erase_if(failures_, [&](const auto& kv) { return table_.find(kv.first) == nullptr; });
        }
    }
    if (fails >= config_.max_findnode_failures && table_.bucket_size_of(n.id) >= config_.table.bucket_size / 4) {
        if (table_.remove(n.id)) {
            ++stats_.evictions;
            failures_.erase(n.id);
            log("evicted", n, "findnode-failures");
            note_table();
        }
    }
}

// ---- lookups and refresh ----------------------------------------------------------------------

awaitable<std::vector<Node>> Kademlia::lookup(NodeId target, LookupQuery query) {
    const auto started = env_->now();
    std::vector<Node> seeds = table_.closest(target, kLookupResults);
    if (seeds.empty()) seeds = config_.bootnodes;
    LookupHooks hooks;
    // The query holds its protocol service, which holds this core, for as long as hooks live.
    hooks.query = std::move(query);
    hooks.on_found = [this](const Node& n) {
        if (n.id == self()) return;                            // others list us too
        const auto r = add(n, Origin::kRelayed, 0, "lookup");  // unverified until it answers a check
        if (on_relayed) on_relayed(n, r);
    };
    hooks.stopped = [this] { return stopped_; };
    auto result = co_await iterative_lookup(io_, self(), target, seeds, std::move(hooks));
    ++stats_.lookups;
    stats_.lookup_micros +=
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(env_->now() - started).count());
    co_return result;
}

awaitable<void> Kademlia::refresh(KademliaProtocol& protocol) {
    // Seeds from the node database (nodes that passed more than 5 revalidations, at random), then
    // the bootnodes, as geth's loadSeedNodes.
    if (NodeDb* d = db()) {
        for (const auto& n : d->seeds(kSeedCount, env_->wall_now(), rng_)) add(n, Origin::kRelayed, 0, "seed");
    }
    for (const auto& n : config_.bootnodes) add(n, Origin::kRelayed, 0, "bootnode");
    for (int i = 0; i < 4 && !stopped_; ++i) {
        auto target = protocol.lookup_target(i == 0);
        co_await lookup(target.id, std::move(target.query));
    }
    init_done_ = true;
    note_table();
}

awaitable<void> Kademlia::refresh_loop(KademliaProtocol& protocol) {
    while (!stopped_) {
        co_await refresh(protocol);
        // stop() during the refresh cancelled a timer not yet armed: arming it now would keep the
        // io_context (and a stopping serve or discover) running until the next refresh is due.
        if (stopped_) break;
        refresh_timer_.expires_after(refresh_delay(config_.refresh_interval, rng_));
        co_await refresh_timer_.wait();
    }
}

// ---- revalidation -----------------------------------------------------------------------------

awaitable<void> Kademlia::revalidate_loop(KademliaProtocol& protocol) {
    auto last_save = env_->now();
    while (!stopped_) {
        // The table says when its next revalidation list is due (geth's randomised fast and slow
        // lists); nodes added while we sleep wait at most one interval.
        revalidate_timer_.expires_at(std::min(table_.next_revalidation(), env_->now() + config_.revalidate_interval));
        co_await revalidate_timer_.wait();
        if (stopped_) break;
        for (const Node& n : table_.due_for_revalidation(env_->now())) {
            co_await revalidate(protocol, n);
            if (stopped_) co_return;
        }
        NodeDb* d = db();
        if (d && config_.save_interval.count() > 0 && env_->now() - last_save >= config_.save_interval) {
            last_save = env_->now();
            if (auto saved = d->save(env_->wall_now()); !saved) {
                spdlog::warn("discovery: node database not saved: {}", saved.error().message);
            }
        }
    }
}

awaitable<void> Kademlia::revalidate(KademliaProtocol& protocol, Node n) {
    const auto seq = co_await protocol.check(n);
    if (stopped_) co_return;
    if (table_.revalidated(n.id, seq.has_value(), env_->now())) {
        ++stats_.evictions;
        failures_.erase(n.id);
        log("evicted", n, "revalidation");
    }
    note_table();
    const Table::Entry* e = table_.find(n.id);
    // geth keeps a node that passed more than 5 checks as a seed for the next start.
    if (NodeDb* d = db(); d && seq && e && e->liveness_checks > 5) {
        d->seen(e->node, env_->wall_now(), Origin::kDirect);
        d->set_last_pong(e->node, e->node.ip, env_->wall_now());
        d->set_liveness(n.id, e->liveness_checks);
    }
    // A higher seq in the answer means a newer record (EIP-868): fetch it. Only a record newer than
    // the one held changes anything (the table's add rule), and fetch_record checks its address.
    if (!seq || *seq == 0 || !e || (e->node.enr && e->node.enr->seq() >= *seq)) co_return;
    if (auto updated = co_await protocol.fetch_record(e->node); updated && !stopped_) {
        add(*updated, Origin::kRelayed, 0, "record");
    }
}

}  // namespace headerd::disc
