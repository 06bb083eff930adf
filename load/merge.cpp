#include "load/merge.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "core/hex.hpp"
#include "load/html_report.hpp"
#include "load/profile.hpp"

namespace headerd::load {

namespace json = boost::json;

namespace {

// A field that is missing or of the wrong type: what read_report says, with the field's path.
struct BadField : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Typed access to a report's fields; every miss throws BadField naming "path.key".
class Fields {
  public:
    Fields(const json::object& o, std::string path) : o_(o), path_(std::move(path)) {}

    const json::value& at(std::string_view key) const {
        const auto* v = o_.if_contains(key);
        if (v == nullptr) throw BadField(fmt::format("{} is missing", where(key)));
        return *v;
    }
    bool has(std::string_view key) const {
        const auto* v = o_.if_contains(key);
        return v != nullptr && !v->is_null();
    }
    uint64_t u64(std::string_view key) const {
        const auto& v = at(key);
        if (v.is_uint64()) return v.get_uint64();
        if (v.is_int64() && v.get_int64() >= 0) return static_cast<uint64_t>(v.get_int64());
        throw BadField(fmt::format("{} is not a count", where(key)));
    }
    double number(std::string_view key) const {
        const auto& v = at(key);
        if (!v.is_number()) throw BadField(fmt::format("{} is not a number", where(key)));
        return v.to_number<double>();
    }
    std::string string(std::string_view key) const {
        const auto& v = at(key);
        if (!v.is_string()) throw BadField(fmt::format("{} is not a string", where(key)));
        return std::string(v.get_string());
    }
    std::optional<std::string> string_or_null(std::string_view key) const {
        if (at(key).is_null()) return std::nullopt;
        return string(key);
    }
    bool boolean(std::string_view key) const {
        const auto& v = at(key);
        if (!v.is_bool()) throw BadField(fmt::format("{} is not true or false", where(key)));
        return v.get_bool();
    }
    Fields object(std::string_view key) const {
        const auto& v = at(key);
        if (!v.is_object()) throw BadField(fmt::format("{} is not an object", where(key)));
        return Fields(v.get_object(), where(key));
    }
    const json::array& array(std::string_view key) const {
        const auto& v = at(key);
        if (!v.is_array()) throw BadField(fmt::format("{} is not an array", where(key)));
        return v.get_array();
    }
    Fields element(std::string_view key, size_t i) const {
        const auto& a = array(key);
        const std::string path = fmt::format("{}[{}]", where(key), i);
        if (!a[i].is_object()) throw BadField(fmt::format("{} is not an object", path));
        return Fields(a[i].get_object(), path);
    }
    metrics::LatencyHistogram histogram(std::string_view key) const {
        if (!has(key)) {
            throw BadField(
                fmt::format("{} is missing: the report has no full-resolution histograms (written by a "
                            "headerd older than report --merge)",
                            where(key)));
        }
        auto h = histogram_from_json(at(key));
        if (!h) throw BadField(fmt::format("{}: {}", where(key), h.error().message));
        return std::move(*h);
    }
    const json::object& raw() const { return o_; }
    std::string where(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }

