#include "load/report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "core/hex.hpp"
#include "load/runner.hpp"

namespace headerd::load {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const ProfileSpec* profile(std::string_view name) {
    const ProfileSpec* p = find_profile(name);
    EXPECT_NE(p, nullptr) << name;
    return p;
}

uint64_t ns(double ms) { return static_cast<uint64_t>(ms * 1e6); }

// A clean 10 s run of three profiles:
//  geth-skeleton: 4 clients, 1000 replies of 512 headers, RTT 0.1, 0.2, ..., 100 ms;
//  besu: 2 clients, 500 replies of 192 headers, RTT 150 ms; one drop after 5 timeouts;
//  reth: 1 client, 100 replies of 1000 headers, RTT 2 ms (and one of 90 s, past the last bucket).
RunResult clean_run() {
    RunResult r;
    r.seconds = 10;
    r.profile_specs = {profile("geth-skeleton"), profile("besu"), profile("reth")};
    r.profiles.resize(3);

    ProfileStats& geth = r.profiles[0];
    geth.clients = 4;
    geth.requests = 1000;
    geth.replies = 1000;
    geth.headers = 512'000;
    geth.bytes = 512'000 * 540;
    for (int i = 1; i <= 1000; ++i) geth.rtt.record(ns(0.1 * i));

    ProfileStats& besu = r.profiles[1];
    besu.clients = 2;
    besu.requests = 500;
    besu.replies = 500;
    besu.headers = 96'000;
    besu.bytes = 96'000 * 540;
    besu.drops = 1;
    besu.penalties = 4;
    besu.verdict_reasons = {{"drop: 5 timeouts", 1}, {"penalty: timeout", 4}};
    for (int i = 0; i < 500; ++i) besu.rtt.record(ns(150));

    ProfileStats& reth = r.profiles[2];
    reth.clients = 1;
    reth.requests = 101;
    reth.replies = 101;
    reth.headers = 101'000;
    reth.bytes = 101'000 * 540;
    for (int i = 0; i < 100; ++i) reth.rtt.record(ns(2));
    reth.rtt.record(ns(90'000));

    r.timeline = {TimelinePoint{1, 7, 160, 160, 70'000, 37'800'000, 0, 50.5, 200.1, 0, 0, {}},
                  TimelinePoint{2, 7, 161, 161, 70'100, 37'854'000, 0, 50.4, 199.9, 0, 0, {}},
                  TimelinePoint{3, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, {}}};  // a second without replies
    r.connect_attempts = 8;
    r.connect_failures = 1;
    r.connect_errors = {{"connect: Connection refused", 1}};
    r.clients_connected_max = 7;
    return r;
}

uint64_t total(const RunResult& r, uint64_t ProfileStats::*field) {
    uint64_t n = 0;
    for (const auto& p : r.profiles) n += p.*field;
    return n;
}

// ---- parse_threshold ----------------------------------------------------------------------------

TEST(LoadThresholds, ParsesLatencyCountsRatesAndVerified) {
    auto t = parse_threshold("p99<50ms");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->text, "p99<50ms");
    EXPECT_EQ(t->profile, "");
    EXPECT_EQ(t->metric, "p99");
    EXPECT_EQ(t->op, "<");
    EXPECT_DOUBLE_EQ(t->value, 50);

    t = parse_threshold("p99 < 0.05s");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->text, "p99 < 0.05s");
    EXPECT_EQ(t->profile, "");
    EXPECT_EQ(t->metric, "p99");
    EXPECT_DOUBLE_EQ(t->value, 50);  // milliseconds

    t = parse_threshold("p50<=500us");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->op, "<=");
    EXPECT_DOUBLE_EQ(t->value, 0.5);

    t = parse_threshold("errors==0");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->metric, "errors");
    EXPECT_EQ(t->op, "==");
    EXPECT_DOUBLE_EQ(t->value, 0);

    t = parse_threshold("verified");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->metric, "verified");
    EXPECT_EQ(t->op, "==");
    EXPECT_DOUBLE_EQ(t->value, 1);

    t = parse_threshold("besu.p99<1s");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->profile, "besu");
    EXPECT_EQ(t->metric, "p99");
    EXPECT_DOUBLE_EQ(t->value, 1000);

    t = parse_threshold("geth-skeleton.p999 <= 1.5s");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->profile, "geth-skeleton");
    EXPECT_EQ(t->metric, "p999");
    EXPECT_DOUBLE_EQ(t->value, 1500);

    t = parse_threshold("hps>=1000");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->metric, "hps");
    EXPECT_EQ(t->op, ">=");
    EXPECT_DOUBLE_EQ(t->value, 1000);

    for (const char* ok : {"p90>1ms", "max!=0ms", "mean<2.5ms", "lost==0", "stale==0", "verification_failures==0",
                           "drops<1", "requests>100", "headers>=1e6", "rps>10.5", "reth.errors<=3"}) {
        auto x = parse_threshold(ok);
        EXPECT_TRUE(x) << ok << ": " << x.error().message;
    }
}

void expect_rejected(const std::string& text, const std::string& why) {
    auto t = parse_threshold(text);
    ASSERT_FALSE(t) << "'" << text << "' was accepted";
    EXPECT_NE(t.error().message.find("'" + text + "'"), std::string::npos) << t.error().message;
    EXPECT_NE(t.error().message.find(why), std::string::npos) << t.error().message << "\nwanted: " << why;
}

