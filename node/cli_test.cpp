#include "node/cli.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace headerd::node {
namespace {

const CommandSpec kSpec{"export",
                        "test",
                        "--datadir D --from A",
                        {{"datadir", "DIR", "data directory", "", true},
                         {"from", "A", "first block", "0", false},
                         {"json", "", "json output", "", false}},
                        false,
                        ""};

Outcome<Args> parse(std::vector<std::string> words, const CommandSpec& spec = kSpec) {
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    return parse_args(spec, static_cast<int>(argv.size()), argv.data());
}

TEST(Cli, ParsesValuesFlagsAndEqualsForm) {
    auto a = parse({"--datadir", "/x", "--from=0x10", "--json"});
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(*a->get("datadir"), "/x");
    EXPECT_EQ(*a->get_u64("from", 0), 16u);
    EXPECT_TRUE(a->has("json"));
}

TEST(Cli, ErrorsNameTheOption) {
    auto unknown = parse({"--datadir", "/x", "--bogus"});
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().message.find("unknown option --bogus"), std::string::npos);

    auto missing_value = parse({"--datadir"});
    ASSERT_FALSE(missing_value);
    EXPECT_NE(missing_value.error().message.find("--datadir needs a value"), std::string::npos);

    auto required = parse({"--from", "1"});
    ASSERT_FALSE(required);
    EXPECT_NE(required.error().message.find("--datadir is required"), std::string::npos);

    auto positional = parse({"--datadir", "/x", "file.rlp"});
    ASSERT_FALSE(positional);
    EXPECT_NE(positional.error().message.find("unexpected argument 'file.rlp'"), std::string::npos);

    auto a = parse({"--datadir", "/x", "--from", "-1"});
    ASSERT_TRUE(a);
    auto from = a->get_u64("from", 0);
    ASSERT_FALSE(from);
    EXPECT_NE(from.error().message.find("--from"), std::string::npos);
}

TEST(Cli, HelpWinsAndListsEveryOption) {
    auto a = parse({"--help"});
    ASSERT_TRUE(a);
    EXPECT_TRUE(a->help());
    const std::string text = help_text(kSpec);
    for (const char* part :
         {"Usage: headerd export", "--datadir DIR", "(required)", "--from A", "[default: 0]", "--json", "--help"}) {
        EXPECT_NE(text.find(part), std::string::npos) << part;
    }
}

TEST(Cli, MergedDefaultsNeverOverrideTheCommandLineAndCountForRequired) {
    std::vector<std::string> words{"--from", "5"};
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    auto a = parse_command_line(kSpec, static_cast<int>(argv.size()), argv.data());
    ASSERT_TRUE(a) << a.error().message;
    auto missing = check_required(kSpec, *a);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("--datadir is required"), std::string::npos);
    a->merge_defaults({{"from", "7"}, {"datadir", "/file"}, {"json", "true"}});
    EXPECT_TRUE(check_required(kSpec, *a));
    EXPECT_EQ(*a->get("from"), "5");
    EXPECT_EQ(*a->get("datadir"), "/file");
    EXPECT_TRUE(a->has("json"));
}

TEST(Cli, ParseU64Bounds) {
    EXPECT_EQ(*parse_u64("18446744073709551615"), UINT64_MAX);
    EXPECT_FALSE(parse_u64("18446744073709551616"));
    EXPECT_FALSE(parse_u64(""));
    EXPECT_FALSE(parse_u64("12x"));
    EXPECT_FALSE(parse_u64("0x"));
    EXPECT_EQ(*parse_u64("0xff"), 255u);
}

}  // namespace
}  // namespace headerd::node
