#include "node/logging.hpp"

#include <charconv>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace headerd::node {
namespace {

// geth prints upper-case, fixed-width level names.
class LevelFlag final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
        static constexpr std::string_view kNames[] = {"TRACE", "DEBUG", "INFO ", "WARN ", "ERROR", "CRIT ", "     "};
        const auto name = kNames[static_cast<size_t>(msg.level)];
        dest.append(name.data(), name.data() + name.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<LevelFlag>(); }
};

struct Field {
    std::string_view key;
    std::string_view value;  // between the quotes, escapes still in, when quoted
    bool quoted;
};

bool is_key_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_key_char(char c) { return is_key_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-'; }

// Parses space-separated key=value pairs from s[pos] to the end into `out`. On failure returns false
// with *fail_at at the start of the token that is not a pair.
bool parse_fields(std::string_view s, size_t pos, std::vector<Field>& out, size_t* fail_at) {
    out.clear();
    while (pos < s.size()) {
        const size_t start = pos;
        *fail_at = start;
        if (!is_key_start(s[pos])) return false;
        while (pos < s.size() && is_key_char(s[pos])) ++pos;
        if (pos == s.size() || s[pos] != '=') return false;
        const std::string_view key = s.substr(start, pos - start);
        ++pos;
        if (pos < s.size() && s[pos] == '"') {
            const size_t open = pos++;
            while (pos < s.size() && s[pos] != '"') pos += (s[pos] == '\\' && pos + 1 < s.size()) ? 2 : 1;
            if (pos >= s.size()) return false;  // unterminated
            out.push_back({key, s.substr(open + 1, pos - open - 1), true});
            ++pos;
            if (pos < s.size() && s[pos] != ' ') return false;
        } else {
            const size_t end = std::min(s.find(' ', pos), s.size());
            out.push_back({key, s.substr(pos, end - pos), false});
            pos = end;
        }
        while (pos < s.size() && s[pos] == ' ') ++pos;
    }
    return true;
}

// Splits a message into its text and its trailing fields. Linear: after a failed attempt the scan
// resumes past the token that failed, since a candidate in between reads the same tokens (quoted
// values aside) and fails there as well.
std::string_view split_message(std::string_view s, std::vector<Field>& fields) {
    size_t fail_at = 0;
    for (size_t i = 1; i < s.size(); ++i) {
        if (s[i - 1] != ' ' || !is_key_start(s[i])) continue;
        if (parse_fields(s, i, fields, &fail_at)) {
            std::string_view text = s.substr(0, i);
            while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
            return text;
        }
        i = fail_at;
    }
    fields.clear();
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

// A plain decimal integer that any JSON reader takes as the same 64-bit number.
bool is_plain_integer(std::string_view v) {
    const bool negative = !v.empty() && v[0] == '-';
    const std::string_view digits = negative ? v.substr(1) : v;
    if (digits.empty() || (digits[0] == '0' && digits.size() > 1)) return false;
    for (char c : digits) {
        if (c < '0' || c > '9') return false;
    }
    if (negative) {
        int64_t n = 0;
        return std::from_chars(v.data(), v.data() + v.size(), n).ec == std::errc() && n != 0;
    }
    uint64_t n = 0;
    return std::from_chars(v.data(), v.data() + v.size(), n).ec == std::errc();
}

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates), or 0.
size_t utf8_length(std::string_view s, size_t i) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    size_t n = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (size_t k = 2; k < n; ++k) {
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    }
    return n;
}

void append(spdlog::memory_buf_t& out, std::string_view s) { out.append(s.data(), s.data() + s.size()); }

void append_json_char(spdlog::memory_buf_t& out, char c) {
    switch (c) {
        case '"':
            return append(out, "\\\"");
        case '\\':
            return append(out, "\\\\");
        case '\n':
            return append(out, "\\n");
        case '\r':
            return append(out, "\\r");
        case '\t':
            return append(out, "\\t");
        case '\b':
            return append(out, "\\b");
        case '\f':
            return append(out, "\\f");
        default:
            break;
    }
    if (static_cast<unsigned char>(c) < 0x20) {
        fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
    } else {
        out.push_back(c);
    }
}