TEST(LoadThresholds, RejectsWithMessagesNamingTheProblem) {
    expect_rejected("p99<50", "give a unit (us, ms or s)");
    expect_rejected("foo<1", "unknown metric 'foo'");
    expect_rejected("p99~1ms", "expected METRIC OP VALUE or 'verified'");
    expect_rejected("", "expected METRIC OP VALUE or 'verified'");
    expect_rejected("errors=0", "unknown operator '='");
    expect_rejected("p99!1ms", "unknown operator '!'");
    expect_rejected("p99<ms", "'' is not a number");
    expect_rejected("p99<fastms", "'fast' is not a number");
    expect_rejected("errors==0ms", "'0ms' is not a number");
    expect_rejected("hps>=1k", "'1k' is not a number");
    expect_rejected("besu.verify", "expected METRIC OP VALUE or 'verified'");
    expect_rejected("besu.<1ms", "unknown metric ''");
}

// ---- check_thresholds and verified --------------------------------------------------------------

std::vector<ThresholdResult> check(const RunResult& r, const std::vector<std::string>& texts) {
    std::vector<Threshold> ts;
    for (const auto& text : texts) {
        auto t = parse_threshold(text);
        EXPECT_TRUE(t) << text << ": " << t.error().message;
        if (t) ts.push_back(*t);
    }
    return check_thresholds(r, ts);
}

TEST(LoadThresholds, CheckedAgainstTotalsAndProfiles) {
    const RunResult r = clean_run();
    // 1601 replies: the top 1 % are besu's 150 ms and reth's 90 s.
    const std::vector<std::pair<std::string, bool>> cases{
        {"p99<50ms", false},
        {"p99<1s", true},
        {"p50<80ms", true},  // about 70 ms
        {"p50<60ms", false},
        {"max<=60s", false},
        {"errors==0", true},
        {"lost==0", true},
        {"verified", true},
        {"drops<=1", true},
        {"drops==0", false},
        {"requests==1601", true},
        {"hps>=1000", true},  // 709,000 headers in 10 s
        {"hps>=100000", false},
        {"rps>160", true},  // 160.1
        {"rps>160.1", false},
        {"besu.p99<1s", true},
        {"besu.p99<100ms", false},
        {"besu.drops==1", true},
        {"reth.p50<=2.1ms", true},
        {"reth.max<1s", false},
        {"geth-skeleton.p50<40ms", false},  // 50 ms
        {"geth-skeleton.p50<60ms", true},
        {"geth-skeleton.requests==1000", true},
    };
    std::vector<std::string> texts;
    for (const auto& [text, ok] : cases) texts.push_back(text);
    const auto results = check(r, texts);
    ASSERT_EQ(results.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(results[i].expr, cases[i].first);
        EXPECT_EQ(results[i].ok, cases[i].second) << cases[i].first << " measured " << results[i].value;
        EXPECT_FALSE(results[i].value.empty()) << cases[i].first;
    }
    // The measured values, with their units.
    const auto values = check(r, {"verified", "hps>=1000", "besu.p99<1s", "errors==0"});
    EXPECT_EQ(values[0].value, "true");
    EXPECT_EQ(values[1].value, "70900");
    EXPECT_TRUE(values[2].value.ends_with("ms")) << values[2].value;
    EXPECT_EQ(values[2].value, "150.0ms");
    EXPECT_EQ(values[3].value, "0");
}

TEST(LoadThresholds, AProfileNotInTheRunFails) {
    const RunResult r = clean_run();
    for (const char* text : {"erigon.p99<1s", "nosuch.errors==0", "erigon.verified"}) {
        const auto res = check(r, {text});
        ASSERT_EQ(res.size(), 1u);
        EXPECT_FALSE(res[0].ok) << text;
        EXPECT_EQ(res[0].value, "no such profile in this run") << text;
    }
}

TEST(LoadThresholds, ErrorsAndVerificationFailuresFailTheirThresholds) {
    RunResult r = clean_run();
    r.profiles[1].errors["timeout"] = 2;
    r.profiles[2].errors["closed"] = 1;
    r.profiles[2].errors["verification"] = 1;
    r.profiles[2].verification_failures = 1;
    r.failures_seen = 1;
    const auto res = check(r, {"errors==0", "errors<=4", "reth.errors==2", "besu.errors==2", "verified",
                               "verification_failures==0", "besu.verified"});
    ASSERT_EQ(res.size(), 7u);
    EXPECT_FALSE(res[0].ok);
    EXPECT_EQ(res[0].value, "4");
    EXPECT_TRUE(res[1].ok);
    EXPECT_TRUE(res[2].ok);
    EXPECT_TRUE(res[3].ok);
    EXPECT_FALSE(res[4].ok);
    EXPECT_EQ(res[4].value, "false");
    EXPECT_FALSE(res[5].ok);
    EXPECT_FALSE(res[6].ok);  // verified is the whole run's
}

TEST(LoadReport, VerifiedOnlyWhenEveryReplyVerified) {
    EXPECT_TRUE(verified(clean_run()));
    EXPECT_FALSE(verified(RunResult{}));
    {
        RunResult r = clean_run();
        r.profiles[1].verification_failures = 1;
        EXPECT_FALSE(verified(r));
    }
    {
        RunResult r = clean_run();
        r.profiles[2].lost = 1;
        EXPECT_FALSE(verified(r));
    }
    {
        RunResult r = clean_run();
        r.profiles[0].stale = 1;
        EXPECT_FALSE(verified(r));
    }
    {
        RunResult r = clean_run();
        r.failures_seen = 1;
        EXPECT_FALSE(verified(r));
    }
    {
        RunResult r = clean_run();
        for (auto& p : r.profiles) p.replies = 0;
        EXPECT_FALSE(verified(r));
    }
    {
        // Errors that are no verification failure (a closed connection) do not make it unverified.
        RunResult r = clean_run();
        r.profiles[0].errors["closed"] = 1;
        EXPECT_TRUE(verified(r));
    }
}

