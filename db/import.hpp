#pragma once

// Moving headers in and out of a ChainDb: import (.era1 archives, .rlp files of headers or full
// blocks), export (concatenated header RLP) and verify (full recheck of the stored chain).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "db/chain_db.hpp"
#include "db/era_store.hpp"

namespace headerd::db {

// Reports `done` out of `total` units of the current phase (headers).
using ProgressFn = std::function<void(std::string_view phase, uint64_t done, uint64_t total)>;

struct ImportSummary {
    uint64_t imported{0};
    uint64_t skipped{0};  // already stored with the same hash (re-import is idempotent)
    std::optional<uint64_t> first;
    std::optional<uint64_t> last;
};

struct ImportOptions {
    // The accumulator root of the .era1 file, vouched for by the operator: required for a file that
    // starts an empty database above the genesis (the chain is then anchored at its first block;
    // db::Anchor, docs/history.md), and checked against whichever .era1 file it is given with.
    std::optional<Hash32> trusted_root;
};

// Imports one file into db, which must hold `config` (stored on first import). The whole file is
// checked before anything is written: RLP, header layout for the network's forks, numbers, parent
// links from the genesis (or the anchor) or the current head, the genesis hash, total difficulty
// and, for .era1, the epoch accumulator. A failing file leaves the database as it was; errors name
// the file, the byte offset or block number, and the reason.
Outcome<ImportSummary> import_file(ChainDb& db, const ChainConfig& config, const std::string& path,
                                   const ProgressFn& progress = {}, const ImportOptions& options = {});

struct HistorySummary {
    uint64_t epoch{0};
    uint64_t blocks{0};
    uint64_t transactions{0};
    uint64_t receipts{0};
    bool already_held{false};  // the store held this epoch before; nothing changed
};

// Adds the bodies and receipts of the .era1 file at `path` to `store`: every block's header must be
// the datadir's canonical header of its number (import the headers first), its body must match
// the header's transactions root, ommers hash and (after Shanghai) withdrawals root, its receipt
// list the receipts root, and the file its own accumulator. Only then is the file put into the
// store (EraStore::add: linked, not copied, where it can be). A failing file leaves the store as
// it was; the error names the file, the block and the field.
Outcome<HistorySummary> import_history(const ChainDb& db, EraStore& store, const std::string& path,
                                       const ProgressFn& progress = {});

// Writes the deterministic synthetic chain of `count` headers (core/synthetic.hpp) into an empty
// database, storing its chain config first. Refuses a database that already holds a chain.
Outcome<void> generate_chain(ChainDb& db, uint64_t count, uint64_t seed, const ProgressFn& progress = {});

// Writes headers [from, from+count) as concatenated RLP, byte-identical to what was imported, to a
// temporary file that is fsynced and renamed over `path` only when complete.
Outcome<uint64_t> export_headers(const ChainDb& db, uint64_t from, uint64_t count, const std::string& path,
                                 const ProgressFn& progress = {});

struct VerifySummary {
    uint64_t headers{0};
    uint64_t ancient_items{0};
};

// Rechecks every stored header: it decodes, its number, its parent link, its hash against the
// canonical mapping (freezer hash table or LevelDB) and the hash->number index, and the genesis.
// Stops at the first problem with a message naming the block and store.
Outcome<VerifySummary> verify_chain(const ChainDb& db, const ProgressFn& progress = {});

}  // namespace headerd::db
