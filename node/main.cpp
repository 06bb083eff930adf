// headerd: serves Ethereum block headers to syncing peers. See README.md and docs/.

#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "node/commands.hpp"
#include "node/common.hpp"

namespace {

using headerd::node::kCommands;

void usage(std::FILE* out) {
    std::fprintf(out,
                 "headerd - an Ethereum peer that serves block headers\n\nUsage: headerd COMMAND [OPTIONS]\n\n"
                 "Commands:\n");
    for (const auto& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
    std::fprintf(out,
                 "\nRun 'headerd COMMAND --help' for the options of a command, 'headerd --version' for the\n"
                 "version, commit and licence of this build.\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string_view name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        usage(stdout);
        return 0;
    }
    if (name == "--version" || name == "version") {
        // The first line is parsed by tests/package_test.sh and tests/compose_test.sh: keep it.
        std::printf("headerd %s (commit %s)\nLicensed under the Apache License 2.0 (SPDX: Apache-2.0)\n",
                    headerd::node::kVersion, headerd::node::kCommit);
        return 0;
    }
    for (const auto& c : kCommands) {
        if (name == c.name) {
            try {
                return c.run(argc - 2, argv + 2);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "headerd %s: unexpected error: %s\n", c.name, e.what());
                return 1;
            }
        }
    }
    std::fprintf(stderr, "headerd: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
