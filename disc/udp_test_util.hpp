#pragma once

// Helpers of the discovery service tests (disc/*_test.cpp, node/crawler_test.cpp): run an
// io_context until a condition holds or a deadline passes, run one coroutine to its end, and a
// discv4 node on 127.0.0.1.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/use_future.hpp>

#include "disc/enr.hpp"
#include "disc/node_db.hpp"
#include "disc/v4_udp.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::disc::test {

// Runs `io` in slices of `slice` until `done` holds or `deadline` passes; whether it holds.
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred done, std::chrono::milliseconds deadline = std::chrono::seconds(10),
               std::chrono::milliseconds slice = std::chrono::milliseconds(20)) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!done() && std::chrono::steady_clock::now() < end) {
        io.run_for(slice);
        if (io.stopped()) io.restart();
    }
    return done();
}

// Runs `op` on `io` and returns its result (waits at most 10 s for it, then get() throws).
template <class T>
T run(boost::asio::io_context& io, boost::asio::awaitable<T> op) {
    auto f = boost::asio::co_spawn(io, std::move(op), boost::asio::use_future);
    run_until(io, [&] { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; });
    return f.get();
}

// A discv4 service on 127.0.0.1 with a fresh key, bound to a free port (not started), its record
// (seq 2) naming that port for UDP and TCP. Stopped when it goes.
struct V4Node {
    rlpx::PrivateKey key = rlpx::PrivateKey::generate().value();
    std::shared_ptr<V4Service> service;

    V4Node(boost::asio::io_context& io, V4Config config, NodeDb db = NodeDb{}) {
        namespace asio = boost::asio;
        // The record is made after binding, when the port is known.
        auto placeholder = EnrBuilder(1).ip({127, 0, 0, 1}).sign(key).value();
        service = std::make_shared<V4Service>(io, key, placeholder, std::move(db), std::move(config));
        EXPECT_TRUE(service->bind(asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), 0)));
        const uint16_t port = service->local_endpoint().port();
        service->set_record(EnrBuilder(2).ip({127, 0, 0, 1}).udp(port).tcp(port).sign(key).value());
    }
    ~V4Node() { service->stop(); }
    V4Node(const V4Node&) = delete;
    V4Node& operator=(const V4Node&) = delete;
    Node node() const {
        const uint16_t port = service->local_endpoint().port();
        return Node::from_key(key.public_key(), boost::asio::ip::make_address("127.0.0.1"), port, port);
    }
};

}  // namespace headerd::disc::test
