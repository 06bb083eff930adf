#pragma once

// A small `--name value` / `--flag` parser with generated --help. Each subcommand declares its
// options; unknown options, missing values and malformed numbers are errors that name the option.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace headerd::node {

struct OptionSpec {
    std::string name;        // without the leading "--"
    std::string value_name;  // empty for a flag
    std::string help;
    std::string default_value;  // shown in --help; empty for none
    bool required{false};
    bool repeatable{false};  // may be given more than once; Args::get_all() has every value
};

struct CommandSpec {
    std::string name;
    std::string summary;
    std::string usage;  // e.g. "--datadir D FILE..."
    std::vector<OptionSpec> options;
    bool positional{false};  // accepts positional arguments
    std::string positional_help;
};

class Args {
  public:
    bool has(const std::string& name) const;
    std::optional<std::string> get(const std::string& name) const;
    std::string get_or(const std::string& name, const std::string& fallback) const;
    // Every value of a repeatable option in command-line order (get() has the last one).
    std::vector<std::string> get_all(const std::string& name) const;
    // Parses a decimal (or 0x hex) unsigned 64-bit value; the error names the option.
    Outcome<uint64_t> get_u64(const std::string& name, uint64_t fallback) const;
    const std::vector<std::string>& positional() const { return positional_; }
    bool help() const { return help_; }

    // Adds the values of options the command line did not give: a lower-precedence source (the
    // config file) must not override a flag.
    void merge_defaults(const std::map<std::string, std::string>& values);

  private:
    friend Outcome<Args> parse_command_line(const CommandSpec& spec, int argc, char** argv);
    std::map<std::string, std::string> values_;
    std::map<std::string, std::vector<std::string>> repeated_;
    std::vector<std::string> positional_;
    bool help_{false};
};

// Parses argv[0..argc) (the arguments after the subcommand name) and checks required options.
Outcome<Args> parse_args(const CommandSpec& spec, int argc, char** argv);
// The two steps of parse_args, for a caller that merges another source of values in between
// (start() and the config file): required options may come from either.
Outcome<Args> parse_command_line(const CommandSpec& spec, int argc, char** argv);
Outcome<void> check_required(const CommandSpec& spec, const Args& args);
std::string help_text(const CommandSpec& spec);
Outcome<uint64_t> parse_u64(const std::string& text);

}  // namespace headerd::node
