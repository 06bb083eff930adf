#include "load/html_report.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>

namespace headerd::load {
namespace {

namespace json = boost::json;

// ---------------------------------------------------------------------------------------------
// Reading the report. Every accessor takes a possibly null object and returns nothing for a field
// that is missing or of another type, so the page shows "-" instead of failing.

const json::value* field(const json::object* o, std::string_view key) {
    if (o == nullptr) return nullptr;
    const auto it = o->find(key);
    return it == o->end() ? nullptr : &it->value();
}

const json::object* object_at(const json::object* o, std::string_view key) {
    const json::value* v = field(o, key);
    return v == nullptr ? nullptr : v->if_object();
}

const json::array* array_at(const json::object* o, std::string_view key) {
    const json::value* v = field(o, key);
    return v == nullptr ? nullptr : v->if_array();
}

std::optional<double> as_number(const json::value* v) {
    if (v == nullptr) return std::nullopt;
    if (v->is_int64()) return static_cast<double>(v->get_int64());
    if (v->is_uint64()) return static_cast<double>(v->get_uint64());
    if (v->is_double() && std::isfinite(v->get_double())) return v->get_double();
    return std::nullopt;
}

std::optional<double> number_at(const json::object* o, std::string_view key) { return as_number(field(o, key)); }

std::optional<std::string> string_at(const json::object* o, std::string_view key) {
    const json::value* v = field(o, key);
    if (v == nullptr || !v->is_string()) return std::nullopt;
    return std::string(v->get_string());
}

std::optional<bool> bool_at(const json::object* o, std::string_view key) {
    const json::value* v = field(o, key);
    if (v == nullptr || !v->is_bool()) return std::nullopt;
    return v->get_bool();
}

// A number exactly as the report holds it (integers as integers, doubles in their shortest
// round-trip form), for the data attributes; "null" for anything else.
std::string json_number(const json::value* v) {
    if (v == nullptr) return "null";
    if (v->is_int64()) return std::to_string(v->get_int64());
    if (v->is_uint64()) return std::to_string(v->get_uint64());
    if (v->is_double() && std::isfinite(v->get_double())) {
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof(buf), v->get_double());
        return std::string(buf, r.ptr);
    }
    return "null";
}

// ---------------------------------------------------------------------------------------------
// Text.

template <class... Args>
void put(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

std::string esc(std::string_view text) { return html_escape(text); }

std::string group_digits(uint64_t n) {
    const std::string digits = std::to_string(n);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// 4809294 -> "4,809,294"; a fractional value keeps one decimal (two below 10).
std::string count_text(std::optional<double> v) {
    if (!v) return "-";
    const double x = *v;
    if (x == std::floor(x) && std::fabs(x) < 9e15) {
        return (x < 0 ? "-" : "") + group_digits(static_cast<uint64_t>(std::fabs(x)));
    }
    return std::fabs(x) >= 10 ? fmt::format("{:.1f}", x) : fmt::format("{:.2f}", x);
}

// Block numbers and ids: no digit grouping.
std::string plain_text(std::optional<double> v) {
    if (!v) return "-";
    if (*v == std::floor(*v) && std::fabs(*v) < 9e15) return fmt::format("{:.0f}", *v);
    return fmt::format("{:g}", *v);
}

// Milliseconds with three significant digits or so: 0.412, 3.10, 40.6, 179.
std::string ms_number(double x) {
    const double a = std::fabs(x);
    if (a >= 100) return count_text(std::round(x));
    if (a >= 10) return fmt::format("{:.1f}", x);
    if (a >= 1) return fmt::format("{:.2f}", x);
    return fmt::format("{:.3f}", x);
}

std::string ms_text(std::optional<double> v) { return v ? ms_number(*v) : "-"; }
std::string ms_unit_text(std::optional<double> v) { return v ? ms_number(*v) + " ms" : "-"; }

std::string bytes_text(std::optional<double> v) {
    if (!v) return "-";
    static constexpr const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    double x = *v;
    size_t unit = 0;
    while (std::fabs(x) >= 1000 && unit + 1 < std::size(kUnits)) {
        x /= 1000;
        ++unit;
    }
    return unit == 0 ? fmt::format("{} B", count_text(x)) : fmt::format("{:.2f} {}", x, kUnits[unit]);
}

// Axis labels: 250000 -> "250k", 1500000 -> "1.5M", 0.5 -> "0.5".
std::string si_text(double x) {
    const double a = std::fabs(x);
    if (a >= 1e9) return fmt::format("{:g}G", x / 1e9);
    if (a >= 1e6) return fmt::format("{:g}M", x / 1e6);
    if (a >= 1e3) return fmt::format("{:g}k", x / 1e3);
    return fmt::format("{:g}", x);
}

// Latency axis labels: 0.05 -> "0.05", 1000 -> "1 s", 20000 -> "20 s".
std::string latency_tick(double ms) { return ms >= 1000 ? fmt::format("{:g} s", ms / 1000) : fmt::format("{:g}", ms); }

// A run's duration: "20 s", "4.00 s".
std::string seconds_text(double s) {
    return s == std::floor(s) ? fmt::format("{:.0f} s", s) : fmt::format("{:.2f} s", s);
}

std::string percent_text(double fraction) { return fmt::format("{:.1f} %", fraction * 100); }

// "enode://<128 hex>@127.0.0.1:30303" -> "3f9a1c2b…@127.0.0.1:30303".
std::string short_enode(std::string_view enode) {
    if (enode.starts_with("enode://")) enode.remove_prefix(8);
    const size_t at = enode.find('@');
    std::string_view id = enode.substr(0, at);
    std::string_view host = at == std::string_view::npos ? std::string_view() : enode.substr(at);
    host = host.substr(0, host.find('?'));
    std::string out(id.substr(0, 8));
    if (id.size() > 8) out += "…";
    out += host;
    return out;
}

// One argument as a POSIX shell would need it quoted.
std::string shell_quote(std::string_view arg) {
    const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
    });
    if (plain) return std::string(arg);
    std::string out = "'";
    for (char c : arg) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

// ---------------------------------------------------------------------------------------------
// Charts: inline SVG in a fixed coordinate system (viewBox), scaled to the page width by CSS.

constexpr const char* kBlue = "#2f6fb0";
constexpr const char* kOrange = "#d9731a";
constexpr const char* kGreen = "#3a8f5c";
constexpr const char* kRed = "#c62828";
constexpr const char* kBar = "#6a8fc4";

// Points on the timeline charts carry a hover dot (with a tooltip) up to this many per line.
constexpr size_t kMaxDots = 120;

std::string coord(double v) { return fmt::format("{:.1f}", v); }

// The step of about `target` ticks over `span`: 1, 2 or 5 times a power of ten.
double nice_step(double span, int target) {
    if (!(span > 0)) return 1;
    const double raw = span / target;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / magnitude;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * magnitude;
}

std::vector<double> ticks(double lo, double hi, double step) {
    std::vector<double> out;
    const double first = std::ceil(lo / step - 1e-9);
    for (int i = 0; i < 1000; ++i) {
        const double v = (first + i) * step;
        if (v > hi + step * 1e-9) break;
        out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
    }
    return out;
}

struct LinearScale {
    double lo, hi;  // domain
    double a, b;    // range, in SVG units
    double operator()(double v) const { return a + (v - lo) / (hi - lo) * (b - a); }
};

// Domain in log10 units.
struct LogScale {
    double lo, hi;
    double a, b;
    double operator()(double v) const { return a + (std::log10(std::max(v, 1e-12)) - lo) / (hi - lo) * (b - a); }
};

struct TimePoint {
    double t;
    std::optional<double> value;
    std::string t_json, value_json;  // as the report holds them
};

struct TimeLine {
    std::string field;  // the timeline field, data-series
    std::string label;
    const char* color;
    std::vector<TimePoint> points;
};

std::vector<TimePoint> timeline_points(const json::array& timeline, std::string_view key) {
    std::vector<TimePoint> out;
    for (size_t i = 0; i < timeline.size(); ++i) {
        const json::object* entry = timeline[i].if_object();
        const json::value* t = field(entry, "t");
        TimePoint p;
        p.t = as_number(t).value_or(static_cast<double>(i + 1));
        p.t_json = as_number(t) ? json_number(t) : std::to_string(i + 1);
        p.value = number_at(entry, key);
        p.value_json = json_number(field(entry, key));
        out.push_back(std::move(p));
    }
    return out;
}

std::string points_attribute(const std::vector<TimePoint>& points) {
    std::string out = "[";
    for (size_t i = 0; i < points.size(); ++i) {
        if (i > 0) out += ',';
        put(out, "[{},{}]", points[i].t_json, points[i].value_json);
    }
    return out + "]";
}

bool has_values(const std::vector<TimeLine>& lines) {
    for (const TimeLine& line : lines) {
        for (const TimePoint& p : line.points) {
            if (p.value) return true;
        }
    }
    return false;
}

void legend(std::string& out, const std::vector<TimeLine>& lines, bool errors) {
    out += "<div class=\"legend\">";
    for (const TimeLine& line : lines) {
        put(out, "<span><i style=\"background:{}\"></i>{}</span>", line.color, esc(line.label));
    }
    if (errors) put(out, "<span><i class=\"band\" style=\"background:{}\"></i>seconds with errors</span>", kRed);
    out += "</div>\n";
}

struct TimeChart {
    std::string chart;  // data-chart
    std::string aria;
    std::string y_label;
    std::string unit;  // in tooltips
    double height;
    std::function<std::string(double)> y_tick;
};

// A line chart over the timeline's seconds; `errors` (optional) marks the seconds with errors as
// bands behind the lines.
void time_chart(std::string& out, const TimeChart& spec, const std::vector<TimeLine>& lines,
                const std::vector<TimePoint>* errors) {
    constexpr double kW = 960, kLeft = 70, kRight = 16, kTop = 12, kBottom = 42;
    const double h = spec.height;
    double t_lo = 0, t_hi = 1, y_lo = 0, y_hi = 0;
    bool first = true;
    for (const TimeLine& line : lines) {
        for (const TimePoint& p : line.points) {
            t_lo = first ? std::min(0.0, p.t) : std::min(t_lo, p.t);
            t_hi = first ? p.t : std::max(t_hi, p.t);
            first = false;
            if (p.value) {
                y_lo = std::min(y_lo, *p.value);
                y_hi = std::max(y_hi, *p.value);
            }
        }
    }
    if (t_hi <= t_lo) t_hi = t_lo + 1;
    if (y_hi <= y_lo) y_hi = y_lo + 1;
    const double y_step = nice_step(y_hi - y_lo, 5);
    y_hi = std::ceil(y_hi / y_step - 1e-9) * y_step;
    y_lo = std::floor(y_lo / y_step + 1e-9) * y_step;
    const LinearScale sx{t_lo, t_hi, kLeft, kW - kRight};
    const LinearScale sy{y_lo, y_hi, h - kBottom, kTop};

    put(out, "<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" data-chart=\"{}\">\n", kW, h,
        esc(spec.aria), esc(spec.chart));
    out += "<g class=\"grid\">";
    for (double v : ticks(y_lo, y_hi, y_step)) {
        put(out, "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", coord(kLeft), coord(kW - kRight), coord(sy(v)),
            coord(sy(v)));
    }
    out += "</g>\n<g class=\"axis\">";
    put(out, "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>", coord(kLeft), coord(kW - kRight),
        coord(h - kBottom));
    for (double v : ticks(y_lo, y_hi, y_step)) {
        put(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>", coord(kLeft - 8),
            coord(sy(v)), esc(spec.y_tick(v)));
    }
    const double t_step = std::max(1.0, nice_step(t_hi - t_lo, 10));
    for (double v : ticks(t_lo, t_hi, t_step)) {
        put(out,
            "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/><text x=\"{0}\" y=\"{3}\" "
            "text-anchor=\"middle\">{4:g}</text>",
            coord(sx(v)), coord(h - kBottom), coord(h - kBottom + 5), coord(h - kBottom + 18), v);
    }
    put(out, "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">seconds since the start</text>",
        coord((kLeft + kW - kRight) / 2), coord(h - 6));
    put(out, "<text class=\"label\" transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        coord((kTop + h - kBottom) / 2), esc(spec.y_label));
    out += "</g>\n";

    if (errors != nullptr) {
        put(out, "<g class=\"bands\" data-chart=\"{}\" data-series=\"errors\" data-points=\"{}\" fill=\"{}\">",
            esc(spec.chart), esc(points_attribute(*errors)), kRed);
        const double half = std::fabs(sx(t_lo + 0.5) - sx(t_lo));
        for (const TimePoint& p : *errors) {
            if (!p.value || *p.value <= 0) continue;
            const double x0 = std::max(kLeft, sx(p.t) - half);
            const double x1 = std::min(kW - kRight, sx(p.t) + half);
            put(out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" opacity=\"0.18\"><title>t={} s: {} "
                "error{}</title></rect>",
                coord(x0), coord(kTop), coord(std::max(0.0, x1 - x0)), coord(h - kBottom - kTop), esc(p.t_json),
                count_text(p.value), *p.value == 1 ? "" : "s");
        }
        out += "</g>\n";
    }

    for (const TimeLine& line : lines) {
        std::string d;
        bool pen_down = false;
        for (const TimePoint& p : line.points) {
            if (!p.value) {
                pen_down = false;
                continue;
            }
            put(d, "{}{},{} ", pen_down ? 'L' : 'M', coord(sx(p.t)), coord(sy(*p.value)));
            pen_down = true;
        }
        if (!d.empty()) d.pop_back();
        put(out,
            "<path class=\"line\" d=\"{}\" stroke=\"{}\" data-chart=\"{}\" data-series=\"{}\" "
            "data-points=\"{}\"/>\n",
            d, line.color, esc(spec.chart), esc(line.field), esc(points_attribute(line.points)));
        if (line.points.size() <= kMaxDots) {
            put(out, "<g class=\"dots\" fill=\"{}\">", line.color);
            for (const TimePoint& p : line.points) {
                if (!p.value) continue;
                put(out, "<circle cx=\"{}\" cy=\"{}\" r=\"2.6\"><title>t={} s: {} {}{}</title></circle>",
                    coord(sx(p.t)), coord(sy(*p.value)), esc(p.t_json), esc(line.label),
                    spec.unit == "ms" ? ms_number(*p.value) : count_text(p.value),
                    spec.unit.empty() ? "" : " " + spec.unit);
            }
            out += "</g>\n";
        }
    }
    out += "</svg>\n";
}

void no_data(std::string& out, std::string_view why) { put(out, "<p class=\"nodata\">no data: {}</p>\n", esc(why)); }

void timeline_charts(std::string& out, const json::object& report) {
    const json::array* timeline = array_at(&report, "timeline");

    out += "<section>\n<h2>Throughput</h2>\n";
    if (timeline == nullptr || timeline->empty()) {
        no_data(out, "the report has no timeline");
    } else {
        const std::vector<TimeLine> requests{{"requests", "requests/s", kBlue, timeline_points(*timeline, "requests")}};
        const std::vector<TimeLine> headers{{"headers", "headers/s", kGreen, timeline_points(*timeline, "headers")}};
        const std::vector<TimePoint> errors = timeline_points(*timeline, "errors");
        const bool any_errors =
            std::any_of(errors.begin(), errors.end(), [](const TimePoint& p) { return p.value && *p.value > 0; });
        out += "<figure>\n<figcaption>Requests per second</figcaption>\n";
        legend(out, requests, any_errors);
        if (has_values(requests)) {
            time_chart(out, {"throughput", "requests per second over time", "requests/s", "", 230, si_text}, requests,
                       &errors);
        } else {
            no_data(out, "the timeline has no request counts");
        }
        out += "</figure>\n<figure>\n<figcaption>Headers per second</figcaption>\n";
        legend(out, headers, false);
        if (has_values(headers)) {
            time_chart(out, {"throughput", "headers per second over time", "headers/s", "", 230, si_text}, headers,
                       nullptr);
        } else {
            no_data(out, "the timeline has no header counts");
        }
        out += "</figure>\n";
        // History profiles: bodies and receipt lists per second, when any came.
        const std::vector<TimeLine> history{
            {"bodies", "bodies/s", kGreen, timeline_points(*timeline, "bodies")},
            {"receipt_lists", "receipt lists/s", kOrange, timeline_points(*timeline, "receipt_lists")}};
        const bool any_history = std::any_of(history.begin(), history.end(), [](const TimeLine& l) {
            return std::any_of(l.points.begin(), l.points.end(),
                               [](const TimePoint& p) { return p.value && *p.value > 0; });
        });
        if (any_history) {
            out += "<figure>\n<figcaption>Bodies and receipt lists per second</figcaption>\n";
            legend(out, history, false);
            time_chart(out,
                       {"throughput", "bodies and receipt lists per second over time", "items/s", "", 230, si_text},
                       history, nullptr);
            out += "</figure>\n";
        }
    }
    out += "</section>\n";

    out += "<section>\n<h2>Round-trip time</h2>\n";
    if (timeline == nullptr || timeline->empty()) {
        no_data(out, "the report has no timeline");
    } else {
        const std::vector<TimeLine> rtt{{"p50_ms", "p50", kBlue, timeline_points(*timeline, "p50_ms")},
                                        {"p99_ms", "p99", kOrange, timeline_points(*timeline, "p99_ms")}};
        out += "<figure>\n<figcaption>p50 and p99 of the replies of each second</figcaption>\n";
        legend(out, rtt, false);
        if (has_values(rtt)) {
            time_chart(out, {"rtt", "p50 and p99 round-trip time over time", "RTT (ms)", "ms", 280, si_text}, rtt,
                       nullptr);
        } else {
            no_data(out, "the timeline has no round-trip times");
        }
        out += "</figure>\n";
    }
    out += "</section>\n";
}

struct Bucket {
    double lower, le, count;
    std::string le_json, count_json;
};

// The 1-2-5 ladder value just below `le`: the lower bound of a bucket whose predecessor the
// report left out (it lists non-empty buckets only).
double ladder_below(double le) {
    const double decade = std::floor(std::log10(le));
    double best = 0;
    for (int k = -1; k <= 0; ++k) {
        for (double m : {1.0, 2.0, 5.0}) {
            const double c = m * std::pow(10.0, decade + k);
            if (c < le * (1 - 1e-9)) best = std::max(best, c);
        }
    }
    return best;
}

std::vector<Bucket> histogram_buckets(const json::object* profile) {
    std::vector<Bucket> out;
    const json::array* histogram = array_at(profile, "histogram");
    if (histogram == nullptr) return out;
    for (const json::value& v : *histogram) {
        const json::object* b = v.if_object();
        const auto le = number_at(b, "le_ms");
        const auto count = number_at(b, "count");
        if (!le || *le <= 0 || !count) continue;
        out.push_back({0, *le, std::max(0.0, *count), json_number(field(b, "le_ms")), json_number(field(b, "count"))});
    }
    std::sort(out.begin(), out.end(), [](const Bucket& a, const Bucket& b) { return a.le < b.le; });
    double previous = 0;
    for (Bucket& b : out) {
        b.lower = std::max(ladder_below(b.le), previous);
        previous = b.le;
    }
    return out;
}

void histogram_charts(std::string& out, const json::object& report) {
    out += "<section>\n<h2>Latency distribution per profile</h2>\n";
    const json::array* profiles = array_at(&report, "profiles");
    if (profiles == nullptr || profiles->empty()) {
        no_data(out, "the report has no profiles");
        out += "</section>\n";
        return;
    }
    // One x domain (whole decades) and one y domain for every panel, so that panels compare.
    std::vector<std::vector<Bucket>> all;
    double lo = 0, hi = 0, top = 0;
    bool any = false;
    for (const json::value& p : *profiles) {
        all.push_back(histogram_buckets(p.if_object()));
        double total = 0;
        for (const Bucket& b : all.back()) total += b.count;
        for (const Bucket& b : all.back()) {
            lo = any ? std::min(lo, b.lower) : b.lower;
            hi = any ? std::max(hi, b.le) : b.le;
            any = true;
            if (total > 0) top = std::max(top, b.count / total);
        }
    }
    out +=
        "<p class=\"note\">Share of each profile's replies per round-trip-time bucket; log-scale time axis, the "
        "same axes in every panel. Dashed line: p50, solid line: p99.</p>\n<div class=\"multiples\">\n";
    const double lo_decade = any ? std::floor(std::log10(lo) + 1e-9) : 0;
    double hi_decade = any ? std::ceil(std::log10(hi) - 1e-9) : 1;
    if (hi_decade <= lo_decade) hi_decade = lo_decade + 1;
    if (!(top > 0)) top = 1;
    const double y_step = nice_step(top, 4);
    top = std::min(1.0, std::ceil(top / y_step - 1e-9) * y_step);

    constexpr double kW = 320, kH = 190, kLeft = 44, kRight = 10, kTop = 14, kBottom = 36;
    const LogScale sx{lo_decade, hi_decade, kLeft, kW - kRight};
    const LinearScale sy{0, top, kH - kBottom, kTop};
    const int decades = static_cast<int>(hi_decade - lo_decade);
    const int label_every = decades <= 5 ? 1 : 2;

    for (size_t i = 0; i < profiles->size(); ++i) {
        const json::object* profile = (*profiles)[i].if_object();
        const std::string name = string_at(profile, "name").value_or(fmt::format("#{}", i + 1));
        const std::vector<Bucket>& buckets = all[i];
        double total = 0;
        for (const Bucket& b : buckets) total += b.count;
        const json::object* rtt = object_at(profile, "rtt_ms");
        const auto p50 = number_at(rtt, "p50");
        const auto p99 = number_at(rtt, "p99");

        put(out, "<figure class=\"panel\">\n<figcaption>{}<span class=\"sub\">{} replies · p50 {} · p99 {}</span>",
            esc(name), count_text(total), ms_unit_text(p50), ms_unit_text(p99));
        out += "</figcaption>\n";
        if (buckets.empty() || !(total > 0)) {
            no_data(out, "no histogram for this profile");
            out += "</figure>\n";
            continue;
        }
        put(out,
            "<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"round-trip time distribution of "
            "{}\" data-chart=\"histogram\" data-profile=\"{}\">\n<g class=\"grid\">",
            kW, kH, esc(name), esc(name));
        for (double v : ticks(0, top, y_step)) {
            put(out, "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", coord(kLeft), coord(kW - kRight), coord(sy(v)),
                coord(sy(v)));
        }
        for (int d = 0; d <= decades; ++d) {
            for (double m : {1.0, 2.0, 5.0}) {
                const double v = m * std::pow(10.0, lo_decade + d);
                if (std::log10(v) > hi_decade + 1e-9) break;
                put(out, "<line class=\"{}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", m == 1.0 ? "major" : "minor",
                    coord(sx(v)), coord(sx(v)), coord(kTop), coord(kH - kBottom));
            }
        }
        out += "</g>\n<g class=\"axis\">";
        put(out, "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>", coord(kLeft), coord(kW - kRight),
            coord(kH - kBottom));
        for (double v : ticks(0, top, y_step)) {
            put(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{:g}%</text>",
                coord(kLeft - 5), coord(sy(v)), std::round(v * 1000) / 10);
        }
        for (int d = 0; d <= decades; d += label_every) {
            const double v = std::pow(10.0, lo_decade + d);
            put(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", coord(sx(v)), coord(kH - kBottom + 14),
                latency_tick(v));
        }
        put(out, "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">RTT (ms, log scale)</text>",
            coord((kLeft + kW - kRight) / 2), coord(kH - 5));
        out += "</g>\n<g class=\"bars\">";
        for (const Bucket& b : buckets) {
            const double share = b.count / total;
            const double x0 = sx(b.lower), x1 = sx(b.le);
            put(out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" data-chart=\"histogram\" "
                "data-profile=\"{}\" data-le-ms=\"{}\" data-count=\"{}\"><title>{} ms to {} ms: {} replies "
                "({})</title></rect>",
                coord(x0 + 0.5), coord(sy(share)), coord(std::max(0.5, x1 - x0 - 1)), coord(sy(0) - sy(share)), kBar,
                esc(name), esc(b.le_json), esc(b.count_json), fmt::format("{:g}", b.lower), esc(b.le_json),
                count_text(b.count), percent_text(share));
        }
        out += "</g>\n";
        const auto marker = [&](std::optional<double> v, const char* label, const char* cls, const char* anchor,
                                double dx) {
            if (!v || *v <= 0) return;
            const double x = sx(*v);
            if (x < kLeft || x > kW - kRight) return;
            put(out,
                "<g class=\"{}\"><line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/><text x=\"{}\" y=\"{}\" "
                "text-anchor=\"{}\">{}</text></g>",
                cls, coord(x), coord(x), coord(kTop), coord(kH - kBottom), coord(x + dx), coord(kTop - 3), anchor,
                label);
        };
        marker(p50, "p50", "marker p50", "end", -2);
        marker(p99, "p99", "marker p99", "start", 2);
        out += "\n</svg>\n</figure>\n";
    }
    out += "</div>\n</section>\n";
}

// ---------------------------------------------------------------------------------------------
// Tables.

// A right-aligned number cell; `highlight` marks non-zero values (errors, losses, drops).
std::string num_cell(std::optional<double> v, bool highlight = false) {
    const bool nz = highlight && v && *v != 0;
    return fmt::format("<td{}>{}</td>", nz ? " class=\"nz\"" : "", count_text(v));
}

std::string ms_cell(std::optional<double> v) { return fmt::format("<td>{}</td>", ms_text(v)); }

// The error kinds of the profiles and totals: the four of schema version 1 first, then any others in
// the order met.
std::vector<std::string> error_kinds(const json::array* profiles, const json::object* totals) {
    std::vector<std::string> kinds{"timeout", "closed", "rejected", "verification"};
    const auto add = [&kinds](const json::object* errors) {
        if (errors == nullptr) return;
        for (const auto& kv : *errors) {
            const std::string key(kv.key());
            if (std::find(kinds.begin(), kinds.end(), key) == kinds.end()) kinds.push_back(key);
        }
    };
    if (profiles != nullptr) {
        for (const json::value& p : *profiles) add(object_at(p.if_object(), "errors"));
    }
    add(object_at(totals, "errors"));
    return kinds;
}

// "timeout 3, short reply 12": the non-zero reasons, in the report's order.
std::string reasons_text(const std::vector<std::pair<std::string, double>>& reasons) {
    std::string out;
    for (const auto& [reason, count] : reasons) {
        if (count == 0) continue;
        if (!out.empty()) out += ", ";
        out += esc(reason) + " " + count_text(count);
    }
    return out.empty() ? "-" : out;
}

std::vector<std::pair<std::string, double>> reasons_of(const json::object* verdicts) {
    std::vector<std::pair<std::string, double>> out;
    const json::object* reasons = object_at(verdicts, "reasons");
    if (reasons == nullptr) return out;
    for (const auto& kv : *reasons) out.emplace_back(std::string(kv.key()), as_number(&kv.value()).value_or(0));
    return out;
}

void profile_tables(std::string& out, const json::object& report) {
    const json::array* profiles = array_at(&report, "profiles");
    const json::object* totals = object_at(&report, "totals");
    out += "<section>\n<h2>Profiles: traffic and latency</h2>\n";
    if ((profiles == nullptr || profiles->empty()) && totals == nullptr) {
        no_data(out, "the report has neither profiles nor totals");
        out += "</section>\n";
        return;
    }
    out +=
        "<div class=\"table-wrap\"><table>\n<thead><tr><th>profile</th><th>clients</th><th>requests</th>"
        "<th>replies</th><th>headers</th><th>headers/reply</th><th>bytes</th><th>p50 ms</th><th>p90 ms</th>"
        "<th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>mean ms</th></tr></thead>\n<tbody>\n";
    const auto traffic_row = [&out](const std::string& name, std::optional<double> clients, const json::object* o,
                                    const char* cls) {
        const auto replies = number_at(o, "replies");
        const auto headers = number_at(o, "headers");
        const json::object* rtt = object_at(o, "rtt_ms");
        std::optional<double> per_reply;
        if (replies && headers && *replies > 0) per_reply = *headers / *replies;
        put(out, "<tr{}><td>{}</td>{}{}{}{}{}<td>{}</td>{}{}{}{}{}{}</tr>\n", cls, esc(name), num_cell(clients),
            num_cell(number_at(o, "requests")), num_cell(replies), num_cell(headers), num_cell(per_reply),
            bytes_text(number_at(o, "bytes")), ms_cell(number_at(rtt, "p50")), ms_cell(number_at(rtt, "p90")),
            ms_cell(number_at(rtt, "p99")), ms_cell(number_at(rtt, "p999")), ms_cell(number_at(rtt, "max")),
            ms_cell(number_at(rtt, "mean")));
    };
    double clients_sum = 0;
    if (profiles != nullptr) {
        for (size_t i = 0; i < profiles->size(); ++i) {
            const json::object* p = (*profiles)[i].if_object();
            const auto clients = number_at(p, "clients");
            clients_sum += clients.value_or(0);
            traffic_row(string_at(p, "name").value_or(fmt::format("#{}", i + 1)), clients, p, "");
        }
    }
    if (totals != nullptr) {
        const auto requested = number_at(object_at(&report, "clients"), "requested");
        traffic_row("total", requested ? requested : std::optional<double>(clients_sum), totals, " class=\"total\"");
    }
    out += "</tbody></table></div>\n</section>\n";

    out += "<section>\n<h2>Profiles: errors and verdicts</h2>\n";
    const std::vector<std::string> kinds = error_kinds(profiles, totals);
    out += "<div class=\"table-wrap\"><table>\n<thead><tr><th>profile</th>";
    for (const std::string& kind : kinds) put(out, "<th>{}</th>", esc(kind));
    out +=
        "<th>lost</th><th>stale</th><th>verification failures</th><th>verdict drops</th><th>penalties</th>"
        "<th class=\"text\">reasons</th></tr></thead>\n<tbody>\n";
    const auto error_row = [&out, &kinds](const std::string& name, const json::object* o, std::optional<double> drops,
                                          std::optional<double> penalties,
                                          const std::vector<std::pair<std::string, double>>& reasons, const char* cls) {
        put(out, "<tr{}><td>{}</td>", cls, esc(name));
        const json::object* errors = object_at(o, "errors");
        for (const std::string& kind : kinds) out += num_cell(number_at(errors, kind), true);
        put(out, "{}{}{}{}{}<td class=\"text\">{}</td></tr>\n", num_cell(number_at(o, "lost"), true),
            num_cell(number_at(o, "stale"), true), num_cell(number_at(o, "verification_failures"), true),
            num_cell(drops, true), num_cell(penalties, true), reasons_text(reasons));
    };
    std::vector<std::pair<std::string, double>> all_reasons;
    double drops_sum = 0, penalties_sum = 0;
    if (profiles != nullptr) {
        for (size_t i = 0; i < profiles->size(); ++i) {
            const json::object* p = (*profiles)[i].if_object();
            const json::object* verdicts = object_at(p, "verdicts");
            const auto reasons = reasons_of(verdicts);
            for (const auto& [reason, count] : reasons) {
                auto it = std::find_if(all_reasons.begin(), all_reasons.end(),
                                       // An init-capture: clang 14 cannot capture a structured binding.
                                       [&name = reason](const auto& r) { return r.first == name; });
                if (it == all_reasons.end()) {
                    all_reasons.emplace_back(reason, count);
                } else {
                    it->second += count;
                }
            }
            drops_sum += number_at(verdicts, "drops").value_or(0);
            penalties_sum += number_at(verdicts, "penalties").value_or(0);
            error_row(string_at(p, "name").value_or(fmt::format("#{}", i + 1)), p, number_at(verdicts, "drops"),
                      number_at(verdicts, "penalties"), reasons, "");
        }
    }
    if (totals != nullptr) {
        const auto drops = number_at(totals, "verdict_drops");
        const auto penalties = number_at(totals, "verdict_penalties");
        error_row("total", totals, drops ? drops : std::optional<double>(drops_sum),
                  penalties ? penalties : std::optional<double>(penalties_sum), all_reasons, " class=\"total\"");
    }
    out += "</tbody></table></div>\n";
    out +=
        "<p class=\"note\">Lost: requests without a reply before their deadline; stale: replies that came after it. "
        "Verdicts are what the emulated client would have done to the server: drop it or count a penalty, with "
        "the reasons. The totals row sums the profiles' reasons.</p>\n</section>\n";

    // What each profile stands for, when the report says.
    std::string described;
    if (profiles != nullptr) {
        for (const json::value& v : *profiles) {
            const json::object* p = v.if_object();
            const auto imitates = string_at(p, "imitates");
            if (!imitates) continue;
            put(described, "<dt>{}</dt><dd>{}</dd>\n", esc(string_at(p, "name").value_or("-")), esc(*imitates));
        }
    }
    if (!described.empty()) {
        put(out, "<section>\n<h2>What the profiles imitate</h2>\n<dl class=\"kv\">\n{}</dl>\n</section>\n", described);
    }
}

// A failed request as the report describes it: an object {origin, amount, skip, reverse} becomes
// "by number 4096, 128 headers, skip 3, forward"; a GetBlockBodies or GetReceipts request {message,
// blocks, first, last} "GetBlockBodies of 128 blocks 100..227"; a string is shown as it is.
std::string request_text(const json::value* request) {
    if (request == nullptr) return "-";
    if (request->is_string()) return esc(request->get_string());
    const json::object* r = request->if_object();
    if (r == nullptr) return "-";
    if (const auto message = string_at(r, "message"); message && *message != "GetBlockHeaders") {
        return esc(fmt::format("{} of {} blocks {}..{}", *message, plain_text(number_at(r, "blocks")),
                               plain_text(number_at(r, "first")), plain_text(number_at(r, "last"))));
    }
    const json::value* origin = field(r, "origin");
    std::string out;
    if (origin != nullptr && origin->is_string()) {
        out = "by hash " + esc(origin->get_string());
    } else if (as_number(origin)) {
        out = "by number " + plain_text(as_number(origin));
    } else {
        out = "origin -";
    }
    const auto reverse = bool_at(r, "reverse");
    return out + fmt::format(", {} headers, skip {}, {}", plain_text(number_at(r, "amount")),
                             plain_text(number_at(r, "skip")), reverse ? (*reverse ? "reverse" : "forward") : "-");
}

// Each request message of the profiles that sent bodies or receipt requests: what came back,
// what was checked, and the round trip of that message alone.
void history_tables(std::string& out, const json::object& report) {
    const json::array* profiles = array_at(&report, "profiles");
    if (profiles == nullptr) return;
    static constexpr std::array<std::pair<const char*, const char*>, 3> kMessageRows{
        {{"headers", "GetBlockHeaders"}, {"bodies", "GetBlockBodies"}, {"receipts", "GetReceipts"}}};
    std::string rows;
    for (size_t i = 0; i < profiles->size(); ++i) {
        const json::object* p = (*profiles)[i].if_object();
        const json::object* messages = object_at(p, "messages");
        const bool asked = number_at(object_at(messages, "bodies"), "requests").value_or(0) > 0 ||
                           number_at(object_at(messages, "receipts"), "requests").value_or(0) > 0;
        if (!asked) continue;
        const std::string name = string_at(p, "name").value_or(fmt::format("#{}", i + 1));
        for (const auto& [key, request] : kMessageRows) {
            const json::object* m = object_at(messages, key);
            if (number_at(m, "requests").value_or(0) == 0) continue;
            const auto replies = number_at(m, "replies");
            const auto items = number_at(m, "items");
            std::optional<double> per_reply;
            if (replies && items && *replies > 0) per_reply = *items / *replies;
            auto contents = number_at(m, "transactions");
            if (!contents) contents = number_at(m, "receipts");
            const json::object* rtt = object_at(m, "rtt_ms");
            put(rows, "<tr><td>{}</td><td class=\"text\">{}</td>{}{}{}{}<td>{}</td>{}{}{}{}{}{}{}{}</tr>\n", esc(name),
                request, num_cell(number_at(m, "requests")), num_cell(replies), num_cell(items), num_cell(per_reply),
                bytes_text(number_at(m, "bytes")), num_cell(contents), num_cell(number_at(m, "empty_replies")),
                num_cell(number_at(m, "short_replies")), num_cell(number_at(m, "lost"), true),
                num_cell(number_at(m, "verification_failures"), true), ms_cell(number_at(rtt, "p50")),
                ms_cell(number_at(rtt, "p99")), ms_cell(number_at(rtt, "max")));
        }
    }
    if (rows.empty()) return;
    out += "<section>\n<h2>Bodies and receipts</h2>\n";
    out +=
        "<div class=\"table-wrap\"><table>\n<thead><tr><th>profile</th><th class=\"text\">message</th>"
        "<th>requests</th><th>replies</th><th>items</th><th>items/reply</th><th>bytes</th>"
        "<th>transactions / receipts</th><th>empty</th><th>short</th><th>lost</th><th>verification failures</th>"
        "<th>p50 ms</th><th>p99 ms</th><th>max ms</th></tr></thead>\n<tbody>\n";
    out += rows;
    out += "</tbody></table></div>\n";
    out +=
        "<p class=\"note\">Every body is checked against its header's transactions root, ommers hash and "
        "withdrawals root, every receipt list (eth/69 and later: with its blooms rebuilt from the logs) against "
        "the receipts root; the headers are the ones the same client got from the server and verified. Empty and "
        "short replies are counted; inside the range an eth/69 server announced they fail verification.</p>\n"
        "</section>\n";
}

void failures_section(std::string& out, const json::object& report) {
    out += "<section>\n<h2>Failures</h2>\n";
    const json::array* failures = array_at(&report, "failures");
    // failures_total counts every failure (the list keeps the first); older writers only had the
    // verification failures' count.
    auto counted = number_at(&report, "failures_total");
    if (!counted) counted = number_at(object_at(&report, "totals"), "verification_failures");
    if (failures == nullptr) {
        no_data(out, "the report has no failure list");
        out += "</section>\n";
        return;
    }
    if (failures->empty()) {
        if (counted && *counted > 0) {
            put(out, "<p>{} failures counted, none listed in the report.</p>\n", count_text(counted));
        } else {
            out += "<p class=\"good\">None: no reply failed verification and no request failed.</p>\n";
        }
        out += "</section>\n";
        return;
    }
    const size_t shown = std::min(failures->size(), kFailuresShown);
    const double total = std::max(counted.value_or(0), static_cast<double>(failures->size()));
    if (shown == failures->size()) {
        put(out, "<p>{} failures counted; {} listed.</p>\n", count_text(total), shown);
    } else {
        put(out, "<p>{} failures counted; the first {} listed (the JSON report holds {}).</p>\n", count_text(total),
            shown, failures->size());
    }
    out +=
        "<div class=\"table-wrap\"><table>\n<thead><tr><th>#</th><th>client</th><th class=\"text\">profile</th>"
        "<th class=\"text\">request</th><th class=\"text\">reason</th></tr></thead>\n<tbody>\n";
    for (size_t i = 0; i < shown; ++i) {
        const json::object* f = (*failures)[i].if_object();
        put(out,
            "<tr><td>{}</td>{}<td class=\"text\">{}</td><td class=\"text mono wrap request\">{}</td>"
            "<td class=\"text wrap reason\">{}</td></tr>\n",
            i + 1, num_cell(number_at(f, "client")), esc(string_at(f, "profile").value_or("-")),
            request_text(field(f, "request")), esc(string_at(f, "reason").value_or("-")));
    }
    out += "</tbody></table></div>\n</section>\n";
}

void thresholds_section(std::string& out, const json::object& report) {
    out += "<section>\n<h2>Thresholds</h2>\n";
    const json::array* thresholds = array_at(&report, "thresholds");
    if (thresholds == nullptr) {
        no_data(out, "the report has no thresholds");
    } else if (thresholds->empty()) {
        out += "<p>No thresholds were set.</p>\n";
    } else {
        out +=
            "<div class=\"table-wrap\"><table class=\"narrow\">\n<thead><tr><th class=\"text\">threshold</th>"
            "<th>value</th><th>result</th></tr></thead>\n<tbody>\n";
        for (const json::value& v : *thresholds) {
            const json::object* t = v.if_object();
            const auto ok = bool_at(t, "ok");
            put(out, "<tr><td class=\"text mono\">{}</td><td>{}</td><td class=\"{}\">{}</td></tr>\n",
                esc(string_at(t, "expr").value_or("-")), esc(string_at(t, "value").value_or("-")),
                ok ? (*ok ? "pass" : "fail") : "", ok ? (*ok ? "passed" : "failed") : "-");
        }
        out += "</tbody></table></div>\n";
    }
    out += "</section>\n";
}

// A merged report (report --merge): the generators it merges, and what the merge warned of.
void merge_section(std::string& out, const json::object& report) {
    const json::object* merge = object_at(&report, "merge");
    if (merge == nullptr) return;
    const json::array* inputs = array_at(merge, "inputs");
    put(out, "<section>\n<h2>Generators merged: {}</h2>\n", inputs != nullptr ? inputs->size() : 0);
    if (const json::array* warnings = array_at(merge, "warnings")) {
        for (const json::value& w : *warnings) {
            if (w.is_string()) put(out, "<p class=\"fail\">{}</p>\n", esc(w.get_string()));
        }
    }
    if (inputs == nullptr || inputs->empty()) {
        no_data(out, "the merge lists no inputs");
        out += "</section>\n";
        return;
    }
    out +=
        "<div class=\"table-wrap\"><table>\n<thead><tr><th class=\"text\">report</th><th class=\"text\">host</th>"
        "<th class=\"text\">started</th><th>window s</th><th>clients</th><th>requests</th><th>headers</th>"
        "<th>verified</th></tr></thead>\n<tbody>\n";
    for (const json::value& v : *inputs) {
        const json::object* in = v.if_object();
        const json::object* window = object_at(in, "window");
        const auto start = number_at(window, "start_unix");
        const auto end = number_at(window, "end_unix");
        const auto ok = bool_at(in, "verified");
        put(out,
            "<tr><td class=\"text mono\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td>"
            "<td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>\n",
            esc(string_at(in, "file").value_or("-")), esc(string_at(in, "host").value_or("-")),
            esc(string_at(in, "started_at").value_or("-")),
            start && end ? fmt::format("{:.1f}", *end - *start) : std::string("-"),
            count_text(number_at(in, "clients")), count_text(number_at(in, "requests")),
            count_text(number_at(in, "headers")), ok ? (*ok ? "pass" : "fail") : "", ok ? (*ok ? "yes" : "no") : "-");
    }
    out += "</tbody></table></div>\n";
    if (const json::object* windows = object_at(merge, "windows")) {
        put(out, "<p>Starts {} s apart, ends {} s apart; every generator ran for {} s of the window.</p>\n",
            count_text(number_at(windows, "start_spread_s")), count_text(number_at(windows, "end_spread_s")),
            count_text(number_at(windows, "overlap_s")));
    }
    out += "</section>\n";
}

void definition(std::string& out, std::string_view term, const std::string& html_value) {
    put(out, "<dt>{}</dt><dd>{}</dd>\n", esc(term), html_value);
}

void server_metrics_section(std::string& out, const json::object& report) {
    out += "<section>\n<h2>Server metrics</h2>\n";
    const json::object* m = object_at(&report, "server_metrics");
    if (m == nullptr) {
        no_data(out, "the server's metrics were not collected");
        out += "</section>\n";
        return;
    }
    const json::object* serve = object_at(m, "serve_seconds");
    const auto seconds_as_ms = [](std::optional<double> s) {
        return s ? std::optional<double>(*s * 1000) : std::nullopt;
    };
    out += "<dl class=\"kv\">\n";
    definition(out, "scraped from", "<span class=\"mono\">" + esc(string_at(m, "url").value_or("-")) + "</span>");
    const auto cpu = number_at(m, "cpu_seconds");
    definition(out, "server CPU", cpu ? fmt::format("{:.2f} s", *cpu) : "-");
    definition(out, "requests served", count_text(number_at(m, "requests_served")));
    definition(out, "headers served", count_text(number_at(m, "headers_served")));
    const auto per_request = number_at(m, "cpu_us_per_request");
    const auto per_header = number_at(m, "cpu_us_per_header");
    definition(out, "CPU per request", per_request ? fmt::format("{:.1f} µs", *per_request) : "-");
    definition(out, "CPU per header", per_header ? fmt::format("{:.3f} µs", *per_header) : "-");
    definition(out, "serve time p50", ms_unit_text(seconds_as_ms(number_at(serve, "p50"))));
    definition(out, "serve time p99", ms_unit_text(seconds_as_ms(number_at(serve, "p99"))));
    out += "</dl>\n</section>\n";
}

// ---------------------------------------------------------------------------------------------
// Head of the page: title, verdict, run and server.

void verdict_banner(std::string& out, const json::object& report) {
    const auto verified = bool_at(&report, "verified");
    const json::array* thresholds = array_at(&report, "thresholds");
    size_t total = 0;
    std::vector<std::string> failed;
    if (thresholds != nullptr) {
        for (const json::value& v : *thresholds) {
            const json::object* t = v.if_object();
            ++total;
            if (bool_at(t, "ok") != std::optional<bool>(true)) {
                const auto value = string_at(t, "value");
                failed.push_back(esc(string_at(t, "expr").value_or("?")) + (value ? " (" + esc(*value) + ")" : ""));
            }
        }
    }
    const char* state = !verified ? "unknown" : (*verified && failed.empty()) ? "pass" : "fail";
    const char* word = !verified ? "NO VERDICT" : (*verified && failed.empty()) ? "PASS" : "FAIL";
    std::vector<std::string> parts;
    const json::object* totals = object_at(&report, "totals");
    if (!verified) {
        parts.push_back("the report does not say whether replies verified");
    } else if (*verified) {
        parts.push_back("every reply verified");
    } else {
        // What kept the run from verifying, as far as the report tells.
        const auto plural = [](double n, const char* one, const char* many) {
            return fmt::format("{} {}", count_text(n), n == 1 ? one : many);
        };
        const auto failures = number_at(totals, "verification_failures");
        const auto lost = number_at(totals, "lost");
        const auto stale = number_at(totals, "stale");
        const auto replies = number_at(totals, "replies");
        const size_t before = parts.size();
        if (failures && *failures > 0) {
            parts.push_back(plural(*failures, "verification failure", "verification failures"));
        }
        if (lost && *lost > 0) parts.push_back(plural(*lost, "request lost", "requests lost"));
        if (stale && *stale > 0) parts.push_back(plural(*stale, "stale reply", "stale replies"));
        if (replies && *replies == 0) parts.push_back("no replies");
        if (parts.size() == before) parts.push_back("not verified");
    }
    if (thresholds == nullptr || total == 0) {
        parts.push_back("no thresholds set");
    } else if (failed.empty()) {
        parts.push_back(fmt::format("{} of {} thresholds passed", total, total));
    } else {
        std::string list;
        for (const std::string& f : failed) list += (list.empty() ? "" : ", ") + f;
        parts.push_back(fmt::format("{} of {} thresholds failed: {}", failed.size(), total, list));
    }
    const json::object* mode = object_at(&report, "mode");
    if (const auto shortfall = number_at(mode, "shortfall"); shortfall && *shortfall > 0) {
        parts.push_back(fmt::format("the target rate was missed by {}", percent_text(*shortfall)));
    }
    if (const auto cf = number_at(object_at(&report, "clients"), "connect_failures"); cf && *cf > 0) {
        parts.push_back(fmt::format("{} connection attempts failed", count_text(cf)));
    }
    if (bool_at(&report, "interrupted") == std::optional<bool>(true)) parts.push_back("the run was interrupted");
    std::string detail;
    for (const std::string& p : parts) detail += (detail.empty() ? "" : " · ") + p;
    put(out,
        "<section class=\"banner {}\" data-verified=\"{}\" data-thresholds-failed=\"{}\"><strong>{}</strong>"
        "<span>{}</span></section>\n",
        state, verified ? (*verified ? "true" : "false") : "null", failed.size(), word, detail);
}

std::string command_line(const json::object& report) {
    const json::array* command = array_at(&report, "command");
    if (command == nullptr || command->empty()) return "";
    std::string line;
    for (const json::value& v : *command) {
        if (!line.empty()) line += ' ';
        line += v.is_string() ? shell_quote(v.get_string()) : json::serialize(v);
    }
    return line;
}

void run_section(std::string& out, const json::object& report) {
    const json::object* server = object_at(&report, "server");
    const json::object* head = object_at(server, "head");
    const json::object* mode = object_at(&report, "mode");
    const json::object* clients = object_at(&report, "clients");
    const json::object* totals = object_at(&report, "totals");
    const json::object* rtt = object_at(totals, "rtt_ms");
    const auto duration = number_at(&report, "duration_s");

    out += "<section>\n<h2>Server</h2>\n<dl class=\"kv\">\n";
    definition(out, "enode", "<span class=\"mono wrap\">" + esc(string_at(server, "enode").value_or("-")) + "</span>");
    definition(out, "client id", esc(string_at(server, "client_id").value_or("-")));
    const auto eth = number_at(server, "eth_version");
    definition(out, "protocol", eth ? "eth/" + count_text(eth) : "-");
    definition(out, "network id", count_text(number_at(server, "network_id")));
    definition(out, "genesis",
               "<span class=\"mono wrap\">" + esc(string_at(server, "genesis").value_or("-")) + "</span>");
    const auto head_number = number_at(head, "number");
    definition(out, "head",
               head_number ? fmt::format("#{} <span class=\"mono wrap\">{}</span>", plain_text(head_number),
                                         esc(string_at(head, "hash").value_or("")))
                           : "-");
    out += "</dl>\n</section>\n<section class=\"columns\">\n<div>\n<h2>Run</h2>\n<dl class=\"kv\">\n";
    definition(out, "started", esc(string_at(&report, "started_at").value_or("-")));
    const bool interrupted = bool_at(&report, "interrupted") == std::optional<bool>(true);
    definition(out, "duration",
               (duration ? seconds_text(*duration) : std::string("-")) + (interrupted ? " (interrupted)" : ""));
    definition(out, "seed", plain_text(number_at(&report, "seed")));
    if (const json::value* reference = field(&report, "reference")) {
        definition(out, "reference chain",
                   reference->is_string() ? "<span class=\"mono wrap\">" + esc(reference->get_string()) + "</span>"
                                          : std::string("none"));
    }
    const auto loop = string_at(mode, "loop");
    const auto target = number_at(mode, "target_rate");
    const auto achieved = number_at(mode, "achieved_rate");
    const auto shortfall = number_at(mode, "shortfall");
    std::string mode_text = loop ? esc(*loop) + " loop" : "-";
    if (target) mode_text += fmt::format(", target {:g} requests/s", *target);
    definition(out, "mode", mode_text);
    definition(out, "achieved rate",
               (achieved ? fmt::format("{:.1f} requests/s", *achieved) : std::string("-")) +
                   (shortfall ? fmt::format(" (shortfall {})", percent_text(*shortfall)) : ""));
    definition(out, "clients",
               fmt::format("{} requested, {} connected at most", count_text(number_at(clients, "requested")),
                           count_text(number_at(clients, "connected_max"))));
    definition(out, "connections",
               fmt::format("{} attempts, {} failed", count_text(number_at(clients, "connect_attempts")),
                           count_text(number_at(clients, "connect_failures"))));
    // Why they failed, most frequent first (the report keeps every distinct reason with its count).
    if (const json::object* reasons = object_at(clients, "connect_errors"); reasons != nullptr && !reasons->empty()) {
        std::vector<std::pair<double, std::string>> by_count;
        for (const auto& kv : *reasons) by_count.emplace_back(as_number(&kv.value()).value_or(0), kv.key());
        std::stable_sort(by_count.begin(), by_count.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        std::string list;
        for (const auto& [n, reason] : by_count) {
            list += fmt::format("{}{} × {}", list.empty() ? "" : "<br>", count_text(n), esc(reason));
        }
        definition(out, "connect errors", list);
    }
    out += "</dl>\n</div>\n<div>\n<h2>Totals</h2>\n<dl class=\"kv\">\n";
    const auto requests = number_at(totals, "requests");
    const auto headers = number_at(totals, "headers");
    const bool rates = duration && *duration > 0;
    definition(
        out, "requests",
        count_text(requests) + (rates && requests ? fmt::format(" ({:.0f}/s)", *requests / *duration) : std::string()));
    definition(out, "replies", count_text(number_at(totals, "replies")));
    definition(out, "headers",
               count_text(headers) +
                   (rates && headers ? fmt::format(" ({}/s)", si_text(std::round(*headers / *duration / 100) * 100))
                                     : std::string()));
    definition(out, "bytes", bytes_text(number_at(totals, "bytes")));
    definition(out, "RTT p50 / p99 / max",
               fmt::format("{} / {} / {}", ms_text(number_at(rtt, "p50")), ms_text(number_at(rtt, "p99")),
                           ms_unit_text(number_at(rtt, "max"))));
    out += "</dl>\n</div>\n</section>\n";

    const std::string command = command_line(report);
    out += "<section>\n<h2>Command</h2>\n";
    if (command.empty()) {
        no_data(out, "the report does not hold the command line");
    } else {
        put(out, "<pre><code>{}</code></pre>\n", esc(command));
    }
    out += "</section>\n";
}

constexpr std::string_view kStyle = R"css(
:root { --fg: #1d2430; --muted: #5b6575; --line: #dde2ea; --panel: #f5f7fa; --ok: #1a7f37; --bad: #b42318; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1160px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 1.55rem; margin: 0 0 4px; font-weight: 650; }
h2 { font-size: 1.1rem; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
.sub, .note { color: var(--muted); }
.note { font-size: 0.88rem; margin: 6px 0; }
.mono, pre, code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace; }
.wrap { overflow-wrap: anywhere; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 4px; padding: 10px 12px;
  white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.84rem; margin: 0; }
.banner { display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; margin: 18px 0 6px;
  padding: 12px 18px; border: 1px solid; border-radius: 6px; }
.banner strong { font-size: 1.3rem; letter-spacing: 0.05em; }
.banner.pass { background: #e9f6ee; border-color: #9fd3b0; color: #125c2a; }
.banner.fail { background: #fdeceb; border-color: #f0aaa4; color: #8c1c13; }
.banner.unknown { background: var(--panel); border-color: var(--line); }
.columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(330px, 1fr)); gap: 0 36px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 0; font-size: 0.92rem; }
dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; min-width: 0; }
figure { margin: 10px 0 22px; }
figcaption { font-weight: 600; margin-bottom: 2px; }
figcaption .sub { display: block; font-weight: 400; font-size: 0.84rem; }
svg.chart { display: block; width: 100%; height: auto; font-size: 12px; overflow: visible; }
svg.chart text { fill: var(--muted); }
svg.chart .label { fill: var(--fg); }
svg.chart .grid line { stroke: #e8ebf0; }
svg.chart .grid line.major { stroke: #d5dae2; }
svg.chart .axis line { stroke: #8d96a5; }
svg.chart .line { fill: none; stroke-width: 2; stroke-linejoin: round; stroke-linecap: round; }
svg.chart .marker line { stroke: #333b47; stroke-width: 1.2; }
svg.chart .marker.p50 line { stroke-dasharray: 4 3; }
svg.chart .marker text { fill: #333b47; font-size: 10px; }
.legend { display: flex; gap: 18px; font-size: 0.84rem; color: var(--muted); margin: 2px 0 4px; }
.legend i { display: inline-block; width: 16px; height: 3px; margin-right: 6px; vertical-align: middle; }
.legend i.band { height: 10px; opacity: 0.3; }
.multiples { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 6px 26px; }
.multiples figure { margin: 6px 0 12px; }
.multiples svg.chart { font-size: 11px; }
@media (max-width: 920px) { .multiples { grid-template-columns: repeat(2, minmax(0, 1fr)); } }
@media (max-width: 600px) { .multiples { grid-template-columns: minmax(0, 1fr); } main { padding: 16px; } }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 0.86rem; font-variant-numeric: tabular-nums; }
table.narrow { width: auto; min-width: 50%; }
th, td { padding: 4px 7px; text-align: right; white-space: nowrap; border-bottom: 1px solid var(--line); }
th { white-space: normal; vertical-align: bottom; }
th:first-child, td:first-child, th.text, td.text { text-align: left; }
td.wrap { white-space: normal; overflow-wrap: anywhere; }
td.request { width: 35%; }
td.reason { width: 45%; }
thead th { background: var(--panel); font-weight: 600; border-bottom: 1px solid #c9d0da; }
tbody tr:hover { background: #fafbfc; }
tr.total td { font-weight: 650; border-top: 2px solid #8d96a5; }
td.nz, td.fail { color: var(--bad); font-weight: 650; }
td.pass, .good { color: var(--ok); }
.nodata { color: var(--muted); font-style: italic; }
footer { margin-top: 36px; color: var(--muted); font-size: 0.8rem; }
@media print {
  body { font-size: 10.5pt; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  figure, table, .banner, dl.kv, pre { break-inside: avoid; }
  .banner, thead th { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .table-wrap { overflow: visible; }
  th, td { padding: 2px 5px; }
}
)css";

}  // namespace

std::string html_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

Outcome<void> check_report(const boost::json::value& doc) {
    const json::object* o = doc.if_object();
    if (o == nullptr) return make_error("not a JSON object");
    const auto schema = string_at(o, "schema");
    if (!schema) return make_error(fmt::format("no \"schema\" field: not a {} document", kReportSchema));
    if (*schema != kReportSchema) {
        return make_error(fmt::format("schema \"{}\" is not \"{}\"", *schema, kReportSchema));
    }
    const json::value* version = field(o, "version");
    if (version == nullptr || !(version->is_int64() || version->is_uint64())) {
        return make_error("no integer \"version\" field");
    }
    if (json_number(version) != std::to_string(kReportVersion)) {
        return make_error(fmt::format("report version {} is not supported (this headerd reads version {})",
                                      json_number(version), kReportVersion));
    }
    return {};
}

std::string render_html_report(const boost::json::object& report) {
    const json::object* server = object_at(&report, "server");
    const auto client_id = string_at(server, "client_id");
    const auto enode = string_at(server, "enode");
    const auto head = number_at(object_at(server, "head"), "number");

    std::string subject = client_id.value_or("unknown server");
    if (enode) subject += " at " + short_enode(*enode);
    const std::string head_text = head ? "head #" + plain_text(head) : "head unknown";

    std::string out;
    out.reserve(64 * 1024);
    put(out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<title>headerd load report: {} ({})</title>\n<style>{}</style>\n</head>\n<body>\n<main>\n",
        esc(subject), esc(head_text), kStyle);
    put(out, "<header>\n<h1>Load report: {}</h1>\n", esc(client_id.value_or("unknown server")));
    std::string sub = enode ? "enode " + esc(short_enode(*enode)) : std::string("enode unknown");
    sub += " · " + esc(head_text);
    if (const auto started = string_at(&report, "started_at")) sub += " · started " + esc(*started);
    if (const auto duration = number_at(&report, "duration_s")) sub += " · " + seconds_text(*duration);
    if (const auto clients = number_at(object_at(&report, "clients"), "requested")) {
        sub += " · " + count_text(clients) + " clients";
    }
    put(out, "<p class=\"sub\">{}</p>\n</header>\n", sub);

    verdict_banner(out, report);
    merge_section(out, report);
    run_section(out, report);
    timeline_charts(out, report);
    histogram_charts(out, report);
    profile_tables(out, report);
    history_tables(out, report);
    failures_section(out, report);
    thresholds_section(out, report);
    server_metrics_section(out, report);

    const auto schema = string_at(&report, "schema");
    const auto version = number_at(&report, "version");
    put(out,
        "<footer>Rendered by headerd from a report of schema {}, version {}.</footer>\n</main>\n</body>\n</html>\n",
        esc(schema.value_or("-")), count_text(version));
    return out;
}

}  // namespace headerd::load
