#include "disc/node_db.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "p2p/enode/node_key.hpp"

namespace headerd::disc {
namespace {

// v2 adds the liveness count; a v1 file is read with 0 (none of its nodes is a seed until it
// passes revalidations again).
constexpr std::string_view kHeader = "# headerd node database v2";
constexpr std::string_view kHeaderV1 = "# headerd node database v1";

int64_t seconds(WallClock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

WallClock::time_point from_seconds(int64_t s) { return WallClock::time_point{std::chrono::seconds{s}}; }

std::string ip_text(const boost::asio::ip::address& ip) { return ip.is_unspecified() ? "-" : ip.to_string(); }

std::optional<boost::asio::ip::address> parse_ip(const std::string& text) {
    if (text == "-") return boost::asio::ip::address{};
    boost::system::error_code ec;
    auto ip = boost::asio::ip::make_address(text, ec);
    if (ec) return std::nullopt;
    return ip;
}

}  // namespace

size_t NodeDb::IdHash::operator()(const NodeId& id) const noexcept {
    size_t h;
    std::memcpy(&h, id.data(), sizeof h);  // ids are hashes already
    return h;
}

Outcome<NodeDb> NodeDb::open(std::string path, NodeDbConfig config) {
    NodeDb db(config);
    db.path_ = std::move(path);
    std::ifstream in(db.path_);
    if (!in) return db;  // no file yet: a first start
    std::string line;
    size_t number = 0;
    auto bad = [&](std::string_view why) {
        return make_error(fmt::format("node database {} line {}: {}", db.path_, number, why), ErrorKind::kCorrupt);
    };
    while (std::getline(in, line)) {
        ++number;
        if (number == 1) {
            if (line != kHeader && line != kHeaderV1) return bad(fmt::format("expected '{}'", kHeader));
            continue;
        }
        if (line.empty()) continue;
        std::istringstream fields(line);
        std::string kind;
        fields >> kind;
        if (kind != "node") return bad("expected 'node'");
        std::string url, pong_ip, ping_ip;
        int64_t pong = 0, ping = 0, seen = 0;
        uint32_t fails = 0;
        if (!(fields >> url >> pong_ip >> pong >> ping_ip >> ping >> fails >> seen)) return bad("missing fields");
        uint32_t liveness = 0;
        if (!(fields >> liveness)) liveness = 0;  // a v1 line
        auto node = parse_node(url);              // its record when it has one, else its enode URL
        auto pip = parse_ip(pong_ip);
        auto iip = parse_ip(ping_ip);
        if (!node || !pip || !iip) return bad("not a node record, enode URL or IP");
        Record r{*node, *pip, from_seconds(pong), *iip, from_seconds(ping), fails, from_seconds(seen), liveness};
        db.records_.insert_or_assign(node->id, std::move(r));
    }
    return db;
}

NodeDb::Record& NodeDb::record_for(const Node& node) {
    // A flood of pings from new ids must not grow the database between saves: past a tenth over
    // the bound, expire now (at most every max_nodes / 10 new nodes).
    if (records_.size() > config_.max_nodes + config_.max_nodes / 10 && records_.find(node.id) == records_.end()) {
        expire(WallClock::now());
    }
    auto [it, inserted] = records_.try_emplace(node.id, Record{node, {}, {}, {}, {}, 0, {}, 0});
    return it->second;
}

void NodeDb::seen(const Node& node, WallClock::time_point now, Origin origin) {
    if (const Record* held = find(node.id); held && origin == Origin::kRelayed) {
        const uint64_t held_seq = held->node.enr ? held->node.enr->seq() : 0;
        if (!node.enr || node.enr->seq() <= held_seq) return;
    }
    Record& r = record_for(node);
    std::optional<Enr> record = node.enr;
    if (r.node.enr && (!record || record->seq() < r.node.enr->seq())) record = r.node.enr;
    r.node = node;
    r.node.enr = std::move(record);
    r.last_seen = now;
}

WallClock::time_point NodeDb::last_pong(const NodeId& id, const boost::asio::ip::address& ip) const {
    const Record* r = find(id);
    return r && r->pong_ip == ip ? r->last_pong : WallClock::time_point{};
}

void NodeDb::set_last_pong(const Node& node, const boost::asio::ip::address& ip, WallClock::time_point t) {
    Record& r = record_for(node);
    r.pong_ip = ip;
    r.last_pong = t;
    r.last_seen = std::max(r.last_seen, t);
}

WallClock::time_point NodeDb::last_ping(const NodeId& id, const boost::asio::ip::address& ip) const {
    const Record* r = find(id);
    return r && r->ping_ip == ip ? r->last_ping : WallClock::time_point{};
}

void NodeDb::set_last_ping(const Node& node, const boost::asio::ip::address& ip, WallClock::time_point t) {
    Record& r = record_for(node);
    r.ping_ip = ip;
    r.last_ping = t;
    r.last_seen = std::max(r.last_seen, t);
}

uint32_t NodeDb::findnode_failures(const NodeId& id) const {
    const Record* r = find(id);
    return r ? r->findnode_failures : 0;
}

void NodeDb::set_findnode_failures(const NodeId& id, uint32_t n) {
    if (auto it = records_.find(id); it != records_.end()) it->second.findnode_failures = n;
}

void NodeDb::set_liveness(const NodeId& id, uint32_t checks) {
    if (auto it = records_.find(id); it != records_.end()) it->second.liveness = checks;
}

const NodeDb::Record* NodeDb::find(const NodeId& id) const {
    auto it = records_.find(id);
    return it == records_.end() ? nullptr : &it->second;
}

std::vector<Node> NodeDb::seeds(size_t n, WallClock::time_point now, std::mt19937_64& rng) const {
    std::vector<const Record*> fresh;
    for (const auto& [id, r] : records_) {
        if (r.liveness > 5 && r.last_pong.time_since_epoch().count() != 0 &&
            now - r.last_pong <= config_.seed_max_age) {
            fresh.push_back(&r);
        }
    }
    // The map's order depends on ids only; sort by id first so that a seeded generator replays.
    std::sort(fresh.begin(), fresh.end(), [](const Record* a, const Record* b) { return a->node.id < b->node.id; });
    std::shuffle(fresh.begin(), fresh.end(), rng);
    std::vector<Node> out;
    for (size_t i = 0; i < fresh.size() && i < n; ++i) out.push_back(fresh[i]->node);
    return out;
}

void NodeDb::expire(WallClock::time_point now) {
    std::erase_if(records_, [&](const auto& kv) { return now - kv.second.last_seen > config_.max_age; });
    if (records_.size() <= config_.max_nodes) return;
    std::vector<std::pair<WallClock::time_point, NodeId>> by_age;
    for (const auto& [id, r] : records_) by_age.emplace_back(r.last_seen, id);
    std::sort(by_age.begin(), by_age.end());
    for (size_t i = 0; i < by_age.size() - config_.max_nodes; ++i) records_.erase(by_age[i].second);
}

Outcome<void> NodeDb::save(WallClock::time_point now) {
    expire(now);
    if (path_.empty()) return {};
    std::string out(kHeader);
    out += '\n';
    for (const auto& [id, r] : records_) {
        const std::string url = r.node.enr ? r.node.enr->text() : r.node.enode();
        out += fmt::format("node {} {} {} {} {} {} {} {}\n", url, ip_text(r.pong_ip), seconds(r.last_pong),
                           ip_text(r.ping_ip), seconds(r.last_ping), r.findnode_failures, seconds(r.last_seen),
                           r.liveness);
    }
    return p2p::write_file_atomic(path_, out, 0644);
}

}  // namespace headerd::disc
