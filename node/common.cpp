#include "node/common.hpp"

#include <cstdio>

#include <spdlog/spdlog.h>

#include "node/logging.hpp"

namespace headerd::node {

OptionSpec datadir_option() { return {"datadir", "DIR", "data directory (chaindata/, nodekey, enode)", "", true}; }
OptionSpec verbosity_option() { return {"verbosity", "N", "log level: 0 silent .. 3 info .. 5 trace", "3", false}; }

int fail(const std::string& message) {
    spdlog::error("{}", message);
    return kExitFailure;
}

std::optional<Args> start(const CommandSpec& spec, int argc, char** argv, int* code) {
    auto args = parse_args(spec, argc, argv);
    if (!args) {
        std::fprintf(stderr, "error: %s\n", args.error().message.c_str());
        *code = kExitUsage;
        return std::nullopt;
    }
    if (args->help()) {
        std::fputs(help_text(spec).c_str(), stdout);
        *code = kExitOk;
        return std::nullopt;
    }
    auto verbosity = args->get_u64("verbosity", 3);
    if (!verbosity || *verbosity > 5) {
        std::fprintf(stderr, "error: --verbosity must be 0..5\n");
        *code = kExitUsage;
        return std::nullopt;
    }
    (void)setup_logging(static_cast<int>(*verbosity));
    return std::move(*args);
}

db::ProgressFn progress_fn(Progress& p) {
    return [&p](std::string_view, uint64_t done, uint64_t total) { p.update(done, total); };
}

Outcome<std::unique_ptr<db::ChainDb>> open_existing(const std::string& datadir, bool read_only) {
    db::ChainDbOptions opts;
    opts.read_only = read_only;
    auto chain = db::ChainDb::open(datadir, opts);
    if (!chain) {
        std::string msg = chain.error().message;
        if (msg.find("lock") != std::string::npos) msg += " (is another headerd using this datadir?)";
        return make_error(std::move(msg));
    }
    return chain;
}

}  // namespace headerd::node
