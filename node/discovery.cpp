#include "node/discovery.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "disc/bootnodes.hpp"
#include "disc/dnsdisc.hpp"
#include "node/common.hpp"
#include "p2p/enode/node_key.hpp"

namespace headerd::node {
namespace {

namespace asio = boost::asio;

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        std::string item = list.substr(start, comma - start);
        if (!item.empty()) out.push_back(std::move(item));
        start = comma + 1;
    }
    return out;
}

uint64_t unix_millis() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
}

}  // namespace

std::vector<OptionSpec> discovery_options(const std::string& default_mode) {
    return {
        {"discovery", "off|v4|v5|v4,v5",
         "node discovery: discv4 (with EIP-868 records) and/or discv5.1 on the same UDP port (v5 alone still opens "
         "the port through the discv4 service, which then has no bootnodes); v4 by itself when --bootnodes is given, "
         "v4,v5 "
         "when one of them is an enr: record",
         default_mode, false},
        {"bootnodes", "LIST",
         "discovery bootnodes, comma-separated: enode URLs, enr: records, or a network's public list by name "
         "(mainnet, sepolia, holesky, hoodi; used only when named)",
         "", false},
        {"discovery.dns", "LIST",
         "DNS node lists (EIP-1459) to take candidates from, comma-separated: enrtree:// URLs, or a network's "
         "list by name (mainnet, sepolia, holesky, hoodi; used only when named)",
         "", false},
        {"discovery.dns-server", "IP:PORT",
         "the DNS server to ask for --discovery.dns (IPv4; default: the system's resolvers)", "", false},
        {"discovery.port", "PORT", "UDP port of discovery (default: the TCP listen port)", "", false},
        {"nat", "extip:IP|none",
         "the address our node record advertises: extip:IP, or none (the listen address when it is a specific one)",
         "none", false},
        {"discovery.predict", "N",
         "without an address to advertise (listening on 0.0.0.0 without --nat extip), peers that must state the "
         "same address of ours before the node record publishes it (geth: 10)",
         "10", false},
        {"discovery.refresh", "SECONDS", "time between table refreshes (random in [S/2, S), as geth)", "1800", false},
        {"discovery.timeout", "MS",
         "how long a discovery request waits for its reply (default 500 for discv4, 700 for discv5, as geth)", "",
         false},
        {"discovery.ratelimit", "N",
         "discv4 requests (Ping, FindNode, ENRRequest), and discv5 WHOAREYOU answers and handshakes, read per "
         "second from one IP address, bursts of 4N; all addresses together 20N; more are dropped before their "
         "signature check; 0 turns the limit off",
         "100", false},
    };
}

std::vector<OptionSpec> discovery_client_options() {
    std::vector<OptionSpec> out;
    for (auto& o : discovery_options("v4")) {
        if (o.name != "discovery" && o.name != "discovery.port" && o.name != "nat" && o.name != "discovery.predict") {
            out.push_back(std::move(o));
        }
    }
    return out;
}

Outcome<std::vector<disc::Node>> parse_bootnodes(const std::string& list) {
    std::vector<disc::Node> out;
    for (const std::string& item : split(list)) {
        if (auto known = disc::known_bootnodes(item)) {
            for (std::string_view url : *known) {
                auto node = disc::parse_node(std::string(url));
                if (!node) return node.error();
                out.push_back(*node);
            }
            continue;
        }
        auto node = disc::parse_node(item);
        if (!node) {
            return make_error(
                fmt::format("--bootnodes: {} (expected enode URLs, enr: records or one of mainnet, "
                            "sepolia, holesky, hoodi)",
                            node.error().message));
        }
        out.push_back(*node);
    }
    return out;
}