// Appends s as a JSON string; `unescape` undoes the escapes of a quoted log value first.
void append_json_string(spdlog::memory_buf_t& out, std::string_view s, bool unescape = false) {
    out.push_back('"');
    for (size_t i = 0; i < s.size();) {
        const char c = s[i];
        if (unescape && c == '\\' && i + 1 < s.size()) {
            const char e = s[i + 1];
            const char plain = e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e;
            if (e == '"' || e == '\\' || plain != e) {
                append_json_char(out, plain);
                i += 2;
                continue;
            }
        }
        if (static_cast<unsigned char>(c) < 0x80) {
            append_json_char(out, c);
            ++i;
        } else if (const size_t n = utf8_length(s, i); n != 0) {
            append(out, s.substr(i, n));
            i += n;
        } else {
            append(out, "\xEF\xBF\xBD");  // U+FFFD for each byte that is not part of valid UTF-8
            ++i;
        }
    }
    out.push_back('"');
}

class JsonFormatter final : public spdlog::formatter {
  public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        static constexpr std::string_view kLevels[] = {"trace", "debug", "info", "warn", "error", "crit", "off"};
        namespace chr = std::chrono;
        const auto ms = chr::floor<chr::milliseconds>(msg.time);
        const auto day = chr::floor<chr::days>(ms);
        const chr::year_month_day date{day};
        const chr::hh_mm_ss time{ms - day};
        fmt::format_to(std::back_inserter(dest),
                       R"({{"t":"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z","lvl":"{}","msg":)",
                       static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                       static_cast<unsigned>(date.day()), time.hours().count(), time.minutes().count(),
                       time.seconds().count(), time.subseconds().count(), kLevels[static_cast<size_t>(msg.level)]);
        const std::string_view payload(msg.payload.data(), msg.payload.size());
        append_json_string(dest, split_message(payload, fields_));
        for (const Field& f : fields_) {
            dest.push_back(',');
            append_json_string(dest, f.key);
            dest.push_back(':');
            if (!f.quoted && is_plain_integer(f.value)) {
                append(dest, f.value);
            } else {
                append_json_string(dest, f.value, f.quoted);
            }
        }
        append(dest, "}\n");
    }

    std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }

  private:
    std::vector<Field> fields_;  // reused: sinks format under their lock, one message at a time
};

}  // namespace

std::unique_ptr<spdlog::formatter> make_json_formatter() { return std::make_unique<JsonFormatter>(); }

namespace {
bool g_json = false;
}  // namespace

bool json_logging() noexcept { return g_json; }

Outcome<void> setup_logging(int verbosity, bool json) {
    if (verbosity < 0 || verbosity > 5)
        return make_error(fmt::format("--verbosity {} is out of range 0..5", verbosity));
    std::shared_ptr<spdlog::logger> logger;
    if (json) {
        logger = std::make_shared<spdlog::logger>("headerd", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        logger->set_formatter(make_json_formatter());
    } else {
        logger = std::make_shared<spdlog::logger>("headerd", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
        auto formatter = std::make_unique<spdlog::pattern_formatter>();
        formatter->add_flag<LevelFlag>('*').set_pattern("%^%*%$ [%m-%d|%H:%M:%S.%e] %v");
        logger->set_formatter(std::move(formatter));
    }
    static constexpr spdlog::level::level_enum kLevels[] = {spdlog::level::off,   spdlog::level::err,
                                                            spdlog::level::warn,  spdlog::level::info,
                                                            spdlog::level::debug, spdlog::level::trace};
    logger->set_level(kLevels[verbosity]);
    // Replaces (and unregisters) the previous default logger, so a second call is fine.
    spdlog::set_default_logger(std::move(logger));
    g_json = json;
    return {};
}

}  // namespace headerd::node
