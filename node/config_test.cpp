#include "node/config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "node/commands.hpp"
#include "node/common.hpp"

namespace headerd::node {
namespace {

namespace fs = std::filesystem;

// Small stand-ins for serve, get and inspect, with the common options start() adds.
const CommandSpec kServe = with_common_options({"serve",
                                                "test",
                                                "",
                                                {datadir_option(),
                                                 {"listen", "HOST:PORT", "", "127.0.0.1:30303", false},
                                                 {"max-peers", "N", "", "50", false},
                                                 {"metrics", "HOST:PORT", "", "", false},
                                                 verbosity_option()},
                                                false,
                                                ""});
const CommandSpec kGet = with_common_options({"get",
                                              "test",
                                              "",
                                              {{"peer", "ENODE", "", "", true},
                                               {"amount", "N", "", "", true},
                                               {"reverse", "", "", "", false},
                                               verbosity_option()},
                                              false,
                                              ""});
const CommandSpec kInspect = with_common_options(
    {"inspect", "test", "", {datadir_option(), {"json", "", "", "", false}, verbosity_option()}, false, ""});
const std::vector<CommandSpec> kAll{kServe, kGet, kInspect};

class ConfigTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("headerd-config-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        path_ = (dir_ / "config.toml").string();
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string write(const std::string& text, const std::string& name = "config.toml") {
        const std::string path = (dir_ / name).string();
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }
    Outcome<OptionValues> load(const std::string& text, const CommandSpec& command) {
        return load_config(write(text), command, kAll);
    }
    // The error message load gives, or "(no error)".
    std::string error(const std::string& text, const CommandSpec& command = kServe) {
        auto r = load(text, command);
        return r ? "(no error)" : r.error().message;
    }

    fs::path dir_;
    std::string path_;  // where write() puts config.toml
};

TEST_F(ConfigTest, TopLevelKeysApplyToEveryCommandThatHasTheOption) {
    const std::string text = R"(
datadir = "/var/lib/headerd"
verbosity = 4
log-json = true

[serve]
listen = "0.0.0.0:30303"
max-peers = 50
metrics = "127.0.0.1:6060"
)";
    auto serve = load(text, kServe);
    ASSERT_TRUE(serve) << serve.error().message;
    EXPECT_EQ(*serve, (OptionValues{{"datadir", "/var/lib/headerd"},
                                    {"verbosity", "4"},
                                    {"log.json", "true"},
                                    {"listen", "0.0.0.0:30303"},
                                    {"max-peers", "50"},
                                    {"metrics", "127.0.0.1:6060"}}));
    // get has no datadir: that top-level key is not for it, and [serve] never is.
    auto get = load(text, kGet);
    ASSERT_TRUE(get) << get.error().message;
    EXPECT_EQ(*get, (OptionValues{{"verbosity", "4"}, {"log.json", "true"}}));
}

TEST_F(ConfigTest, TheCommandsTableOverridesTheTopLevel) {
    const std::string text = R"(
verbosity = 2
log-json = true
[serve]
verbosity = 5
[get]
log-json = false
)";
    auto serve = load(text, kServe);
    ASSERT_TRUE(serve);
    EXPECT_EQ(*serve, (OptionValues{{"verbosity", "5"}, {"log.json", "true"}}));
    auto get = load(text, kGet);
    ASSERT_TRUE(get);
    EXPECT_EQ(*get, (OptionValues{{"verbosity", "2"}}));  // false in [get] turns the top-level true off
}

TEST_F(ConfigTest, BooleansSetFlagsOrLeaveThemOff) {
    auto on = load("[get]\nreverse = true\n[inspect]\njson = false\n", kGet);
    ASSERT_TRUE(on);
    EXPECT_EQ(*on, (OptionValues{{"reverse", "true"}}));
    auto off = load("[get]\nreverse = false\n[inspect]\njson = false\n", kInspect);
    ASSERT_TRUE(off);
    EXPECT_TRUE(off->empty());
    // A top-level flag only one command has is for that command only.
    auto top = load("reverse = true\n", kGet);
    ASSERT_TRUE(top);
    EXPECT_EQ(*top, (OptionValues{{"reverse", "true"}}));
    auto ignored = load("reverse = true\n", kServe);
    ASSERT_TRUE(ignored);
    EXPECT_TRUE(ignored->empty());
}

