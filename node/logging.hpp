#pragma once

#include <memory>
#include <string>

#include <spdlog/formatter.h>

#include "core/result.hpp"

namespace headerd::node {

// Installs the process-wide spdlog logger on stderr with geth-like lines:
//   INFO [11-29|21:53:56.123] Imported headers                         file=a.era1 count=8192
// or, with json, one object per line as geth's --log.format=json writes them:
//   {"t":"2026-11-29T21:53:56.123Z","lvl":"info","msg":"Imported headers","file":"a.era1","count":8192}
// verbosity: 0 silent, 1 error, 2 warn, 3 info (default), 4 debug, 5 trace. May be called again.
Outcome<void> setup_logging(int verbosity, bool json = false);
// Whether the last setup_logging() chose JSON lines (then nothing else may write to stderr).
bool json_logging() noexcept;

// The JSON line formatter. It relies on the convention every log call here follows:
//   "Message text   key=value key=\"quoted value\" ..."
// The message is the text before the first key=value that starts a run of well-formed pairs up to
// the end; a line with no such run is all message. Unquoted values that are plain decimal integers
// (no sign other than '-', no leading zero, within 64 bits) become JSON numbers, everything else a
// string; quoted values lose their quotes and the escapes \" \\ \n \r \t. Output is always valid
// JSON: control characters are escaped and invalid UTF-8 becomes U+FFFD. Time is UTC.
std::unique_ptr<spdlog::formatter> make_json_formatter();

}  // namespace headerd::node
