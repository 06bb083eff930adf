#include "load/html_report.hpp"
#include "tests/data_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

namespace headerd::load {
namespace {

namespace json = boost::json;

json::object load_sample() {
    std::ifstream in(headerd::testing::data_dir() + "/load-report-sample.json");
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str()).as_object();
}

size_t count_of(const std::string& haystack, const std::string& needle) {
    size_t n = 0;
    for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
    return n;
}

// The data-points attribute of the chart element with data-series="series". Plain string search, not
// std::regex: libstdc++'s matcher recurses once per character of a [^"]* run, and a long timeline's
// attribute (LongTimelineKeepsEveryPointWithoutDots) overflowed the stack under ASan.
json::array series_points(const std::string& html, const std::string& series) {
    const std::string attribute = "data-series=\"" + series + "\" data-points=\"";
    const size_t start = html.find(attribute);
    const size_t end = start == std::string::npos ? start : html.find('"', start + attribute.size());
    if (end == std::string::npos) {
        ADD_FAILURE() << "no data-points for series " << series;
        return {};
    }
    const size_t from = start + attribute.size();
    return json::parse(html.substr(from, end - from)).as_array();
}

// Profile -> (le_ms, count) of every histogram bar, in page order.
std::map<std::string, std::vector<std::pair<double, double>>> histogram_bars(const std::string& html) {
    std::map<std::string, std::vector<std::pair<double, double>>> out;
    const std::regex re(
        "data-chart=\"histogram\" data-profile=\"([^\"]*)\" data-le-ms=\"([^\"]*)\" data-count=\"([^\"]*)\"");
    for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it) {
        out[(*it)[1].str()].emplace_back(std::stod((*it)[2].str()), std::stod((*it)[3].str()));
    }
    return out;
}

TEST(HtmlReport, TimelineChartsCarryTheReportValues) {
    const json::object report = load_sample();
    const std::string html = render_html_report(report);
    const json::array& timeline = report.at("timeline").as_array();
    ASSERT_EQ(timeline.size(), 20u);
    for (const char* series : {"requests", "headers", "p50_ms", "p99_ms", "errors"}) {
        SCOPED_TRACE(series);
        const json::array points = series_points(html, series);
        ASSERT_EQ(points.size(), timeline.size());
        for (size_t i = 0; i < points.size(); ++i) {
            const json::array& p = points[i].as_array();
            const json::object& entry = timeline[i].as_object();
            ASSERT_EQ(p.size(), 2u);
            EXPECT_EQ(p[0].to_number<double>(), entry.at("t").to_number<double>());
            EXPECT_EQ(p[1].to_number<double>(), entry.at(series).to_number<double>())
                << "t=" << entry.at("t").to_number<double>();
        }
    }
    // Every second of the sample has every value, so no line has a gap: one move, then lines.
    const std::regex path_re("<path class=\"line\" d=\"(M[^\"]*)\"");
    size_t paths = 0;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), path_re); it != std::sregex_iterator(); ++it) {
        ++paths;
        EXPECT_EQ((*it)[1].str().find(" M"), std::string::npos);
        EXPECT_EQ(count_of((*it)[1].str(), " L"), timeline.size() - 1);
    }
    EXPECT_EQ(paths, 4u);
}

TEST(HtmlReport, HistogramBarsCarryTheReportBuckets) {
    const json::object report = load_sample();
    const std::string html = render_html_report(report);
    const auto bars = histogram_bars(html);
    const json::array& profiles = report.at("profiles").as_array();
    ASSERT_EQ(profiles.size(), 9u);
    ASSERT_EQ(bars.size(), profiles.size());
    for (const json::value& p : profiles) {
        const std::string name(p.at("name").as_string());
        SCOPED_TRACE(name);
        const json::array& histogram = p.at("histogram").as_array();
        ASSERT_TRUE(bars.contains(name));
        const auto& got = bars.at(name);
        ASSERT_EQ(got.size(), histogram.size());
        double total = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].first, histogram[i].at("le_ms").to_number<double>());
            EXPECT_EQ(got[i].second, histogram[i].at("count").to_number<double>());
            total += got[i].second;
        }
        // The sample's histograms count every reply.
        EXPECT_EQ(total, p.at("replies").to_number<double>());
    }
}

