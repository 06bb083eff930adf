#pragma once

#include <string>

#include "core/result.hpp"

namespace headerd::node {

// Installs the process-wide spdlog logger on stderr with geth-like lines:
//   INFO [11-29|21:53:56.123] Imported headers                         file=a.era1 count=8192
// verbosity: 0 silent, 1 error, 2 warn, 3 info (default), 4 debug, 5 trace.
Outcome<void> setup_logging(int verbosity);

}  // namespace headerd::node
