#include "node/crawler.hpp"

#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include "core/awaitable.hpp"
#include "node/discovery.hpp"

namespace headerd::node {

namespace asio = boost::asio;
using asio::awaitable;

Crawler::Crawler(std::shared_ptr<disc::V4Service> service, const ChainConfig& config, uint64_t head_number,
                 uint64_t head_time)
    : service_(std::move(service)), config_(config), head_number_(head_number), head_time_(head_time) {}

void Crawler::start(asio::io_context& io, size_t parallel) {
    std::weak_ptr<Crawler> weak = weak_from_this();
    service_->on_found = [weak](const disc::Node& n) {
        if (auto self = weak.lock()) self->add(n);
    };
    for (const auto& n : service_->table().nodes()) add(n);
    asio::co_spawn(
        io, [self = shared_from_this()] { return self->keep_looking<disc::v4::NodeKey>(self->service_, {}); },
        asio::detached);
    if (v5_) {
        asio::co_spawn(
            io,
            [self = shared_from_this()] {
                return self->keep_looking<disc::NodeId>(self->v5_, [self] { self->add_v5_table(); });
            },
            asio::detached);
    }
    for (size_t i = 0; i < parallel; ++i) {
        asio::co_spawn(
            io, [self = shared_from_this()] { return self->fetch_records(); }, asio::detached);
    }
}

void Crawler::stop() noexcept {
    stopping_ = true;
    service_->on_found = nullptr;
}

void Crawler::add(const disc::Node& n, const std::string& found_by) {
    if (stopping_) return;
    if (found_.size() >= kMaxFound && !found_.contains(n.id)) {
        ++left_out_;
        return;
    }
    auto [it, added] = found_.try_emplace(n.id, Found{n, std::nullopt, false, std::nullopt, found_by});
    if (added) spdlog::debug("Found node                               enode={} by={}", n.enode(), found_by);
}

void Crawler::add_record(const disc::Enr& record, const std::string& found_by, const boost::asio::ip::address& sender) {
    auto node = disc::Node::from_enr(record);
    if (stopping_ || !node || node->id == service_->table().self()) return;
    if (const auto verdict = disc::check_record(sender, record); verdict != disc::AddressVerdict::kAllowed) {
        ++left_out_;
        spdlog::debug("Node record refused                      enode={} by={} reason=\"{}\"", node->enode(), found_by,
                      disc::to_string(verdict));
        return;
    }
    if (found_.size() >= kMaxFound && !found_.contains(node->id)) {
        ++left_out_;
        return;
    }
    auto [it, added] = found_.try_emplace(node->id, Found{*node, record, true, std::nullopt, found_by});
    Found& f = it->second;
    if (!added) {
        if (f.record && f.record->seq() >= record.seq()) return;
        f.node = *node;
        f.record = record;
        f.asked = true;
    }
    judge(f);
    spdlog::debug("Found node                               enode={} by={} compatible={}", node->enode(), found_by,
                  f.compatibility.value_or("unknown"));
}

Outcome<std::unique_ptr<DnsSource>> start_dns_source(asio::io_context& io, const DiscoverySettings& settings,
                                                     const std::shared_ptr<Crawler>& crawler) {
    if (settings.dns_trees.empty()) return std::unique_ptr<DnsSource>();
    DnsSourceOptions options;
    options.trees = settings.dns_trees;
    options.server = settings.dns_server;
    // The DNS server is the sender of the records: a list from a resolver on loopback may name
    // loopback nodes, one from the system's resolver (unnamed: taken as the internet) only public ones.
    asio::ip::address sender = asio::ip::address_v4::any();
    if (settings.dns_server) {
        boost::system::error_code ec;
        auto ip = asio::ip::make_address(settings.dns_server->substr(0, settings.dns_server->rfind(':')), ec);
        if (!ec) sender = ip;
    }
    std::weak_ptr<Crawler> weak = crawler;
    return DnsSource::start(io, std::move(options), [weak, sender](const disc::Enr& record) {
        if (auto c = weak.lock()) c->add_record(record, "dns", sender);
    });
}

void Crawler::judge(Found& f) const {
    if (!f.record || !f.record->eth()) return;
    auto ok = validate_fork_id(config_, head_number_, head_time_, *f.record->eth());
    f.compatibility = ok ? std::string("yes") : "no: " + ok.error().message();
}

size_t Crawler::records() const noexcept {
    size_t n = 0;
    for (const auto& [id, f] : found_) n += f.record.has_value();
    return n;
}

size_t Crawler::compatible() const noexcept {
    size_t n = 0;
    for (const auto& [id, f] : found_) n += f.compatibility == "yes";
    return n;
}

size_t Crawler::incompatible() const noexcept {
    size_t n = 0;
    for (const auto& [id, f] : found_) n += f.compatibility.has_value() && *f.compatibility != "yes";
    return n;
}

std::vector<p2p::Enode> Crawler::candidates(size_t limit, const std::set<disc::NodeId>& exclude) const {
    std::vector<p2p::Enode> out;
    for (const auto& [id, f] : found_) {
        if (out.size() >= limit) break;
        if (f.compatibility != "yes" || exclude.count(id) != 0) continue;
        // The record's address; a record without one (a node listening on 0.0.0.0 without
        // --nat extip) is reached where we heard it from, at the record's TCP port.
        disc::Node node = disc::Node::from_enr(*f.record).value_or(f.node);
        if (!f.record->ip() && !f.record->ip6()) node.tcp = f.record->tcp().value_or(0);
        if (node.tcp == 0) continue;
        // Never dial an address the node was not allowed to name from where we heard it (the
        // record was checked when it came; this holds whatever path it took).
        if (!disc::relay_allowed(f.node.ip, node.ip) || disc::is_unroutable(node.ip)) continue;
        out.push_back(p2p::Enode{node.key, node.ip.to_string(), node.tcp, node.udp});
    }
    return out;
}

awaitable<std::vector<p2p::Enode>> Crawler::wait_for(size_t want, std::chrono::milliseconds wait,
                                                     std::set<disc::NodeId> exclude) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (!stopping_ && candidates(want, exclude).size() < want && std::chrono::steady_clock::now() < deadline) {
        t.expires_after(std::chrono::milliseconds(100));
        co_await t.async_wait(kTuple);
    }
    co_return candidates(want, exclude);
}