Outcome<DiscoverySettings> parse_discovery(const Args& args, const std::string& default_mode) {
    DiscoverySettings s;
    if (auto list = args.get("bootnodes")) {
        auto nodes = parse_bootnodes(*list);
        if (!nodes) return nodes.error();
        s.bootnodes = std::move(*nodes);
    }
    for (const std::string& item : split(args.get_or("discovery.dns", ""))) {
        std::string url = disc::known_dns_tree(item).value_or(item);
        if (auto link = disc::parse_url(url); !link) {
            return make_error(
                fmt::format("--discovery.dns {}: {} (expected enrtree:// URLs or one of mainnet, "
                            "sepolia, holesky, hoodi)",
                            item, link.error().message()));
        }
        s.dns_trees.push_back(std::move(url));
    }
    if (auto server = args.get("discovery.dns-server")) {
        if (s.dns_trees.empty()) return make_error("--discovery.dns-server needs --discovery.dns");
        const auto colon = server->rfind(':');
        boost::system::error_code ec;
        if (colon != std::string::npos) asio::ip::make_address_v4(server->substr(0, colon), ec);
        std::optional<uint64_t> port;
        if (colon != std::string::npos) {
            if (auto p = parse_u64(server->substr(colon + 1))) port = *p;
        }
        if (colon == std::string::npos || ec || !port || *port == 0 || *port > 65535) {
            return make_error(fmt::format("--discovery.dns-server {}: expected IPv4-address:port", *server));
        }
        s.dns_server = *server;
    }
    std::string mode = args.get_or("discovery", default_mode);
    if (!args.has("discovery") && (!s.bootnodes.empty() || !s.dns_trees.empty())) mode = "v4";
    for (const std::string& m : split(mode)) {
        if (m == "v4") {
            s.v4 = true;
        } else if (m == "v5") {
            s.v5 = true;
        } else if (m != "off") {
            return make_error(fmt::format("--discovery {}: expected off, v4, v5 or v4,v5", mode));
        }
    }
    if (auto port = args.get("discovery.port")) {
        auto p = parse_u64(*port);
        if (!p || *p > 65535) return make_error(fmt::format("--discovery.port {}: expected a UDP port", *port));
        s.udp_port = static_cast<uint16_t>(*p);
    }
    const std::string nat = args.get_or("nat", "none");
    if (nat.rfind("extip:", 0) == 0) {
        boost::system::error_code ec;
        auto ip = asio::ip::make_address(nat.substr(6), ec);
        if (ec || ip.is_unspecified()) return make_error(fmt::format("--nat {}: expected extip:IP", nat));
        s.extip = ip;
    } else if (nat != "none") {
        return make_error(fmt::format("--nat {}: expected extip:IP or none", nat));
    }
    if (args.has("discovery.predict")) {
        auto predict = args.get_u64("discovery.predict", 10);
        if (!predict || *predict == 0) return make_error("--discovery.predict must be a positive number of peers");
        s.predict_statements = static_cast<size_t>(*predict);
    }
    auto refresh = parse_seconds("discovery.refresh", args.get_or("discovery.refresh", "1800"));
    if (!refresh || *refresh <= 0) return make_error("--discovery.refresh must be a positive number of seconds");
    auto timeout = args.get_u64("discovery.timeout", 0);
    if (!timeout || (args.has("discovery.timeout") && *timeout == 0)) {
        return make_error("--discovery.timeout must be a positive number of milliseconds");
    }
    auto ratelimit = args.get_u64("discovery.ratelimit", 100);
    if (!ratelimit) return make_error("--discovery.ratelimit must be a number of requests per second (0: no limit)");
    s.v4_config.rate_limit.per_ip_rate = static_cast<double>(*ratelimit);
    s.v4_config.rate_limit.per_ip_burst = 4.0 * static_cast<double>(*ratelimit);
    s.v4_config.rate_limit.global_rate = 20.0 * static_cast<double>(*ratelimit);
    s.v4_config.rate_limit.global_burst = 40.0 * static_cast<double>(*ratelimit);
    s.v5_config.rate_limit = s.v4_config.rate_limit;  // a bucket set of its own, with the same limits
    // discv4 gets the bootnodes only when it runs as a protocol of its own (with v5 alone it just
    // owns the socket); every enr: bootnode goes to discv5.
    if (s.v4) s.v4_config.bootnodes = s.bootnodes;
    s.v4_config.passive = !s.v4;
    for (const disc::Node& n : s.bootnodes) {
        if (n.enr) s.v5_config.bootnodes.push_back(n);
    }
    // A bootnode given as a record can be asked over discv5 too: without --discovery, both run.
    if (!args.has("discovery") && !s.v5_config.bootnodes.empty()) s.v5 = true;
    const auto refresh_interval = std::chrono::seconds(static_cast<int64_t>(std::max(1.0, *refresh)));
    s.v4_config.refresh_interval = refresh_interval;
    s.v5_config.refresh_interval = refresh_interval;
    if (*timeout != 0) {
        s.v4_config.response_timeout = std::chrono::milliseconds(*timeout);
        s.v4_config.bond_wait = std::chrono::milliseconds(*timeout);
        s.v5_config.response_timeout = std::chrono::milliseconds(*timeout);
    }
    return s;
}