TEST_F(ConfigTest, IntegersArePassedAsDecimalText) {
    auto r = load("[serve]\nmax-peers = 0x32\nverbosity = -1\nlisten = 30303\n", kServe);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, (OptionValues{{"max-peers", "50"}, {"verbosity", "-1"}, {"listen", "30303"}}));
}

TEST_F(ConfigTest, AnEmptyFileSetsNothing) {
    auto r = load("# nothing here\n", kServe);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->empty());
}

TEST_F(ConfigTest, UnknownKeysNameTheKeyTheTableAndTheFile) {
    EXPECT_EQ(error("[serve]\nlisen = \"127.0.0.1:1\"\n"), path_ + ": unknown key 'serve.lisen'");
    // Another command's table is checked as well: the typo shows whichever command runs.
    EXPECT_EQ(error("[serve]\nlisen = \"127.0.0.1:1\"\n", kGet), path_ + ": unknown key 'serve.lisen'");
    EXPECT_EQ(error("[get]\ndatadir = \"/x\"\n"), path_ + ": unknown key 'get.datadir'");
    EXPECT_EQ(error("bogus = 1\n"), path_ + ": unknown key 'bogus'");
    EXPECT_EQ(error("[servee]\nlisten = \"127.0.0.1:1\"\n"), path_ + ": unknown key 'servee'");
    EXPECT_EQ(error("log.json = true\n"), path_ + ": unknown key 'log.json' (write it as log-json)");
    EXPECT_EQ(error("help = true\n"), path_ + ": unknown key 'help'");
    EXPECT_EQ(error("config = \"other.toml\"\n"), path_ + ": key 'config' cannot be set in a config file");
    EXPECT_EQ(error("[get]\nconfig = \"other.toml\"\n"), path_ + ": key 'get.config' cannot be set in a config file");
}

TEST_F(ConfigTest, WrongValueTypesNameTheKey) {
    EXPECT_EQ(error("[serve]\nmax-peers = 1.5\n"),
              path_ + ": key 'serve.max-peers' must be a string or an integer, not a float");
    EXPECT_EQ(error("[serve]\nlisten = true\n"),
              path_ + ": key 'serve.listen' must be a string or an integer, not a boolean");
    EXPECT_EQ(error("verbosity = [1, 2]\n"), path_ + ": key 'verbosity' must be a string or an integer, not an array");
    EXPECT_EQ(error("datadir = 1979-05-27\n"), path_ + ": key 'datadir' must be a string or an integer, not a date");
    EXPECT_EQ(error("[serve.listen]\nhost = \"x\"\n"),
              path_ + ": key 'serve.listen' must be a string or an integer, not a table");
    EXPECT_EQ(error("[get]\nreverse = \"yes\"\n"), path_ + ": key 'get.reverse' must be true or false, not a string");
    EXPECT_EQ(error("log-json = 1\n"), path_ + ": key 'log-json' must be true or false, not an integer");
    EXPECT_EQ(error("serve = 1\n"), path_ + ": key 'serve' must be a table ([serve]), not an integer");
}

// A stand-in for load, whose --json takes a file: with it, `json` is a flag to one command and a
// value to another.
const CommandSpec kLoad = with_common_options(
    {"load", "test", "", {{"json", "FILE", "", "", false}, {"clients", "N", "", "16", false}}, false, ""});
const std::vector<CommandSpec> kWithLoad{kServe, kGet, kInspect, kLoad};

TEST_F(ConfigTest, AKeyThatIsAFlagToOneCommandAndAValueToAnotherIsRefusedAtTheTopLevel) {
    const std::string expected = path_ +
                                 ": key 'json' is a flag (true or false) to inspect but takes FILE to load: set it in "
                                 "[inspect] or [load], not at the top level";
    // Either meaning, whichever command runs: the file means one thing to all of them.
    for (const char* text : {"json = true\n", "json = false\n", "json = \"r.json\"\n", "clients = 4\njson = 1\n"}) {
        for (const CommandSpec* command : {&kInspect, &kLoad, &kServe}) {
            auto r = load_config(write(text), *command, kWithLoad);
            ASSERT_FALSE(r) << text << command->name;
            EXPECT_EQ(r.error().message, expected) << text << command->name;
        }
    }
    // Without a command that takes a value, the flag is an ordinary top-level key.
    auto flag = load_config(write("json = true\n"), kInspect, kAll);
    ASSERT_TRUE(flag) << flag.error().message;
    EXPECT_EQ(*flag, (OptionValues{{"json", "true"}}));
}

