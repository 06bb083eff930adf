#include "disc/dns_client.hpp"

#include <algorithm>
#include <stdexcept>
#include <system_error>

namespace headerd::disc {
namespace {

// A leaf request that failed this many times in a row makes the root due again: the tree may have
// changed under the walk (geth's rootRecheckFailCount).
constexpr int kRootRecheckFailCount = 5;

bool is_entry_text(std::string_view text) noexcept {
    return text.starts_with(kBranchPrefix) || text.starts_with(kLinkPrefix) || text.starts_with(kEnrPrefix);
}

// An error in what a name holds (a bad entry, a wrong hash), as opposed to a failed lookup: asking
// again yields the same content-addressed entry, so it is not asked again in this walk.
bool is_content_error(const std::error_code& ec) noexcept {
    return ec.category() == dnsdisc_category() || ec.category() == enr_category();
}

DnsFailure failure(std::string name, std::error_code ec) { return DnsFailure{std::move(name), ec}; }

}  // namespace

void throw_exception_from_error(const DnsFailure& f, const boost::source_location&) {
    throw std::system_error(f.error, f.name);
}

// One pass over a subtree: the hashes still to resolve, and every hash ever queued, so that an
// entry listed twice (two branches sharing a child, or a cycle of links) is visited once.
struct DnsClient::Walk {
    explicit Walk(std::string top_hash) : top(std::move(top_hash)), missing{top}, seen{top} {}
    bool done() const noexcept { return missing.empty(); }

    std::string top;
    std::vector<std::string> missing;
    std::set<std::string> seen;
    size_t leaves = 0;
};

struct DnsClient::Tree {
    explicit Tree(LinkEntry loc) : location(std::move(loc)) {}

