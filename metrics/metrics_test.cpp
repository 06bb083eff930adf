#include "metrics/metrics.hpp"

#include <atomic>
#include <string>

#include <gtest/gtest.h>

namespace headerd::metrics {
namespace {

TEST(ScrapedGauge, IsReadAtEveryScrapeAndLeftOutWithoutAValue) {
    Metrics m("0.1.0", "abc");
    std::atomic<int> reads{0};
    std::atomic<bool> known{true};
    m.add_scraped_gauge("headerd_test_bytes", "A test gauge.", [&]() -> std::optional<double> {
        ++reads;
        if (!known) return std::nullopt;
        return 1024.0 * reads;
    });
    std::string first = m.scrape();
    EXPECT_NE(first.find("# HELP headerd_test_bytes A test gauge.\n# TYPE headerd_test_bytes gauge\n"
                         "headerd_test_bytes 1024\n"),
              std::string::npos)
        << first;
    EXPECT_NE(m.scrape().find("headerd_test_bytes 2048\n"), std::string::npos);
    known = false;
    const std::string without = m.scrape();
    EXPECT_EQ(without.find("headerd_test_bytes"), std::string::npos) << without;
    EXPECT_NE(without.find("headerd_build_info"), std::string::npos);
    EXPECT_EQ(reads.load(), 3);
    // The HTTP server collects the same gauges.
    EXPECT_EQ(m.collectables().size(), 3u);
}

}  // namespace
}  // namespace headerd::metrics
