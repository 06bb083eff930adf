#pragma once

// What every subcommand shares: exit codes, common options, argument start-up, opening a datadir.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>

#include "core/synthetic.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "node/cli.hpp"
#include "node/progress.hpp"
#include "p2p/enode/node_key.hpp"

namespace headerd::node {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// This build's version and git commit (headerd_build_info, the client id in Hello).
extern const char* const kVersion;
extern const char* const kCommit;
extern const char* const kClientId;

OptionSpec datadir_option();
OptionSpec verbosity_option();

// What start() adds to every command's options (they show in --help): --config FILE and --log.json.
CommandSpec with_common_options(CommandSpec spec);

// This machine's host name (gethostname), "unknown" if it has none.
std::string host_name();

// Logs the message as an error; returns kExitFailure.
int fail(const std::string& message);

// Parses the arguments with the common options added, merges the config file under them, handles
// --help, --verbosity and --log.json; nullopt means "exit with *code".
// REQUIRES: a command calls start() before it does anything else. command_specs() learns the
// options of every command by running it in a mode where start() records the spec and returns.
std::optional<Args> start(const CommandSpec& spec, int argc, char** argv, int* code);

// The spec of every command in kCommands (commands.hpp), common options included.
std::vector<CommandSpec> command_specs();

db::ProgressFn progress_fn(Progress& p);

// Opens a datadir that must already hold a database; one another process holds is ErrorKind::kInUse,
// naming that process.
// `cache_bytes`: LevelDB's block cache (ChainDbOptions::leveldb_cache_bytes; 0: its default).
Outcome<std::unique_ptr<db::ChainDb>> open_existing(const std::string& datadir, bool read_only, size_t cache_bytes = 0);

// HOST:PORT with a numeric host (IPv4, or [IPv6]); PORT or :PORT alone means loopback. Errors name
// `option`.
Outcome<boost::asio::ip::tcp::endpoint> parse_endpoint(const std::string& option, const std::string& text);

// --network NAME (mainnet) and --synthetic N[:SEED] (the network of `headerd generate --count N
// --seed SEED`), for commands that name the network of their headers.
OptionSpec network_option(const std::string& help);
OptionSpec synthetic_option();
// The network those options name: --synthetic's if given, else --network's (default mainnet).
// `holder` keeps a synthetic network's config alive. Errors name the option.
Outcome<const ChainConfig*> network_from_args(const Args& args, std::optional<synthetic::Generator>& holder);

// A number of seconds >= 0 (fractions allowed) given to --option; the error names the option.
Outcome<double> parse_seconds(const std::string& option, const std::string& text);
// A wall-clock instant for --start-at: UTC as YYYY-MM-DDTHH:MM:SS[.fff]Z, seconds since the Unix
// epoch (a plain number, fractions allowed), or +S (S seconds after `now`). Returns seconds since
// the epoch; the error names the option and the forms.
Outcome<double> parse_wall_time(const std::string& option, const std::string& text, double now);

// The enode URLs given to the repeatable option `name` (--peer, --follow), in order; an error
// names the option and the value that is not an enode URL.
Outcome<std::vector<p2p::Enode>> parse_enodes(const Args& args, const std::string& name);

// The file descriptors a command may need beyond its connections.
inline constexpr uint64_t kSpareDescriptors = 256;

// Raises RLIMIT_NOFILE's soft limit to `needed` as far as the hard limit allows; the error names the
// limit and `why` when the hard limit is too low.
Outcome<void> ensure_descriptors(uint64_t needed, const std::string& why);

// SIGINT and SIGTERM, on which a long-running command stops. A user or a supervisor may signal
// again while the command winds down; asio gives a signal back its default action (terminate) when
// the last set watching it goes away, which would cut short the closing of databases and turn a
// clean stop into exit status 143. So the first StopSignals also opens a set that is never closed:
// the signals stay caught (and, once the command's set is gone, unheeded) until the process ends
// with the status the command returns.
class StopSignals {
  public:
    explicit StopSignals(boost::asio::io_context& io);

    // The handler gets (error_code, signal number), as boost::asio::signal_set::async_wait's does.
    template <class Handler>
    void async_wait(Handler&& handler) {
        set_.async_wait(std::forward<Handler>(handler));
    }
    void cancel() { set_.cancel(); }

  private:
    boost::asio::signal_set set_;
};

}  // namespace headerd::node
