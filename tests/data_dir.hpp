#pragma once

// Where tests/data is, found when a test runs rather than compiled in: a test binary then holds no
// path of the checkout that built it, so it is the same in every clone and ccache can share it
// (docs/testing.md, "ccache").

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace headerd::testing {

// HEADERD_TEST_DATA_DIR from the environment when set (CTest sets it for every test it runs);
// otherwise the tests/data of the nearest directory above the running binary that has one (every
// build directory of the scripts lies inside the checkout). Aborts with a message when neither
// exists: no test can mean anything without its data.
inline const std::string& data_dir() {
    static const std::string dir = [] {
        if (const char* env = std::getenv("HEADERD_TEST_DATA_DIR"); env != nullptr && *env != '\0')
            return std::string(env);
        std::error_code ec;
        auto at = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
        for (; !ec && !at.empty(); at = at.parent_path()) {
            std::error_code missing;
            if (std::filesystem::is_regular_file(at / "tests/data/mainnet-headers-0-8191.rlp", missing)) {
                return (at / "tests/data").string();
            }
            if (at == at.root_path()) break;
        }
        std::fprintf(stderr, "test data not found: set HEADERD_TEST_DATA_DIR to the checkout's tests/data\n");
        std::abort();
    }();
    return dir;
}

}  // namespace headerd::testing
