// `headerd repair`: find every damaged stored header and fetch it again from peers
// (docs/operations.md, "Bit rot").

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/hex.hpp"
#include "db/chain_db.hpp"
#include "node/cli.hpp"
#include "node/commands.hpp"
#include "node/common.hpp"
#include "node/progress.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/peer.hpp"
#include "sync/repair.hpp"

namespace headerd::node {
namespace {

// A full scrub of `db` from the head down, as fast as it goes; returns the damaged blocks.
Outcome<std::vector<uint64_t>> scrub_all(db::ChainDb& db) {
    const std::optional<db::Head> head = db.head();
    if (!head) return std::vector<uint64_t>{};
    auto files = db.scrub_leveldb_files();
    if (!files) return files.error();
    for (const std::string& f : *files) spdlog::warn("Damaged LevelDB table                    file=\"{}\"", f);
    Progress progress("Scrubbing headers");
    std::optional<Hash32> expect = head->hash;
    uint64_t top = head->number;
    uint64_t done = 0;
    for (;;) {
        auto step = db.scrub(top, 10'000, expect);
        if (!step) return step.error();
        done += step->checked;
        progress.update(done, head->number + 1);
        if (step->checked == 0 || step->checked > top) break;
        top -= step->checked;
        expect = step->next_expect;
    }
    progress.finish(head->number + 1);
    return db.damaged_blocks();
}

// Whether a damaged block lies in LevelDB (a salvage must come before writing it back there).
bool in_leveldb(const db::ChainDb& db, const std::vector<uint64_t>& damaged) {
    return !damaged.empty() && damaged.back() >= db.ancient_items();
}

}  // namespace

int cmd_repair(int argc, char** argv) {
    const CommandSpec spec{
        "repair",
        "find damaged stored headers (bit rot) and fetch them again from peers",
        "--datadir DIR --peer ENODE [--peer ENODE ...] [--request-timeout S] [--check-only]",
        {datadir_option(),
         {"peer", "ENODE", "enode://ID@HOST:PORT of a peer to fetch damaged headers from (repeat)", "", false, true},
         {"request-timeout", "SECONDS", "deadline of each request", "10", false},
         {"check-only", "", "only scrub and report the damaged blocks; change nothing", "", false},
         verbosity_option()},
        false,
        ""};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    sync::RepairConfig config;
    auto peers = parse_enodes(*args, "peer");
    if (!peers) return fail(peers.error().message);
    config.peers = std::move(*peers);
    const bool check_only = args->has("check-only");
    if (config.peers.empty() && !check_only) return fail("repair needs at least one --peer (or --check-only)");
    auto timeout = parse_seconds("request-timeout", args->get_or("request-timeout", "10"));
    if (!timeout || *timeout <= 0) return fail("--request-timeout must be a positive number of seconds");
    config.request_timeout = std::chrono::duration_cast<p2p::Clock::duration>(std::chrono::duration<double>(*timeout));
    const std::string datadir = *args->get("datadir");

    auto chain = open_existing(datadir, check_only);
    if (!chain) return fail(chain.error().message);
    auto damaged = scrub_all(**chain);
    if (!damaged) return fail(damaged.error().message);
    spdlog::info("Scrubbed                                 datadir={} damaged={}", datadir, damaged->size());
    for (uint64_t b : *damaged) std::cout << "damaged " << b << "\n";
    if (damaged->empty()) return kExitOk;
    if (check_only) return kExitFailure;

    // LevelDB cannot take a header back beside a damaged table block: salvage its tables first,
    // then scrub again (what the salvage dropped shows as missing headers).
    if (in_leveldb(**chain, *damaged)) {
        chain->reset();
        auto salvaged = db::ChainDb::salvage_leveldb(datadir);
        if (!salvaged) return fail(salvaged.error().message);
        spdlog::warn("{}", *salvaged);
        chain = open_existing(datadir, false);
        if (!chain) return fail(chain.error().message);
        damaged = scrub_all(**chain);
        if (!damaged) return fail(damaged.error().message);
        spdlog::info("Scrubbed after the salvage               damaged={}", damaged->size());
    }

    auto key = rlpx::PrivateKey::generate();
    if (!key) return fail("cannot generate a node key");
    p2p::LocalNode local;
    local.key = &*key;
    local.client_id = kClientId;
    local.config = (*chain)->config();
    local.head = *(*chain)->head();
    const sync::RepairResult r = sync::repair_damaged(**chain, local, config);
    for (const std::string& note : r.notes) spdlog::warn("Repair                                   {}", note);
    std::cout << fmt::format("repaired {} of {} damaged headers\n", r.repaired, r.damaged);
    if (!r.left.empty()) {
        std::string left;
        for (uint64_t b : r.left) left += (left.empty() ? "" : " ") + std::to_string(b);
        return fail(fmt::format("{} headers are still damaged (never served): {}", r.left.size(), left));
    }
    return kExitOk;
}

}  // namespace headerd::node
