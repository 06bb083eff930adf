#pragma once

// The chain replies are compared with, byte for byte (`headerd load --chain`): .era1 archives and
// .rlp exports are imported into a temporary datadir (with every check `headerd import` makes) that
// is removed again; a datadir is opened read-only, and refused while another process holds it (a
// serving node: give load a copy, or the archives it was imported from). Reads go to the ChainDb,
// so a chain of any length costs no memory. Thread-safe: concurrent readers, as ChainDb.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/item_buffer.hpp"
#include "core/result.hpp"
#include "db/chain_db.hpp"

namespace headerd::load {

class ReferenceChain {
  public:
    // `sources`: one datadir, or any number of .era1 / .rlp files in chain order.
    static Outcome<std::unique_ptr<ReferenceChain>> open(const std::vector<std::string>& sources);
    ~ReferenceChain();
    ReferenceChain(const ReferenceChain&) = delete;
    ReferenceChain& operator=(const ReferenceChain&) = delete;

    uint64_t head() const noexcept { return head_; }
    // The lowest block held: 0, or the first block of a chain that starts at a later epoch
    // (a datadir imported with --trusted-root).
    uint64_t first() const noexcept { return first_; }
    const Hash32& genesis_hash() const noexcept { return genesis_; }
    const std::string& description() const noexcept { return description_; }
    const db::ChainDb& db() const noexcept { return *db_; }
    // Headers [from, from + count) ascending into out (cleared first); fewer past the head.
    Outcome<void> range(uint64_t from, uint64_t count, ItemBuffer& out) const;
    Outcome<std::optional<uint64_t>> number_of(const Hash32& hash) const { return db_->number_by_hash(hash); }

  private:
    ReferenceChain() = default;
    std::unique_ptr<db::ChainDb> db_;
    std::string temp_dir_;  // removed on destruction; empty for a datadir given by the user
    std::string description_;
    uint64_t head_{0};
    uint64_t first_{0};
    Hash32 genesis_{};
};

}  // namespace headerd::load
