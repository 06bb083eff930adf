#pragma once

// The optional config file (`--config FILE`, TOML) mirrors the command line:
//
//   datadir = "/var/lib/headerd"     # top level: for every command that has the option
//   verbosity = 4
//   log-json = true
//
//   [serve]                          # a table per command: that command's options
//   listen = "0.0.0.0:30303"
//   max-peers = 50
//
//   [get]
//   reverse = true
//
// Keys are the option names without "--", with '.' written as '-' (log.json is `log-json`) since a
// dot in a TOML key opens a nested table. Values are strings, integers (passed on as their decimal
// text) or booleans: a flag takes true (set) or false (left off), an option with a value takes a
// string or an integer. Precedence, highest first: the command line, the command's table, the top
// level. `config` itself cannot be set in the file.
//
// The whole file is checked against every command's options, so a typo is reported whichever
// command reads it: a key in a command's table that the command lacks is an error, and so is a
// top-level key that no command has; a top-level key that only other commands have is ignored.
// A key that is a flag to some commands and takes a value in others (`json`: inspect's flag, the
// FILE of load and report) has no one meaning at the top level: there it is an error, and each
// command's table holds it with that command's meaning.
// Every error names the file (parse errors also the line and column) and the key.

#include <map>
#include <span>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "node/cli.hpp"

namespace headerd::node {

// Option name -> value as the command line would carry it ("true" for a set flag).
using OptionValues = std::map<std::string, std::string>;

// The key of an option in the config file.
std::string config_key(std::string_view option_name);

// The values the file at `path` gives `command`. `all` holds the spec of every command (it may or
// may not include `command` itself).
Outcome<OptionValues> load_config(const std::string& path, const CommandSpec& command,
                                  std::span<const CommandSpec> all);

// load_config for text already read; `source` names it in errors.
Outcome<OptionValues> parse_config(std::string_view text, const std::string& source, const CommandSpec& command,
                                   std::span<const CommandSpec> all);

}  // namespace headerd::node
