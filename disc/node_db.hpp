#pragma once

// What discovery remembers about other nodes, kept in DATADIR/nodes so a restarted node rejoins
// the network without its bootnodes (geth's p2p/enode/nodedb.go keeps the same facts in LevelDB):
// each node's address and record, when it last answered our ping (the endpoint proof, tied to the
// IP it answered from), when it last pinged us, and how many FindNode requests in a row it failed.
// Bounded: nodes not seen for max_age are dropped, and past max_nodes the least recently seen go
// first (checked at every save, and as soon as new nodes pass the bound by a tenth). The file is text, one node per
// line, written whole and renamed into place, so a crash leaves the old file or the new one. See docs/discovery.md
// ("Node database").
//
// Single-threaded: the discovery service owns it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "core/result.hpp"
#include "disc/table.hpp"

namespace headerd::disc {

using WallClock = std::chrono::system_clock;

// geth: seedCount, the nodes a refresh takes from the database.
inline constexpr size_t kSeedCount = 30;

struct NodeDbConfig {
    size_t max_nodes = 10000;
    std::chrono::seconds max_age{24 * 3600};           // geth: dbNodeExpiration
    std::chrono::seconds seed_max_age{5 * 24 * 3600};  // geth: seedMaxAge
};

class NodeDb {
  public:
    struct Record {
        Node node;
        boost::asio::ip::address pong_ip;   // the IP the last pong came from
        WallClock::time_point last_pong{};  // epoch when never
        boost::asio::ip::address ping_ip;
        WallClock::time_point last_ping{};
        uint32_t findnode_failures{0};
        WallClock::time_point last_seen{};
        uint32_t liveness{0};  // its table liveness count when it was last a seed candidate (> 5)
    };

    // An empty, in-memory database (nothing is saved).
    explicit NodeDb(NodeDbConfig config = {}) : config_(config) {}
    // Reads PATH if it exists (a missing file is an empty database); save() writes it back. A
    // file that cannot be read is an error naming it and the line; it is not replaced.
    static Outcome<NodeDb> open(std::string path, NodeDbConfig config = {});

    // Remembers (or refreshes) a node's endpoint and record; a record never replaces a newer one.
    // Relayed news (Origin::kRelayed) of a node we know changes nothing unless it brings a newer
    // record: what a third party says never moves a node that answered us.
    void seen(const Node& node, WallClock::time_point now, Origin origin);

    WallClock::time_point last_pong(const NodeId& id, const boost::asio::ip::address& ip) const;
    void set_last_pong(const Node& node, const boost::asio::ip::address& ip, WallClock::time_point t);
    WallClock::time_point last_ping(const NodeId& id, const boost::asio::ip::address& ip) const;
    void set_last_ping(const Node& node, const boost::asio::ip::address& ip, WallClock::time_point t);
    uint32_t findnode_failures(const NodeId& id) const;
    void set_findnode_failures(const NodeId& id, uint32_t n);
    // A table node passed `checks` revalidations (geth keeps nodes with more than 5 as seeds).
    void set_liveness(const NodeId& id, uint32_t checks);

    const Record* find(const NodeId& id) const;
    // Up to n nodes, chosen at random, that passed more than 5 revalidations and answered a ping
    // within seed_max_age: the nodes a restart starts from. Random, so that an attacker who got
    // some nodes into the database cannot count on being the seeds.
    std::vector<Node> seeds(size_t n, WallClock::time_point now, std::mt19937_64& rng) const;
    // Drops nodes unseen for max_age, then the least recently seen beyond max_nodes.
    void expire(WallClock::time_point now);
    size_t size() const noexcept { return records_.size(); }

    // Writes the file (when opened with a path). Expires first.
    Outcome<void> save(WallClock::time_point now);

  private:
    struct IdHash {
        size_t operator()(const NodeId& id) const noexcept;
    };
    Record& record_for(const Node& node);

    NodeDbConfig config_;
    std::string path_;
    std::unordered_map<NodeId, Record, IdHash> records_;
};

}  // namespace headerd::disc
