#pragma once

// What every subcommand shares: exit codes, common options, argument start-up, opening a datadir.

#include <memory>
#include <optional>
#include <string>

#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "node/cli.hpp"
#include "node/progress.hpp"

namespace headerd::node {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

OptionSpec datadir_option();
OptionSpec verbosity_option();

// Logs the message as an error; returns kExitFailure.
int fail(const std::string& message);

// Parses the arguments, handles --help and --verbosity; nullopt means "exit with *code".
std::optional<Args> start(const CommandSpec& spec, int argc, char** argv, int* code);

db::ProgressFn progress_fn(Progress& p);

// Opens a datadir that must already hold a database; a held lock is explained.
Outcome<std::unique_ptr<db::ChainDb>> open_existing(const std::string& datadir, bool read_only);

}  // namespace headerd::node