  private:
    const json::object& o_;
    std::string path_;
};

void read_message(const Fields& f, Message which, MessageStats& m) {
    m.requests = f.u64("requests");
    m.replies = f.u64("replies");
    m.items = f.u64("items");
    m.bytes = f.u64("bytes");
    m.lost = f.u64("lost");
    m.verification_failures = f.u64("verification_failures");
    if (which == Message::kBodies) m.receipts = f.u64("transactions");
    if (which == Message::kReceipts) m.receipts = f.u64("receipts");
    if (which != Message::kHeaders) {
        m.empty = f.u64("empty_replies");
        m.short_replies = f.u64("short_replies");
    }
    m.rtt = f.histogram("rtt_histogram");
}

ProfileStats read_profile(const Fields& f) {
    ProfileStats s;
    s.clients = f.u64("clients");
    s.requests = f.u64("requests");
    s.replies = f.u64("replies");
    s.headers = f.u64("headers");
    s.bytes = f.u64("bytes");
    s.lost = f.u64("lost");
    s.stale = f.u64("stale");
    s.verification_failures = f.u64("verification_failures");
    const Fields errors = f.object("errors");
    for (const char* kind : kErrorKinds) {
        if (const uint64_t n = errors.u64(kind); n != 0) s.errors[kind] = n;
    }
    const Fields verdicts = f.object("verdicts");
    s.drops = verdicts.u64("drops");
    s.penalties = verdicts.u64("penalties");
    const Fields reasons = verdicts.object("reasons");
    for (const auto& [k, v] : reasons.raw()) s.verdict_reasons[std::string(k)] = reasons.u64(k);
    s.rtt = f.histogram("rtt_histogram");
    const Fields messages = f.object("messages");
    for (size_t i = 0; i < kMessages; ++i) {
        read_message(messages.object(kMessageNames[i]), static_cast<Message>(i), s.messages[i]);
    }
    return s;
}

FailureRecord read_failure(const Fields& f) {
    FailureRecord r;
    r.client = f.u64("client");
    r.profile = f.string("profile");
    r.reason = f.string("reason");
    const Fields q = f.object("request");
    r.id = q.u64("id");
    r.message = q.string("message");
    r.request = q.string("text");
    if (q.has("blocks")) {
        r.amount = q.u64("blocks");
        r.blocks = std::pair{q.u64("first"), q.u64("last")};
    } else {
        r.amount = q.u64("amount");
        r.skip = q.u64("skip");
        r.reverse = q.boolean("reverse");
        const auto& origin = q.at("origin");
        r.origin = origin.is_string() ? std::string(origin.get_string()) : std::to_string(q.u64("origin"));
    }
    return r;
}

Hash32 read_hash(const Fields& f, std::string_view key) {
    auto h = hash_from_hex(f.string(key));
    if (!h) throw BadField(fmt::format("{} is not a 32-byte hash", f.where(key)));
    return *h;
}

LoadedReport read_fields(const Fields& f, std::string name) {
    LoadedReport out;
    out.name = std::move(name);
    if (f.object("histogram_scheme").raw() != histogram_scheme_json()) {
        throw BadField(fmt::format("its histogram scheme {} is not this build's {}",
                                   json::serialize(f.at("histogram_scheme")),
                                   json::serialize(histogram_scheme_json())));
    }
    RunResult& r = out.result;
    ReportContext& c = out.ctx;
    for (const auto& a : f.array("command")) {
        if (a.is_string()) c.command.emplace_back(a.get_string());
    }
    c.started_at = f.string("started_at");
    const Fields generator = f.object("generator");
    c.generator = {generator.string("headerd_version"), generator.string("commit"), generator.string("host")};
    c.run_id = f.string_or_null("run_id").value_or("");
    c.start_at = f.string_or_null("start_at");
    const Fields window = f.object("window");
    c.window = {window.number("start_unix"), window.number("end_unix")};
    if (!(c.window.end >= c.window.start)) throw BadField("window ends before it starts");
    r.seconds = f.number("duration_s");
    c.seed = f.u64("seed");
    const Fields mode = f.object("mode");
    if (mode.has("target_rate")) c.target_rate = mode.number("target_rate");
    if (!f.has("server")) {
        throw BadField("server is null: this generator never reached its server, so nothing says which run it is of");
    }
    const Fields server = f.object("server");
    r.server = ServerInfo{server.string("enode"), server.string("client_id"), server.u64("eth_version"),
                          server.object("head").u64("number"), read_hash(server.object("head"), "hash")};
    c.network_id = server.u64("network_id");
    c.genesis = read_hash(server, "genesis");
    if (const Fields protocol = f.object("protocol"); protocol.has("eth")) c.eth = protocol.u64("eth");
    c.reference = f.string_or_null("reference");
    const Fields clients = f.object("clients");
    c.clients_requested = clients.u64("requested");
    r.clients_connected_max = clients.u64("connected_max");
    r.connect_attempts = clients.u64("connect_attempts");
    r.connect_failures = clients.u64("connect_failures");
    const Fields connect_errors = clients.object("connect_errors");
    for (const auto& [k, v] : connect_errors.raw()) r.connect_errors[std::string(k)] = connect_errors.u64(k);

    const auto& profiles = f.array("profiles");
    for (size_t i = 0; i < profiles.size(); ++i) {
        const Fields p = f.element("profiles", i);
        const std::string pname = p.string("name");
        const ProfileSpec* spec = find_profile(pname);
        if (spec == nullptr) throw BadField(fmt::format("{}: this build has no profile '{}'", p.where("name"), pname));
        r.profile_specs.push_back(spec);
        r.profiles.push_back(read_profile(p));
    }
    const auto& timeline = f.array("timeline");
    for (size_t i = 0; i < timeline.size(); ++i) {
        const Fields t = f.element("timeline", i);
        TimelinePoint p;
        p.t = t.number("t");
        p.clients = t.u64("clients");
        p.requests = t.u64("requests");
        p.replies = t.u64("replies");
        p.headers = t.u64("headers");
        p.bodies = t.u64("bodies");
        p.receipt_lists = t.u64("receipt_lists");
        p.bytes = t.u64("bytes");
        p.errors = t.u64("errors");
        const auto h = t.histogram("rtt_histogram");
        p.p50_ms = to_ms(h.quantile(0.5));
        p.p99_ms = to_ms(h.quantile(0.99));
        p.rtt = h.snapshot();
        r.timeline.push_back(std::move(p));
    }
    const auto& failures = f.array("failures");
    for (size_t i = 0; i < failures.size(); ++i) r.failures.push_back(read_failure(f.element("failures", i)));
    r.failures_seen = f.u64("failures_total");
    if (f.has("server_metrics")) c.server_metrics = f.object("server_metrics").raw();
    if (f.has("load_process")) c.load_cpu_seconds = f.object("load_process").number("cpu_seconds");
    const auto& thresholds = f.array("thresholds");
    for (size_t i = 0; i < thresholds.size(); ++i) out.thresholds.push_back(f.element("thresholds", i).string("expr"));
    r.interrupted = f.boolean("interrupted");
    out.verified = f.boolean("verified");
    return out;
}

// A window's edge for people: UTC with milliseconds.
std::string utc(double unix_seconds) {
    const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
    std::tm tm{};
    gmtime_r(&whole, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                       tm.tm_hour, tm.tm_min, tm.tm_sec,
                       static_cast<int>((unix_seconds - static_cast<double>(whole)) * 1000));
}

// The first input whose `key(input)` differs from the first input's: a refusal naming both.
template <typename Key>
Outcome<void> same(const std::vector<LoadedReport>& in, std::string_view what, Key key) {
    for (const auto& x : in) {
        if (key(x) != key(in.front())) {
            return make_error(fmt::format("{} and {} are not of one run: different {} ({} and {})", in.front().name,
                                          x.name, what, key(in.front()), key(x)));
        }
    }
    return {};
}

}  // namespace

Outcome<LoadedReport> read_report(const json::value& doc, std::string name) {
    if (auto r = check_report(doc); !r) return make_error(fmt::format("{}: {}", name, r.error().message));
    try {
        return read_fields(Fields(doc.get_object(), ""), name);
    } catch (const BadField& e) {
        return make_error(fmt::format("{}: {}", name, e.what()));
    }
}

Outcome<MergedReport> merge_reports(const std::vector<LoadedReport>& in, std::vector<std::string> command,
                                    ReportContext::Generator generator) {
    if (in.empty()) return make_error("no report to merge");
    // Of one run: one chain, one server, one protocol, one run id.
    if (auto r = same(in, "chains",
                      [](const LoadedReport& x) {
                          return fmt::format("network {} genesis {}", x.ctx.network_id, to_hex0x(x.ctx.genesis));
                      });
        !r) {
        return r.error();
    }
    if (auto r = same(in, "servers", [](const LoadedReport& x) { return x.result.server->enode; }); !r)
        return r.error();
    if (auto r = same(in, "protocols",
                      [](const LoadedReport& x) {
                          return x.ctx.eth ? fmt::format("eth/{}", *x.ctx.eth) : std::string("each profile's versions");
                      });
        !r) {
        return r.error();
    }
    if (auto r = same(in, "run ids",
                      [](const LoadedReport& x) { return x.ctx.run_id.empty() ? std::string("none") : x.ctx.run_id; });
        !r) {
        return r.error();
    }
    for (size_t i = 0; i < in.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
            const auto& a = in[j].ctx;
            const auto& b = in[i].ctx;
            if (a.generator.host == b.generator.host && a.started_at == b.started_at &&
                a.window.start == b.window.start && a.window.end == b.window.end) {
                return make_error(fmt::format("{} and {} are the same generator's report: merge each one once",
                                              in[j].name, in[i].name));
            }
        }
    }

