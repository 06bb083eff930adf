#include "node/cli.hpp"

#include <charconv>

#include <fmt/format.h>

namespace headerd::node {

Outcome<uint64_t> parse_u64(const std::string& text) {
    std::string_view s = text;
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s.remove_prefix(2);
        base = 16;
    }
    uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
        return make_error(fmt::format("'{}' is not an unsigned 64-bit number", text));
    }
    return v;
}

bool Args::has(const std::string& name) const { return values_.count(name) != 0; }

std::vector<std::string> Args::get_all(const std::string& name) const {
    if (auto it = repeated_.find(name); it != repeated_.end()) return it->second;
    if (auto v = get(name)) return {*v};  // from the config file
    return {};
}

std::optional<std::string> Args::get(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
    auto v = get(name);
    return v ? *v : fallback;
}

Outcome<uint64_t> Args::get_u64(const std::string& name, uint64_t fallback) const {
    auto v = get(name);
    if (!v) return fallback;
    auto n = parse_u64(*v);
    if (!n) return make_error(fmt::format("--{}: {}", name, n.error().message));
    return *n;
}

void Args::merge_defaults(const std::map<std::string, std::string>& values) {
    values_.insert(values.begin(), values.end());  // insert keeps a key that is already there
}

Outcome<Args> parse_command_line(const CommandSpec& spec, int argc, char** argv) {
    Args args;
    for (int i = 0; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            args.help_ = true;
            return args;
        }
        if (a.rfind("--", 0) != 0 || a == "--") {
            if (!spec.positional) return make_error(fmt::format("{}: unexpected argument '{}'", spec.name, a));
            args.positional_.push_back(a);
            continue;
        }
        std::string name = a.substr(2);
        std::optional<std::string> inline_value;
        if (auto eq = name.find('='); eq != std::string::npos) {
            inline_value = name.substr(eq + 1);
            name = name.substr(0, eq);
        }
        const OptionSpec* opt = nullptr;
        for (const auto& o : spec.options) {
            if (o.name == name) opt = &o;
        }
        if (opt == nullptr) {
            return make_error(
                fmt::format("{}: unknown option --{} (see headerd {} --help)", spec.name, name, spec.name));
        }
        if (opt->value_name.empty()) {
            if (inline_value) return make_error(fmt::format("{}: --{} takes no value", spec.name, name));
            args.values_[name] = "true";
        } else {
            if (!inline_value && i + 1 >= argc)
                return make_error(fmt::format("{}: --{} needs a value ({})", spec.name, name, opt->value_name));
            const std::string value = inline_value ? *inline_value : argv[++i];
            args.values_[name] = value;
            args.repeated_[name].push_back(value);
        }
    }
    return args;
}

Outcome<void> check_required(const CommandSpec& spec, const Args& args) {
    for (const auto& o : spec.options) {
        if (o.required && !args.has(o.name)) {
            return make_error(
                fmt::format("{}: --{} is required (see headerd {} --help)", spec.name, o.name, spec.name));
        }
    }
    return {};
}

Outcome<Args> parse_args(const CommandSpec& spec, int argc, char** argv) {
    auto args = parse_command_line(spec, argc, argv);
    if (!args || args->help()) return args;
    if (auto r = check_required(spec, *args); !r) return r.error();
    return args;
}

std::string help_text(const CommandSpec& spec) {
    std::string out =
        fmt::format("headerd {} - {}\n\nUsage: headerd {} {}\n", spec.name, spec.summary, spec.name, spec.usage);
    if (!spec.positional_help.empty()) out += fmt::format("\n{}\n", spec.positional_help);
    out += "\nOptions:\n";
    for (const auto& o : spec.options) {
        std::string left = "  --" + o.name + (o.value_name.empty() ? "" : " " + o.value_name);
        std::string right = o.help;
        if (o.required) right += " (required)";
        if (o.repeatable) right += " (repeatable)";
        if (!o.default_value.empty()) right += fmt::format(" [default: {}]", o.default_value);
        out += fmt::format("{:<28} {}\n", left, right);
    }
    out += fmt::format("{:<28} {}\n", "  --help", "show this help");
    return out;
}

}  // namespace headerd::node