TEST(HtmlReport, SampleShowsVerdictTablesAndServer) {
    const std::string html = render_html_report(load_sample());
    EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
    EXPECT_NE(html.find("<strong>PASS</strong>"), std::string::npos);
    EXPECT_NE(html.find("data-verified=\"true\" data-thresholds-failed=\"0\""), std::string::npos);
    EXPECT_NE(html.find("3 of 3 thresholds passed"), std::string::npos);
    EXPECT_NE(html.find("<title>headerd load report: headerd/v0.1.0 at 3f9865e5…@127.0.0.1:30303 (head #8191)"),
              std::string::npos);
    // The totals row and a profile row of the traffic table.
    EXPECT_NE(
        html.find("<tr class=\"total\"><td>total</td><td>64</td><td>21,782</td><td>21,782</td><td>5,451,613</td>"),
        std::string::npos);
    EXPECT_NE(html.find("<td>geth-skeleton</td><td>18</td><td>3,610</td>"), std::string::npos);
    EXPECT_NE(html.find("<th>connect</th>"), std::string::npos);  // an error kind beyond the first four
    EXPECT_NE(html.find("None: no reply failed verification and no request failed."), std::string::npos);
    EXPECT_NE(html.find("p99&lt;250ms"), std::string::npos);
    EXPECT_NE(html.find("2.862 µs"), std::string::npos);
    EXPECT_NE(html.find("<dt>reth</dt><dd>reth reverse headers: tip by hash, then by number, reverse, 1000</dd>"),
              std::string::npos);
    EXPECT_NE(html.find("tests/data/mainnet-00000-5ec1ffb8.era1</span>"), std::string::npos);
    EXPECT_EQ(html.find("no data"), std::string::npos);
    // Self-contained: nothing to fetch, nothing to run.
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("src="), std::string::npos);
    EXPECT_EQ(html.find("<link"), std::string::npos);
    EXPECT_EQ(html.find("url("), std::string::npos);
}

// Why connections failed: each reason with its count, most frequent first, escaped; none listed
// when every connection succeeded (the sample).
TEST(HtmlReport, ConnectErrorsAreListedByCount) {
    EXPECT_EQ(render_html_report(load_sample()).find("<dt>connect errors</dt>"), std::string::npos);
    json::object report = load_sample();
    json::object& clients = report["clients"].as_object();
    clients["connect_attempts"] = 70;
    clients["connect_failures"] = 6;
    clients["connect_errors"] =
        json::object{{"connect: Connection refused", 1}, {"Status: genesis mismatch: remote 0x<d4>, local 0xab", 5}};
    const std::string html = render_html_report(report);
    EXPECT_NE(html.find("<dt>connections</dt><dd>70 attempts, 6 failed</dd>"), std::string::npos);
    EXPECT_NE(html.find("<dt>connect errors</dt><dd>5 × Status: genesis mismatch: remote 0x&lt;d4&gt;, local "
                        "0xab<br>1 × connect: Connection refused</dd>"),
              std::string::npos)
        << html.substr(html.find("<dt>connections</dt>"), 400);
    EXPECT_NE(html.find("6 connection attempts failed"), std::string::npos);  // the banner
}

