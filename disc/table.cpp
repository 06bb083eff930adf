#include "disc/table.hpp"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "core/hex.hpp"
#include "p2p/enode/node_key.hpp"

namespace headerd::disc {
namespace {

// The /24 of an address (IPv6 too, as geth's DistinctNetSet does with the same prefix length).
uint32_t subnet24(const boost::asio::ip::address& ip) noexcept {
    if (ip.is_v4()) return ip.to_v4().to_uint() >> 8;
    const auto b = ip.to_v6().to_bytes();
    return 0x1000000u | (uint32_t{b[0]} << 16) | (uint32_t{b[1]} << 8) | b[2];  // apart from IPv4 keys
}

bool same_subnet(const boost::asio::ip::address& a, const boost::asio::ip::address& b) noexcept {
    return a.is_v4() == b.is_v4() && subnet24(a) == subnet24(b);
}

}  // namespace

int log_distance(const NodeId& a, const NodeId& b) noexcept {
    for (size_t i = 0; i < a.size(); ++i) {
        const uint8_t x = a[i] ^ b[i];
        if (x != 0) return static_cast<int>((a.size() - i) * 8) - std::countl_zero(x);
    }
    return 0;
}

int compare_distance(const NodeId& target, const NodeId& a, const NodeId& b) noexcept {
    for (size_t i = 0; i < target.size(); ++i) {
        const uint8_t da = a[i] ^ target[i];
        const uint8_t db = b[i] ^ target[i];
        if (da != db) return da < db ? -1 : 1;
    }
    return 0;
}

Node Node::from_key(const rlpx::PublicKey& key, boost::asio::ip::address ip, uint16_t udp, uint16_t tcp) {
    return Node{key.node_id(), key, unmapped(ip), udp, tcp, std::nullopt};
}

std::optional<Node> Node::from_enr(const Enr& enr) {
    Node n{enr.node_id(), enr.public_key(), {}, 0, 0, enr};
    if (auto ip = enr.ip()) {
        n.ip = boost::asio::ip::address_v4(*ip);
        n.udp = enr.udp().value_or(0);
        n.tcp = enr.tcp().value_or(0);
    } else if (auto ip6 = enr.ip6()) {
        n.ip = unmapped(boost::asio::ip::address_v6(*ip6));
        n.udp = enr.udp6().value_or(0);
        n.tcp = enr.tcp6().value_or(0);
    } else {
        return std::nullopt;
    }
    if (n.udp == 0) return std::nullopt;
    return n;
}

std::string Node::enode() const {
    const std::string host = ip.is_v6() ? "[" + ip.to_string() + "]" : ip.to_string();
    std::string url = fmt::format("enode://{}@{}:{}", to_hex(key.bytes()), host, tcp);
    if (udp != tcp) url += fmt::format("?discport={}", udp);
    return url;
}

AddressVerdict check_record(const boost::asio::ip::address& sender, const Enr& record) {
    if (auto ip = record.ip()) return check_relay(sender, boost::asio::ip::address_v4(*ip));
    if (auto ip6 = record.ip6()) return check_relay(sender, boost::asio::ip::address_v6(*ip6));
    return AddressVerdict::kAllowed;
}

std::string short_id(const NodeId& id) { return to_hex(ByteView{id}.first(8)); }

Outcome<Node> parse_node(const std::string& text) {
    if (text.rfind("enr:", 0) == 0) {
        auto enr = Enr::from_text(text);
        if (!enr) return make_error(fmt::format("bad node record '{}': {}", text, enr.error().message()));
        auto node = Node::from_enr(*enr);
        if (!node) return make_error(fmt::format("node record '{}' has no IP address or no UDP port", text));
        return *node;
    }
    auto enode = p2p::parse_enode(text);
    if (!enode) return enode.error();
    boost::system::error_code ec;
    auto ip = boost::asio::ip::make_address(enode->host, ec);
    if (ec) return make_error(fmt::format("enode URL '{}': the host must be an IP address", text));
    return Node::from_key(enode->key, ip, enode->udp_port(), enode->port);
}

Table::Table(NodeId self, TableConfig config)
    : self_(self), config_(config), rng_(config.seed ? *config.seed : std::random_device{}()) {}

Table::Bucket& Table::bucket_of(const NodeId& id) { return const_cast<Bucket&>(std::as_const(*this).bucket_of(id)); }

const Table::Bucket& Table::bucket_of(const NodeId& id) const {
    const int d = log_distance(self_, id);
    return buckets_[d <= kBucketMinDistance + 1 ? 0 : static_cast<size_t>(d - kBucketMinDistance - 1)];
}

bool Table::ip_allowed(const Bucket& b, const boost::asio::ip::address& ip, const NodeId* moving) const {
    if (is_lan(ip)) return true;
    // The node that moves does not count against its own new address.
    auto count = [&](const std::vector<Entry>& entries) {
        return static_cast<size_t>(std::count_if(entries.begin(), entries.end(), [&](const Entry& e) {
            return same_subnet(e.node.ip, ip) && (!moving || e.node.id != *moving);
        }));
    };
    if (count(b.entries) >= config_.bucket_ip_limit) return false;
    size_t in_table = 0;
    for (const auto& other : buckets_) in_table += count(other.entries);
    return in_table < config_.table_ip_limit;
}

void Table::add_replacement(Bucket& b, const Node& node) {
    // As geth: a node already waiting keeps what we knew of it (relayed news never rewrites it).
    if (std::any_of(b.replacements.begin(), b.replacements.end(), [&](const Node& n) { return n.id == node.id; })) {
        return;
    }
    b.replacements.push_front(node);
    if (b.replacements.size() > config_.max_replacements) b.replacements.pop_back();
}

Clock::duration Table::random_within(Clock::duration d) {
    if (d.count() <= 0) return Clock::duration::zero();
    return Clock::duration{std::uniform_int_distribution<Clock::rep>(0, d.count() - 1)(rng_)};
}

void Table::to_list(Entry& e, bool fast, Clock::time_point now) {
    e.fast = fast;
    Clock::time_point& due = fast ? fast_due_ : slow_due_;
    if (due == Clock::time_point::max()) {
        const auto interval = std::chrono::duration_cast<Clock::duration>(config_.revalidate_interval);
        due = now + random_within(fast ? interval : 3 * interval);
    }
}

void Table::update_list_times() noexcept {
    bool any_fast = false;
    bool any_slow = false;
    for (const auto& b : buckets_) {
        for (const auto& e : b.entries) (e.fast ? any_fast : any_slow) = true;
    }
    if (!any_fast) fast_due_ = Clock::time_point::max();
    if (!any_slow) slow_due_ = Clock::time_point::max();
}

Table::AddResult Table::add(const Node& node, Clock::time_point now, Origin origin, uint32_t checks) {
    if (node.id == self_) return AddResult::kSelf;
    if (is_unroutable(node.ip)) return AddResult::kUnroutable;
    Bucket& b = bucket_of(node.id);
    for (auto& e : b.entries) {
        if (e.node.id != node.id) continue;
        const uint64_t held_seq = e.node.enr ? e.node.enr->seq() : 0;
        const uint64_t new_seq = node.enr ? node.enr->seq() : 0;
        // Relayed news changes a node only with a newer signed record: a discv4 Neighbors entry
        // (no record, seq 0) or a replayed older record never moves a node we verified.
        if (origin == Origin::kRelayed && new_seq <= held_seq) return AddResult::kStale;
        const bool ip_changed = e.node.ip != node.ip;
        const bool moved = ip_changed || e.node.udp != node.udp;
        if (ip_changed && !ip_allowed(b, node.ip, &node.id)) return AddResult::kIpLimit;
        std::optional<Enr> record = node.enr;
        // The node itself without a record (a discv4 ping) keeps the record we hold, unless it
        // now speaks from another endpoint than the record names: then the record is fetched anew.
        if (e.node.enr && (!record || record->seq() < held_seq) && !moved) record = e.node.enr;
        e.node = node;
        e.node.enr = std::move(record);
        if (!moved) return AddResult::kUpdated;
        // geth's nodeEndpointChanged: not live until it answers at its new endpoint, checked next.
        e.liveness_checks = 0;
        e.recheck = true;
        to_list(e, true, now);
        update_list_times();
        fast_due_ = std::min(fast_due_, now);
        return AddResult::kMoved;
    }
    if (!ip_allowed(b, node.ip, nullptr)) return AddResult::kIpLimit;
    if (b.entries.size() >= config_.bucket_size) {
        add_replacement(b, node);
        return AddResult::kReplacement;
    }
    std::erase_if(b.replacements, [&](const Node& n) { return n.id == node.id; });
    Entry& e = b.entries.emplace_back(Entry{node, now, now, checks, true, false});
    to_list(e, true, now);
    return AddResult::kAdded;
}

bool Table::remove(const NodeId& id) {
    Bucket& b = bucket_of(id);
    auto it = std::find_if(b.entries.begin(), b.entries.end(), [&](const Entry& e) { return e.node.id == id; });
    if (it == b.entries.end()) return false;
    const Clock::time_point added = it->added;
    b.entries.erase(it);
    // A random replacement that the IP limits let in takes the place (geth picks at random, so an
    // attacker cannot tell which of its waiting nodes gets in).
    while (!b.replacements.empty()) {
        const auto pick =
            static_cast<std::ptrdiff_t>(std::uniform_int_distribution<size_t>(0, b.replacements.size() - 1)(rng_));
        Node r = b.replacements[static_cast<size_t>(pick)];
        b.replacements.erase(b.replacements.begin() + pick);
        if (ip_allowed(b, r.ip, nullptr)) {
            // Into the fast list; if that list was empty, it is due at once (`added` is past).
            Entry& e = b.entries.emplace_back(Entry{std::move(r), added, added, 0, true, false});
            to_list(e, true, added);
            break;
        }
    }
    update_list_times();
    return true;
}

const Table::Entry* Table::find(const NodeId& id) const {
    const Bucket& b = bucket_of(id);
    auto it = std::find_if(b.entries.begin(), b.entries.end(), [&](const Entry& e) { return e.node.id == id; });
    return it == b.entries.end() ? nullptr : &*it;
}

std::vector<Node> Table::closest(const NodeId& target, size_t n, bool prefer_live) const {
    std::vector<const Node*> all;
    std::vector<const Node*> live;
    for (const auto& b : buckets_) {
        for (const auto& e : b.entries) {
            all.push_back(&e.node);
            if (prefer_live && e.liveness_checks > 0) live.push_back(&e.node);
        }
    }
    auto& from = prefer_live && !live.empty() ? live : all;
    const size_t keep = std::min(n, from.size());
    std::partial_sort(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(keep), from.end(),
                      [&](const Node* a, const Node* b) { return compare_distance(target, a->id, b->id) < 0; });
    std::vector<Node> out;
    out.reserve(keep);
    for (size_t i = 0; i < keep; ++i) out.push_back(*from[i]);
    return out;
}

std::vector<Node> Table::at_distances(std::span<const unsigned> distances, size_t limit) {
    std::vector<Node> out;
    for (const auto& b : buckets_) {
        for (const auto& e : b.entries) {
            if (e.liveness_checks == 0) continue;  // geth's checkLive: only verified nodes are passed on
            const auto d = static_cast<unsigned>(log_distance(self_, e.node.id));
            if (d != 0 && std::find(distances.begin(), distances.end(), d) != distances.end()) out.push_back(e.node);
        }
    }
    // geth shuffles, so that the same nodes are not always the ones passed on.
    std::shuffle(out.begin(), out.end(), rng_);
    if (out.size() > limit) out.erase(out.begin() + static_cast<std::ptrdiff_t>(limit), out.end());
    return out;
}

std::vector<Node> Table::nodes() const {
    std::vector<Node> out;
    for (const auto& b : buckets_) {
        for (const auto& e : b.entries) out.push_back(e.node);
    }
    return out;
}

size_t Table::size() const noexcept {
    size_t n = 0;
    for (const auto& b : buckets_) n += b.entries.size();
    return n;
}

std::array<size_t, kBucketCount> Table::bucket_sizes() const noexcept {
    std::array<size_t, kBucketCount> out{};
    for (size_t i = 0; i < buckets_.size(); ++i) out[i] = buckets_[i].entries.size();
    return out;
}

size_t Table::replacement_count() const noexcept {
    size_t n = 0;
    for (const auto& b : buckets_) n += b.replacements.size();
    return n;
}

size_t Table::bucket_size_of(const NodeId& id) const noexcept { return bucket_of(id).entries.size(); }

std::vector<Node> Table::due_for_revalidation(Clock::time_point now) {
    std::vector<Node> out;
    const auto interval = std::chrono::duration_cast<Clock::duration>(config_.revalidate_interval);
    for (const bool fast : {true, false}) {
        Clock::time_point& due = fast ? fast_due_ : slow_due_;
        if (due > now) continue;
        std::vector<const Entry*> list;
        for (const auto& b : buckets_) {
            for (const auto& e : b.entries) {
                if (e.fast == fast) list.push_back(&e);
            }
        }
        if (list.empty()) {
            due = Clock::time_point::max();
            continue;
        }
        // A node that moved goes first; otherwise any node of the list, at random.
        auto moved = std::find_if(list.begin(), list.end(), [](const Entry* e) { return e->recheck; });
        const Entry* pick =
            moved != list.end() ? *moved : list[std::uniform_int_distribution<size_t>(0, list.size() - 1)(rng_)];
        out.push_back(pick->node);
        due = now + random_within(fast ? interval : 3 * interval);
    }
    return out;
}

Clock::time_point Table::next_revalidation() const noexcept { return std::min(fast_due_, slow_due_); }

bool Table::revalidated(const NodeId& id, bool answered, Clock::time_point now) {
    Bucket& b = bucket_of(id);
    auto it = std::find_if(b.entries.begin(), b.entries.end(), [&](const Entry& e) { return e.node.id == id; });
    if (it == b.entries.end()) return false;
    it->checked = now;
    it->recheck = false;
    if (answered) {
        ++it->liveness_checks;
        to_list(*it, false, now);
        update_list_times();
        return false;
    }
    it->liveness_checks /= 3;
    if (it->liveness_checks == 0) return remove(id);
    to_list(*it, true, now);
    update_list_times();
    return false;
}

const char* to_string(Table::AddResult r) noexcept {
    switch (r) {
        case Table::AddResult::kAdded:
            return "added";
        case Table::AddResult::kUpdated:
            return "updated";
        case Table::AddResult::kMoved:
            return "moved";
        case Table::AddResult::kStale:
            return "stale";
        case Table::AddResult::kReplacement:
            return "replacement";
        case Table::AddResult::kSelf:
            return "self";
        case Table::AddResult::kUnroutable:
            return "unroutable";
        case Table::AddResult::kIpLimit:
            return "ip-limit";
    }
    return "unknown";
}

}  // namespace headerd::disc
