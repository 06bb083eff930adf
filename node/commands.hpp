#pragma once

namespace headerd::node {

// Each returns the process exit code; argv holds the arguments after the subcommand name.
int cmd_generate(int argc, char** argv);
int cmd_import(int argc, char** argv);
int cmd_export(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_verify(int argc, char** argv);
int cmd_freeze(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_get(int argc, char** argv);
int cmd_sync(int argc, char** argv);
int cmd_repair(int argc, char** argv);
int cmd_load(int argc, char** argv);
int cmd_report(int argc, char** argv);
int cmd_discover(int argc, char** argv);

struct Command {
    const char* name;
    int (*run)(int, char**);
    const char* summary;
};

// Every subcommand, in the order `headerd --help` lists them. The config file is checked against
// the options of all of them (command_specs() in common.hpp).
inline constexpr Command kCommands[] = {
    {"generate", cmd_generate, "write a deterministic synthetic chain"},
    {"import", cmd_import, "import .era1 archives or .rlp header/block files"},
    {"export", cmd_export, "write headers as concatenated RLP"},
    {"inspect", cmd_inspect, "show heads, counts, sizes, genesis and fork id"},
    {"verify", cmd_verify, "recheck every stored header"},
    {"freeze", cmd_freeze, "move old headers into the ancient store"},
    {"serve", cmd_serve, "serve the stored headers to devp2p peers"},
    {"get", cmd_get, "ask a peer for headers"},
    {"sync", cmd_sync, "download headers from peers, verified from a trusted head"},
    {"repair", cmd_repair, "fetch damaged stored headers again from peers"},
    {"load", cmd_load, "load-test header servers with synthetic syncing clients"},
    {"report", cmd_report, "render a load report's HTML page from its JSON"},
    {"discover", cmd_discover, "find nodes through discv4 and check their fork ids against our chain"},
};

}  // namespace headerd::node