TEST(HtmlReport, EscapesEveryTextFromTheReport) {
    json::object report = load_sample();
    const std::string evil = "<script>alert(\"x\")</script>";
    report["server"].as_object()["client_id"] = evil;
    report["server"].as_object()["enode"] = "enode://<script>@127.0.0.1:1";
    report["command"].as_array().push_back(json::value("\"><script>alert(1)</script>"));
    report["profiles"].as_array()[0].as_object()["name"] = "<b>bold</b> & \"quoted\"";
    report["thresholds"].as_array()[0].as_object()["expr"] = "<img src=x onerror=alert(1)>";
    report["failures"] = json::array{
        json::object{{"client", 12},
                     {"profile", "<i>besu</i>"},
                     {"request", json::object{{"origin", "0x<ab>"}, {"amount", 192}, {"skip", 0}, {"reverse", true}}},
                     {"reason", "header 3: <script>bad</script> & 'more'"}}};
    report["server_metrics"].as_object()["url"] = "http://x/\"><script>";
    const std::string html = render_html_report(report);
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("<img"), std::string::npos);
    EXPECT_EQ(html.find("<b>bold"), std::string::npos);
    EXPECT_EQ(html.find("<i>besu"), std::string::npos);
    EXPECT_NE(html.find("Load report: &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</h1>"), std::string::npos);
    EXPECT_NE(html.find("&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;"), std::string::npos);
    EXPECT_NE(html.find("data-profile=\"&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;\""), std::string::npos);
    EXPECT_NE(html.find("header 3: &lt;script&gt;bad&lt;/script&gt; &amp; &#39;more&#39;"), std::string::npos);
    EXPECT_NE(html.find("by hash 0x&lt;ab&gt;, 192 headers, skip 0, reverse"), std::string::npos);
    EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
    // The command line is shell-quoted, then escaped.
    EXPECT_NE(html.find("&#39;&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#39;"), std::string::npos);
}

TEST(HtmlReport, HtmlEscape) {
    EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
    EXPECT_EQ(html_escape("plain text"), "plain text");
    EXPECT_EQ(html_escape(""), "");
}

TEST(HtmlReport, EmptyObjectSaysNoData) {
    const std::string html = render_html_report(json::object{});
    EXPECT_NE(html.find("<strong>NO VERDICT</strong>"), std::string::npos);
    EXPECT_NE(html.find("no data: the report has no timeline"), std::string::npos);
    EXPECT_NE(html.find("no data: the report has no profiles"), std::string::npos);
    EXPECT_NE(html.find("no data: the report has neither profiles nor totals"), std::string::npos);
    EXPECT_NE(html.find("no data: the report has no failure list"), std::string::npos);
    EXPECT_NE(html.find("no data: the report has no thresholds"), std::string::npos);
    EXPECT_NE(html.find("no data: the server&#39;s metrics were not collected"), std::string::npos);
    EXPECT_NE(html.find("no data: the report does not hold the command line"), std::string::npos);
    EXPECT_EQ(html.find("<svg"), std::string::npos);
    EXPECT_TRUE(html.ends_with("</html>\n"));
}

TEST(HtmlReport, EmptySectionsAndNullServerMetrics) {
    json::object report = load_sample();
    report["timeline"] = json::array{};
    report["profiles"] = json::array{};
    report["failures"] = json::array{};
    report["thresholds"] = json::array{};
    report["server_metrics"] = nullptr;
    report["mode"] =
        json::object{{"loop", "open"}, {"target_rate", 2000}, {"achieved_rate", 1500.5}, {"shortfall", 0.25}};
    const std::string html = render_html_report(report);
    EXPECT_EQ(count_of(html, "no data: the report has no timeline"), 2u);
    EXPECT_NE(html.find("no data: the report has no profiles"), std::string::npos);
    EXPECT_NE(html.find("No thresholds were set."), std::string::npos);
    EXPECT_NE(html.find("no data: the server&#39;s metrics were not collected"), std::string::npos);
    EXPECT_NE(html.find("the target rate was missed by 25.0 %"), std::string::npos);
    EXPECT_NE(html.find("open loop, target 2000 requests/s"), std::string::npos);
    // The totals row stays.
    EXPECT_NE(html.find("<tr class=\"total\"><td>total</td>"), std::string::npos);
    EXPECT_EQ(html.find("<svg"), std::string::npos);
}

