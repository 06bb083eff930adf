#pragma once

// Node discovery in the commands: the options serve, sync and discover share (--discovery,
// --bootnodes, --discovery.port, --nat and the test timings), our own node record (made, kept
// in DATADIR/enr and re-signed with a higher seq when its contents change), and the discv4 and
// discv5 services started from them (discv5 on the discv4 socket, as geth). docs/discovery.md describes the protocol
// side, docs/operations.md the flags.
//
// Safety: with no --bootnodes and no --discovery, discovery is off and sends nothing. The public
// lists are used only when a user names them (--bootnodes mainnet, --discovery.dns mainnet).

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>

#include "core/forkid.hpp"
#include "core/result.hpp"
#include "disc/endpoint_predictor.hpp"
#include "disc/v4_udp.hpp"
#include "disc/v5_udp.hpp"
#include "node/cli.hpp"

namespace headerd::node {

struct DiscoverySettings {
    bool v4{false};
    bool v5{false};
    std::vector<disc::Node> bootnodes;
    // --nat extip:IP: the address our record advertises. Without it, the listen address when it
    // is a specific one; none when it is 0.0.0.0 (peers then use the address our packets come from).
    std::optional<boost::asio::ip::address> extip;
    std::optional<uint16_t> udp_port;  // --discovery.port; absent: the TCP port
    // --discovery.dns: enrtree:// URLs (named networks resolved); --discovery.dns-server.
    std::vector<std::string> dns_trees;
    std::optional<std::string> dns_server;
    // --discovery.predict N: peers that must state the same address of ours before the record
    // gets it (without an address to advertise; geth: 10).
    size_t predict_statements{10};
    disc::V4Config v4_config;  // bootnodes and the test timings filled in
    disc::V5Config v5_config;  // the bootnodes given as enr: records, the timings
    bool enabled() const noexcept { return v4 || v5; }
};

// --discovery, --bootnodes, --discovery.dns, --discovery.dns-server, --discovery.port, --nat,
// --discovery.refresh, --discovery.timeout, --discovery.ratelimit.
std::vector<OptionSpec> discovery_options(const std::string& default_mode);
// The ones of a node that only looks (sync --discover, discover): --bootnodes and the timings.
std::vector<OptionSpec> discovery_client_options();
Outcome<DiscoverySettings> parse_discovery(const Args& args, const std::string& default_mode);
// A comma-separated list of enode URLs, enr: records and network names (mainnet, sepolia,
// holesky, hoodi).
Outcome<std::vector<disc::Node>> parse_bootnodes(const std::string& list);

// Our record: ip (or ip6), tcp, udp and the eth fork id entry. With a datadir, the record of the
// last run (DATADIR/enr) is kept when nothing changed, and otherwise replaced by one with a higher
// seq; the result is written back to DATADIR/enr.
class LocalRecord {
  public:
    LocalRecord(const rlpx::PrivateKey& key, std::string datadir, std::optional<boost::asio::ip::address> ip,
                uint16_t tcp, uint16_t udp);
    // Makes (or keeps) the record for this fork id; an error names the file it could not write.
    Outcome<disc::Enr> update(const std::optional<ForkId>& fork_id);
    const std::optional<disc::Enr>& current() const noexcept { return current_; }
    // The address and UDP port to advertise from now on (a predicted endpoint); update() signs them.
    void set_endpoint(boost::asio::ip::address ip, uint16_t udp) {
        ip_ = ip;
        udp_ = udp;
    }
    std::pair<std::optional<boost::asio::ip::address>, uint16_t> endpoint() const { return {ip_, udp_}; }

  private:
    const rlpx::PrivateKey& key_;
    std::string path_;
    std::optional<boost::asio::ip::address> ip_;
    uint16_t tcp_;
    uint16_t udp_;
    std::optional<disc::Enr> current_;
};

// Binds and starts discv4 on `listen` (UDP) with `record`; its node database is DATADIR/nodes
// (in memory when datadir is empty).
Outcome<std::shared_ptr<disc::V4Service>> start_discovery(boost::asio::io_context& io, const rlpx::PrivateKey& key,
                                                          const DiscoverySettings& settings, const disc::Enr& record,
                                                          const boost::asio::ip::udp::endpoint& listen,
                                                          const std::string& datadir);

// Starts discv5 on the socket of `v4` (started by start_discovery) with `record`; its bootnodes
// are those of --bootnodes that are enr: records.
std::shared_ptr<disc::V5Service> start_discv5(boost::asio::io_context& io, const rlpx::PrivateKey& key,
                                              const DiscoverySettings& settings, const disc::Enr& record,
                                              const std::shared_ptr<disc::V4Service>& v4);

}  // namespace headerd::node