TEST_F(ConfigTest, InACommandsTableTheKeyHasThatCommandsMeaning) {
    const std::string text = "clients = 4\n[inspect]\njson = true\n[load]\njson = \"r.json\"\n";
    auto inspect = load_config(write(text), kInspect, kWithLoad);
    ASSERT_TRUE(inspect) << inspect.error().message;
    EXPECT_EQ(*inspect, (OptionValues{{"json", "true"}}));
    auto load = load_config(write(text), kLoad, kWithLoad);
    ASSERT_TRUE(load) << load.error().message;
    EXPECT_EQ(*load, (OptionValues{{"clients", "4"}, {"json", "r.json"}}));
    // The other meaning in a table is a type error naming the table, the key and the expected type.
    auto bad_flag = load_config(write("[inspect]\njson = \"r.json\"\n"), kLoad, kWithLoad);
    ASSERT_FALSE(bad_flag);
    EXPECT_EQ(bad_flag.error().message, path_ + ": key 'inspect.json' must be true or false, not a string");
    auto bad_file = load_config(write("[load]\njson = true\n"), kInspect, kWithLoad);
    ASSERT_FALSE(bad_file);
    EXPECT_EQ(bad_file.error().message, path_ + ": key 'load.json' must be a string or an integer, not a boolean");
}

TEST_F(ConfigTest, ParseErrorsNameFileLineAndColumn) {
    // The description after the position is toml++'s.
    EXPECT_EQ(error("datadir = \"/x\"\n\n[serve]\nlisten = \n"),
              path_ + ":4:10: Error while parsing key-value pair: expected value, saw '\\n'");
    EXPECT_EQ(error("[serve]\nlisten = \"a:1\"\nlisten = \"b:2\"\n"),
              path_ + ":3:10: Error while parsing key-value pair: cannot redefine existing string 'listen'");
    EXPECT_EQ(error("[serve\n"), path_ + ":1:7: Error while parsing table header: expected ']', saw '\\n'");
}

TEST_F(ConfigTest, AFileThatCannotBeReadIsNamed) {
    const std::string missing = (dir_ / "nope.toml").string();
    auto r = load_config(missing, kServe, kAll);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, missing + ": cannot read config file: No such file or directory");
    auto d = load_config(dir_.string(), kServe, kAll);
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().message, dir_.string() + ": cannot read config file: Is a directory");
}

// Through start() and the real commands: what a user of `headerd CMD --config FILE` gets.
class StartWithConfigTest : public ConfigTest {
  protected:
    std::optional<Args> run(const char* command, std::vector<std::string> words, int* code) {
        const auto specs = command_specs();
        auto it = std::find_if(specs.begin(), specs.end(), [&](const CommandSpec& s) { return s.name == command; });
        EXPECT_NE(it, specs.end()) << command;
        std::vector<char*> argv;
        for (auto& w : words) argv.push_back(w.data());
        return start(*it, static_cast<int>(argv.size()), argv.data(), code);
    }
};

TEST_F(StartWithConfigTest, EveryCommandHasTheCommonOptionsAndIsKnown) {
    const auto specs = command_specs();
    ASSERT_EQ(specs.size(), std::size(kCommands));
    for (size_t i = 0; i < specs.size(); ++i) {
        EXPECT_EQ(specs[i].name, kCommands[i].name);
        for (const char* name : {"config", "log.json", "verbosity"}) {
            EXPECT_TRUE(std::any_of(specs[i].options.begin(), specs[i].options.end(),
                                    [&](const OptionSpec& o) { return o.name == name; }))
                << specs[i].name << " --" << name;
        }
        const std::string help = help_text(specs[i]);
        EXPECT_NE(help.find("--config FILE"), std::string::npos) << help;
        EXPECT_NE(help.find("--log.json"), std::string::npos) << help;
    }
}

