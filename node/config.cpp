#include "node/config.hpp"

#include <cerrno>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace headerd::node {
namespace {

const OptionSpec* find_option(const CommandSpec& spec, std::string_view key) {
    for (const auto& o : spec.options) {
        if (config_key(o.name) == key) return &o;
    }
    return nullptr;
}

std::string_view type_name(toml::node_type type) {
    switch (type) {
        case toml::node_type::table:
            return "a table";
        case toml::node_type::array:
            return "an array";
        case toml::node_type::string:
            return "a string";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a float";
        case toml::node_type::boolean:
            return "a boolean";
        case toml::node_type::date:
            return "a date";
        case toml::node_type::time:
            return "a time";
        case toml::node_type::date_time:
            return "a date-time";
        case toml::node_type::none:
            break;
    }
    return "nothing";
}

// An option's value as the command line would carry it; nullopt for a flag set to false, which must
// still override a top-level true. `key` is the key as the user wrote it, with its table.
Outcome<std::optional<std::string>> option_value(const OptionSpec& option, const toml::node& node,
                                                 std::string_view source, std::string_view key) {
    if (option.name == "config") {
        return make_error(fmt::format("{}: key '{}' cannot be set in a config file", source, key));
    }
    if (option.value_name.empty()) {
        if (const auto* b = node.as_boolean()) return b->get() ? std::optional<std::string>("true") : std::nullopt;
        return make_error(
            fmt::format("{}: key '{}' must be true or false, not {}", source, key, type_name(node.type())));
    }
    if (const auto* s = node.as_string()) return std::optional<std::string>(s->get());
    if (const auto* i = node.as_integer()) return std::optional<std::string>(std::to_string(i->get()));
    return make_error(
        fmt::format("{}: key '{}' must be a string or an integer, not {}", source, key, type_name(node.type())));
}

// "a", "a and b", "a, b and c" (`last`: "and").
std::string join_words(const std::vector<std::string>& items, std::string_view last = "and") {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += i + 1 == items.size() ? fmt::format(" {} ", last) : ", ";
        out += items[i];
    }
    return out;
}

// The keys that are a flag to some commands and take a value in others (`json`: inspect's flag, the
// report file of load and report), each with the error a top-level use of it gets: there it would
// mean one thing to one command and another to the next, so it must be set in a command's table.
std::map<std::string, std::string, std::less<>> keys_of_two_kinds(
    const std::map<std::string_view, const CommandSpec*>& commands) {
    struct Uses {
        std::vector<std::string> flag;                          // commands
        std::map<std::string, std::vector<std::string>> value;  // value name -> commands
        std::vector<std::string> tables;
    };
    std::map<std::string, Uses> uses;
    for (const auto& [name, spec] : commands) {
        for (const auto& o : spec->options) {
            Uses& u = uses[config_key(o.name)];
            if (o.value_name.empty()) {
                u.flag.emplace_back(name);
            } else {
                u.value[o.value_name].emplace_back(name);
            }
            u.tables.push_back(fmt::format("[{}]", name));
        }
    }
    std::map<std::string, std::string, std::less<>> out;
    for (const auto& [key, u] : uses) {
        if (u.flag.empty() || u.value.empty()) continue;
        std::vector<std::string> values;
        for (const auto& [value_name, names] : u.value) {
            values.push_back(fmt::format("{} to {}", value_name, join_words(names)));
        }
        out.emplace(key, fmt::format("key '{}' is a flag (true or false) to {} but takes {}: set it in {}, "
                                     "not at the top level",
                                     key, join_words(u.flag), join_words(values), join_words(u.tables, "or")));
    }
    return out;
}

Outcome<std::string> read_file(const std::string& path) {
    const auto fail = [&path](int err) {
        return make_error(fmt::format("{}: cannot read config file: {}", path, std::generic_category().message(err)));
    };
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) return fail(errno);
    std::string text;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof(buf), f.get())) text.append(buf, n);
    if (std::ferror(f.get())) return fail(errno);  // e.g. EISDIR: fopen opens a directory
    return Outcome<std::string>(boost::system::in_place_value, std::move(text));
}

}  // namespace

std::string config_key(std::string_view option_name) {
    std::string key(option_name);
    for (char& c : key) {
        if (c == '.') c = '-';
    }
    return key;
}

Outcome<OptionValues> parse_config(std::string_view text, const std::string& source, const CommandSpec& command,
                                   std::span<const CommandSpec> all) {
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        return make_error(
            fmt::format("{}:{}:{}: {}", source, e.source().begin.line, e.source().begin.column, e.description()));
    }

    // The running command may be missing from `all`; its own spec then still counts.
    std::map<std::string_view, const CommandSpec*> commands;
    commands[command.name] = &command;
    std::set<std::string, std::less<>> known;  // config keys some command has: what the top level may hold
    for (const auto& o : command.options) known.insert(config_key(o.name));
    for (const CommandSpec& spec : all) {
        commands.emplace(spec.name, &spec);
        for (const auto& o : spec.options) known.insert(config_key(o.name));
    }

    const auto two_kinds = keys_of_two_kinds(commands);

    std::map<std::string, std::optional<std::string>> top;  // by option name
    std::map<std::string, std::optional<std::string>> own;  // from the command's table: these win
    for (const auto& [k, node] : root) {
        const std::string_view key = k.str();
        if (auto it = commands.find(key); it != commands.end()) {
            const toml::table* table = node.as_table();
            if (table == nullptr) {
                return make_error(fmt::format("{}: key '{}' must be a table ([{}]), not {}", source, key, key,
                                              type_name(node.type())));
            }
            const CommandSpec& spec = *it->second;
            for (const auto& [option_key, value] : *table) {
                const std::string qualified = fmt::format("{}.{}", key, option_key.str());
                const OptionSpec* option = find_option(spec, option_key.str());
                if (option == nullptr) return make_error(fmt::format("{}: unknown key '{}'", source, qualified));
                // Other commands' tables are checked too, so a typo surfaces whichever command runs.
                auto v = option_value(*option, value, source, qualified);
                if (!v) return v.error();
                if (&spec == &command) own[option->name] = std::move(*v);
            }
            continue;
        }
        if (!known.contains(key)) {
            // `log.json = true` is a table in TOML; point at the spelling that works.
            if (const toml::table* table = node.as_table(); table != nullptr && !table->empty()) {
                const std::string dashed = fmt::format("{}-{}", key, table->begin()->first.str());
                if (known.contains(dashed)) {
                    return make_error(fmt::format("{}: unknown key '{}.{}' (write it as {})", source, key,
                                                  table->begin()->first.str(), dashed));
                }
            }
            return make_error(fmt::format("{}: unknown key '{}'", source, key));
        }
        // Checked whichever command runs, as typos are: the file means the same to every command.
        if (auto it = two_kinds.find(key); it != two_kinds.end()) {
            return make_error(fmt::format("{}: {}", source, it->second));
        }
        const OptionSpec* option = find_option(command, key);
        if (option == nullptr) continue;  // another command's option: not for this one
        auto v = option_value(*option, node, source, key);
        if (!v) return v.error();
        top[option->name] = std::move(*v);
    }

    for (auto& [name, value] : own) top[name] = std::move(value);
    OptionValues out;
    for (auto& [name, value] : top) {
        if (value) out.emplace(name, std::move(*value));
    }
    return out;
}

Outcome<OptionValues> load_config(const std::string& path, const CommandSpec& command,
                                  std::span<const CommandSpec> all) {
    auto text = read_file(path);
    if (!text) return text.error();
    return parse_config(*text, path, command, all);
}

}  // namespace headerd::node
