#include "disc/table.hpp"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "core/hex.hpp"
#include "p2p/node_key.hpp"

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

bool is_lan(const boost::asio::ip::address& ip) noexcept {
    if (ip.is_loopback()) return true;
    if (ip.is_v4()) {
        const auto b = ip.to_v4().to_bytes();
        return b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
               (b[0] == 169 && b[1] == 254) || (b[0] == 100 && (b[1] & 0xc0) == 64);
    }
    const auto v6 = ip.to_v6();
    if (v6.is_v4_mapped()) return is_lan(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6));
    const auto b = v6.to_bytes();
    return (b[0] & 0xfe) == 0xfc || v6.is_link_local();
}

bool is_unroutable(const boost::asio::ip::address& ip) noexcept {
    if (ip.is_unspecified() || ip.is_multicast()) return true;
    return ip.is_v4() && ip.to_v4() == boost::asio::ip::address_v4::broadcast();
}

bool relay_allowed(const boost::asio::ip::address& sender, const boost::asio::ip::address& ip) noexcept {
    if (is_unroutable(ip)) return false;
    if (ip.is_loopback()) return sender.is_loopback();
    if (is_lan(ip)) return is_lan(sender);
    return true;
}

Node Node::from_key(const rlpx::PublicKey& key, boost::asio::ip::address ip, uint16_t udp, uint16_t tcp) {
    return Node{key.node_id(), key, ip, udp, tcp, std::nullopt};
}

std::optional<Node> Node::from_enr(const Enr& enr) {
    Node n{enr.node_id(), enr.public_key(), {}, 0, 0, enr};
    if (auto ip = enr.ip()) {
        n.ip = boost::asio::ip::address_v4(*ip);
        n.udp = enr.udp().value_or(0);
        n.tcp = enr.tcp().value_or(0);
    } else if (auto ip6 = enr.ip6()) {
        n.ip = boost::asio::ip::address_v6(*ip6);
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

Table::Table(NodeId self, TableConfig config) : self_(self), config_(config) {}

Table::Bucket& Table::bucket_of(const NodeId& id) { return const_cast<Bucket&>(std::as_const(*this).bucket_of(id)); }

const Table::Bucket& Table::bucket_of(const NodeId& id) const {
    const int d = log_distance(self_, id);
    return buckets_[d <= kBucketMinDistance + 1 ? 0 : static_cast<size_t>(d - kBucketMinDistance - 1)];
}

bool Table::ip_allowed(const Bucket& b, const boost::asio::ip::address& ip) const {
    if (is_lan(ip)) return true;
    auto count = [&](const std::vector<Entry>& entries) {
        return static_cast<size_t>(
            std::count_if(entries.begin(), entries.end(), [&](const Entry& e) { return same_subnet(e.node.ip, ip); }));
    };
    if (count(b.entries) >= config_.bucket_ip_limit) return false;
    size_t in_table = 0;
    for (const auto& other : buckets_) in_table += count(other.entries);
    return in_table < config_.table_ip_limit;
}

void Table::add_replacement(Bucket& b, const Node& node) {
    auto same =
        std::find_if(b.replacements.begin(), b.replacements.end(), [&](const Node& n) { return n.id == node.id; });
    if (same != b.replacements.end()) b.replacements.erase(same);
    b.replacements.push_front(node);
    if (b.replacements.size() > config_.max_replacements) b.replacements.pop_back();
}

Table::AddResult Table::add(const Node& node, Clock::time_point now, uint32_t checks) {
    if (node.id == self_) return AddResult::kSelf;
    if (is_unroutable(node.ip)) return AddResult::kUnroutable;
    Bucket& b = bucket_of(node.id);
    for (auto& e : b.entries) {
        if (e.node.id != node.id) continue;
        std::optional<Enr> record = node.enr;
        if (e.node.enr && (!record || record->seq() < e.node.enr->seq())) record = e.node.enr;  // keep the newer
        if (e.node.ip != node.ip && !ip_allowed(b, node.ip)) return AddResult::kIpLimit;
        e.node = node;
        e.node.enr = std::move(record);
        return AddResult::kUpdated;
    }
    if (!ip_allowed(b, node.ip)) return AddResult::kIpLimit;
    if (b.entries.size() >= config_.bucket_size) {
        add_replacement(b, node);
        return AddResult::kReplacement;
    }
    b.entries.push_back(Entry{node, now, now, checks});
    return AddResult::kAdded;
}

bool Table::remove(const NodeId& id) {
    Bucket& b = bucket_of(id);
    auto it = std::find_if(b.entries.begin(), b.entries.end(), [&](const Entry& e) { return e.node.id == id; });
    if (it == b.entries.end()) return false;
    const Clock::time_point added = it->added;
    b.entries.erase(it);
    // The newest replacement that the IP limits let in takes the place.
    while (!b.replacements.empty()) {
        Node r = b.replacements.front();
        b.replacements.pop_front();
        if (ip_allowed(b, r.ip)) {
            b.entries.push_back(Entry{std::move(r), added, added, 0});
            break;
        }
    }
    return true;
}

const Table::Entry* Table::find(const NodeId& id) const {
    const Bucket& b = bucket_of(id);
    auto it = std::find_if(b.entries.begin(), b.entries.end(), [&](const Entry& e) { return e.node.id == id; });
    return it == b.entries.end() ? nullptr : &*it;
}

std::vector<Node> Table::closest(const NodeId& target, size_t n) const {
    std::vector<const Node*> all;
    for (const auto& b : buckets_) {
        for (const auto& e : b.entries) all.push_back(&e.node);
    }
    const size_t keep = std::min(n, all.size());
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(),
                      [&](const Node* a, const Node* b) { return compare_distance(target, a->id, b->id) < 0; });
    std::vector<Node> out;
    out.reserve(keep);
    for (size_t i = 0; i < keep; ++i) out.push_back(*all[i]);
    return out;
}

std::vector<Node> Table::at_distances(std::span<const unsigned> distances, size_t limit) const {
    std::vector<Node> out;
    for (const auto& b : buckets_) {
        for (const auto& e : b.entries) {
            const auto d = static_cast<unsigned>(log_distance(self_, e.node.id));
            if (out.size() < limit && d != 0 && std::find(distances.begin(), distances.end(), d) != distances.end()) {
                out.push_back(e.node);
            }
        }
    }
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

std::optional<Node> Table::next_to_revalidate() const {
    const Entry* oldest = nullptr;
    for (const auto& b : buckets_) {
        for (const auto& e : b.entries) {
            if (!oldest || e.checked < oldest->checked) oldest = &e;
        }
    }
    if (!oldest) return std::nullopt;
    return oldest->node;
}

bool Table::revalidated(const NodeId& id, bool answered, Clock::time_point now) {
    Bucket& b = bucket_of(id);
    auto it = std::find_if(b.entries.begin(), b.entries.end(), [&](const Entry& e) { return e.node.id == id; });
    if (it == b.entries.end()) return false;
    it->checked = now;
    if (answered) {
        ++it->liveness_checks;
        return false;
    }
    it->liveness_checks /= 3;
    if (it->liveness_checks > 0) return false;
    return remove(id);
}

const char* to_string(Table::AddResult r) noexcept {
    switch (r) {
        case Table::AddResult::kAdded:
            return "added";
        case Table::AddResult::kUpdated:
            return "updated";
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
