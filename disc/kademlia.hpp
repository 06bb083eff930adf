#pragma once

// The table-and-node management that discv4 and discv5 share (geth shares one table behind its
// `transport` interface, p2p/discover/table.go): the Kademlia table with its add rules, refresh
// (seeds from the node database, bootnodes, our own lookup and three random ones), randomised
// revalidation with the fetch of newer records, FindNode-failure eviction, the node database's
// seeds and the counters and debug log of every table change. A protocol (V4Service, V5Service)
// gives it what only the wire knows how to do (KademliaProtocol); the core holds no socket and no
// clock of its own: time comes from an Env (disc/env.hpp), so every rule here runs the same on
// virtual time (disc/kademlia_test.cpp, bench/disc_sim.cpp).
//
// Threading: everything runs on the io_context given; one thread must run it. stats() may be read
// from any thread.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include "disc/env.hpp"
#include "disc/lookup.hpp"
#include "disc/node_db.hpp"
#include "disc/table.hpp"

namespace headerd::disc {

// What the core asks of a protocol.
class KademliaProtocol {
  public:
    virtual ~KademliaProtocol() = default;
    // A liveness check (Ping, PING): the record seq its answer carried (0: none), nullopt when no
    // answer came.
    virtual boost::asio::awaitable<std::optional<uint64_t>> check(Node n) = 0;
    // The node's record, asked because its answer named a newer one than `n` holds: nullopt when it
    // did not answer or the record was refused (older, or an address the address policy refuses).
    virtual boost::asio::awaitable<std::optional<Node>> fetch_record(Node n) = 0;
    // A lookup target (ours when `self`, else random) and the query that asks a node towards it
    // (discv4 sends a public key, whose hash is the target id; discv5 sends distances).
    struct Target {
        NodeId id;
        LookupQuery query;
    };
    virtual Target lookup_target(bool self) = 0;
};

struct KademliaConfig {
    std::vector<Node> bootnodes;
    std::chrono::seconds refresh_interval{30 * 60};       // geth: RefreshInterval (randomised 1/2..1)
    std::chrono::milliseconds revalidate_interval{3000};  // geth's fast list; the slow one is 10x
    std::chrono::seconds save_interval{0};                // node database written this often (0: never)
    uint32_t max_findnode_failures = 5;                   // geth: maxFindnodeFailures
    bool needs_record = false;                            // discv5: a node without its record is useless
    const char* log_name = "Discovery";                   // the debug log's prefix
    TableConfig table;
};

// The table's counters and gauges, as /metrics shows them (disc/disc_metrics.cpp).
struct TableStats {
    std::atomic<uint64_t> size{0};
    std::array<std::atomic<uint64_t>, kBucketCount> bucket_sizes{};
    std::atomic<uint64_t> replacements{0};
    std::atomic<uint64_t> lookups{0};
    std::atomic<uint64_t> lookup_micros{0};   // total duration of finished lookups
    std::atomic<uint64_t> moves{0};           // table nodes whose endpoint changed
    std::atomic<uint64_t> refused_moves{0};   // relayed news that would have moved a node we hold
    std::atomic<uint64_t> refused_relays{0};  // nodes and records whose address the address policy refused
    std::atomic<uint64_t> evictions{0};       // nodes removed: failed revalidation or FindNodes
};

class Kademlia {
  public:
    Kademlia(boost::asio::io_context& io, Env& env, NodeId self, KademliaConfig config);
    Kademlia(const Kademlia&) = delete;
    Kademlia& operator=(const Kademlia&) = delete;

    // Starts refresh (the first one bootstraps) and revalidation, unless `passive`. `owner` is kept
    // alive by the loops until they end after stop(); `protocol` must live as long.
    void start(std::shared_ptr<void> owner, KademliaProtocol& protocol, bool passive = false);
    // Ends the loops' waits; idempotent. The node database is the owner's to save.
    void stop();
    bool stopped() const noexcept { return stopped_; }
    bool bootstrapped() const noexcept { return init_done_; }

    // The node database for seeds, liveness and the FindNode failures of the nodes it holds (null:
    // none).
    void set_db(std::function<NodeDb*()> db) { db_ = std::move(db); }
    NodeDb* db() const { return db_ ? db_() : nullptr; }

    const Table& table() const noexcept { return table_; }
    Table& table() noexcept { return table_; }  // for at_distances (its shuffle); adds go through add()
    const NodeId& self() const noexcept { return table_.self(); }
    const TableStats& stats() const noexcept { return stats_; }
    Env& env() const noexcept { return *env_; }
    std::mt19937_64& rng() noexcept { return rng_; }

    // Adds `n` (Origin::kDirect: the node itself spoke; kRelayed: another told us) and counts and
    // logs at debug what it did; `source` names where it came from. Ourselves: kSelf; a node
    // without its record when the protocol needs one: kUnroutable.
    Table::AddResult add(const Node& n, Origin origin, uint32_t checks, std::string_view source);
    // A relayed node or record whose address the address policy refused: counted and logged.
    void refused(const NodeId* id, const boost::asio::ip::address& from, const boost::asio::ip::address& addr,
                 AddressVerdict verdict);
    // A FindNode's outcome (geth's trackRequest): a table node that failed max_findnode_failures in a
    // row goes, unless its bucket is nearly empty (a small network keeps its last contacts).
    void track_findnode(const Node& n, bool answered);
    uint32_t findnode_failures(const NodeId& id) const;

    // An iterative lookup from the table's closest (the bootnodes when it is empty): the up to 16
    // closest found. Every node an answer names goes into the table as relayed, then to on_found.
    boost::asio::awaitable<std::vector<Node>> lookup(NodeId target, LookupQuery query);
    // Seeds and bootnodes into the table, our own lookup and three random ones.
    boost::asio::awaitable<void> refresh(KademliaProtocol& protocol);
    // One revalidation of a table node: its check, the result in the table (eviction after a
    // miss), a seed in the node database after more than 5, and the newer record its answer names.
    boost::asio::awaitable<void> revalidate(KademliaProtocol& protocol, Node n);

    // Each node a lookup answer named, after it went into the table (the discv4 crawler's input).
    std::function<void(const Node&, Table::AddResult)> on_relayed;

  private:
    boost::asio::awaitable<void> refresh_loop(KademliaProtocol& protocol);
    boost::asio::awaitable<void> revalidate_loop(KademliaProtocol& protocol);
    void log(const char* what, const Node& n, std::string_view source) const;
    void note_table() noexcept;

    boost::asio::io_context& io_;
    Env* env_;
    KademliaConfig config_;
    Table table_;
    TableStats stats_;
    std::function<NodeDb*()> db_;
    // FindNode failures in a row of table nodes.
    std::unordered_map<NodeId, uint32_t, NodeIdHash> failures_;
    Timer refresh_timer_;
    Timer revalidate_timer_;
    std::mt19937_64 rng_;
    bool init_done_{false};
    bool stopped_{false};
};

}  // namespace headerd::disc