    // The windows: they must overlap; starts or ends further apart than kWindowSkewSeconds are
    // reported (the rates then mix seconds in which not every generator ran).
    double first_start = in.front().ctx.window.start;
    double last_start = first_start;
    double first_end = in.front().ctx.window.end;
    double last_end = first_end;
    for (const auto& x : in) {
        first_start = std::min(first_start, x.ctx.window.start);
        last_start = std::max(last_start, x.ctx.window.start);
        first_end = std::min(first_end, x.ctx.window.end);
        last_end = std::max(last_end, x.ctx.window.end);
    }
    if (last_start >= first_end && in.size() > 1) {
        const auto& early = *std::min_element(
            in.begin(), in.end(), [](const auto& a, const auto& b) { return a.ctx.window.end < b.ctx.window.end; });
        const auto& late = *std::max_element(
            in.begin(), in.end(), [](const auto& a, const auto& b) { return a.ctx.window.start < b.ctx.window.start; });
        return make_error(fmt::format(
            "{} and {} are not of one run: their windows do not overlap ({} ended at {}, {} started at {}); start "
            "the generators together with load --start-at",
            early.name, late.name, early.name, utc(early.ctx.window.end), late.name, utc(late.ctx.window.start)));
    }
    MergedReport m;
    const double start_spread = last_start - first_start;
    const double end_spread = last_end - first_end;
    const bool synchronised = start_spread <= kWindowSkewSeconds && end_spread <= kWindowSkewSeconds;
    if (!synchronised) {
        m.warnings.push_back(fmt::format(
            "the windows are not synchronised: their starts lie {:.3f} s apart and their ends {:.3f} s (more than "
            "{:g} s); the rates and the timeline mix seconds in which not every generator ran",
            start_spread, end_spread, kWindowSkewSeconds));
    }
    std::set<std::string> versions;
    for (const auto& x : in) versions.insert(x.ctx.generator.version + " " + x.ctx.generator.commit);
    if (versions.size() > 1) {
        m.warnings.push_back(fmt::format("the generators ran {} different headerd builds", versions.size()));
    }