    LinkEntry location;
    std::optional<RootEntry> root;
    std::optional<Walk> links;
    std::optional<Walk> enrs;
    std::chrono::steady_clock::time_point last_root_check{};
    int leaf_failures = 0;
};

DnsClient::DnsClient(TxtResolver& resolver, DnsClientConfig config)
    : resolver_(resolver), config_(std::move(config)), random_(config_.seed ? *config_.seed : std::random_device{}()) {}

DnsClient::~DnsClient() = default;

DnsResult<void> DnsClient::add_tree(std::string_view url) {
    auto location = parse_url(url);
    if (!location) return failure(std::string(url), location.error());
    auto tree = ensure_tree(*location, std::string(url));
    if (!tree) return tree.error();
    return {};
}

DnsResult<DnsClient::Tree*> DnsClient::ensure_tree(const LinkEntry& location, const std::string& failing_name) {
    for (auto& tree : trees_) {
        if (tree->location.domain != location.domain) continue;
        if (tree->location.key != location.key) return failure(failing_name, DnsDiscError::kKeyConflict);
        return tree.get();
    }
    trees_.push_back(std::make_unique<Tree>(location));
    return trees_.back().get();
}

DnsResult<RootEntry> DnsClient::resolve_root(const LinkEntry& location) {
    auto txts = resolver_.lookup_txt(location.domain);
    if (!txts) return failure(location.domain, txts.error());
    for (const std::string& txt : *txts) {
        if (!txt.starts_with(kRootPrefix)) continue;
        auto root = parse_root_signed(txt, location.key);
        if (!root) return failure(location.domain, root.error());
        return *root;
    }
    return failure(location.domain, DnsDiscError::kNoRoot);
}

DnsResult<Entry> DnsClient::resolve_entry(const std::string& domain, const std::string& hash) {
    if (auto it = cache_.find(hash); it != cache_.end()) {
        cache_order_.splice(cache_order_.begin(), cache_order_, it->second);
        return it->second->second;
    }
    const std::string name = hash + "." + domain;
    auto txts = resolver_.lookup_txt(name);
    if (!txts) return failure(name, txts.error());
    for (const std::string& txt : *txts) {
        if (!is_entry_text(txt)) continue;  // other TXT records may share the name
        auto entry = parse_entry_at(txt, hash);
        if (!entry) return failure(name, entry.error());
        if (config_.cache_limit > 0) {
            cache_order_.emplace_front(hash, *entry);
            cache_[hash] = cache_order_.begin();
            if (cache_.size() > config_.cache_limit) {
                cache_.erase(cache_order_.back().first);
                cache_order_.pop_back();
            }
        }
        return std::move(*entry);
    }
    return failure(name, DnsDiscError::kNoEntry);
}

DnsResult<void> DnsClient::update_root(Tree& tree) {
    tree.last_root_check = config_.now();
    auto root = resolve_root(tree.location);
    if (!root) return root.error();
    const std::string& domain = tree.location.domain;
    if (auto it = seq_seen_.find(domain); it != seq_seen_.end() && root->seq < it->second) {
        return failure(domain, DnsDiscError::kSeqRollback);
    }
    seq_seen_[domain] = root->seq;
    tree.leaf_failures = 0;
    // A walk goes on unless its subtree changed: an unchanged hash is an unchanged subtree.
    if (!tree.links || tree.links->top != root->link_root) tree.links.emplace(root->link_root);
    if (!tree.enrs || tree.enrs->top != root->enr_root) tree.enrs.emplace(root->enr_root);
    tree.root = *root;
    return {};
}

bool DnsClient::root_due(const Tree& tree) const {
    return !tree.root || tree.leaf_failures > kRootRecheckFailCount ||
           config_.now() >= tree.last_root_check + config_.recheck_interval;
}

bool DnsClient::can_step(const Tree& tree) const {
    // A finished walk that found no leaf is an empty tree: nothing to do until its root changes.
    return root_due(tree) || !tree.links->done() || !tree.enrs->done() || tree.enrs->leaves != 0;
}

DnsResult<Entry> DnsClient::visit(Tree& tree, Walk& walk, size_t index, bool link_walk) {
    const std::string hash = walk.missing[index];
    const auto drop = [&walk, index] {
        walk.missing[index] = std::move(walk.missing.back());
        walk.missing.pop_back();
    };
    auto entry = resolve_entry(tree.location.domain, hash);
    if (!entry) {
        ++tree.leaf_failures;
        if (is_content_error(entry.error().error)) drop();
        return entry;
    }
    drop();
    tree.leaf_failures = 0;
    const std::string name = hash + "." + tree.location.domain;
    if (const auto* branch = std::get_if<BranchEntry>(&*entry)) {
        for (const std::string& child : branch->children) {
            if (walk.seen.insert(child).second) walk.missing.push_back(child);
        }
    } else if (std::holds_alternative<Enr>(*entry)) {
        if (link_walk) return failure(name, DnsDiscError::kEnrInLinkTree);
        ++walk.leaves;
    } else {
        if (!link_walk) return failure(name, DnsDiscError::kLinkInEnrTree);
        ++walk.leaves;
    }
    return entry;
}

DnsResult<std::optional<Enr>> DnsClient::step(Tree& tree) {
    if (root_due(tree)) {
        if (auto updated = update_root(tree); !updated) return updated.error();
    }
    // Links first, in order: each new domain joins the trees next() chooses from.
    if (!tree.links->done()) {
        const std::string name = tree.links->missing.front() + "." + tree.location.domain;
        auto entry = visit(tree, *tree.links, 0, true);
        if (!entry) return entry.error();
        if (const auto* link = std::get_if<LinkEntry>(&*entry)) {
            if (auto added = ensure_tree(*link, name); !added) return added.error();
        }
        return std::optional<Enr>{};
    }
    if (tree.enrs->done()) {
        if (tree.enrs->leaves == 0) return std::optional<Enr>{};
        tree.enrs.emplace(tree.root->enr_root);  // every leaf given once: start again
    }
    std::uniform_int_distribution<size_t> pick(0, tree.enrs->missing.size() - 1);
    auto entry = visit(tree, *tree.enrs, pick(random_), false);
    if (!entry) return entry.error();
    if (auto* enr = std::get_if<Enr>(&*entry)) return std::optional<Enr>{std::move(*enr)};
    return std::optional<Enr>{};
}

DnsResult<std::optional<Enr>> DnsClient::next() {
    std::vector<Tree*> ready;
    for (size_t steps = 0; steps < config_.max_steps_per_next; ++steps) {
        ready.clear();
        for (auto& tree : trees_) {
            if (!tree->root || can_step(*tree)) ready.push_back(tree.get());
        }
        if (ready.empty()) return std::optional<Enr>{};
        std::uniform_int_distribution<size_t> pick(0, ready.size() - 1);
        auto got = step(*ready[pick(random_)]);
        if (!got || *got) return got;
    }
    return std::optional<Enr>{};
}

DnsResult<SyncedTree> DnsClient::sync_tree(std::string_view url) {
    auto location = parse_url(url);
    if (!location) return failure(std::string(url), location.error());
    Tree tree(*location);
    if (auto updated = update_root(tree); !updated) return updated.error();
    SyncedTree out{*location, *tree.root, {}, {}};
    // Lookup failures are final here: a whole-tree download with a hole in it is no download.
    while (!tree.links->done()) {
        auto entry = visit(tree, *tree.links, 0, true);
        if (!entry) return entry.error();
        if (auto* link = std::get_if<LinkEntry>(&*entry)) out.links.push_back(std::move(*link));
    }
    while (!tree.enrs->done()) {
        auto entry = visit(tree, *tree.enrs, 0, false);
        if (!entry) return entry.error();
        if (auto* enr = std::get_if<Enr>(&*entry)) out.enrs.push_back(std::move(*enr));
    }
    return out;
}

}  // namespace headerd::disc