TEST(HtmlReport, MistypedAndPartialFieldsRender) {
    json::object report = load_sample();
    report["verified"] = "yes";
    report["totals"] = json::array{1, 2};
    report["clients"] = nullptr;
    report["command"] = json::array{"headerd", 7, nullptr};
    report["timeline"] = json::array{json::object{{"t", 1}, {"requests", 10}, {"p50_ms", nullptr}, {"p99_ms", 4.5}},
                                     json::object{{"t", 2}, {"requests", "many"}, {"p50_ms", 2.25}}, json::value(3),
                                     json::object{{"t", 4}, {"requests", 12}, {"p50_ms", 3.5}, {"p99_ms", 9}}};
    report["profiles"] = json::array{
        json::value(5), json::object{{"name", "no-histogram"}},
        json::object{{"name", "bad-buckets"},
                     {"histogram", json::array{json::object{{"le_ms", -1}, {"count", 3}}, json::value("x")}}},
        json::object{{"name", "gap"},
                     {"rtt_ms", json::object{{"p50", 0.3}, {"p99", 40}}},
                     {"histogram", json::array{json::object{{"le_ms", 0.2}, {"count", 4}},
                                               json::object{{"le_ms", 50}, {"count", 1}}}}}};
    report["failures"] = json::array{json::value("not an object")};
    report["thresholds"] = json::array{json::object{{"expr", "p99<1ms"}}};
    const std::string html = render_html_report(report);
    EXPECT_NE(html.find("<strong>NO VERDICT</strong>"), std::string::npos);
    EXPECT_NE(html.find("1 of 1 thresholds failed: p99&lt;1ms"), std::string::npos);
    // Missing values are null in the data and break the line.
    const json::array p50 = series_points(html, "p50_ms");
    ASSERT_EQ(p50.size(), 4u);
    EXPECT_TRUE(p50[0].as_array()[1].is_null());
    EXPECT_EQ(p50[1].as_array()[1].to_number<double>(), 2.25);
    EXPECT_EQ(p50[2].as_array()[0].to_number<double>(), 3);  // no "t": its position
    EXPECT_TRUE(p50[2].as_array()[1].is_null());
    EXPECT_TRUE(series_points(html, "requests")[1].as_array()[1].is_null());
    EXPECT_NE(html.find("d=\"M"), std::string::npos);
    EXPECT_EQ(count_of(html, "no data: no histogram for this profile"), 3u);
    const auto bars = histogram_bars(html);
    ASSERT_EQ(bars.size(), 1u);
    EXPECT_EQ(bars.at("gap"), (std::vector<std::pair<double, double>>{{0.2, 4}, {50, 1}}));
    EXPECT_NE(html.find("<td>#1</td>"), std::string::npos);  // a profile that is not an object
}

TEST(HtmlReport, FailingRunListsTheFirstFailures) {
    json::object report = load_sample();
    report["verified"] = false;
    json::array failures;
    for (int i = 0; i < 60; ++i) {
        failures.push_back(json::object{
            {"client", i},
            {"profile", "legacy"},
            {"request", json::object{{"origin", 4096 + i}, {"amount", 128}, {"skip", 3}, {"reverse", false}}},
            {"reason", "reply header " + std::to_string(i) + " is not the block asked for"}});
    }
    report["failures"] = std::move(failures);
    report["totals"].as_object()["verification_failures"] = 75;
    report["failures_total"] = 75;
    report["thresholds"].as_array().push_back(json::object{{"expr", "p99<50ms"}, {"ok", false}, {"value", "179ms"}});
    const std::string html = render_html_report(report);
    EXPECT_NE(html.find("<strong>FAIL</strong>"), std::string::npos);
    EXPECT_NE(html.find("data-verified=\"false\" data-thresholds-failed=\"1\""), std::string::npos);
    EXPECT_NE(html.find("75 verification failures"), std::string::npos);
    EXPECT_NE(html.find("1 of 4 thresholds failed: p99&lt;50ms (179ms)"), std::string::npos);
    EXPECT_NE(html.find("75 failures counted; the first 50 listed (the JSON report holds 60)."), std::string::npos);
    EXPECT_NE(html.find("<tr><td>50</td><td>49</td><td class=\"text\">legacy</td><td class=\"text mono wrap "
                        "request\">by number 4145, 128 headers, skip 3, forward</td>"),
              std::string::npos);
    EXPECT_EQ(html.find("<tr><td>51</td>"), std::string::npos);
    EXPECT_EQ(count_of(html, "is not the block asked for"), kFailuresShown);
}

