#pragma once

// The Kademlia table both discovery protocols share, with geth's shape (p2p/discover/table.go):
// buckets by log distance from our id, 16 nodes each, the distances up to 240 folded into bucket
// 0 (17 buckets: at random ids almost every node is at distance 256..240), a replacement list of 10
// per bucket for nodes that arrive while it is full, and the eclipse limits: at most 2 nodes of one
// /24 per bucket and 10 in the whole table, LAN and loopback addresses exempt (a private network
// must work).
//
// What may change a node we hold (geth since go-ethereum PR #29836): its endpoint and record change
// only on news from the node itself (its ping, its handshake, its answer: Origin::kDirect), or from
// a relayed signed record whose seq is higher than the one held. A relayed discv4 node (no record)
// never moves one. A node that moved is no longer counted live and is revalidated first.
//
// Revalidation as geth's table_reval.go: two lists, fast (new, moved or failing nodes) and slow
// (nodes that answered), each due at a random time within its interval (the slow one's three times
// the fast one's), a random node of the due list pinged. An answer raises the node's liveness count
// and moves it to the slow list; a miss divides the count by 3 and removes the node at 0, a random
// replacement taking its place. See docs/discovery.md.
//
// Sans-I/O and single-threaded: the discovery service owns it and passes the time in; its random
// choices come from a seeded generator (TableConfig::seed), so a test or a simulation replays.

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "disc/address_policy.hpp"
#include "disc/enr.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::disc {

using NodeId = Hash32;
using Clock = std::chrono::steady_clock;

// Bit length of a XOR b, 0 for a == b and 256 at most: the "distance" of discv4 and discv5.
int log_distance(const NodeId& a, const NodeId& b) noexcept;
// -1, 0 or 1 as a is closer to, as close to, or farther from target than b.
int compare_distance(const NodeId& target, const NodeId& a, const NodeId& b) noexcept;

struct Node {
    NodeId id{};
    rlpx::PublicKey key;
    boost::asio::ip::address ip;
    uint16_t udp{0};
    uint16_t tcp{0};
    std::optional<Enr> enr;  // when we have the node's record

    static Node from_key(const rlpx::PublicKey& key, boost::asio::ip::address ip, uint16_t udp, uint16_t tcp);
    // A node from its record: ip (or ip6 when it has no ip), udp and tcp. Nullopt without an
    // address or a UDP port.
    static std::optional<Node> from_enr(const Enr& enr);
    // enode://<hex key>@ip:tcp?discport=udp (the discport only when it differs)
    std::string enode() const;
};

// The address policy (disc/address_policy.hpp) on a record's address (ip, else ip6) told us by
// `sender`. A record without an address passes: such a node is reached where it was heard from.
AddressVerdict check_record(const boost::asio::ip::address& sender, const Enr& record);

// The first 8 bytes of a node id in hex, for logs.
std::string short_id(const NodeId& id);

// The node of an enode URL (its host an IP address; ?discport gives the UDP port) or of an enr:
// record (which must have an address and a UDP port). The error says what is wrong with it.
Outcome<Node> parse_node(const std::string& text);

struct TableConfig {
    size_t bucket_size = 16;
    size_t max_replacements = 10;
    size_t bucket_ip_limit = 2;  // per /24, in one bucket
    size_t table_ip_limit = 10;  // per /24, in the whole table
    // geth: PingInterval (3 s). The fast list is due at a random time within it, the slow list
    // within three times it.
    std::chrono::milliseconds revalidate_interval{3000};
    std::optional<uint64_t> seed;  // of the random choices; a random one when unset
};

// Where news of a node comes from (geth's isInbound): the node itself (its ping, its handshake, its
// answer to our request) or a third party (a Neighbors or NODES answer, a seed, a bootnode).
enum class Origin : uint8_t { kDirect, kRelayed };

inline constexpr int kBucketCount = 17;
// geth's bucketMinDistance: distances up to 240 share bucket 0, 241..256 have one bucket each.
inline constexpr int kBucketMinDistance = 256 - kBucketCount;  // 239

