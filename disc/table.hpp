#pragma once

// The Kademlia table both discovery protocols share, with geth's shape (p2p/discover/table.go):
// buckets by log distance from our id, 16 nodes each, the distances up to 240 folded into bucket
// 0 (17 buckets: at random ids almost every node is at distance 256..240), a replacement list of 10
// per bucket for nodes that arrive while it is full, and the eclipse limits: at most 2 nodes of one
// /24 per bucket and 10 in the whole table, LAN and loopback addresses exempt (a private network
// must work). Revalidation keeps a liveness count per node: an answer raises it, a miss divides it
// by 3, and a node at 0 is replaced by the newest replacement. See docs/discovery.md.
//
// Sans-I/O and single-threaded: the discovery service owns it and passes the time in.

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "disc/enr.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::disc {

using NodeId = Hash32;
using Clock = std::chrono::steady_clock;

// Bit length of a XOR b, 0 for a == b and 256 at most: the "distance" of discv4 and discv5.
int log_distance(const NodeId& a, const NodeId& b) noexcept;
// -1, 0 or 1 as a is closer to, as close to, or farther from target than b.
int compare_distance(const NodeId& target, const NodeId& a, const NodeId& b) noexcept;

// Loopback, private (RFC 1918, fc00::/7), link-local or CGNAT space: exempt from the IP limits.
bool is_lan(const boost::asio::ip::address& ip) noexcept;
// Addresses no node can be reached at: unspecified, multicast, broadcast.
bool is_unroutable(const boost::asio::ip::address& ip) noexcept;
// geth's CheckRelayAddr: may `sender` tell us about a node at `ip`? Loopback nodes only from a
// loopback sender, LAN nodes only from a LAN (or loopback) sender, unroutable never.
bool relay_allowed(const boost::asio::ip::address& sender, const boost::asio::ip::address& ip) noexcept;

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

// The node of an enode URL (its host an IP address; ?discport gives the UDP port) or of an enr:
// record (which must have an address and a UDP port). The error says what is wrong with it.
Outcome<Node> parse_node(const std::string& text);

struct TableConfig {
    size_t bucket_size = 16;
    size_t max_replacements = 10;
    size_t bucket_ip_limit = 2;  // per /24, in one bucket
    size_t table_ip_limit = 10;  // per /24, in the whole table
};

inline constexpr int kBucketCount = 17;
// geth's bucketMinDistance: distances up to 240 share bucket 0, 241..256 have one bucket each.
inline constexpr int kBucketMinDistance = 256 - kBucketCount;  // 239

class Table {
  public:
    struct Entry {
        Node node;
        Clock::time_point added;
        Clock::time_point checked;    // last revalidation (or when added)
        uint32_t liveness_checks{0};  // answered revalidations since added
    };

    enum class AddResult {
        kAdded,        // now in its bucket
        kUpdated,      // already there; endpoint or record refreshed
        kReplacement,  // the bucket is full: kept in its replacement list
        kSelf,
        kUnroutable,
        kIpLimit,  // too many nodes of its /24 in the bucket or the table
    };

    Table(NodeId self, TableConfig config = {});

    const NodeId& self() const noexcept { return self_; }

    // A node that proved it is alive (answered a ping). `checks` seeds its liveness count.
    AddResult add(const Node& node, Clock::time_point now, uint32_t checks = 1);
    // Removes a node and moves the newest replacement of its bucket in; false if it was not in.
    bool remove(const NodeId& id);
    const Entry* find(const NodeId& id) const;

    // Up to n nodes closest to target, nearest first.
    std::vector<Node> closest(const NodeId& target, size_t n) const;
    // Nodes at exactly these log distances (discv5 FINDNODE), at most `limit`; distance 0 is not
    // answered from the table (it means our own record).
    std::vector<Node> at_distances(std::span<const unsigned> distances, size_t limit) const;
    std::vector<Node> nodes() const;
    size_t size() const noexcept;
    // Nodes per bucket, bucket 0 (distances <= 240) first.
    std::array<size_t, kBucketCount> bucket_sizes() const noexcept;
    size_t replacement_count() const noexcept;

    // The node to revalidate next: the one checked least recently.
    std::optional<Node> next_to_revalidate() const;
    // The result of a revalidation ping. An answer raises the liveness count (and takes the newer
    // record if given); a miss divides it by 3 and removes the node when it reaches 0. Returns
    // true when the node was removed.
    bool revalidated(const NodeId& id, bool answered, Clock::time_point now);

  private:
    struct Bucket {
        std::vector<Entry> entries;  // most recently added last
        std::deque<Node> replacements;
    };
    Bucket& bucket_of(const NodeId& id);
    const Bucket& bucket_of(const NodeId& id) const;
    bool ip_allowed(const Bucket& b, const boost::asio::ip::address& ip) const;
    void add_replacement(Bucket& b, const Node& node);

    NodeId self_;
    TableConfig config_;
    std::array<Bucket, kBucketCount> buckets_;
};

const char* to_string(Table::AddResult r) noexcept;

}  // namespace headerd::disc