awaitable<void> Crawler::fetch_records() {
    asio::steady_timer idle(co_await asio::this_coro::executor);
    while (!stopping_) {
        const Found* next = nullptr;
        const auto now = std::chrono::steady_clock::now();
        for (auto& [id, f] : found_) {
            if (!f.asked && f.retry_at <= now) {
                f.asked = true;
                next = &f;
                break;
            }
        }
        if (!next) {
            idle.expires_after(std::chrono::milliseconds(200));
            co_await idle.async_wait(kTuple);
            continue;
        }
        const disc::Node node = next->node;
        auto record = co_await service_->request_enr(node);
        Found& f = found_.at(node.id);
        if (record && (!f.record || f.record->seq() < record->seq())) {  // never an older record
            f.record = *record;
            judge(f);
        } else if (!f.record && ++f.failures < kRecordTries) {
            f.asked = false;
            f.retry_at = std::chrono::steady_clock::now() + kRecordRetryDelay * f.failures;
        }
    }
}

template <class Target, class Service>
awaitable<void> Crawler::keep_looking(std::shared_ptr<Service> service, std::function<void()> after_each) {
    std::mt19937_64 rng(std::random_device{}());
    asio::steady_timer pause(co_await asio::this_coro::executor);
    while (!stopping_) {
        Target target;
        for (auto& b : target) b = static_cast<uint8_t>(rng());
        const auto nodes = co_await service->lookup(target);
        if (stopping_) break;
        if (after_each) after_each();
        // Nobody to ask or nobody answered (an empty table, a DNS-only crawl): a lookup then ends
        // without waiting for anything, so pause, or the loop would hold the io thread.
        if (nodes.empty() || service->table().size() == 0) {
            pause.expires_after(std::chrono::milliseconds(500));
            co_await pause.async_wait(kTuple);
        }
    }
}

void Crawler::add_v5_table() {
    for (const disc::Node& n : v5_->table().nodes()) {
        if (n.enr) add_record(*n.enr, "discv5", n.ip);  // its address was checked when it came
    }
}

Outcome<std::vector<p2p::Enode>> discover_peers(asio::io_context& io, const rlpx::PrivateKey& key,
                                                const DiscoverySettings& settings, const ChainConfig& config,
                                                const db::Head& head, const std::vector<p2p::Enode>& known, size_t want,
                                                std::chrono::milliseconds wait) {
    auto record = disc::EnrBuilder(1).sign(key);
    if (!record) return make_error(fmt::format("node record: {}", record.error().message()));
    auto service =
        start_discovery(io, key, settings, *record, asio::ip::udp::endpoint(asio::ip::address_v4::any(), 0), "");
    if (!service) return service.error();
    auto crawler = std::make_shared<Crawler>(*service, config, head.number, head.timestamp);
    std::shared_ptr<disc::V5Service> v5;
    if (settings.v5) v5 = start_discv5(io, key, settings, *record, *service);
    crawler->use_v5(v5);
    crawler->start(io);
    for (const auto& b : settings.bootnodes) crawler->add(b, "bootnode");
    auto dns = start_dns_source(io, settings, crawler);
    if (!dns) {
        if (v5) v5->stop();
        (*service)->stop();
        io.run();
        io.restart();
        return dns.error();
    }
    std::set<disc::NodeId> exclude;
    for (const auto& e : known) exclude.insert(e.key.node_id());
    spdlog::info("Looking for peers                        want={} wait={}s bootnodes={} dns_trees={}", want,
                 std::chrono::duration<double>(wait).count(), settings.bootnodes.size(), settings.dns_trees.size());
    std::vector<p2p::Enode> found;
    asio::co_spawn(
        io,
        [&, crawler, service = *service]() -> awaitable<void> {
            found = co_await crawler->wait_for(want, wait, exclude);
            crawler->stop();
            if (*dns) (*dns)->stop();
            if (v5) v5->stop();
            service->stop();
        },
        asio::detached);
    io.run();
    io.restart();
    for (const auto& [id, f] : crawler->found()) {
        if (!f.compatibility) {
            spdlog::debug("Not a candidate                          enode={} why={}", f.node.enode(),
                          f.record ? "its record has no eth entry" : "no record");
        } else if (*f.compatibility != "yes") {
            spdlog::info("Incompatible node                        enode={} why=\"{}\"", f.node.enode(),
                         f.compatibility->substr(4));
        }
    }
    for (const auto& e : found) {
        spdlog::info("Discovered peer                          enode={}", p2p::enode_url(e.key, e.host, e.port));
    }
    spdlog::info("Discovery done                           found={} records={} compatible={} using={}",
                 crawler->found().size(), crawler->records(), crawler->compatible(), found.size());
    return found;
}

}  // namespace headerd::node
