#include "node/dns_source.hpp"

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include "disc/dns_client.hpp"
#include "disc/dns_resolver.hpp"

namespace headerd::node {

namespace {

// Fails every lookup at once after cancel(): stop() then waits for a query in flight only.
class CancellableResolver final : public disc::TxtResolver {
  public:
    explicit CancellableResolver(std::shared_ptr<disc::TxtResolver> inner) : inner_(std::move(inner)) {}
    Result<std::vector<std::string>> lookup_txt(std::string_view name) override {
        if (cancelled_) return disc::ResolveError::kTryAgain;
        return inner_->lookup_txt(name);
    }
    void cancel() noexcept { cancelled_ = true; }

  private:
    std::shared_ptr<disc::TxtResolver> inner_;
    std::atomic<bool> cancelled_{false};
};

}  // namespace

struct DnsSource::State {
    boost::asio::io_context& io;
    DnsSourceOptions options;
    OnRecord on_record;
    std::unique_ptr<CancellableResolver> resolver;
    std::unique_ptr<disc::DnsClient> client;
    std::atomic<size_t> records{0};
    std::mutex mutex;
    std::condition_variable wake;
    bool stopping{false};

    State(boost::asio::io_context& i, DnsSourceOptions o, OnRecord cb)
        : io(i), options(std::move(o)), on_record(std::move(cb)) {}

    // Sleeps for `d` or until stop(); false when stopping.
    bool rest(std::chrono::milliseconds d) {
        std::unique_lock lock(mutex);
        wake.wait_for(lock, d, [&] { return stopping; });
        return !stopping;
    }

    void run() {
        std::map<Hash32, uint64_t> handed;  // id -> seq of what was handed out
        std::set<std::string> failing;      // names whose failure was logged
        size_t repeats = 0;                 // records in a row already handed out
        while (rest(std::chrono::milliseconds(0))) {
            auto next = client->next();
            if (!next) {
                if (!rest(std::chrono::milliseconds(0))) break;  // cancelled by stop(): not a failure
                if (failing.insert(next.error().name).second) {
                    spdlog::warn("DNS node list lookup failed              {}", next.error().message());
                }
                if (!rest(options.retry)) break;
                continue;
            }
            failing.clear();
            if (!*next || repeats > handed.size()) {
                // Nothing to give, or a whole lap without anything new: rest, then walk again.
                repeats = 0;
                if (!rest(options.idle)) break;
                continue;
            }
            const disc::Enr& record = **next;
            auto [it, added] = handed.try_emplace(record.node_id(), record.seq());
            if (!added && it->second >= record.seq()) {
                ++repeats;
                continue;
            }
            it->second = record.seq();
            repeats = 0;
            ++records;
            boost::asio::post(io, [cb = on_record, record] { cb(record); });
        }
    }
};

Outcome<std::unique_ptr<DnsSource>> DnsSource::start(boost::asio::io_context& io, DnsSourceOptions options,
                                                     OnRecord on_record) {
    if (options.trees.empty()) return make_error("DNS discovery: no enrtree:// URL");
    std::shared_ptr<disc::TxtResolver> inner = options.resolver;
    if (!inner) {
        disc::UdpTxtResolverConfig rc;
        rc.server = options.server;
        rc.timeout = options.query_timeout;
        rc.attempts = options.attempts;
        auto resolver = disc::UdpTxtResolver::create(rc);
        if (!resolver) {
            return make_error(fmt::format("--discovery.dns-server {}: {}", options.server.value_or("(system)"),
                                          resolver.error().message()));
        }
        inner = std::move(*resolver);
    }
    auto state = std::make_shared<State>(io, std::move(options), std::move(on_record));
    state->resolver = std::make_unique<CancellableResolver>(std::move(inner));
    state->client = std::make_unique<disc::DnsClient>(*state->resolver);
    for (const std::string& url : state->options.trees) {
        if (auto added = state->client->add_tree(url); !added) {
            return make_error(fmt::format("--discovery.dns {}: {}", url, added.error().message()));
        }
    }
    spdlog::info("DNS discovery started                    trees={} server={}", state->options.trees.size(),
                 state->options.resolver ? "(given)" : state->options.server.value_or("system"));
    return std::unique_ptr<DnsSource>(new DnsSource(std::move(state)));
}

DnsSource::DnsSource(std::shared_ptr<State> state) : state_(std::move(state)) {
    thread_ = std::thread([s = state_] { s->run(); });
}

DnsSource::~DnsSource() { stop(); }

void DnsSource::stop() {
    {
        std::lock_guard lock(state_->mutex);
        state_->stopping = true;
    }
    state_->resolver->cancel();
    state_->wake.notify_all();
    if (thread_.joinable()) thread_.join();
}

size_t DnsSource::records() const noexcept { return state_->records; }

}  // namespace headerd::node
