#include "load/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/hex.hpp"

namespace headerd::load {

namespace json = boost::json;

namespace {

ProfileStats totals_of(const RunResult& r) {
    ProfileStats t;
    for (const auto& p : r.profiles) t.merge(p);
    return t;
}

uint64_t errors_of(const ProfileStats& s) {
    uint64_t n = 0;
    for (const auto& [k, v] : s.errors) n += v;
    return n;
}

json::object rtt_json(const metrics::LatencyHistogram& h) {
    return {{"p50", to_ms(h.quantile(0.5))},    {"p90", to_ms(h.quantile(0.9))}, {"p99", to_ms(h.quantile(0.99))},
            {"p999", to_ms(h.quantile(0.999))}, {"max", to_ms(h.max())},         {"mean", h.mean() / 1e6}};
}

json::object errors_json(const ProfileStats& s) {
    json::object o;
    for (const char* k : kErrorKinds) {
        auto it = s.errors.find(k);
        o[k] = it == s.errors.end() ? 0 : it->second;
    }
    return o;
}

json::array histogram_json(const metrics::LatencyHistogram& h) {
    const auto& bounds_ms = report_bucket_bounds_ms();
    std::vector<uint64_t> bounds;
    for (double b : bounds_ms) bounds.push_back(static_cast<uint64_t>(b * 1e6));
    const auto counts = h.counts_at(bounds);
    json::array out;
    for (size_t i = 0; i < counts.size(); ++i) {
        if (counts[i] != 0) out.push_back(json::object{{"le_ms", bounds_ms[i]}, {"count", counts[i]}});
    }
    return out;
}

json::object full_histogram_json(const metrics::LatencyHistogram& h) { return histogram_to_json(h.snapshot()); }

// One request message's figures: headers, bodies or receipt lists.
json::object message_json(const MessageStats& m, Message which) {
    json::object o{{"requests", m.requests},
                   {"replies", m.replies},
                   {"items", m.items},
                   {"bytes", m.bytes},
                   {"lost", m.lost},
                   {"verification_failures", m.verification_failures},
                   {"rtt_ms", rtt_json(m.rtt)},
                   {"rtt_histogram", full_histogram_json(m.rtt)}};
    if (which == Message::kBodies) o["transactions"] = m.receipts;
    if (which == Message::kReceipts) o["receipts"] = m.receipts;
    if (which != Message::kHeaders) {
        o["empty_replies"] = m.empty;
        o["short_replies"] = m.short_replies;
    }
    return o;
}

json::object stats_json(const ProfileStats& s) {
    json::object o;
    o["requests"] = s.requests;
    o["replies"] = s.replies;
    o["headers"] = s.headers;
    o["bytes"] = s.bytes;
    o["bodies"] = s.message(Message::kBodies).items;
    o["receipt_lists"] = s.message(Message::kReceipts).items;
    o["lost"] = s.lost;
    o["stale"] = s.stale;
    o["errors"] = errors_json(s);
    o["verification_failures"] = s.verification_failures;
    o["rtt_ms"] = rtt_json(s.rtt);
    o["rtt_histogram"] = full_histogram_json(s.rtt);
    json::object messages;
    for (size_t i = 0; i < kMessages; ++i) {
        messages[kMessageNames[i]] = message_json(s.messages[i], static_cast<Message>(i));
    }
    o["messages"] = std::move(messages);
    return o;
}

std::string fmt_ms(double ms) { return ms < 10 ? fmt::format("{:.2f}", ms) : fmt::format("{:.1f}", ms); }

// The latency `metric` (p50 p90 p99 p999 max mean) of `h` in ms; nullopt for another metric.
std::optional<double> latency_value(const std::string& metric, const metrics::LatencyHistogram& h) {
    if (metric == "p50") return to_ms(h.quantile(0.5));
    if (metric == "p90") return to_ms(h.quantile(0.9));
    if (metric == "p99") return to_ms(h.quantile(0.99));
    if (metric == "p999") return to_ms(h.quantile(0.999));
    if (metric == "max") return to_ms(h.max());
    if (metric == "mean") return h.mean() / 1e6;
    return std::nullopt;
}

// "bodies_p99" -> (kBodies, "p99"): one request message's latency; nullopt for other metrics.
std::optional<std::pair<Message, std::string>> message_latency(const std::string& metric) {
    const size_t us = metric.find('_');
    if (us == std::string::npos) return std::nullopt;
    const std::string latency = metric.substr(us + 1);
    if (!latency_value(latency, metrics::LatencyHistogram{})) return std::nullopt;
    for (size_t i = 0; i < kMessages; ++i) {
        if (metric.compare(0, us, kMessageNames[i]) == 0) return std::pair{static_cast<Message>(i), latency};
    }
    return std::nullopt;
}

// The value of `metric` over `s` (latencies in ms); nullopt for an unknown metric.
std::optional<double> metric_value(const std::string& metric, const ProfileStats& s, double seconds, bool ok) {
    if (auto v = latency_value(metric, s.rtt)) return v;
    if (auto m = message_latency(metric)) return latency_value(m->second, s.message(m->first).rtt);
    if (metric == "bodies") return static_cast<double>(s.message(Message::kBodies).items);
    if (metric == "receipt_lists") return static_cast<double>(s.message(Message::kReceipts).items);
    if (metric == "errors") return static_cast<double>(errors_of(s));
    if (metric == "lost") return static_cast<double>(s.lost);
    if (metric == "stale") return static_cast<double>(s.stale);
    if (metric == "verification_failures") return static_cast<double>(s.verification_failures);
    if (metric == "drops") return static_cast<double>(s.drops);
    if (metric == "requests") return static_cast<double>(s.requests);
    if (metric == "headers") return static_cast<double>(s.headers);
    if (metric == "rps") return seconds > 0 ? static_cast<double>(s.requests) / seconds : 0;
    if (metric == "hps") return seconds > 0 ? static_cast<double>(s.headers) / seconds : 0;
    if (metric == "verified") return ok ? 1 : 0;
    return std::nullopt;
}

bool is_latency(const std::string& m) {
    return m == "p50" || m == "p90" || m == "p99" || m == "p999" || m == "max" || m == "mean" ||
           message_latency(m).has_value();
}

}  // namespace

const std::vector<double>& report_bucket_bounds_ms() {
    static const std::vector<double> b = [] {
        std::vector<double> v;
        for (double decade = 0.01; decade < 100'000; decade *= 10) {
            for (double m : {1.0, 2.0, 5.0}) {
                const double x = decade * m;
                if (x >= 0.05 && x <= 50'000) v.push_back(std::round(x * 100) / 100);
            }
        }
        v.push_back(60'000);  // the last bound also counts everything slower
        return v;
    }();
    return b;
}

json::object histogram_to_json(const metrics::LatencyHistogram::Snapshot& s) {
    json::array buckets;
    uint64_t count = 0;
    for (const auto& [index, n] : s.buckets) {
        buckets.push_back(json::array{index, n});
        count += n;
    }
    return {{"count", count}, {"min_ns", s.min}, {"max_ns", s.max}, {"sum_ns", s.sum}, {"buckets", std::move(buckets)}};
}

Outcome<metrics::LatencyHistogram> histogram_from_json(const json::value& v) {
    const auto* o = v.if_object();
    if (o == nullptr) return make_error("not an object");
    const auto u64 = [](const json::value* x) -> std::optional<uint64_t> {
        if (x == nullptr) return std::nullopt;
        if (x->is_uint64()) return x->get_uint64();
        if (x->is_int64() && x->get_int64() >= 0) return static_cast<uint64_t>(x->get_int64());
        return std::nullopt;
    };
    metrics::LatencyHistogram::Snapshot s;
    const auto min = u64(o->if_contains("min_ns"));
    const auto max = u64(o->if_contains("max_ns"));
    const auto count = u64(o->if_contains("count"));
    const auto* sum = o->if_contains("sum_ns");
    const auto* buckets = o->if_contains("buckets");
    if (!min || !max || !count || sum == nullptr || !sum->is_number() || buckets == nullptr || !buckets->is_array()) {
        return make_error("needs count, min_ns, max_ns, sum_ns (numbers) and buckets (an array)");
    }
    s.min = *min;
    s.max = *max;
    s.sum = sum->to_number<double>();
    for (const auto& b : buckets->get_array()) {
        const auto* pair = b.if_array();
        const auto index = pair != nullptr && pair->size() == 2 ? u64(&(*pair)[0]) : std::nullopt;
        const auto n = pair != nullptr && pair->size() == 2 ? u64(&(*pair)[1]) : std::nullopt;
        if (!index || !n || *index > UINT32_MAX) return make_error("a bucket is not [index, count]");
        s.buckets.emplace_back(static_cast<uint32_t>(*index), *n);
    }
    std::string why;
    auto h = metrics::LatencyHistogram::restore(s, &why);
    if (!h) return make_error(why);
    if (h->count() != *count) return make_error(fmt::format("count {} is not the buckets' sum {}", *count, h->count()));
    return std::move(*h);
}

json::object histogram_scheme_json() {
    return {{"kind", "log-linear"},
            {"unit", "ns"},
            {"sub_bits", metrics::LatencyHistogram::kSubBits},
            {"max_shift", metrics::LatencyHistogram::kMaxShift},
            {"relative_error", 1.0 / (1 << (metrics::LatencyHistogram::kSubBits - 1))}};
}

bool verified(const RunResult& r) {
    const ProfileStats t = totals_of(r);
    return t.verification_failures == 0 && t.lost == 0 && t.stale == 0 && r.failures_seen == 0 && t.replies > 0;
}

Outcome<Threshold> parse_threshold(const std::string& text) {
    Threshold t;
    t.text = text;
    std::string s;
    for (char ch : text) {
        if (ch != ' ') s += ch;
    }
    if (const size_t dot = s.find('.'); dot != std::string::npos && s.find_first_of("<>=!") > dot &&
                                        !std::isdigit(static_cast<unsigned char>(s[dot + 1]))) {
        t.profile = s.substr(0, dot);
        s = s.substr(dot + 1);
    }
    const size_t op = s.find_first_of("<>=!");
    if (op == std::string::npos) {
        if (s != "verified")
            return make_error(fmt::format("--threshold '{}': expected METRIC OP VALUE or 'verified'", text));
        t.metric = "verified";
        t.op = "==";
        t.value = 1;
        return t;
    }
    t.metric = s.substr(0, op);
    size_t vpos = op + 1;
    if (vpos < s.size() && s[vpos] == '=') ++vpos;
    t.op = s.substr(op, vpos - op);
    if (t.op != "<" && t.op != "<=" && t.op != ">" && t.op != ">=" && t.op != "==" && t.op != "!=") {
        return make_error(fmt::format("--threshold '{}': unknown operator '{}'", text, t.op));
    }
    if (!metric_value(t.metric, ProfileStats{}, 1, true)) {
        return make_error(
            fmt::format("--threshold '{}': unknown metric '{}' (p50 p90 p99 p999 max mean errors lost "
                        "stale verification_failures drops requests headers bodies receipt_lists rps hps "
                        "verified, or a latency of one message: headers_p99, bodies_p99, receipts_p99, ...)",
                        text, t.metric));
    }
    std::string v = s.substr(vpos);
    double scale = 1;
    if (is_latency(t.metric)) {
        if (v.ends_with("ms")) {
            v.resize(v.size() - 2);
        } else if (v.ends_with("us")) {
            v.resize(v.size() - 2);
            scale = 0.001;
        } else if (v.ends_with("s")) {
            v.resize(v.size() - 1);
            scale = 1000;
        } else {
            return make_error(fmt::format("--threshold '{}': give a unit (us, ms or s)", text));
        }
    }
    char* end = nullptr;
    t.value = std::strtod(v.c_str(), &end) * scale;
    if (v.empty() || end != v.c_str() + v.size()) {
        return make_error(fmt::format("--threshold '{}': '{}' is not a number", text, v));
    }
    return t;
}

std::vector<ThresholdResult> check_thresholds(const RunResult& r, const std::vector<Threshold>& thresholds) {
    std::vector<ThresholdResult> out;
    const bool ok_all = verified(r);
    for (const Threshold& t : thresholds) {
        ProfileStats s;
        bool found = t.profile.empty();
        if (t.profile.empty()) {
            s = totals_of(r);
        } else {
            for (size_t i = 0; i < r.profile_specs.size(); ++i) {
                if (r.profile_specs[i]->name == t.profile) {
                    s = r.profiles[i];
                    found = true;
                }
            }
        }
        ThresholdResult res{t.text, false, "no such profile in this run"};
        if (found) {
            const double v = *metric_value(t.metric, s, r.seconds, ok_all);
            if (t.op == "<") res.ok = v < t.value;
            if (t.op == "<=") res.ok = v <= t.value;
            if (t.op == ">") res.ok = v > t.value;
            if (t.op == ">=") res.ok = v >= t.value;
            if (t.op == "==") res.ok = v == t.value;
            if (t.op == "!=") res.ok = v != t.value;
            res.value = t.metric == "verified" ? (ok_all ? "true" : "false")
                        : is_latency(t.metric) ? fmt_ms(v) + "ms"
                                               : fmt::format("{:g}", v);
        }
        out.push_back(std::move(res));
    }
    return out;
}

json::object build_report(const RunResult& r, const ReportContext& ctx,
                          const std::vector<ThresholdResult>& thresholds) {
    json::object o;
    o["schema"] = "headerd-load-report";
    o["version"] = 1;
    json::array command;
    for (const auto& a : ctx.command) command.push_back(json::string(a));
    o["command"] = command;
    o["started_at"] = ctx.started_at;
    o["generator"] = json::object{
        {"headerd_version", ctx.generator.version}, {"commit", ctx.generator.commit}, {"host", ctx.generator.host}};
    o["histogram_scheme"] = histogram_scheme_json();
    o["run_id"] = ctx.run_id.empty() ? json::value(nullptr) : json::value(ctx.run_id);
    o["start_at"] = ctx.start_at ? json::value(*ctx.start_at) : json::value(nullptr);
    o["window"] = json::object{{"start_unix", std::round(ctx.window.start * 1000) / 1000},
                               {"end_unix", std::round(ctx.window.end * 1000) / 1000}};
    o["duration_s"] = r.seconds;
    o["seed"] = ctx.seed;
    const ProfileStats t = totals_of(r);
    const double achieved = r.seconds > 0 ? static_cast<double>(t.requests) / r.seconds : 0;
    json::object mode{{"loop", ctx.target_rate ? "open" : "closed"}, {"achieved_rate", achieved}};
    mode["target_rate"] = ctx.target_rate ? json::value(*ctx.target_rate) : json::value(nullptr);
    mode["shortfall"] = ctx.target_rate && *ctx.target_rate > 0
                            ? json::value(std::max(0.0, 1 - achieved / *ctx.target_rate))
                            : json::value(nullptr);
    o["mode"] = mode;
    if (r.server) {
        o["server"] =
            json::object{{"enode", r.server->enode},
                         {"client_id", r.server->client_id},
                         {"eth_version", r.server->eth_version},
                         {"network_id", ctx.network_id},
                         {"genesis", to_hex0x(ctx.genesis)},
                         {"head", json::object{{"number", r.server->head}, {"hash", to_hex0x(r.server->head_hash)}}}};
    } else {
        o["server"] = nullptr;
    }
    o["protocol"] = json::object{{"eth", ctx.eth ? json::value(*ctx.eth) : json::value(nullptr)}};
    o["reference"] = ctx.reference ? json::value(*ctx.reference) : json::value(nullptr);
    json::object connect_errors;
    for (const auto& [reason, n] : r.connect_errors) connect_errors[reason] = n;
    o["clients"] = json::object{{"requested", ctx.clients_requested},
                                {"connected_max", r.clients_connected_max},
                                {"connect_attempts", r.connect_attempts},
                                {"connect_failures", r.connect_failures},
                                {"connect_errors", std::move(connect_errors)}};
    json::object totals = stats_json(t);
    totals["verdict_drops"] = t.drops;
    totals["verdict_penalties"] = t.penalties;
    o["totals"] = totals;
    json::array profiles;
    for (size_t i = 0; i < r.profiles.size(); ++i) {
        const ProfileStats& s = r.profiles[i];
        json::object p = stats_json(s);
        p["name"] = r.profile_specs[i]->name;
        p["imitates"] = r.profile_specs[i]->imitates;
        p["history"] = r.profile_specs[i]->history();
        p["clients"] = s.clients;
        json::object reasons;
        for (const auto& [k, v] : s.verdict_reasons) reasons[k] = v;
        p["verdicts"] = json::object{{"drops", s.drops}, {"penalties", s.penalties}, {"reasons", reasons}};
        p["histogram"] = histogram_json(s.rtt);
        profiles.push_back(p);
    }
    o["profiles"] = profiles;
    json::array timeline;
    for (const auto& p : r.timeline) {
        timeline.push_back(json::object{{"t", std::round(p.t * 1000) / 1000},
                                        {"clients", p.clients},
                                        {"requests", p.requests},
                                        {"replies", p.replies},
                                        {"headers", p.headers},
                                        {"bodies", p.bodies},
                                        {"receipt_lists", p.receipt_lists},
                                        {"bytes", p.bytes},
                                        {"errors", p.errors},
                                        {"p50_ms", p.replies > 0 ? json::value(p.p50_ms) : json::value(nullptr)},
                                        {"p99_ms", p.replies > 0 ? json::value(p.p99_ms) : json::value(nullptr)},
                                        {"rtt_histogram", histogram_to_json(p.rtt)}});
    }
    o["timeline"] = timeline;
    json::array failures;
    for (const auto& f : r.failures) {
        json::object request{{"id", f.id}, {"message", f.message}};
        if (f.blocks) {
            // GetBlockBodies, GetReceipts: how many blocks, the first and the last.
            request["blocks"] = f.amount;
            request["first"] = f.blocks->first;
            request["last"] = f.blocks->second;
        } else {
            request["amount"] = f.amount;
            request["skip"] = f.skip;
            request["reverse"] = f.reverse;
            if (f.origin.starts_with("0x")) {
                request["origin"] = f.origin;
            } else {
                request["origin"] = std::strtoull(f.origin.c_str(), nullptr, 10);
            }
        }
        request["text"] = f.request;
        failures.push_back(
            json::object{{"client", f.client}, {"profile", f.profile}, {"request", request}, {"reason", f.reason}});
    }
    o["failures"] = failures;
    o["failures_total"] = r.failures_seen;
    o["server_metrics"] = ctx.server_metrics ? json::value(*ctx.server_metrics) : json::value(nullptr);
    if (ctx.load_cpu_seconds) {
        o["load_process"] =
            json::object{{"cpu_seconds", *ctx.load_cpu_seconds},
                         {"cpu_us_per_header",
                          t.headers > 0 ? json::value(*ctx.load_cpu_seconds * 1e6 / static_cast<double>(t.headers))
                                        : json::value(nullptr)}};
    } else {
        o["load_process"] = nullptr;
    }
    json::array th;
    for (const auto& x : thresholds) th.push_back(json::object{{"expr", x.expr}, {"ok", x.ok}, {"value", x.value}});
    o["thresholds"] = th;
    o["interrupted"] = r.interrupted;
    o["verified"] = verified(r);
    return o;
}

std::string summary_table(const RunResult& r) {
    // The name column fits the longest profile name of the run (14 at least).
    size_t w = 14;
    for (const ProfileSpec* spec : r.profile_specs) w = std::max(w, spec->name.size());
    std::string out = fmt::format("{:<{}} {:>7} {:>9} {:>11} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>5} {:>5} {:>6}\n",
                                  "profile", w, "clients", "requests", "headers", "p50 ms", "p90 ms", "p99 ms", "p99.9",
                                  "max ms", "errors", "lost", "stale", "drops");
    auto row = [&](const std::string& name, const ProfileStats& s) {
        out += fmt::format("{:<{}} {:>7} {:>9} {:>11} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>5} {:>5} {:>6}\n", name, w,
                           s.clients, s.requests, s.headers, fmt_ms(to_ms(s.rtt.quantile(0.5))),
                           fmt_ms(to_ms(s.rtt.quantile(0.9))), fmt_ms(to_ms(s.rtt.quantile(0.99))),
                           fmt_ms(to_ms(s.rtt.quantile(0.999))), fmt_ms(to_ms(s.rtt.max())), errors_of(s), s.lost,
                           s.stale, s.drops);
    };
    for (size_t i = 0; i < r.profiles.size(); ++i) row(std::string(r.profile_specs[i]->name), r.profiles[i]);
    row("total", totals_of(r));
    // Bodies and receipt lists, per profile that asked for them.
    for (size_t i = 0; i < r.profiles.size(); ++i) {
        for (const Message m : {Message::kBodies, Message::kReceipts}) {
            const MessageStats& s = r.profiles[i].message(m);
            if (s.requests == 0) continue;
            out += fmt::format(
                "  {} {}: {} requests, {} {} ({:.1f} MB; {} {}), p50 {} ms, p99 {} ms, max {} ms; {} empty, {} "
                "short, {} failed verification, {} lost\n",
                r.profile_specs[i]->name, kRequestNames[static_cast<size_t>(m)], s.requests, s.items,
                m == Message::kBodies ? "bodies" : "receipt lists", static_cast<double>(s.bytes) / 1e6, s.receipts,
                m == Message::kBodies ? "transactions" : "receipts", fmt_ms(to_ms(s.rtt.quantile(0.5))),
                fmt_ms(to_ms(s.rtt.quantile(0.99))), fmt_ms(to_ms(s.rtt.max())), s.empty, s.short_replies,
                s.verification_failures, s.lost);
        }
    }
    for (size_t i = 0; i < r.profiles.size(); ++i) {
        for (const auto& [reason, n] : r.profiles[i].verdict_reasons) {
            out += fmt::format("  {} would {} ({} times)\n", r.profile_specs[i]->name, reason, n);
        }
        for (const auto& [kind, n] : r.profiles[i].errors) {
            if (n != 0) out += fmt::format("  {} errors: {} {}\n", r.profile_specs[i]->name, kind, n);
        }
    }
    for (const auto& [reason, n] : r.connect_errors) out += fmt::format("  connect failed {} times: {}\n", n, reason);
    return out;
}

}  // namespace headerd::load