    RunResult& r = m.result;
    ReportContext& c = m.ctx;
    r.server = in.front().result.server;
    c.network_id = in.front().ctx.network_id;
    c.genesis = in.front().ctx.genesis;
    c.eth = in.front().ctx.eth;
    c.run_id = in.front().ctx.run_id;
    c.command = std::move(command);
    c.generator = std::move(generator);
    c.window = {first_start, last_end};
    r.seconds = last_end - first_start;
    c.seed = in.front().ctx.seed;
    c.started_at = in.front().ctx.started_at;
    c.start_at = in.front().ctx.start_at;  // unless they differ
    bool all_open = true;
    double target_rate = 0;
    double cpu = 0;
    bool any_cpu = false;
    bool different_references = false;
    const LoadedReport* widest_server = nullptr;  // server_metrics: the one over the widest window
    for (const auto& x : in) {
        c.started_at = std::min(c.started_at, x.ctx.started_at);  // ISO 8601 UTC: sorts as text
        if (x.ctx.start_at != in.front().ctx.start_at) c.start_at.reset();
        if (x.ctx.reference != in.front().ctx.reference) different_references = true;
        c.clients_requested += x.ctx.clients_requested;
        all_open = all_open && x.ctx.target_rate.has_value();
        target_rate += x.ctx.target_rate.value_or(0);
        if (x.ctx.load_cpu_seconds) {
            any_cpu = true;
            cpu += *x.ctx.load_cpu_seconds;
        }
        if (x.ctx.server_metrics &&
            (widest_server == nullptr ||
             x.ctx.window.end - x.ctx.window.start > widest_server->ctx.window.end - widest_server->ctx.window.start)) {
            widest_server = &x;
        }
    }
    c.reference =
        different_references ? std::optional<std::string>("several reference chains") : in.front().ctx.reference;
    if (all_open) c.target_rate = target_rate;
    if (any_cpu) c.load_cpu_seconds = cpu;
    if (widest_server != nullptr) c.server_metrics = widest_server->ctx.server_metrics;

