// DnsSource over an in-memory resolver: every record of a signed tree is handed to the io_context
// once (then the walk rests), and stop() returns after the one lookup in flight even when the
// resolver is slow and the rest between walks is long.

#include "node/dns_source.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "disc/dns_resolver.hpp"
#include "disc/dnsdisc.hpp"

namespace headerd::node {
namespace {

using namespace std::chrono_literals;

rlpx::PrivateKey key_of(uint8_t n) {
    Bytes b(32, 0x42);
    b[31] = n;
    return *rlpx::PrivateKey::from_bytes(b);
}

// Serves the TXT records of one tree; each lookup first waits `delay`.
class TreeResolver final : public disc::TxtResolver {
  public:
    TreeResolver(std::map<std::string, std::string> records, std::chrono::milliseconds delay)
        : records_(std::move(records)), delay_(delay) {}
    Result<std::vector<std::string>> lookup_txt(std::string_view name) override {
        std::this_thread::sleep_for(delay_);
        auto it = records_.find(std::string(name));
        if (it == records_.end()) return disc::ResolveError::kNotFound;
        return std::vector<std::string>{it->second};
    }

  private:
    std::map<std::string, std::string> records_;
    std::chrono::milliseconds delay_;
};

struct Tree {
    std::vector<disc::Enr> enrs;
    disc::DnsTree tree;
};

Tree make(size_t count) {
    Tree t;
    for (size_t i = 0; i < count; ++i) {
        const auto n = static_cast<uint8_t>(i + 1);
        t.enrs.push_back(*disc::EnrBuilder(1).ip({127, 0, 0, n}).tcp(30303).udp(30303).sign(key_of(n)));
    }
    t.tree = disc::make_tree(t.enrs, {}, 1, key_of(0xee), "nodes.example.test").value();
    return t;
}

TEST(DnsSource, HandsOutEveryRecordOnceThenRests) {
    const Tree t = make(20);
    boost::asio::io_context io;
    std::multiset<std::string> got;
    DnsSourceOptions options;
    options.trees = {t.tree.url};
    options.idle = std::chrono::minutes(10);
    options.resolver = std::make_shared<TreeResolver>(t.tree.records, 0ms);
    auto source = DnsSource::start(io, std::move(options), [&](const disc::Enr& r) { got.insert(r.text()); });
    ASSERT_TRUE(source) << source.error().message;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (got.size() < t.enrs.size() && std::chrono::steady_clock::now() < deadline) {
        io.run_for(20ms);
        io.restart();
    }
    // A while longer: a second lap would hand the records out again.
    io.run_for(300ms);
    (*source)->stop();
    io.restart();
    io.poll();
    std::multiset<std::string> want;
    for (const auto& e : t.enrs) want.insert(e.text());
    EXPECT_EQ(got, want);
    EXPECT_EQ((*source)->records(), t.enrs.size());
}

TEST(DnsSource, StopWaitsOnlyForTheLookupInFlight) {
    const Tree t = make(20);
    boost::asio::io_context io;
    size_t got = 0;
    DnsSourceOptions options;
    options.trees = {t.tree.url};
    options.idle = std::chrono::minutes(10);
    options.resolver = std::make_shared<TreeResolver>(t.tree.records, 200ms);  // 20 records: seconds
    auto source = DnsSource::start(io, std::move(options), [&](const disc::Enr&) { ++got; });
    ASSERT_TRUE(source) << source.error().message;
    std::this_thread::sleep_for(300ms);  // a lookup or two done, one in flight
    const auto t0 = std::chrono::steady_clock::now();
    (*source)->stop();
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, 1s);  // one 200 ms lookup at most, not the rest of the walk or the 10 min rest
    EXPECT_LT((*source)->records(), t.enrs.size());
}

TEST(DnsSource, RefusesABadUrl) {
    boost::asio::io_context io;
    DnsSourceOptions options;
    options.trees = {"enrtree://notakey@nodes.example.test"};
    options.resolver = std::make_shared<TreeResolver>(std::map<std::string, std::string>{}, 0ms);
    auto source = DnsSource::start(io, std::move(options), [](const disc::Enr&) {});
    ASSERT_FALSE(source);
    EXPECT_NE(source.error().message.find("--discovery.dns enrtree://notakey@nodes.example.test"), std::string::npos)
        << source.error().message;
}

}  // namespace
}  // namespace headerd::node
