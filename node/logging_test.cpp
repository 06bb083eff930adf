#include "node/logging.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>

#include <spdlog/details/log_msg.h>
#include <boost/json.hpp>

namespace headerd::node {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

const system_clock::time_point kTime = sys_days{2026y / 11 / 30} + 1h + 2min + 3s + 123ms + 456us;

std::string format_json(std::string_view payload, spdlog::level::level_enum level = spdlog::level::info) {
    spdlog::details::log_msg msg(spdlog::source_loc{}, "headerd", level,
                                 spdlog::string_view_t(payload.data(), payload.size()));
    msg.time = kTime;
    spdlog::memory_buf_t buf;
    make_json_formatter()->format(msg, buf);
    return std::string(buf.data(), buf.size());
}

// Parses one formatted line back; the test fails if it is not exactly one JSON object and a newline.
boost::json::object parse_line(const std::string& line) {
    EXPECT_FALSE(line.empty());
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(line, ec);
    EXPECT_FALSE(ec) << ec.message() << ": " << line;
    return v.is_object() ? v.as_object() : boost::json::object{};
}

TEST(JsonLog, GethLikeLineWithNumbersKeptAsNumbers) {
    const std::string line = format_json(
        "Serving headers                          network=mainnet head=8191 hash=0xd4e5 listen=127.0.0.1:30303");
    EXPECT_EQ(line, R"({"t":"2026-11-30T01:02:03.123Z","lvl":"info","msg":"Serving headers","network":"mainnet",)"
                    R"("head":8191,"hash":"0xd4e5","listen":"127.0.0.1:30303"})"
                    "\n");
    const auto o = parse_line(line);
    EXPECT_EQ(o.at("head").as_int64(), 8191);
    EXPECT_EQ(o.at("msg").as_string(), "Serving headers");
}

TEST(JsonLog, LevelNames) {
    const std::pair<spdlog::level::level_enum, const char*> cases[] = {
        {spdlog::level::trace, "trace"}, {spdlog::level::debug, "debug"}, {spdlog::level::info, "info"},
        {spdlog::level::warn, "warn"},   {spdlog::level::err, "error"},   {spdlog::level::critical, "crit"},
    };
    for (const auto& [level, name] : cases) {
        EXPECT_EQ(parse_line(format_json("Something happened", level)).at("lvl").as_string(), name) << name;
    }
}

TEST(JsonLog, OnlyPlainSixtyFourBitIntegersBecomeNumbers) {
    const auto o = parse_line(format_json(
        "Numbers  zero=0 neg=-5 max=18446744073709551615 over=18446744073709551616 min=-9223372036854775808 "
        "under=-9223372036854775809 lead=007 hex=0x10 rate=1.5 ms=12ms negzero=-0 plus=+1 empty= quoted=\"42\""));
    EXPECT_EQ(o.at("zero").as_int64(), 0);
    EXPECT_EQ(o.at("neg").as_int64(), -5);
    EXPECT_EQ(o.at("max").as_uint64(), UINT64_MAX);
    EXPECT_EQ(o.at("min").as_int64(), INT64_MIN);
    for (const char* key : {"over", "under", "lead", "hex", "rate", "ms", "negzero", "plus", "empty", "quoted"}) {
        EXPECT_TRUE(o.at(key).is_string()) << key;
    }
    EXPECT_EQ(o.at("over").as_string(), "18446744073709551616");
    EXPECT_EQ(o.at("empty").as_string(), "");
    EXPECT_EQ(o.at("quoted").as_string(), "42");
}

TEST(JsonLog, QuotedValuesAreUnquotedAndEscapedForJson) {
    const std::string line = format_json(
        R"(Peer connected       peer=10.0.0.1:30303 client="Geth/v1.14 \"edge\" back\\slash \q" eth=68 err="a b")");
    const auto o = parse_line(line);
    EXPECT_EQ(o.at("msg").as_string(), "Peer connected");
    EXPECT_EQ(o.at("client").as_string(), R"(Geth/v1.14 "edge" back\slash \q)");
    EXPECT_EQ(o.at("eth").as_int64(), 68);
    EXPECT_EQ(o.at("err").as_string(), "a b");
    EXPECT_NE(line.find(R"("client":"Geth/v1.14 \"edge\" back\\slash \\q")"), std::string::npos) << line;
}

TEST(JsonLog, ControlCharactersAndInvalidUtf8StayValidJson) {
    const std::string payload = std::string("Bad \"hello\"\tpeer\x01") + "  client=\"x\ny\x1f\" name=caf\xC3\xA9" +
                                " raw=\xFF\xC0\x80z esc=\"\\n\\t\"";
    const std::string line = format_json(payload);
    EXPECT_NE(line.find("\\u0001"), std::string::npos) << line;
    EXPECT_NE(line.find("\\u001f"), std::string::npos) << line;
    const auto o = parse_line(line);
    EXPECT_EQ(o.at("msg").as_string(), "Bad \"hello\"\tpeer\x01");
    EXPECT_EQ(o.at("client").as_string(), "x\ny\x1f");
    EXPECT_EQ(o.at("name").as_string(), "caf\xC3\xA9");
    EXPECT_EQ(o.at("raw").as_string(), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");  // one U+FFFD per bad byte
    EXPECT_EQ(o.at("esc").as_string(), "\n\t");
}

TEST(JsonLog, MessagesWithoutTrailingFieldsAreAllText) {
    const std::pair<const char*, const char*> cases[] = {
        {"Shutting down", "Shutting down"},
        {"Trailing spaces   ", "Trailing spaces"},
        {"--count must be at least 1", "--count must be at least 1"},
        {"bad value a=b in /tmp/x.toml", "bad value a=b in /tmp/x.toml"},
        {"Oops  err=\"unterminated", "Oops  err=\"unterminated"},
        {"Oops  err=\"closed\"but-more", "Oops  err=\"closed\"but-more"},
        {"k=v", "k=v"},  // a message has text before its fields
    };
    for (const auto& [payload, msg] : cases) {
        const auto o = parse_line(format_json(payload));
        EXPECT_EQ(o.size(), 3u) << payload;
        EXPECT_EQ(o.at("msg").as_string(), msg) << payload;
    }
}

TEST(JsonLog, FieldsAreTheLongestWellFormedRunAtTheEnd) {
    auto o = parse_line(format_json("Import failed at x=1 of \"a b\"   file=a.rlp offset=512"));
    EXPECT_EQ(o.at("msg").as_string(), "Import failed at x=1 of \"a b\"");
    EXPECT_EQ(o.at("file").as_string(), "a.rlp");
    EXPECT_EQ(o.at("offset").as_int64(), 512);
    EXPECT_FALSE(o.contains("x"));

    o = parse_line(format_json("Importing mainnet-00000.era1 done      count=8192 elapsed=1.25s rate=6554/s"));
    EXPECT_EQ(o.at("msg").as_string(), "Importing mainnet-00000.era1 done");
    EXPECT_EQ(o.at("count").as_int64(), 8192);
    EXPECT_EQ(o.at("elapsed").as_string(), "1.25s");
}

}  // namespace
}  // namespace headerd::node
