#include "load/reference_chain.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/chain_config.hpp"
#include "db/import.hpp"

namespace headerd::load {

namespace fs = std::filesystem;

ReferenceChain::~ReferenceChain() {
    db_.reset();
    if (!temp_dir_.empty()) {
        std::error_code ec;
        fs::remove_all(temp_dir_, ec);
    }
}

Outcome<std::unique_ptr<ReferenceChain>> ReferenceChain::open(const std::vector<std::string>& sources) {
    if (sources.empty()) return make_error("--chain: no source given");
    std::unique_ptr<ReferenceChain> chain(new ReferenceChain());
    std::error_code ec;
    const bool is_datadir = sources.size() == 1 && fs::is_directory(sources.front(), ec);
    if (is_datadir) {
        db::ChainDbOptions options;
        options.read_only = true;
        auto db = db::ChainDb::open(sources.front(), options);
        if (!db) return make_error(fmt::format("--chain {}: {}", sources.front(), db.error().message), db.error().kind);
        chain->db_ = std::move(*db);
        chain->description_ = "datadir " + sources.front();
    } else {
        for (const std::string& s : sources) {
            if (!fs::is_regular_file(s, ec)) {
                return make_error(fmt::format("--chain {}: not a file (give .era1 or .rlp files, or one datadir)", s));
            }
        }
        std::string templ = (fs::temp_directory_path() / "headerd-load-chain-XXXXXX").string();
        if (mkdtemp(templ.data()) == nullptr) return make_error("--chain: cannot create a temporary directory");
        chain->temp_dir_ = templ;
        db::ChainDbOptions options;
        options.create_if_missing = true;
        auto db = db::ChainDb::open(templ, options);
        if (!db) return make_error(fmt::format("--chain: {}", db.error().message));
        for (const std::string& s : sources) {
            auto r = db::import_file(**db, mainnet_config(), s);
            if (!r) return make_error(fmt::format("--chain {}: {}", s, r.error().message));
        }
        chain->db_ = std::move(*db);
        chain->description_ = sources.size() == 1 ? sources.front() : fmt::format("{} files", sources.size());
    }
    const auto head = chain->db_->head();
    if (!head) return make_error(fmt::format("--chain {}: holds no headers", sources.front()));
    chain->head_ = head->number;
    chain->first_ = chain->db_->first_block();
    if (chain->first_ > 0 && chain->db_->config() != nullptr) {
        // A chain anchored at a later epoch holds no genesis header: its network names the genesis.
        chain->genesis_ = chain->db_->config()->genesis_hash;
        return chain;
    }
    auto genesis = chain->db_->canonical_hash(0);
    if (!genesis || !*genesis) return make_error(fmt::format("--chain {}: no genesis", sources.front()));
    chain->genesis_ = **genesis;
    return chain;
}

Outcome<void> ReferenceChain::range(uint64_t from, uint64_t count, ItemBuffer& out) const {
    return db_->header_range(from, count, db::Order::kAscending, out);
}

}  // namespace headerd::load
