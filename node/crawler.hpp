#pragma once

// Finding header servers through discv4, discv5 and DNS node lists: keep running lookups at random
// targets, ask every node discv4 heard of for its record (EIP-868; discv5 and DNS bring records),
// and judge the record's `eth` fork id against our chain, as
// geth filters its dial candidates (eth/backend.go: RequestENR, then the fork id filter). `headerd discover` reports
// everything found; `sync --discover` and `serve --follow-discovered` dial only the compatible ones. A node without a
// record (or without an eth entry) is never a candidate.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include "core/chain_config.hpp"
#include "db/chain_db.hpp"
#include "disc/v4_udp.hpp"
#include "disc/v5_udp.hpp"
#include "node/dns_source.hpp"
#include "p2p/enode/node_key.hpp"

namespace headerd::node {

class Crawler : public std::enable_shared_from_this<Crawler> {
  public:
    struct Found {
        disc::Node node;
        std::optional<disc::Enr> record;
        bool asked{false};  // a record request is in flight, or no more will be made
        // "yes" or "no: <why>"; unset without a record or without an eth entry.
        std::optional<std::string> compatibility;
        // "discv4", "discv5", "dns" (a DNS node list, node/dns_source.hpp) or "bootnode" (named by the user)
        std::string found_by{"discv4"};
        // Record requests that went unanswered (a lost datagram, a node still proving our
        // endpoint): the node is asked again kRecordRetryDelay * failures later, kRecordTries in all.
        unsigned failures{0};
        std::chrono::steady_clock::time_point retry_at{};
    };
    static constexpr unsigned kRecordTries = 3;
    static constexpr std::chrono::milliseconds kRecordRetryDelay{1000};
    // At most this many nodes are remembered; later ones are left out (and counted).
    static constexpr size_t kMaxFound = 10000;

    // Judges fork ids as a node at (head_number, head_time) of `config` would.
    Crawler(std::shared_ptr<disc::V4Service> service, const ChainConfig& config, uint64_t head_number,
            uint64_t head_time);

    // Adds discv5 as a source (before start): its lookups' nodes come with their records.
    void use_v5(std::shared_ptr<disc::V5Service> v5) { v5_ = std::move(v5); }
    // Hooks the service's on_found and starts the lookups (discv4, and discv5 when given) and
    // `parallel` record requests.
    void start(boost::asio::io_context& io, size_t parallel = 8);
    // Ends the lookups and record requests, and unhooks the service: nothing more is remembered.
    void stop() noexcept;
    // A node to ask for its record (the bootnodes; the service reports the others).
    void add(const disc::Node& n, const std::string& found_by = "discv4");
    // A node known by its record (from a DNS node list or discv5): judged at once, not asked. A
    // record with a higher seq replaces the one known; one without an address and UDP port is left
    // out, and so is one whose address the address policy refuses from `sender` (the DNS server, or
    // the node that relayed it; unspecified: a sender on the internet).
    void add_record(const disc::Enr& record, const std::string& found_by, const boost::asio::ip::address& sender);
    // Nodes left out because kMaxFound were known, or because of their address.
    size_t left_out() const noexcept { return left_out_; }

    const std::map<disc::NodeId, Found>& found() const noexcept { return found_; }
    size_t records() const noexcept;
    size_t compatible() const noexcept;
    // Nodes whose record's fork id fails our filter.
    size_t incompatible() const noexcept;
    // Up to `limit` compatible nodes with a TCP port, as enode URLs, leaving out `exclude`.
    std::vector<p2p::Enode> candidates(size_t limit, const std::set<disc::NodeId>& exclude = {}) const;
    // Runs until `want` candidates are known or `wait` passed.
    boost::asio::awaitable<std::vector<p2p::Enode>> wait_for(size_t want, std::chrono::milliseconds wait,
                                                             std::set<disc::NodeId> exclude = {});

  private:
    boost::asio::awaitable<void> fetch_records();
    // Lookups at random targets (of type Target) through `service` until stop(), `after_each` run
    // after every one; a pause after a lookup that found nobody.
    template <class Target, class Service>
    boost::asio::awaitable<void> keep_looking(std::shared_ptr<Service> service, std::function<void()> after_each);
    // Every discv5 table node with a record (a lookup returns only the closest 16).
    void add_v5_table();
    void judge(Found& f) const;

    std::shared_ptr<disc::V4Service> service_;
    std::shared_ptr<disc::V5Service> v5_;
    const ChainConfig& config_;
    uint64_t head_number_;
    uint64_t head_time_;
    std::map<disc::NodeId, Found> found_;
    bool stopping_{false};
    size_t left_out_{0};
};

struct DiscoverySettings;

// Starts the DNS node lists of `settings` (--discovery.dns) feeding `crawler` on `io`; null when
// none was named.
Outcome<std::unique_ptr<DnsSource>> start_dns_source(boost::asio::io_context& io, const DiscoverySettings& settings,
                                                     const std::shared_ptr<Crawler>& crawler);

// `sync --discover`: runs discovery (with a throwaway identity) on `io` until `want` compatible
// header servers other than `known` are found or `wait` passed, stops it, and returns them. Logs
// what it found. An error only when discovery cannot start.
Outcome<std::vector<p2p::Enode>> discover_peers(boost::asio::io_context& io, const rlpx::PrivateKey& key,
                                                const DiscoverySettings& settings, const ChainConfig& config,
                                                const db::Head& head, const std::vector<p2p::Enode>& known, size_t want,
                                                std::chrono::milliseconds wait);

}  // namespace headerd::node
