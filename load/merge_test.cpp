#include "load/merge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/hex.hpp"
#include "load/runner.hpp"

namespace headerd::load {
namespace {

namespace json = boost::json;

constexpr double kStart = 1'796'000'000;  // the generators' window start, Unix seconds

// One generator's run: `clients` geth-skeleton clients and one besu client against one server,
// `seconds` long from kStart + `offset`, every RTT drawn from a log-normal distribution (seeded)
// and appended to `samples` too.
struct Generated {
    RunResult result;
    ReportContext ctx;
};

Generated generator_run(uint64_t seed, double offset, std::vector<uint64_t>* samples, int seconds = 5) {
    Generated g;
    RunResult& r = g.result;
    r.profile_specs = {find_profile("geth-skeleton"), find_profile("besu")};
    r.profiles.resize(2);
    r.seconds = seconds;
    r.server = ServerInfo{"enode://aa@127.0.0.1:30303", "headerd/v0.1.0", 68, 8191, Hash32{}};
    r.server->head_hash[0] = 0xa6;
    r.connect_attempts = 4;
    r.clients_connected_max = 4;
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> dist(13.5, 0.8);  // around 0.7 ms, a long tail
    for (int s = 1; s <= seconds; ++s) {
        TimelinePoint p;
        p.t = s;
        p.clients = 4;
        metrics::LatencyHistogram second;
        for (int i = 0; i < 400; ++i) {
            const auto v = static_cast<uint64_t>(dist(rng));
            ProfileStats& ps = r.profiles[i % 8 == 0 ? 1 : 0];
            ++ps.requests;
            ++ps.replies;
            ps.headers += 192;
            ps.bytes += 192 * 540;
            ps.rtt.record(v);
            MessageStats& m = ps.message(Message::kHeaders);
            ++m.requests;
            ++m.replies;
            m.items += 192;
            m.bytes += 192 * 540;
            m.rtt.record(v);
            second.record(v);
            ++p.requests;
            ++p.replies;
            p.headers += 192;
            if (samples != nullptr) samples->push_back(v);
        }
        p.p50_ms = to_ms(second.quantile(0.5));
        p.p99_ms = to_ms(second.quantile(0.99));
        p.rtt = second.snapshot();
        r.timeline.push_back(p);
    }
    r.profiles[0].clients = 3;
    r.profiles[1].clients = 1;
    r.profiles[1].drops = 1;
    r.profiles[1].verdict_reasons["drop: 5 timeouts"] = 1;
    r.profiles[1].errors["timeout"] = 5;
    r.profiles[1].lost = 5;
    ReportContext& c = g.ctx;
    c.command = {"headerd", "load", "--run-id", "r1"};
    c.started_at = "2026-12-05T14:00:00Z";
    c.run_id = "r1";
    c.start_at = "2026-12-05T14:00:00Z";
    c.window = {kStart + offset, kStart + offset + seconds};
    c.seed = seed;
    c.clients_requested = 4;
    c.network_id = 1;
    c.genesis[0] = 0xd4;
    c.load_cpu_seconds = 1.5;
    c.generator = {"0.1.0", "abc1234", fmt::format("host-{}", seed)};
    return g;
}

json::value report_of(const Generated& g, const std::vector<std::string>& thresholds = {}) {
    std::vector<ThresholdResult> checked;
    for (const auto& t : thresholds) checked.push_back({t, true, "-"});
    // Through text, as a file would carry it.
    return json::parse(json::serialize(build_report(g.result, g.ctx, checked)));
}

LoadedReport loaded(const json::value& doc, std::string name) {
    auto r = read_report(doc, std::move(name));
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? std::move(*r) : LoadedReport{};
}

std::string refusal(const std::vector<LoadedReport>& in) {
    auto m = merge_reports(in, {"headerd", "report", "--merge"}, {"0.1.0", "abc1234", "merger"});
    return m ? std::string("(merged)") : m.error().message;
}

TEST(ReadReport, WritesBackTheSameReport) {
    Generated g = generator_run(1, 0, nullptr);
    g.result.failures.push_back(FailureRecord{2, "besu", "GetBlockHeaders", "origin 5 amount 192", "5", 192, 0, false,
                                              77, std::nullopt, "reply 3 headers short"});
    g.result.failures_seen = 1;
    const json::value doc = report_of(g, {"p99<50ms"});
    const LoadedReport back = loaded(doc, "a.json");
    EXPECT_EQ(back.thresholds, std::vector<std::string>{"p99<50ms"});
    std::vector<ThresholdResult> checked{{"p99<50ms", true, "-"}};
    EXPECT_EQ(json::value(build_report(back.result, back.ctx, checked)), doc);
}

TEST(MergeReports, EqualsOneRunOfEverySample) {
    // Three generators of one run: the merged counts are the sums and the merged quantiles are
    // those of all the samples pooled, within the histogram's error (exact to the bucket).
    std::vector<uint64_t> pooled;
    std::vector<LoadedReport> in;
    uint64_t requests = 0;
    for (uint64_t i = 1; i <= 3; ++i) {
        const Generated g = generator_run(i, 0.01 * static_cast<double>(i), &pooled);
        for (const auto& p : g.result.profiles) requests += p.requests;
        in.push_back(loaded(report_of(g), fmt::format("g{}.json", i)));
    }
    auto m = merge_reports(in, {"headerd", "report", "--merge"}, {"0.1.0", "abc1234", "merger"});
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_TRUE(m->warnings.empty());
    ProfileStats total;
    for (const auto& p : m->result.profiles) total.merge(p);
    EXPECT_EQ(total.requests, requests);
    EXPECT_EQ(total.requests, pooled.size());
    EXPECT_EQ(total.rtt.count(), pooled.size());
    EXPECT_EQ(total.lost, 15u);
    EXPECT_EQ(total.drops, 3u);
    EXPECT_EQ(m->result.profiles[1].verdict_reasons.at("drop: 5 timeouts"), 3u);
    EXPECT_EQ(m->ctx.clients_requested, 12u);
    EXPECT_DOUBLE_EQ(*m->ctx.load_cpu_seconds, 4.5);
    std::sort(pooled.begin(), pooled.end());
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
        const auto rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * static_cast<double>(pooled.size()))));
        const uint64_t exact = pooled[rank - 1];
        const uint64_t got = total.rtt.quantile(q);
        EXPECT_GE(got, exact) << q;
        EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * (1 + 1.0 / 64)) << q;
    }
    EXPECT_EQ(total.rtt.max(), pooled.back());
    EXPECT_EQ(total.rtt.min(), pooled.front());
    // The timeline: five merged seconds, each the three generators' second.
    ASSERT_EQ(m->result.timeline.size(), 5u);
    for (const auto& p : m->result.timeline) {
        EXPECT_EQ(p.requests, 1200u);
        EXPECT_EQ(p.clients, 12u);
    }
    EXPECT_TRUE(m->merge.at("windows").at("synchronised").as_bool());
    EXPECT_EQ(m->merge.at("inputs").as_array().size(), 3u);
}

