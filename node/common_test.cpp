#include "node/common.hpp"

#include <gtest/gtest.h>

namespace headerd::node {
namespace {

TEST(ParseWallTime, TakesUtcUnixSecondsAndOffsetsFromNow) {
    const double now = 1796457600.25;  // 2026-12-05T08:00:00.25Z
    EXPECT_EQ(parse_wall_time("start-at", "2026-12-05T10:00:00Z", now).value(), 1796464800.0);
    EXPECT_EQ(parse_wall_time("start-at", "2026-12-05T10:00:00.5Z", now).value(), 1796464800.5);
    EXPECT_EQ(parse_wall_time("start-at", "1796464800", now).value(), 1796464800.0);
    EXPECT_EQ(parse_wall_time("start-at", "+30", now).value(), now + 30);
    EXPECT_EQ(parse_wall_time("start-at", "+0.5", now).value(), now + 0.5);
}

TEST(ParseWallTime, RefusesOtherFormsNamingTheOption) {
    for (const char* bad : {"", "2026-12-05T10:00:00", "2026-12-05T10:00:00+01:00", "2026-12-05 10:00:00Z", "tomorrow",
                            "+", "+-3", "-5", "2026-13-05T10:00:00Z", "1e12"}) {
        auto r = parse_wall_time("start-at", bad, 0);
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().message.find("--start-at"), std::string::npos) << r.error().message;
    }
}

}  // namespace
}  // namespace headerd::node
