#pragma once

// Our own address as others see it, predicted from what they state (geth's netutil.IPTracker, fed
// as geth feeds it: the `to` field of every discv4 Ping and of every Pong answering ours, and the
// recipient of every discv5 PONG answering ours). A node listening on 0.0.0.0 without
// `--nat extip` does not know the address the internet reaches it at; geth refuses a record
// without one (its RequestENR runs CheckRelayAddr on it, and "nodes without IP cannot be added"),
// so such a node is invisible to geth until it publishes the predicted address (docs/discovery.md,
// "Our own address").
//
// The prediction is the endpoint most statements name within `window`, once at least
// `min_statements` name it. Each sender counts once (its latest statement): a sender is an IP, so
// that one host with many node ids cannot outvote the rest, except on loopback, where a sender is
// an IP:port (the outside cannot send from loopback, and local test networks run every node on
// 127.0.0.1). A statement naming an address the sender may not name to us (the address policy:
// loopback from outside, LAN from the internet, special ranges) is ignored.
//
// Sans-I/O and single-threaded; the time is passed in.

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>

#include <boost/asio/ip/udp.hpp>

namespace headerd::disc {

class EndpointPredictor {
  public:
    using Clock = std::chrono::steady_clock;
    using Endpoint = boost::asio::ip::udp::endpoint;

    // geth: iptrackWindow (5 min), iptrackMinStatements (10).
    explicit EndpointPredictor(std::chrono::seconds window = std::chrono::minutes(5), size_t min_statements = 10)
        : window_(window), min_statements_(min_statements) {}

    // `sender` says we are at `stated`. Returns whether the statement was counted.
    bool add_statement(const Endpoint& sender, const Endpoint& stated, Clock::time_point now);
    // The endpoint most senders name within the window, if at least min_statements do.
    std::optional<Endpoint> predict(Clock::time_point now);
    // Senders with a statement in the window.
    size_t senders(Clock::time_point now);

  private:
    struct Statement {
        Endpoint stated;
        Clock::time_point at;
    };
    void expire(Clock::time_point now);

    std::chrono::seconds window_;
    size_t min_statements_;
    std::map<Endpoint, Statement> statements_;  // by sender (port 0 unless on loopback)
};

}  // namespace headerd::disc
