#include "node/commands.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include "core/forkid.hpp"
#include "core/hex.hpp"
#include "db/chain_db.hpp"
#include "db/era_store.hpp"
#include "db/import.hpp"
#include "disc/enr.hpp"
#include "node/cli.hpp"
#include "node/common.hpp"
#include "node/logging.hpp"
#include "node/progress.hpp"

namespace headerd::node {

int cmd_generate(int argc, char** argv) {
    const CommandSpec spec{"generate",
                           "write a deterministic synthetic chain with every header layout",
                           "--datadir DIR --count N [--seed S]",
                           {datadir_option(),
                            {"count", "N", "number of headers, blocks 0..N-1", "", true},
                            {"seed", "S", "seed of the deterministic generator", "1", false},
                            verbosity_option()},
                           false,
                           ""};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    auto count = args->get_u64("count", 0);
    auto seed = args->get_u64("seed", 1);
    if (!count) return fail(count.error().message);
    if (!seed) return fail(seed.error().message);
    if (*count == 0) return fail("--count must be at least 1");
    const std::string datadir = *args->get("datadir");

    db::ChainDbOptions opts;
    opts.create_if_missing = true;
    auto chain = db::ChainDb::open(datadir, opts);
    if (!chain) return fail(chain.error().message);
    db::ChainDb& db = **chain;
    Progress progress("Generating headers");
    if (auto r = db::generate_chain(db, *count, *seed, progress_fn(progress)); !r) return fail(r.error().message);
    progress.finish(*count);
    const auto head = db.head();
    spdlog::info("Generated synthetic chain                datadir={} network={} network_id={} head={} hash={}",
                 datadir, db.config()->name, db.config()->network_id, head->number, to_hex0x(head->hash));
    return kExitOk;
}

int cmd_import(int argc, char** argv) {
    CommandSpec spec{"import",
                     "import headers from .era1 archives or .rlp files (headers or full blocks)",
                     "--datadir DIR [--network mainnet|sepolia | --synthetic N[:SEED]] [--history] "
                     "[--trusted-root HASH] FILE...",
                     {datadir_option(),
                      network_option("network of the files; must match the datadir's"),
                      synthetic_option(),
                      {"history", "",
                       "also keep the bodies and receipts of .era1 files, each checked against its header, to serve "
                       "them (DIR/history; docs/history.md)",
                       "", false},
                      {"trusted-root", "HASH",
                       "the accumulator root of the first FILE, from a source you trust: lets an empty datadir start "
                       "at a later .era1 epoch instead of the genesis (docs/history.md)",
                       "", false},
                      verbosity_option()},
                     true,
                     "FILE...  .era1 archives, or .rlp files of concatenated header RLP or block RLP, imported in "
                     "order;\n         the first must start at the genesis (or --trusted-root's epoch) or link to the "
                     "database head"};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    if (args->positional().empty()) {
        std::fprintf(stderr, "error: import: no files given (see headerd import --help)\n");
        return kExitUsage;
    }
    const bool history = args->has("history");
    if (history) {
        for (const std::string& file : args->positional()) {
            if (!file.ends_with(".era1")) return fail(fmt::format("--history: {} is not an .era1 file", file));
        }
    }
    db::ImportOptions first_options;
    if (auto root = args->get("trusted-root")) {
        auto parsed = hash_from_hex(*root);
        if (!parsed) return fail(fmt::format("--trusted-root: {} is not a 32-byte hex hash", *root));
        first_options.trusted_root = *parsed;
    }
    std::optional<synthetic::Generator> synthetic_network;
    auto network = network_from_args(*args, synthetic_network);
    if (!network) return fail(network.error().message);
    const std::string datadir = *args->get("datadir");
    std::error_code ec;
    const bool fresh = !std::filesystem::exists(std::filesystem::path(datadir) / "chaindata", ec);
    db::ChainDbOptions opts;
    opts.create_if_missing = true;
    auto chain = db::ChainDb::open(datadir, opts);
    if (!chain) return fail(chain.error().message);
    db::ChainDb& db = **chain;

    std::unique_ptr<db::EraStore> store;
    if (history) {
        auto opened = db::EraStore::open((std::filesystem::path(datadir) / "history").string());
        if (!opened) return fail(opened.error().message);
        store = std::move(*opened);
    }

    int rc = kExitOk;
    for (const std::string& file : args->positional()) {
        const std::string name = std::filesystem::path(file).filename().string();
        Progress progress(fmt::format("Importing {}", name));
        auto r = db::import_file(db, **network, file, progress_fn(progress),
                                 &file == &args->positional().front() ? first_options : db::ImportOptions{});
        if (!r) {
            spdlog::error("{}", r.error().message);
            rc = kExitFailure;
            break;
        }
        progress.finish(r->imported);
        spdlog::info("Imported headers                         file={} imported={} skipped={} first={} last={}", file,
                     r->imported, r->skipped, r->first ? std::to_string(*r->first) : "-",
                     r->last ? std::to_string(*r->last) : "-");
        if (!history) continue;
        Progress checking(fmt::format("Checking bodies and receipts of {}", name));
        auto h = db::import_history(db, *store, file, progress_fn(checking));
        if (!h) {
            spdlog::error("{}", h.error().message);
            rc = kExitFailure;
            break;
        }
        checking.finish(h->blocks);
        spdlog::info(
            "Imported history                         file={} epoch={} blocks={} transactions={} receipts={}{}", file,
            h->epoch, h->blocks, h->transactions, h->receipts, h->already_held ? " (already held)" : "");
    }
    if (rc != kExitOk && fresh && !db.head()) {
        // Nothing was imported into a datadir this command created: leave no empty database behind.
        chain->reset();
        std::filesystem::remove_all(std::filesystem::path(datadir) / "chaindata", ec);
    }
    return rc;
}

int cmd_export(int argc, char** argv) {
    const CommandSpec spec{"export",
                           "write headers as concatenated RLP, byte-identical to what was imported",
                           "--datadir DIR --from A --count N --out FILE",
                           {datadir_option(),
                            {"from", "A", "first block number", "", true},
                            {"count", "N", "number of headers", "", true},
                            {"out", "FILE", "output file (written whole or not at all)", "", true},
                            verbosity_option()},
                           false,
                           ""};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    auto from = args->get_u64("from", 0);
    auto count = args->get_u64("count", 0);
    if (!from) return fail(from.error().message);
    if (!count) return fail(count.error().message);
    auto chain = open_existing(*args->get("datadir"), true);
    if (!chain) return fail(chain.error().message);
    Progress progress("Exporting headers");
    auto r = db::export_headers(**chain, *from, *count, *args->get("out"), progress_fn(progress));
    if (!r) return fail(r.error().message);
    progress.finish(*r);
    spdlog::info("Exported headers                         file={} from={} count={}", *args->get("out"), *from, *r);
    return kExitOk;
}

int cmd_inspect(int argc, char** argv) {
    const CommandSpec spec{"inspect",
                           "show heads, counts, sizes, genesis and fork id of a datadir",
                           "--datadir DIR [--json]",
                           {datadir_option(), {"json", "", "print one JSON object", "", false}, verbosity_option()},
                           false,
                           ""};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    auto chain = open_existing(*args->get("datadir"), true);
    if (!chain) return fail(chain.error().message);
    const db::ChainDb& db = **chain;
    const ChainConfig* config = db.config();
    const auto head = db.head();
    const db::StoreStats st = db.stats();

    boost::json::object o;
    o["datadir"] = db.datadir();
    o["network"] = config ? config->name : "";
    o["network_id"] = config ? config->network_id : 0;
    o["genesis_hash"] = config ? to_hex0x(config->genesis_hash) : "";
    // The lowest block held: 0, or where a chain imported from a later epoch starts (docs/history.md).
    o["first_block"] = head ? boost::json::value(db.first_block()) : boost::json::value(nullptr);
    o["head_number"] = head ? boost::json::value(head->number) : boost::json::value(nullptr);
    o["head_hash"] = head ? boost::json::value(to_hex0x(head->hash)) : boost::json::value(nullptr);
    o["head_total_difficulty"] = head ? boost::json::value(head->total_difficulty.str()) : nullptr;
    o["head_timestamp"] = head ? boost::json::value(head->timestamp) : nullptr;
    o["ancient_items"] = st.ancient_items;
    o["kv_headers"] = st.kv_headers;
    if (config && head) {
        const ForkId id = compute_fork_id(*config, head->number, head->timestamp);
        o["fork_id"] = boost::json::object{{"hash", to_hex0x(id.hash)}, {"next", id.next}};
    } else {
        o["fork_id"] = nullptr;
    }
    o["bytes"] = boost::json::object{{"ancient", st.ancient_bytes}, {"leveldb", st.leveldb_bytes}};
    // The node record serve signed last (DATADIR/enr), when there is a valid one.
    std::optional<disc::Enr> record;
    if (std::ifstream in(std::filesystem::path(db.datadir()) / "enr"); in) {
        std::string text;
        std::getline(in, text);
        if (auto r = disc::Enr::from_text(text)) record = *r;
    }
    o["enr"] = record ? boost::json::value(record->text()) : boost::json::value(nullptr);
    o["enr_seq"] = record ? boost::json::value(record->seq()) : boost::json::value(nullptr);

    if (args->has("json")) {
        std::cout << boost::json::serialize(o) << "\n";
        return kExitOk;
    }
    std::cout << fmt::format("datadir           {}\n", db.datadir());
    if (config == nullptr || !head) {
        std::cout << "chain             (empty)\n";
        return kExitOk;
    }
    const ForkId id = compute_fork_id(*config, head->number, head->timestamp);
    std::cout << fmt::format("network           {} (id {})\n", config->name, config->network_id)
              << fmt::format("genesis           {}\n", to_hex0x(config->genesis_hash))
              << (db.first_block() > 0
                      ? fmt::format("first block       {} (anchored: no header below it is held)\n", db.first_block())
                      : std::string())
              << fmt::format("head              {} {}\n", head->number, to_hex0x(head->hash))
              << fmt::format("head TD           {}\n", head->total_difficulty.str())
              << fmt::format("fork id           {} next {}\n", to_hex0x(id.hash), id.next)
              << fmt::format("ancient headers   {} (blocks 0..{}), {} bytes\n", st.ancient_items,
                             st.ancient_items == 0 ? std::string("-") : std::to_string(st.ancient_items - 1),
                             st.ancient_bytes)
              << fmt::format("LevelDB headers   {}, {} bytes\n", st.kv_headers, st.leveldb_bytes);
    if (record) std::cout << fmt::format("node record       seq {} {}\n", record->seq(), record->text());
    return kExitOk;
}

int cmd_verify(int argc, char** argv) {
    const CommandSpec spec{
        "verify",        "recheck every stored header: hashes, links, numbers, canonical and hash indexes",
        "--datadir DIR", {datadir_option(), verbosity_option()},
        false,           ""};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    auto chain = open_existing(*args->get("datadir"), true);
    if (!chain) return fail(chain.error().message);
    Progress progress("Verifying headers");
    auto r = db::verify_chain(**chain, progress_fn(progress));
    if (!r) return fail(r.error().message);
    progress.finish(r->headers);
    spdlog::info("Chain verified                           headers={} ancient={} head={}", r->headers, r->ancient_items,
                 (*chain)->head()->number);
    return kExitOk;
}

int cmd_freeze(int argc, char** argv) {
    const CommandSpec spec{
        "freeze",
        "move headers older than head-keep from LevelDB into the ancient store",
        "--datadir DIR [--keep N]",
        {datadir_option(), {"keep", "N", "most recent headers to keep in LevelDB", "90000", false}, verbosity_option()},
        false,
        ""};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    auto keep = args->get_u64("keep", 90'000);
    if (!keep) return fail(keep.error().message);
    auto chain = open_existing(*args->get("datadir"), false);
    if (!chain) return fail(chain.error().message);
    db::ChainDb& db = **chain;
    const uint64_t before = db.ancient_items();
    Progress progress("Freezing headers");
    db::FreezeOptions fopts;
    fopts.keep = *keep;
    fopts.on_progress = [&](uint64_t done, uint64_t total) { progress.update(done, total); };
    auto r = db.freeze(fopts);
    if (!r) return fail(r.error().message);
    progress.finish(*r - before);
    spdlog::info("Freezer updated                          ancient_items={} moved={} kv_headers={}", *r, *r - before,
                 db.stats().kv_headers);
    return kExitOk;
}

}  // namespace headerd::node