TEST(HtmlReport, UnverifiedRunSaysWhyAndListsTextRequests) {
    json::object report = load_sample();
    report["verified"] = false;
    report["interrupted"] = true;
    report["reference"] = nullptr;
    json::object& totals = report["totals"].as_object();
    totals["lost"] = 3;
    totals["stale"] = 1;
    totals["verdict_penalties"] = 4;
    report["failures"] = json::array{json::object{{"client", 5},
                                                  {"profile", "probes"},
                                                  {"request", "id 77, by number 8191, 1 headers, skip 0, forward"},
                                                  {"reason", "no reply: timeout after 10 s"}}};
    report["failures_total"] = 4;
    const std::string html = render_html_report(report);
    EXPECT_NE(html.find("<strong>FAIL</strong><span>3 requests lost · 1 stale reply · 3 of 3 thresholds passed · the "
                        "run was interrupted</span>"),
              std::string::npos);
    EXPECT_NE(html.find("<dd>20 s (interrupted)</dd>"), std::string::npos);
    EXPECT_NE(html.find("<dt>reference chain</dt><dd>none</dd>"), std::string::npos);
    EXPECT_NE(html.find("4 failures counted; 1 listed."), std::string::npos);
    EXPECT_NE(html.find(">id 77, by number 8191, 1 headers, skip 0, forward</td>"), std::string::npos);
    EXPECT_NE(html.find("no reply: timeout after 10 s"), std::string::npos);
    // The totals row takes the penalties from the totals.
    EXPECT_NE(html.find("<td class=\"nz\">4</td><td class=\"text\">-</td></tr>"), std::string::npos);
}

TEST(HtmlReport, LongTimelineKeepsEveryPointWithoutDots) {
    json::object report = load_sample();
    json::array timeline;
    for (int t = 1; t <= 600; ++t) {
        timeline.push_back(json::object{{"t", t},
                                        {"clients", 64},
                                        {"requests", 1000 + t},
                                        {"headers", 190000 + t},
                                        {"bytes", 90000000},
                                        {"p50_ms", 40.5},
                                        {"p99_ms", 150.25},
                                        {"errors", t % 100 == 0 ? 1 : 0}});
    }
    report["timeline"] = std::move(timeline);
    const std::string html = render_html_report(report);
    const json::array requests = series_points(html, "requests");
    ASSERT_EQ(requests.size(), 600u);
    EXPECT_EQ(requests[599].as_array()[1].to_number<double>(), 1600);
    EXPECT_EQ(count_of(html, "<circle"), 0u);
    EXPECT_EQ(count_of(html, " s: 1 error</title>"), 6u);
}