TEST(MergeReports, RefusesReportsOfAnotherRun) {
    const auto base = [](uint64_t seed) { return generator_run(seed, 0, nullptr); };
    const LoadedReport a = loaded(report_of(base(1)), "a.json");

    Generated g = base(2);
    g.ctx.genesis[0] = 0x25;
    EXPECT_NE(refusal({a, loaded(report_of(g), "b.json")}).find("different chains"), std::string::npos);
    g = base(2);
    g.ctx.network_id = 11155111;
    EXPECT_NE(refusal({a, loaded(report_of(g), "b.json")}).find("different chains"), std::string::npos);
    g = base(2);
    g.result.server->enode = "enode://bb@127.0.0.1:30303";
    EXPECT_NE(refusal({a, loaded(report_of(g), "b.json")}).find("different servers"), std::string::npos);
    g = base(2);
    g.ctx.eth = 69;  // load --eth 69
    EXPECT_NE(
        refusal({a, loaded(report_of(g), "b.json")}).find("different protocols (each profile's versions and eth/69)"),
        std::string::npos);
    g = base(2);
    g.result.server->eth_version = 69;  // the first session's version: it depends on that client's profile
    EXPECT_EQ(refusal({a, loaded(report_of(g), "b.json")}), "(merged)");
    g = base(2);
    g.ctx.run_id = "r2";
    EXPECT_NE(refusal({a, loaded(report_of(g), "b.json")}).find("different run ids (r1 and r2)"), std::string::npos);
    g = base(2);
    g.ctx.window = {kStart + 10, kStart + 15};  // after a's ended
    EXPECT_NE(refusal({a, loaded(report_of(g), "b.json")}).find("windows do not overlap"), std::string::npos);
    EXPECT_NE(refusal({a, a}).find("the same generator's report"), std::string::npos);

    // Overlapping but 2 s late: merged, and said.
    g = base(2);
    g.ctx.window = {kStart + 2, kStart + 7};
    auto m = merge_reports({a, loaded(report_of(g), "b.json")}, {}, {});
    ASSERT_TRUE(m);
    ASSERT_EQ(m->warnings.size(), 1u);
    EXPECT_NE(m->warnings[0].find("not synchronised"), std::string::npos);
    EXPECT_FALSE(m->merge.at("windows").at("synchronised").as_bool());
    EXPECT_EQ(m->result.timeline.size(), 7u);  // seconds 1..7 of the merged window
}

TEST(ReadReport, RefusesWhatIsNotAFullReport) {
    const json::value good = report_of(generator_run(1, 0, nullptr));
    const auto error = [](json::value doc) {
        auto r = read_report(doc, "x.json");
        return r ? std::string("(read)") : r.error().message;
    };
    json::value v = good;
    v.as_object().at("profiles").as_array()[0].as_object().erase("rtt_histogram");
    EXPECT_NE(error(v).find("x.json: profiles[0].rtt_histogram is missing: the report has no full-resolution"),
              std::string::npos);
    v = good;
    v.as_object().at("totals").as_object()["requests"] = "many";  // totals are recomputed: not read
    EXPECT_EQ(error(v), "(read)");
    v = good;
    v.as_object().at("profiles").as_array()[1].as_object()["requests"] = -3;
    EXPECT_NE(error(v).find("profiles[1].requests is not a count"), std::string::npos);
    v = good;
    v.as_object().at("profiles").as_array()[0].as_object()["name"] = "parity";
    EXPECT_NE(error(v).find("this build has no profile 'parity'"), std::string::npos);
    v = good;
    v.as_object().at("timeline").as_array()[0].as_object().at("rtt_histogram").as_object()["count"] = 1;
    EXPECT_NE(error(v).find("timeline[0].rtt_histogram: count 1 is not the buckets' sum"), std::string::npos);
    v = good;
    v.as_object().at("histogram_scheme").as_object()["sub_bits"] = 5;
    EXPECT_NE(error(v).find("histogram scheme"), std::string::npos);
    v = good;
    v.as_object()["server"] = nullptr;
    EXPECT_NE(error(v).find("never reached its server"), std::string::npos);
    v = good;
    v.as_object()["schema"] = "k6-summary";
    EXPECT_NE(error(v).find("x.json:"), std::string::npos);
}

}  // namespace
}  // namespace headerd::load