LocalRecord::LocalRecord(const rlpx::PrivateKey& key, std::string datadir, std::optional<asio::ip::address> ip,
                         uint16_t tcp, uint16_t udp)
    : key_(key),
      path_(datadir.empty() ? "" : (std::filesystem::path(datadir) / "enr").string()),
      ip_(ip),
      tcp_(tcp),
      udp_(udp) {
    if (path_.empty()) return;
    std::ifstream in(path_);
    std::string text;
    if (in && std::getline(in, text)) {
        if (auto previous = disc::Enr::from_text(text); previous && previous->public_key() == key.public_key()) {
            current_ = *previous;
        }
    }
}

Outcome<disc::Enr> LocalRecord::update(const std::optional<ForkId>& fork_id) {
    auto build = [&](uint64_t seq) {
        disc::EnrBuilder b(seq);
        if (ip_ && ip_->is_v4()) b.ip(ip_->to_v4().to_bytes()).tcp(tcp_).udp(udp_);
        if (ip_ && ip_->is_v6()) b.ip6(ip_->to_v6().to_bytes()).tcp6(tcp_).udp6(udp_);
        if (!ip_) b.tcp(tcp_).udp(udp_);
        if (fork_id) b.eth(*fork_id);
        return b.sign(key_);
    };
    // The same contents keep the same record (and seq); other contents get a higher seq. geth
    // starts a new node's seq at the time in milliseconds, so a wiped datadir never goes back.
    const uint64_t old_seq = current_ ? current_->seq() : 0;
    auto same = build(old_seq);
    if (!same) return make_error(fmt::format("node record: {}", same.error().message()));
    if (current_ && same->pairs() == current_->pairs()) return *current_;
    auto next = build(std::max(old_seq + 1, unix_millis()));
    if (!next) return make_error(fmt::format("node record: {}", next.error().message()));
    if (!path_.empty()) {
        if (auto r = p2p::write_file_atomic(path_, next->text() + "\n", 0644); !r) return r.error();
    }
    current_ = *next;
    return *next;
}

Outcome<std::shared_ptr<disc::V4Service>> start_discovery(asio::io_context& io, const rlpx::PrivateKey& key,
                                                          const DiscoverySettings& settings, const disc::Enr& record,
                                                          const asio::ip::udp::endpoint& listen,
                                                          const std::string& datadir) {
    disc::NodeDb db;
    if (!datadir.empty()) {
        auto opened = disc::NodeDb::open((std::filesystem::path(datadir) / "nodes").string());
        if (!opened) return opened.error();
        db = std::move(*opened);
    }
    const size_t known = db.size();
    auto service = std::make_shared<disc::V4Service>(io, key, record, std::move(db), settings.v4_config);
    if (auto r = service->bind(listen); !r) return r.error();
    service->start();
    const auto at = service->local_endpoint();
    spdlog::info(
        "Discovery started                        protocol=discv4 udp={}:{} bootnodes={} known-nodes={} seq={}",
        at.address().to_string(), at.port(), settings.v4_config.bootnodes.size(), known, record.seq());
    return service;
}

std::shared_ptr<disc::V5Service> start_discv5(asio::io_context& io, const rlpx::PrivateKey& key,
                                              const DiscoverySettings& settings, const disc::Enr& record,
                                              const std::shared_ptr<disc::V4Service>& v4) {
    auto service = std::make_shared<disc::V5Service>(io, key, record, nullptr, settings.v5_config);
    disc::share_socket(v4, service);
    service->start();
    const auto at = v4->local_endpoint();
    spdlog::info("Discovery started                        protocol=discv5 udp={}:{} bootnodes={} seq={}",
                 at.address().to_string(), at.port(), settings.v5_config.bootnodes.size(), record.seq());
    return service;
}

}  // namespace headerd::node