TEST_F(StartWithConfigTest, TheCommandLineOverridesTheFileWhichFillsInRequiredOptions) {
    const std::string path = write(R"(
datadir = "/from/file"
verbosity = 1
[serve]
max-peers = 7
listen = "127.0.0.1:0"
[get]
peer = "enode://x@127.0.0.1:1"
amount = 3
reverse = true
)");
    int code = -1;
    auto serve = run("serve", {"--config", path, "--listen=127.0.0.1:9", "--verbosity", "2"}, &code);
    ASSERT_TRUE(serve);
    EXPECT_EQ(*serve->get("datadir"), "/from/file");  // required, given by the file
    EXPECT_EQ(*serve->get("listen"), "127.0.0.1:9");  // the flag wins
    EXPECT_EQ(*serve->get("verbosity"), "2");
    EXPECT_EQ(*serve->get_u64("max-peers", 50), 7u);
    EXPECT_FALSE(serve->has("log.json"));

    auto get = run("get", {"--origin", "5", "--config=" + path}, &code);
    ASSERT_TRUE(get);
    EXPECT_EQ(*get->get("peer"), "enode://x@127.0.0.1:1");
    EXPECT_EQ(*get->get_u64("amount", 0), 3u);
    EXPECT_TRUE(get->has("reverse"));
    EXPECT_FALSE(get->has("datadir"));

    auto inspect = run("inspect", {"--config", path, "--datadir", "/from/flag"}, &code);
    ASSERT_TRUE(inspect);
    EXPECT_EQ(*inspect->get("datadir"), "/from/flag");
}

TEST_F(StartWithConfigTest, TopLevelJsonIsRefusedForEveryRealCommandAndTablesKeepTheirMeaning) {
    const auto specs = command_specs();
    const std::string expected =
        ": key 'json' is a flag (true or false) to inspect but takes FILE to discover, load and report: set it in "
        "[discover], [inspect], [load] or [report], not at the top level";
    for (const char* text : {"json = true\n", "json = \"r.json\"\n"}) {
        const std::string path = write(text);
        for (const CommandSpec& spec : specs) {
            auto r = load_config(path, spec, specs);
            ASSERT_FALSE(r) << text << spec.name;
            EXPECT_EQ(r.error().message, path + expected) << text << spec.name;
        }
        int code = -1;
        EXPECT_FALSE(run("inspect", {"--config", path, "--datadir", "/x"}, &code));
        EXPECT_EQ(code, kExitUsage);
        code = -1;
        EXPECT_FALSE(run("report", {"--config", path, "--html", "-"}, &code));
        EXPECT_EQ(code, kExitUsage);
    }

    const std::string tables = write(R"(
[inspect]
json = true
datadir = "/from/file"
[load]
json = "load.json"
[report]
json = "report.json"
html = "-"
)",
                                     "tables.toml");
    int code = -1;
    auto inspect = run("inspect", {"--config", tables}, &code);
    ASSERT_TRUE(inspect);
    EXPECT_TRUE(inspect->has("json"));
    auto report = run("report", {"--config", tables}, &code);
    ASSERT_TRUE(report);
    EXPECT_EQ(*report->get("json"), "report.json");
    auto load = run("load", {"--config", tables, "--peer", "enode://x@127.0.0.1:1"}, &code);
    ASSERT_TRUE(load);
    EXPECT_EQ(*load->get("json"), "load.json");
    auto flag_wins = run("report", {"--config", tables, "--json", "flag.json"}, &code);
    ASSERT_TRUE(flag_wins);
    EXPECT_EQ(*flag_wins->get("json"), "flag.json");
}

TEST_F(StartWithConfigTest, ConfigErrorsAreUsageErrors) {
    int code = -1;
    const std::string bad = write("[serve]\nlisen = \"127.0.0.1:1\"\n");
    EXPECT_FALSE(run("inspect", {"--config", bad, "--datadir", "/x"}, &code));
    EXPECT_EQ(code, kExitUsage);
    code = -1;
    EXPECT_FALSE(run("inspect", {"--config", (dir_ / "missing.toml").string(), "--datadir", "/x"}, &code));
    EXPECT_EQ(code, kExitUsage);
    // Without the file's datadir the required check still fails.
    code = -1;
    EXPECT_FALSE(run("inspect", {"--config", write("verbosity = 3\n", "other.toml")}, &code));
    EXPECT_EQ(code, kExitUsage);
    // --help wins even over a broken file.
    code = -1;
    EXPECT_FALSE(run("inspect", {"--config", bad, "--help"}, &code));
    EXPECT_EQ(code, kExitOk);
}

}  // namespace
}  // namespace headerd::node
