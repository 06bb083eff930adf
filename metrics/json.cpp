// Boost.JSON is used header-only: its sources are compiled once, here, for every library above
// metrics (load's reports, rpc's JSON-RPC, node's JSON output).
#include <boost/json/src.hpp>
