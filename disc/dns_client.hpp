#pragma once

// The client side of DNS node lists (EIP-1459): DnsClient walks one or more trees through a
// TxtResolver and hands out their ENRs one at a time, in random order, resolving only the names it
// needs for the next one (the spec asks clients not to download whole trees in normal operation).
// A dialer pulls candidates with next(); tools and tests download a whole tree with sync_tree().
//
// The client itself does no I/O: every DNS query goes through the resolver, which may be
// in-memory (tests) or UdpTxtResolver (disc/dns_resolver.hpp). Calls block for as long as the
// resolver does; a caller on an event loop runs them on a thread of its own. Not thread-safe: one
// thread at a time.

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <boost/system/result.hpp>

#include "core/result.hpp"
#include "disc/dnsdisc.hpp"
#include "disc/enr.hpp"

namespace headerd::disc {

// Looks up TXT records. Each returned string is one record, its character-strings (RFC 1035
// splits a TXT record into strings of at most 255 bytes) already joined.
class TxtResolver {
  public:
    virtual ~TxtResolver() = default;
    virtual Result<std::vector<std::string>> lookup_txt(std::string_view name) = 0;
};

// What failed and where: `name` is the DNS name whose lookup or entry failed (the tree's domain for
// a root, HASH.DOMAIN for an entry, the URL for a URL); `error` a DnsDiscError, the EnrError of a
// bad leaf, or the resolver's error.
struct DnsFailure {
    std::string name;
    std::error_code error;

    std::string message() const { return name + ": " + error.message(); }
};

// Called by DnsResult<T>::value() when it holds a failure.
[[noreturn]] void throw_exception_from_error(const DnsFailure& failure, const boost::source_location& loc);

template <class T>
using DnsResult = boost::system::result<T, DnsFailure>;

struct DnsClientConfig {
    // Entries kept (by hash) so that walking a tree again, or another tree that shares entries,
    // asks the resolver less; geth's default CacheLimit.
    size_t cache_limit = 1000;
    // A tree's root is fetched again after this long, to pick up a new seq; geth's default
    // RecheckInterval.
    std::chrono::steady_clock::duration recheck_interval = std::chrono::minutes(30);
    // next() gives up (returning nothing) after this many steps (one entry each) without an ENR,
    // so a huge link tree or a resolver that answers with empty branches cannot hold it forever.
    size_t max_steps_per_next = 1000;
    // Seed of the random walk; random when unset. Tests fix it.
    std::optional<uint64_t> seed;
    // The clock root rechecks are measured with; tests move it by hand.
    std::function<std::chrono::steady_clock::time_point()> now = [] { return std::chrono::steady_clock::now(); };
};

// A whole tree as downloaded by DnsClient::sync_tree: its root, ENRs and links (not followed).
struct SyncedTree {
    LinkEntry location;
    RootEntry root;
    std::vector<Enr> enrs;
    std::vector<LinkEntry> links;
};

class DnsClient {
  public:
    // The resolver must outlive the client.
    explicit DnsClient(TxtResolver& resolver, DnsClientConfig config = {});
    ~DnsClient();
    DnsClient(const DnsClient&) = delete;
    DnsClient& operator=(const DnsClient&) = delete;

    // Adds a tree for next() to walk. A domain already known with another key is kKeyConflict.
    DnsResult<void> add_tree(std::string_view url);

    // The next ENR of a random tree (added, or reached through links), or nullopt when no tree has
    // one to give now: all are empty, or max_steps_per_next passed without one. A tree's links
    // are walked first, each new domain becoming a tree of its own; its ENRs are then visited in
    // random order, every one once before any twice; a finished walk starts again (mostly from
    // the cache). A failure names the name that failed; the walk keeps its place, and an entry
    // that failed for its content (which no retry changes) is dropped from it, so the caller may
    // log the failure and call again (after a pause: a tree whose server is down fails each time).
    DnsResult<std::optional<Enr>> next();

    // Downloads the tree at `url` whole: root (verified), every entry below it; links are
    // returned, not followed. Not added for next(), but the cache and the seq check are shared.
    DnsResult<SyncedTree> sync_tree(std::string_view url);

    // Trees known: those added and those reached through links.
    size_t tree_count() const noexcept { return trees_.size(); }

  private:
    struct Walk;
    struct Tree;

    DnsResult<RootEntry> resolve_root(const LinkEntry& location);
    DnsResult<Entry> resolve_entry(const std::string& domain, const std::string& hash);
    DnsResult<void> update_root(Tree& tree);
    DnsResult<Entry> visit(Tree& tree, Walk& walk, size_t index, bool link_walk);
    DnsResult<std::optional<Enr>> step(Tree& tree);
    DnsResult<Tree*> ensure_tree(const LinkEntry& location, const std::string& failing_name);
    bool root_due(const Tree& tree) const;
    bool can_step(const Tree& tree) const;

    TxtResolver& resolver_;
    DnsClientConfig config_;
    std::mt19937_64 random_;
    std::vector<std::unique_ptr<Tree>> trees_;
    // The highest root seq seen per domain, for the rollback check.
    std::unordered_map<std::string, uint64_t> seq_seen_;
    // LRU cache of entries by hash: most recently used first.
    std::list<std::pair<std::string, Entry>> cache_order_;
    std::unordered_map<std::string, std::list<std::pair<std::string, Entry>>::iterator> cache_;
};

}  // namespace headerd::disc