// ---- build_report -------------------------------------------------------------------------------

void expect_keys(const json::object& o, std::initializer_list<const char*> keys, const std::string& where) {
    for (const char* k : keys) EXPECT_TRUE(o.contains(k)) << where << " has no '" << k << "'";
}

ReportContext context() {
    ReportContext ctx;
    ctx.command = {"headerd", "load", "--clients", "7", "--json", "out.json"};
    ctx.started_at = "2026-12-01T10:00:00Z";
    ctx.seed = 42;
    ctx.clients_requested = 7;
    ctx.reference = "tests/data/mainnet-00000-5ec1ffb8.era1";
    ctx.server_metrics = json::object{{"url", "http://127.0.0.1:9090/metrics"}, {"cpu_seconds", 1.5}};
    ctx.network_id = 1;
    ctx.genesis = *hash_from_hex("0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3");
    return ctx;
}

std::string text(const json::value& v) { return v.is_string() ? std::string(v.get_string()) : json::serialize(v); }

TEST(LoadReport, HasEveryDocumentedKey) {
    RunResult r = clean_run();
    r.server = ServerInfo{"enode://abcd@127.0.0.1:30303", "headerd/v0.1.0", 69, 8191, {}};
    r.server->head_hash.fill(0x11);
    FailureRecord failure;
    failure.client = 3;
    failure.profile = "besu";
    failure.request = "id 9, by number 100, 192 headers, skip 0, reverse";
    failure.origin = "100";
    failure.amount = 192;
    failure.skip = 0;
    failure.reverse = true;
    failure.id = 9;
    failure.reason = "header 2 is block 98, expected block 99";
    r.failures.push_back(failure);
    failure.client = 5;
    failure.profile = "erigon";
    failure.origin = "0x" + std::string(64, 'a');
    failure.request = "id 10, by hash " + failure.origin + ", 192 headers, skip 0, reverse";
    failure.id = 10;
    failure.reason = "empty reply for hash origin " + failure.origin + " on the server's chain";
    r.failures.push_back(failure);
    r.failures_seen = 2;
    r.profiles[1].verification_failures = 2;
    r.profiles[1].errors["verification"] = 2;
    const auto thresholds = check(r, {"p99<1s", "verified"});
    // Through text and back, as a reader sees it.
    const json::object o = json::parse(json::serialize(build_report(r, context(), thresholds))).as_object();

    expect_keys(o,
                {"schema", "version", "command", "started_at", "duration_s", "seed", "mode", "server", "reference",
                 "clients", "totals", "profiles", "timeline", "failures", "failures_total", "server_metrics",
                 "thresholds", "interrupted", "verified"},
                "report");
    EXPECT_EQ(text(o.at("schema")), "headerd-load-report");
    EXPECT_EQ(o.at("version").to_number<double>(), 1);
    ASSERT_EQ(o.at("command").as_array().size(), 6u);
    EXPECT_EQ(text(o.at("command").as_array()[0]), "headerd");
    EXPECT_EQ(text(o.at("command").as_array()[5]), "out.json");
    EXPECT_EQ(text(o.at("started_at")), "2026-12-01T10:00:00Z");
    EXPECT_EQ(o.at("duration_s").to_number<double>(), 10);
    EXPECT_EQ(o.at("seed").to_number<double>(), 42);
    EXPECT_EQ(text(o.at("reference")), "tests/data/mainnet-00000-5ec1ffb8.era1");
    EXPECT_EQ(text(o.at("server_metrics").at("url")), "http://127.0.0.1:9090/metrics");
    EXPECT_EQ(o.at("interrupted").as_bool(), false);
    EXPECT_EQ(o.at("verified").as_bool(), false);
    EXPECT_EQ(o.at("failures_total").to_number<double>(), 2);

    const json::object& mode = o.at("mode").as_object();
    expect_keys(mode, {"loop", "target_rate", "achieved_rate", "shortfall"}, "mode");
    EXPECT_EQ(text(mode.at("loop")), "closed");
    EXPECT_TRUE(mode.at("target_rate").is_null());
    EXPECT_TRUE(mode.at("shortfall").is_null());
    EXPECT_DOUBLE_EQ(mode.at("achieved_rate").to_number<double>(), 160.1);

    const json::object& server = o.at("server").as_object();
    expect_keys(server, {"enode", "client_id", "eth_version", "network_id", "genesis", "head"}, "server");
    EXPECT_EQ(text(server.at("client_id")), "headerd/v0.1.0");
    EXPECT_EQ(server.at("eth_version").to_number<double>(), 69);
    EXPECT_EQ(server.at("network_id").to_number<double>(), 1);
    EXPECT_EQ(text(server.at("genesis")), "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3");
    EXPECT_EQ(server.at("head").at("number").to_number<double>(), 8191);
    EXPECT_EQ(text(server.at("head").at("hash")), "0x" + std::string(64, '1'));

    const json::object& clients = o.at("clients").as_object();
    expect_keys(clients, {"requested", "connected_max", "connect_attempts", "connect_failures", "connect_errors"},
                "clients");
    EXPECT_EQ(clients.at("requested").to_number<double>(), 7);
    EXPECT_EQ(clients.at("connected_max").to_number<double>(), 7);
    EXPECT_EQ(clients.at("connect_attempts").to_number<double>(), 8);
    EXPECT_EQ(clients.at("connect_failures").to_number<double>(), 1);
    const json::object& connect_errors = clients.at("connect_errors").as_object();
    ASSERT_EQ(connect_errors.size(), 1u);
    EXPECT_EQ(connect_errors.at("connect: Connection refused").to_number<double>(), 1);

    const json::object& totals = o.at("totals").as_object();
    expect_keys(totals,
                {"requests", "replies", "headers", "bytes", "lost", "stale", "errors", "verification_failures",
                 "rtt_ms", "verdict_drops", "verdict_penalties"},
                "totals");
    EXPECT_EQ(totals.at("requests").to_number<double>(), total(r, &ProfileStats::requests));
    EXPECT_EQ(totals.at("replies").to_number<double>(), total(r, &ProfileStats::replies));
    EXPECT_EQ(totals.at("headers").to_number<double>(), total(r, &ProfileStats::headers));
    EXPECT_EQ(totals.at("bytes").to_number<double>(), total(r, &ProfileStats::bytes));
    EXPECT_EQ(totals.at("verification_failures").to_number<double>(), 2);
    EXPECT_EQ(totals.at("verdict_drops").to_number<double>(), 1);
    EXPECT_EQ(totals.at("verdict_penalties").to_number<double>(), 4);
    const json::object& errors = totals.at("errors").as_object();
    expect_keys(errors, {"timeout", "closed", "rejected", "verification", "connect"}, "totals.errors");
    EXPECT_EQ(errors.at("verification").to_number<double>(), 2);
    EXPECT_EQ(errors.at("timeout").to_number<double>(), 0);
    const json::object& rtt = totals.at("rtt_ms").as_object();
    expect_keys(rtt, {"p50", "p90", "p99", "p999", "max", "mean"}, "totals.rtt_ms");
    EXPECT_DOUBLE_EQ(rtt.at("max").to_number<double>(), 90'000);
    EXPECT_LE(rtt.at("p50").to_number<double>(), rtt.at("p90").to_number<double>());
    EXPECT_LE(rtt.at("p90").to_number<double>(), rtt.at("p99").to_number<double>());
    EXPECT_LE(rtt.at("p99").to_number<double>(), rtt.at("p999").to_number<double>());
    EXPECT_LE(rtt.at("p999").to_number<double>(), rtt.at("max").to_number<double>());

    const json::array& profiles = o.at("profiles").as_array();
    ASSERT_EQ(profiles.size(), 3u);
    const std::vector<double>& bounds = report_bucket_bounds_ms();
    for (size_t i = 0; i < profiles.size(); ++i) {
        const json::object& p = profiles[i].as_object();
        const std::string name(r.profile_specs[i]->name);
        SCOPED_TRACE(name);
        expect_keys(p,
                    {"name", "imitates", "clients", "requests", "replies", "headers", "bytes", "lost", "stale",
                     "errors", "verification_failures", "rtt_ms", "verdicts", "histogram"},
                    "profile");
        EXPECT_EQ(text(p.at("name")), name);
        EXPECT_EQ(text(p.at("imitates")), r.profile_specs[i]->imitates);
        EXPECT_EQ(p.at("clients").to_number<double>(), r.profiles[i].clients);
        EXPECT_EQ(p.at("requests").to_number<double>(), r.profiles[i].requests);
        expect_keys(p.at("errors").as_object(), {"timeout", "closed", "rejected", "verification", "connect"},
                    "profile errors");
        expect_keys(p.at("rtt_ms").as_object(), {"p50", "p90", "p99", "p999", "max", "mean"}, "profile rtt_ms");
        const json::object& verdicts = p.at("verdicts").as_object();
        expect_keys(verdicts, {"drops", "penalties", "reasons"}, "verdicts");
        EXPECT_EQ(verdicts.at("drops").to_number<double>(), r.profiles[i].drops);
        EXPECT_EQ(verdicts.at("penalties").to_number<double>(), r.profiles[i].penalties);
        EXPECT_EQ(verdicts.at("reasons").as_object().size(), r.profiles[i].verdict_reasons.size());
        for (const auto& [reason, n] : r.profiles[i].verdict_reasons) {
            EXPECT_EQ(verdicts.at("reasons").at(reason).to_number<double>(), n) << reason;
        }
        // The histogram: ascending bounds of the ladder, counts adding up to the replies recorded.
        double sum = 0;
        double previous = 0;
        for (const json::value& b : p.at("histogram").as_array()) {
            const json::object& bucket = b.as_object();
            expect_keys(bucket, {"le_ms", "count"}, "histogram bucket");
            const double le = bucket.at("le_ms").to_number<double>();
            EXPECT_GT(le, previous);
            previous = le;
            EXPECT_NE(std::find(bounds.begin(), bounds.end(), le), bounds.end()) << le;
            EXPECT_GT(bucket.at("count").to_number<double>(), 0);
            sum += bucket.at("count").to_number<double>();
        }
        EXPECT_EQ(sum, static_cast<double>(r.profiles[i].rtt.count()));
        EXPECT_EQ(sum, static_cast<double>(r.profiles[i].replies));
    }
    EXPECT_EQ(profiles[1].at("verdicts").at("reasons").at("drop: 5 timeouts").to_number<double>(), 1);
    // besu's 500 replies of 150 ms: one bucket, le 200 ms.
    ASSERT_EQ(profiles[1].at("histogram").as_array().size(), 1u);
    EXPECT_EQ(profiles[1].at("histogram").as_array()[0].at("le_ms").to_number<double>(), 200);
    EXPECT_EQ(profiles[1].at("histogram").as_array()[0].at("count").to_number<double>(), 500);

    const json::array& timeline = o.at("timeline").as_array();
    ASSERT_EQ(timeline.size(), 3u);
    expect_keys(timeline[0].as_object(),
                {"t", "clients", "requests", "replies", "headers", "bytes", "errors", "p50_ms", "p99_ms"}, "timeline");
    EXPECT_EQ(timeline[1].at("t").to_number<double>(), 2);
    EXPECT_EQ(timeline[1].at("headers").to_number<double>(), 70'100);
    EXPECT_DOUBLE_EQ(timeline[1].at("p99_ms").to_number<double>(), 199.9);
    // No replies in a second: no latency (null, not 0).
    EXPECT_TRUE(timeline[2].at("p50_ms").is_null()) << timeline[2];
    EXPECT_TRUE(timeline[2].at("p99_ms").is_null()) << timeline[2];

    const json::array& failures = o.at("failures").as_array();
    ASSERT_EQ(failures.size(), 2u);
    expect_keys(failures[0].as_object(), {"client", "profile", "request", "reason"}, "failure");
    EXPECT_EQ(failures[0].at("client").to_number<double>(), 3);
    EXPECT_EQ(text(failures[0].at("profile")), "besu");
    EXPECT_EQ(text(failures[0].at("reason")), "header 2 is block 98, expected block 99");
    const json::object& request = failures[0].at("request").as_object();
    expect_keys(request, {"origin", "amount", "skip", "reverse"}, "failure request");
    EXPECT_EQ(request.at("origin").to_number<double>(), 100);
    EXPECT_EQ(request.at("amount").to_number<double>(), 192);
    EXPECT_EQ(request.at("skip").to_number<double>(), 0);
    EXPECT_EQ(request.at("reverse").as_bool(), true);
    EXPECT_EQ(text(failures[1].at("request").at("origin")), "0x" + std::string(64, 'a'));
    EXPECT_EQ(text(failures[1].at("profile")), "erigon");

    const json::array& th = o.at("thresholds").as_array();
    ASSERT_EQ(th.size(), 2u);
    expect_keys(th[0].as_object(), {"expr", "ok", "value"}, "threshold");
    EXPECT_EQ(text(th[0].at("expr")), "p99<1s");
    EXPECT_EQ(th[0].at("ok").as_bool(), true);
    EXPECT_EQ(text(th[1].at("expr")), "verified");
    EXPECT_EQ(th[1].at("ok").as_bool(), false);
    EXPECT_EQ(text(th[1].at("value")), "false");
}

TEST(LoadReport, OpenLoopModeAndAbsentContext) {
    RunResult r = clean_run();
    r.interrupted = true;
    ReportContext ctx;
    ctx.target_rate = 320.2;
    const json::object o = build_report(r, ctx, {});
    const json::object& mode = o.at("mode").as_object();
    EXPECT_EQ(text(mode.at("loop")), "open");
    EXPECT_DOUBLE_EQ(mode.at("target_rate").to_number<double>(), 320.2);
    EXPECT_NEAR(mode.at("shortfall").to_number<double>(), 0.5, 1e-9);  // 160.1 of 320.2 per second
    EXPECT_TRUE(o.at("server").is_null());
    EXPECT_TRUE(o.at("reference").is_null());
    EXPECT_TRUE(o.at("server_metrics").is_null());
    EXPECT_TRUE(o.at("thresholds").as_array().empty());
    EXPECT_TRUE(o.at("failures").as_array().empty());
    EXPECT_EQ(o.at("interrupted").as_bool(), true);
    EXPECT_EQ(o.at("verified").as_bool(), true);

    // Faster than the target: no shortfall.
    ctx.target_rate = 100;
    EXPECT_DOUBLE_EQ(build_report(r, ctx, {}).at("mode").at("shortfall").to_number<double>(), 0);

    // An empty run.
    const json::object empty = build_report(RunResult{}, ReportContext{}, {});
    EXPECT_EQ(empty.at("mode").at("achieved_rate").to_number<double>(), 0);
    EXPECT_TRUE(empty.at("profiles").as_array().empty());
    EXPECT_EQ(empty.at("totals").at("requests").to_number<double>(), 0);
    EXPECT_EQ(empty.at("verified").as_bool(), false);
}

TEST(LoadReport, BucketBoundsAreTheOneTwoFiveLadder) {
    const std::vector<double>& b = report_bucket_bounds_ms();
    ASSERT_GE(b.size(), 10u);
    EXPECT_DOUBLE_EQ(b.front(), 0.05);
    EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
    EXPECT_EQ(std::adjacent_find(b.begin(), b.end()), b.end());
    for (double expected : {0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0, 1000.0, 10'000.0}) {
        EXPECT_NE(std::find(b.begin(), b.end(), expected), b.end()) << expected;
    }
    EXPECT_LE(b.back(), 60'000);
}

// ---- summary_table ------------------------------------------------------------------------------

TEST(LoadReport, SummaryTableListsEveryProfileAndATotal) {
    RunResult r = clean_run();
    r.profiles[2].errors["timeout"] = 3;
    const std::string table = summary_table(r);
    std::vector<std::string> lines;
    for (size_t at = 0; at < table.size();) {
        const size_t nl = table.find('\n', at);
        lines.push_back(table.substr(at, nl - at));
        at = nl == std::string::npos ? table.size() : nl + 1;
    }
    ASSERT_GE(lines.size(), 5u);
    EXPECT_TRUE(lines[0].starts_with("profile")) << lines[0];
    for (const char* column : {"clients", "requests", "headers", "p50 ms", "p99 ms", "errors", "lost", "drops"}) {
        EXPECT_NE(lines[0].find(column), std::string::npos) << column;
    }
    EXPECT_TRUE(lines[1].starts_with("geth-skeleton ")) << lines[1];
    EXPECT_TRUE(lines[2].starts_with("besu ")) << lines[2];
    EXPECT_TRUE(lines[3].starts_with("reth ")) << lines[3];
    EXPECT_TRUE(lines[4].starts_with("total ")) << lines[4];
    // The total row: 7 clients, 1601 requests, 709000 headers, 3 errors, 1 drop.
    EXPECT_NE(lines[4].find(" 7 "), std::string::npos) << lines[4];
    EXPECT_NE(lines[4].find(" 1601 "), std::string::npos) << lines[4];
    EXPECT_NE(lines[4].find(" 709000 "), std::string::npos) << lines[4];
    EXPECT_NE(lines[1].find(" 512000 "), std::string::npos) << lines[1];
    // Verdict reasons and errors under the table.
    EXPECT_NE(table.find("besu would drop: 5 timeouts (1 times)"), std::string::npos) << table;
    EXPECT_NE(table.find("besu would penalty: timeout (4 times)"), std::string::npos) << table;
    EXPECT_NE(table.find("reth errors: timeout 3"), std::string::npos) << table;
    // Why connections failed, each reason with its count.
    EXPECT_NE(table.find("  connect failed 1 times: connect: Connection refused\n"), std::string::npos) << table;
}

// A history profile's run: each request message counted apart, in the JSON report, the table,
// the thresholds and the failures.
TEST(LoadReport, BodiesAndReceiptsAreReportedPerMessage) {
    RunResult r;
    r.seconds = 2;
    r.profile_specs = {profile("geth-history")};
    r.profiles.resize(1);
    ProfileStats& s = r.profiles[0];
    s.clients = 1;
    MessageStats& h = s.message(Message::kHeaders);
    MessageStats& b = s.message(Message::kBodies);
    MessageStats& rc = s.message(Message::kReceipts);
    h.requests = h.replies = 10;
    h.items = s.headers = 5120;
    b.requests = b.replies = 40;
    b.items = 4000;
    b.bytes = 2'000'000;
    b.receipts = 93;
    b.short_replies = 2;
    rc.requests = rc.replies = 20;
    rc.items = 1000;
    rc.empty = 1;
    rc.verification_failures = 1;
    for (int i = 0; i < 10; ++i) h.rtt.record(ns(1));
    for (int i = 0; i < 40; ++i) b.rtt.record(ns(5));
    for (int i = 0; i < 20; ++i) rc.rtt.record(ns(50));
    s.requests = s.replies = 70;
    s.rtt.merge(h.rtt);
    s.rtt.merge(b.rtt);
    s.rtt.merge(rc.rtt);
    s.verification_failures = 1;
    FailureRecord f;
    f.profile = "geth-history";
    f.message = "GetReceipts";
    f.request = "id 7, GetReceipts of 3 blocks 172100..172140";
    f.amount = 3;
    f.origin = "172100";
    f.blocks = std::pair<uint64_t, uint64_t>{172100, 172140};
    f.id = 7;
    f.reason = "receipt list 1 (block 172120): receipts do not match the header's receipts root";
    r.failures.push_back(f);
    r.failures_seen = 1;
    r.timeline = {TimelinePoint{1, 1, 70, 70, 5120, 3'000'000, 0, 1, 50, 4000, 1000, {}}};

    const auto thresholds =
        check_thresholds(r, {*parse_threshold("bodies_p99<10ms"), *parse_threshold("geth-history.receipts_p99<10ms"),
                             *parse_threshold("bodies>=4000"), *parse_threshold("receipt_lists==1000")});
    ASSERT_EQ(thresholds.size(), 4u);
    EXPECT_TRUE(thresholds[0].ok) << thresholds[0].value;
    EXPECT_FALSE(thresholds[1].ok) << thresholds[1].value;
    EXPECT_TRUE(thresholds[2].ok && thresholds[3].ok);

    const json::object o = json::parse(json::serialize(build_report(r, ReportContext{}, thresholds))).as_object();
    const json::object& totals = o.at("totals").as_object();
    EXPECT_EQ(totals.at("bodies").as_int64(), 4000);
    EXPECT_EQ(totals.at("receipt_lists").as_int64(), 1000);
    const json::object& p = o.at("profiles").as_array()[0].as_object();
    EXPECT_TRUE(p.at("history").as_bool());
    const json::object& messages = p.at("messages").as_object();
    ASSERT_EQ(messages.size(), 3u);
    const json::object& bodies = messages.at("bodies").as_object();
    EXPECT_EQ(bodies.at("requests").as_int64(), 40);
    EXPECT_EQ(bodies.at("items").as_int64(), 4000);
    EXPECT_EQ(bodies.at("transactions").as_int64(), 93);
    EXPECT_EQ(bodies.at("short_replies").as_int64(), 2);
    EXPECT_GT(bodies.at("rtt_ms").as_object().at("p99").as_double(), 4.9);
    const json::object& receipts = messages.at("receipts").as_object();
    EXPECT_EQ(receipts.at("empty_replies").as_int64(), 1);
    EXPECT_EQ(receipts.at("verification_failures").as_int64(), 1);
    EXPECT_GT(receipts.at("rtt_ms").as_object().at("p50").as_double(), 49);
    EXPECT_FALSE(messages.at("headers").as_object().contains("empty_replies"));
    const json::object& timeline = o.at("timeline").as_array()[0].as_object();
    EXPECT_EQ(timeline.at("bodies").as_int64(), 4000);
    EXPECT_EQ(timeline.at("receipt_lists").as_int64(), 1000);
    const json::object& request = o.at("failures").as_array()[0].as_object().at("request").as_object();
    EXPECT_EQ(request.at("message").as_string(), "GetReceipts");
    EXPECT_EQ(request.at("blocks").as_int64(), 3);
    EXPECT_EQ(request.at("first").as_int64(), 172100);
    EXPECT_EQ(request.at("last").as_int64(), 172140);
    EXPECT_FALSE(request.contains("origin"));
    EXPECT_FALSE(o.at("verified").as_bool());

    const std::string table = summary_table(r);
    EXPECT_TRUE(table.starts_with("profile      ")) << table;  // the name column fits "geth-history"
    EXPECT_NE(table.find("  geth-history GetBlockBodies: 40 requests, 4000 bodies (2.0 MB; 93 transactions), p50 "),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("  geth-history GetReceipts: 20 requests, 1000 receipt lists (0.0 MB; 0 receipts), p50 "),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("; 1 empty, 0 short, 1 failed verification, 0 lost"), std::string::npos) << table;
}

// ---- parse_mix and assign_profiles --------------------------------------------------------------

TEST(LoadMix, MixGivesEveryProfileWithItsWeight) {
    // `mix`: the header profiles; `history`: the ones that fetch bodies and receipts.
    for (const bool history : {false, true}) {
        auto mix = parse_mix(history ? "history" : "mix");
        ASSERT_TRUE(mix) << mix.error().message;
        std::vector<const ProfileSpec*> expected;
        for (const ProfileSpec& p : profiles()) {
            if (p.history() == history) expected.push_back(&p);
        }
        ASSERT_EQ(mix->size(), expected.size());
        EXPECT_EQ(expected.size(), history ? 4u : 9u);
        double sum = 0;
        for (size_t i = 0; i < mix->size(); ++i) {
            EXPECT_EQ((*mix)[i].profile, expected[i]);
            EXPECT_DOUBLE_EQ((*mix)[i].weight, history ? expected[i]->history_weight : expected[i]->mix_weight);
            sum += (*mix)[i].weight;
        }
        EXPECT_DOUBLE_EQ(sum, 100);
    }
}

TEST(LoadMix, NamesWithOptionalWeights) {
    auto mix = parse_mix("besu:2,reth");
    ASSERT_TRUE(mix) << mix.error().message;
    ASSERT_EQ(mix->size(), 2u);
    EXPECT_EQ((*mix)[0].profile, find_profile("besu"));
    EXPECT_DOUBLE_EQ((*mix)[0].weight, 2);
    EXPECT_EQ((*mix)[1].profile, find_profile("reth"));
    EXPECT_DOUBLE_EQ((*mix)[1].weight, 1);

    mix = parse_mix("edge");
    ASSERT_TRUE(mix) << mix.error().message;
    ASSERT_EQ(mix->size(), 1u);
    EXPECT_EQ((*mix)[0].profile, find_profile("edge"));

    mix = parse_mix("geth-skeleton:0.5,erigon:10,probes:1e1");
    ASSERT_TRUE(mix) << mix.error().message;
    ASSERT_EQ(mix->size(), 3u);
    EXPECT_DOUBLE_EQ((*mix)[0].weight, 0.5);
    EXPECT_DOUBLE_EQ((*mix)[2].weight, 10);
}

void expect_mix_error(const std::string& text, const std::string& why) {
    auto mix = parse_mix(text);
    ASSERT_FALSE(mix) << "'" << text << "' was accepted";
    EXPECT_NE(mix.error().message.find(why), std::string::npos) << mix.error().message << "\nwanted: " << why;
}

TEST(LoadMix, RejectsUnknownNamesBadWeightsAndEmptyEntries) {
    expect_mix_error("geth",
                     "unknown profile 'geth' (one of: mix, history, geth-skeleton, nethermind, besu, erigon, "
                     "reth, ethereumjs, probes, legacy, edge, geth-history, nethermind-history, besu-history, "
                     "reth-history)");
    expect_mix_error("besu,nosuch:2", "unknown profile 'nosuch'");
    expect_mix_error("Besu", "unknown profile 'Besu'");
    expect_mix_error("mix:2", "unknown profile 'mix'");
    expect_mix_error("besu:0", "weight '0' is not a positive number");
    expect_mix_error("besu:-1", "weight '-1' is not a positive number");
    expect_mix_error("besu:x", "weight 'x' is not a positive number");
    expect_mix_error("besu:", "weight '' is not a positive number");
    expect_mix_error("besu:2x", "weight '2x' is not a positive number");
    expect_mix_error("besu:inf", "weight 'inf' is not a positive number");
    expect_mix_error("besu:nan", "weight 'nan' is not a positive number");
    expect_mix_error("", "empty entry");
    expect_mix_error("besu,,reth", "empty entry");
    expect_mix_error("besu,", "empty entry");
    expect_mix_error(",besu", "empty entry");
}

std::map<std::string_view, size_t> counts_of(const std::vector<const ProfileSpec*>& assigned) {
    std::map<std::string_view, size_t> n;
    for (const ProfileSpec* p : assigned) ++n[p->name];
    return n;
}

TEST(LoadMix, AssignProfilesFollowsTheWeights) {
    const auto mix = *parse_mix("mix");
    // 100 clients: exactly the weights.
    auto assigned = assign_profiles(mix, 100);
    ASSERT_EQ(assigned.size(), 100u);
    auto n = counts_of(assigned);
    for (const ProfileSpec& p : profiles()) EXPECT_EQ(n[p.name], static_cast<size_t>(p.mix_weight)) << p.name;
    // Each profile's clients together (fan-out groups stay together), in mix order.
    for (size_t i = 1; i < assigned.size(); ++i) {
        if (assigned[i] != assigned[i - 1]) {
            EXPECT_EQ(std::find(assigned.begin(), assigned.begin() + static_cast<ptrdiff_t>(i), assigned[i]),
                      assigned.begin() + static_cast<ptrdiff_t>(i))
                << "profile " << assigned[i]->name << " split";
        }
    }

    // 16 clients: exact shares 4.48 4.48 1.92 1.28 0.96 0.48 1.92 0.32 0.16; largest remainders give
    // 5 5 2 1 1 0 2 0 0; ethereumjs, legacy and edge then take one each from the profiles furthest
    // above their share (geth-skeleton, nethermind, then besu, which ties with probes and comes first).
    n = counts_of(assign_profiles(mix, 16));
    const std::map<std::string_view, size_t> want16{{"geth-skeleton", 4}, {"nethermind", 4}, {"besu", 1},
                                                    {"erigon", 1},        {"reth", 1},       {"ethereumjs", 1},
                                                    {"probes", 2},        {"legacy", 1},     {"edge", 1}};
    EXPECT_EQ(n, want16);

    // Fewer clients than profiles: one each for the largest shares while clients last.
    n = counts_of(assign_profiles(mix, 3));
    EXPECT_EQ(n, (std::map<std::string_view, size_t>{{"geth-skeleton", 1}, {"nethermind", 1}, {"besu", 1}}));

    // Largest remainder: besu:2,reth over 10 clients is 6.67 + 3.33: 7 and 3.
    n = counts_of(assign_profiles(*parse_mix("besu:2,reth"), 10));
    EXPECT_EQ(n, (std::map<std::string_view, size_t>{{"besu", 7}, {"reth", 3}}));
    // A small weight still gets a client: 100 : 1 over 2 clients.
    n = counts_of(assign_profiles(*parse_mix("besu:100,reth:1"), 2));
    EXPECT_EQ(n, (std::map<std::string_view, size_t>{{"besu", 1}, {"reth", 1}}));
    // A zero weight (not from parse_mix) gets none.
    n = counts_of(assign_profiles({{find_profile("besu"), 1}, {find_profile("reth"), 0}}, 5));
    EXPECT_EQ(n, (std::map<std::string_view, size_t>{{"besu", 5}}));
    EXPECT_TRUE(assign_profiles(mix, 0).empty());
}

TEST(LoadMix, AssignProfilesAlwaysGivesEveryClientAProfile) {
    const auto mix = *parse_mix("mix");
    for (size_t clients = 0; clients <= 300; ++clients) {
        const auto assigned = assign_profiles(mix, clients);
        ASSERT_EQ(assigned.size(), clients);
        const auto n = counts_of(assigned);
        // Each count near its exact share: within one, and a little more for the big shares that
        // give up clients so that every profile has one.
        for (const MixEntry& m : mix) {
            const double exact = static_cast<double>(clients) * m.weight / 100;
            const auto it = n.find(m.profile->name);
            const double got = it == n.end() ? 0 : static_cast<double>(it->second);
            if (clients >= 30) {
                EXPECT_LT(std::abs(got - exact), 1.5) << m.profile->name << " of " << clients;
            }
        }
    }
    for (const char* text : {"besu:2,reth", "besu:1,reth:1,erigon:1", "edge:0.001,probes:1000", "legacy:3,edge:1"}) {
        const auto m = *parse_mix(text);
        for (size_t clients : {0, 1, 2, 3, 7, 64, 1000}) {
            EXPECT_EQ(assign_profiles(m, clients).size(), clients) << text;
        }
    }
}

// Every weighted profile gets a client before any gets a second one.
TEST(LoadMix, AssignProfilesGivesEveryProfileAClientWhenThereAreEnough) {
    const auto mix = *parse_mix("mix");
    for (size_t clients = 0; clients <= 300; ++clients) {
        EXPECT_EQ(counts_of(assign_profiles(mix, clients)).size(), std::min(clients, mix.size())) << clients;
    }
    const std::map<std::string_view, size_t> one_each{{"geth-skeleton", 1}, {"nethermind", 1}, {"besu", 1},
                                                      {"erigon", 1},        {"reth", 1},       {"ethereumjs", 1},
                                                      {"probes", 1},        {"legacy", 1},     {"edge", 1}};
    EXPECT_EQ(counts_of(assign_profiles(mix, 9)), one_each);
}

TEST(LoadMix, AProfileListedTwiceIsRefused) {
    // Its clients would all count under one entry and a threshold could read the other, empty one.
    auto m = parse_mix("besu,reth,besu:2");
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("'besu' is listed twice"), std::string::npos) << m.error().message;
}

}  // namespace
}  // namespace headerd::load
