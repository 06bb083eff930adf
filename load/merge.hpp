#pragma once

// `headerd report --merge`: the JSON reports of several load generators (one run spread over
// machines) read back and merged into one report, as if one generator had made every request.
// Counts add up; the histograms, kept at full resolution in each report, merge bucket by bucket,
// so the merged percentiles are those of all the samples within the histogram's error (1/64).
// Reports that are not of one run (another chain, server, protocol, run id or histogram scheme,
// or windows that do not overlap) are refused; windows that overlap but did not start and end
// together are reported. docs/load.md ("Load from many machines"), docs/load-report.md.

#include <memory>
#include <string>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "core/result.hpp"
#include "load/report.hpp"

namespace headerd::load {

// One report read back.
struct LoadedReport {
    std::string name;  // where it came from, for messages (a file name)
    RunResult result;
    ReportContext ctx;
    std::vector<std::string> thresholds;  // the expressions it was judged by
    bool verified{false};
};

// Reads a report that `headerd load --json` wrote (schema "headerd-load-report", version 1, with
// its histograms at full resolution). The error names the field that is missing or wrong.
Outcome<LoadedReport> read_report(const boost::json::value& doc, std::string name);

// Windows whose starts (or ends) lie further apart than this are reported as unsynchronised.
inline constexpr double kWindowSkewSeconds = 1.0;

struct MergedReport {
    RunResult result;
    ReportContext ctx;
    std::vector<std::string> thresholds;  // the inputs' threshold expressions, each once
    std::vector<std::string> warnings;    // e.g. unsynchronised windows
    boost::json::object merge;            // the report's "merge" section: inputs, windows, warnings
};

// Merges reports of one run. `command` is the merge's own command line, `generator` who merges.
Outcome<MergedReport> merge_reports(const std::vector<LoadedReport>& inputs, std::vector<std::string> command,
                                    ReportContext::Generator generator);

}  // namespace headerd::load