TEST(HtmlReport, BodiesAndReceiptsHaveTheirTableChartAndFailures) {
    const json::object report = json::parse(R"({
      "schema": "headerd-load-report", "version": 1,
      "timeline": [{"t": 1, "requests": 70, "headers": 5120, "bodies": 4000, "receipt_lists": 1000, "errors": 0},
                   {"t": 2, "requests": 60, "headers": 4096, "bodies": 3000, "receipt_lists": 900, "errors": 0}],
      "profiles": [{"name": "geth-history", "clients": 1, "history": true, "messages": {
          "headers": {"requests": 10, "replies": 10, "items": 5120, "bytes": 2764800, "lost": 0,
                      "verification_failures": 0, "rtt_ms": {"p50": 1.0, "p99": 2.0, "max": 3.0}},
          "bodies": {"requests": 40, "replies": 40, "items": 4000, "bytes": 2000000, "transactions": 93,
                     "empty_replies": 0, "short_replies": 2, "lost": 0, "verification_failures": 0,
                     "rtt_ms": {"p50": 5.0, "p99": 6.5, "max": 7.0}},
          "receipts": {"requests": 20, "replies": 20, "items": 1000, "bytes": 300000, "receipts": 93,
                       "empty_replies": 1, "short_replies": 1, "lost": 0, "verification_failures": 1,
                       "rtt_ms": {"p50": 50.0, "p99": 60.0, "max": 70.0}}}},
                   {"name": "nethermind", "clients": 1, "history": false, "messages": {
          "headers": {"requests": 5, "replies": 5, "items": 960},
          "bodies": {"requests": 0}, "receipts": {"requests": 0}}}],
      "failures": [{"client": 0, "profile": "geth-history",
                    "request": {"id": 7, "message": "GetReceipts", "blocks": 3, "first": 172100, "last": 172140},
                    "reason": "receipt list 1 (block 172120): receipts do not match the header's receipts root"}],
      "verified": false})")
                                    .as_object();
    const std::string html = render_html_report(report);
    EXPECT_EQ(count_of(html, "<h2>Bodies and receipts</h2>"), 1u);
    // One row per message of the history profile; none for the header profile.
    EXPECT_NE(html.find("<tr><td>geth-history</td><td class=\"text\">GetBlockBodies</td><td>40</td><td>40</td>"
                        "<td>4,000</td><td>100</td>"),
              std::string::npos)
        << html;
    EXPECT_NE(html.find("<td class=\"text\">GetReceipts</td><td>20</td>"), std::string::npos);
    EXPECT_NE(html.find("<td class=\"text\">GetBlockHeaders</td><td>10</td>"), std::string::npos);
    EXPECT_EQ(html.find("<tr><td>nethermind</td><td class=\"text\">"), std::string::npos);
    EXPECT_EQ(series_points(html, "bodies"), json::parse("[[1,4000],[2,3000]]").as_array());
    EXPECT_EQ(series_points(html, "receipt_lists"), json::parse("[[1,1000],[2,900]]").as_array());
    EXPECT_NE(html.find("GetReceipts of 3 blocks 172100..172140"), std::string::npos);
    EXPECT_NE(html.find("receipt list 1 (block 172120): receipts do not match the header&#39;s receipts root"),
              std::string::npos);
    // A run of header profiles has neither the section nor the chart.
    const std::string plain = render_html_report(load_sample());
    EXPECT_EQ(plain.find("Bodies and receipts"), std::string::npos);
    EXPECT_EQ(plain.find("data-series=\"bodies\""), std::string::npos);
}

TEST(HtmlReport, CheckReport) {
    EXPECT_TRUE(check_report(json::value(load_sample())));
    const auto error_of = [](const json::value& v) {
        auto r = check_report(v);
        return r ? std::string() : r.error().message;
    };
    EXPECT_EQ(error_of(json::array{}), "not a JSON object");
    EXPECT_NE(error_of(json::object{{"version", 1}}).find("no \"schema\" field"), std::string::npos);
    EXPECT_NE(error_of(json::object{{"schema", "other"}, {"version", 1}}).find("schema \"other\""), std::string::npos);
    EXPECT_NE(error_of(json::object{{"schema", "headerd-load-report"}}).find("version"), std::string::npos);
    EXPECT_NE(error_of(json::object{{"schema", "headerd-load-report"}, {"version", 2}})
                  .find("report version 2 is not supported (this headerd reads version 1)"),
              std::string::npos);
}

}  // namespace
}  // namespace headerd::load