class Table {
  public:
    struct Entry {
        Node node;
        Clock::time_point added;
        Clock::time_point checked;    // last revalidation (or when added)
        uint32_t liveness_checks{0};  // answered revalidations since added (or since it moved)
        bool fast{true};              // in the fast revalidation list
        bool recheck{false};          // it moved: the next of its list to be pinged
    };

    enum class AddResult {
        kAdded,        // now in its bucket
        kUpdated,      // already there; its record refreshed, its endpoint the same
        kMoved,        // already there; its endpoint changed (it is revalidated next)
        kStale,        // already there; relayed news without a newer record changes nothing
        kReplacement,  // the bucket is full: kept in its replacement list
        kSelf,
        kUnroutable,
        kIpLimit,  // too many nodes of its /24 in the bucket or the table
    };

    Table(NodeId self, TableConfig config = {});

    const NodeId& self() const noexcept { return self_; }

    // A node from `origin`. A new node gets `checks` as its liveness count (0: not yet verified). A
    // node already held changes only as the top of this file says.
    AddResult add(const Node& node, Clock::time_point now, Origin origin, uint32_t checks);
    // Removes a node and moves a random replacement of its bucket (that the IP limits let in) in;
    // false if it was not in.
    bool remove(const NodeId& id);
    const Entry* find(const NodeId& id) const;

    // Up to n nodes closest to target, nearest first. With prefer_live (geth's findnodeByID, for
    // answering FindNode), only nodes that answered a revalidation, unless there are none.
    std::vector<Node> closest(const NodeId& target, size_t n, bool prefer_live = false) const;
    // Live nodes at exactly these log distances (discv5 FINDNODE), in random order, at most
    // `limit`; distance 0 is not answered from the table (it means our own record).
    std::vector<Node> at_distances(std::span<const unsigned> distances, size_t limit);
    std::vector<Node> nodes() const;
    size_t size() const noexcept;
    // Nodes per bucket, bucket 0 (distances <= 240) first.
    std::array<size_t, kBucketCount> bucket_sizes() const noexcept;
    size_t replacement_count() const noexcept;
    // Nodes in the bucket `id` falls in (geth's FindNode-failure rule looks at the bucket).
    size_t bucket_size_of(const NodeId& id) const noexcept;

    // The nodes to ping now: a random node of each revalidation list whose time has come (so at
    // most two); each such list is then due again at a random time within its interval.
    std::vector<Node> due_for_revalidation(Clock::time_point now);
    // When the next list is due (time_point::max() when the table is empty).
    Clock::time_point next_revalidation() const noexcept;
    // The result of a revalidation ping: an answer raises the liveness count and moves the node
    // to the slow list; a miss divides the count by 3, removes the node when it reaches 0 and
    // otherwise moves it to the fast list. Returns true when the node was removed.
    bool revalidated(const NodeId& id, bool answered, Clock::time_point now);

  private:
    struct Bucket {
        std::vector<Entry> entries;  // most recently added last
        std::deque<Node> replacements;
    };
    Bucket& bucket_of(const NodeId& id);
    const Bucket& bucket_of(const NodeId& id) const;
    // Whether the /24 limits let a node at ip into b; `moving` (a node changing its endpoint) does
    // not count against itself.
    bool ip_allowed(const Bucket& b, const boost::asio::ip::address& ip, const NodeId* moving) const;
    void add_replacement(Bucket& b, const Node& node);
    // Puts an entry in a revalidation list (the list gets a due time if it had none).
    void to_list(Entry& e, bool fast, Clock::time_point now);
    Clock::duration random_within(Clock::duration d);
    void update_list_times() noexcept;

    NodeId self_;
    TableConfig config_;
    std::array<Bucket, kBucketCount> buckets_;
    std::mt19937_64 rng_;
    // When each revalidation list is due; max() while it is empty.
    Clock::time_point fast_due_{Clock::time_point::max()};
    Clock::time_point slow_due_{Clock::time_point::max()};
};

const char* to_string(Table::AddResult r) noexcept;

}  // namespace headerd::disc