    // Profiles by name, in the order they first appear; counts add, histograms merge.
    std::map<std::string, size_t> index;
    for (const auto& x : in) {
        for (size_t i = 0; i < x.result.profiles.size(); ++i) {
            const ProfileSpec* spec = x.result.profile_specs[i];
            auto [it, added] = index.emplace(std::string(spec->name), r.profiles.size());
            if (added) {
                r.profile_specs.push_back(spec);
                r.profiles.emplace_back();
            }
            r.profiles[it->second].merge(x.result.profiles[i]);
        }
        r.failures.insert(r.failures.end(), x.result.failures.begin(), x.result.failures.end());
        r.failures_seen += x.result.failures_seen;
        r.connect_attempts += x.result.connect_attempts;
        r.connect_failures += x.result.connect_failures;
        for (const auto& [reason, n] : x.result.connect_errors) {
            auto it = r.connect_errors.find(reason);
            if (it != r.connect_errors.end()) {
                it->second += n;
            } else if (r.connect_errors.size() < kMaxConnectErrorReasons) {
                r.connect_errors.emplace(reason, n);
            }
        }
        r.clients_connected_max += x.result.clients_connected_max;
        r.interrupted = r.interrupted || x.result.interrupted;
    }

    // The timeline on the merged window: each second of an input goes to the merged second its
    // wall-clock time falls in (to the nearest second).
    std::map<int64_t, std::pair<TimelinePoint, metrics::LatencyHistogram>> seconds;
    for (const auto& x : in) {
        for (const auto& p : x.result.timeline) {
            const auto k = std::max<int64_t>(1, std::llround(x.ctx.window.start + p.t - first_start));
            auto& [q, h] = seconds[k];
            q.t = static_cast<double>(k);
            q.clients += p.clients;
            q.requests += p.requests;
            q.replies += p.replies;
            q.headers += p.headers;
            q.bodies += p.bodies;
            q.receipt_lists += p.receipt_lists;
            q.bytes += p.bytes;
            q.errors += p.errors;
            h.merge(*metrics::LatencyHistogram::restore(p.rtt));  // read_report checked it
        }
    }
    for (auto& [k, qh] : seconds) {
        auto& [q, h] = qh;
        q.p50_ms = to_ms(h.quantile(0.5));
        q.p99_ms = to_ms(h.quantile(0.99));
        q.rtt = h.snapshot();
        r.timeline.push_back(std::move(q));
    }

    std::set<std::string> seen;
    for (const auto& x : in) {
        for (const auto& t : x.thresholds) {
            if (seen.insert(t).second) m.thresholds.push_back(t);
        }
    }

    json::array inputs;
    for (const auto& x : in) {
        uint64_t requests = 0;
        uint64_t headers = 0;
        for (const auto& p : x.result.profiles) {
            requests += p.requests;
            headers += p.headers;
        }
        inputs.push_back(
            json::object{{"file", x.name},
                         {"host", x.ctx.generator.host},
                         {"headerd_version", x.ctx.generator.version},
                         {"started_at", x.ctx.started_at},
                         {"window", json::object{{"start_unix", x.ctx.window.start}, {"end_unix", x.ctx.window.end}}},
                         {"clients", x.ctx.clients_requested},
                         {"requests", requests},
                         {"headers", headers},
                         {"verified", x.verified}});
    }
    json::array warnings;
    for (const auto& w : m.warnings) warnings.push_back(json::string(w));
    m.merge = json::object{
        {"inputs", std::move(inputs)},
        {"windows", json::object{{"start_spread_s", start_spread},
                                 {"end_spread_s", end_spread},
                                 {"overlap_s", std::max(0.0, first_end - last_start)},
                                 {"synchronised", synchronised}}},
        {"warnings", std::move(warnings)},
        {"server_metrics_from", widest_server != nullptr ? json::value(widest_server->name) : json::value(nullptr)}};
    return m;
}

}  // namespace headerd::load
