#pragma once

// DNS node lists (EIP-1459) as a source of dial candidates (--discovery.dns): a thread walks the
// trees the user named through disc::DnsClient and hands every record it has not handed out before
// (or a higher seq of one it has) to a callback on the caller's io_context. The crawler judges the
// records' fork ids like those discv4 finds (node/crawler.hpp).
//
// DNS lookups block, so they run on the source's own thread. The walk takes one record per step,
// as the spec asks (no whole-tree downloads); when a lap of every tree brings nothing new it rests
// for `idle` before walking again (new records come with a new root seq). A failed lookup is logged
// once per name and retried after `retry`. stop() ends the thread within one DNS query: a query in
// flight finishes (at most UdpTxtResolverConfig's timeout × attempts), every later one fails at once.
//
// Safety: only the trees and the server the user named are asked; without --discovery.dns-server
// the system's resolvers (/etc/resolv.conf) are, as for any name a user gives a program.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "core/result.hpp"
#include "disc/dns_client.hpp"
#include "disc/enr.hpp"

namespace headerd::node {

struct DnsSourceOptions {
    std::vector<std::string> trees;     // enrtree:// URLs
    std::optional<std::string> server;  // IPv4:port of the one DNS server to ask; unset: the system's
    std::chrono::milliseconds idle{std::chrono::minutes(5)};
    std::chrono::milliseconds retry{std::chrono::seconds(10)};
    std::chrono::seconds query_timeout{5};
    int attempts{2};
    // The resolver to ask instead of DNS (tests); `server`, `query_timeout` and `attempts` are then
    // not used.
    std::shared_ptr<disc::TxtResolver> resolver;
};

class DnsSource {
  public:
    using OnRecord = std::function<void(const disc::Enr&)>;

    // Checks the options (URLs, server) and starts the thread; on_record runs on `io`.
    static Outcome<std::unique_ptr<DnsSource>> start(boost::asio::io_context& io, DnsSourceOptions options,
                                                     OnRecord on_record);
    ~DnsSource();
    DnsSource(const DnsSource&) = delete;
    DnsSource& operator=(const DnsSource&) = delete;

    // Ends the walk and joins the thread. Idempotent.
    void stop();
    // Records handed out so far (any thread).
    size_t records() const noexcept;

  private:
    struct State;
    explicit DnsSource(std::shared_ptr<State> state);
    std::shared_ptr<State> state_;
    std::thread thread_;
};

}  // namespace headerd::node
