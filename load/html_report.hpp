#pragma once

// The HTML page of a load report: one self-contained file (inline CSS, charts drawn here as inline
// SVG, no scripts, nothing fetched) rendered from the JSON report that `headerd load --json` writes
// (schema "headerd-load-report", version 1, docs/load-report.md). `headerd load --html` writes it
// next to the JSON, `headerd report` renders it again from a saved JSON file.
//
// Every chart carries its data in machine-readable attributes, so a test (or a script) can check a
// page against its report:
//   <path data-chart="throughput|rtt" data-series="FIELD" data-points="[[t,value],...]">
//       one line per timeline field (requests, headers, p50_ms, p99_ms), the values copied from the
//       report (null where the report has none);
//   <g data-chart="throughput" data-series="errors" data-points="[[t,errors],...]">
//       the seconds with errors, marked as bands on the requests chart;
//   <rect data-chart="histogram" data-profile="NAME" data-le-ms="BOUND" data-count="N">
//       one bar per histogram bucket of a profile.

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "core/result.hpp"

namespace headerd::load {

inline constexpr std::string_view kReportSchema = "headerd-load-report";
inline constexpr int kReportVersion = 1;

// The page lists at most this many verification failures (the JSON report holds all it kept).
inline constexpr size_t kFailuresShown = 50;

// Escapes text for HTML element content and for quoted attribute values (& < > " ').
std::string html_escape(std::string_view text);

// Whether `doc` is a load report this build renders: an object whose "schema" is kReportSchema and
// whose "version" is kReportVersion. The error says what is wrong, for a message that names the file.
Outcome<void> check_report(const boost::json::value& doc);

// The page. It never fails: a missing or mistyped field shows as "-", an empty or missing section
// (timeline, profiles, histograms, failures, thresholds, server metrics) says "no data". Every text
// taken from the report is HTML-escaped.
std::string render_html_report(const boost::json::object& report);

}  // namespace headerd::load
