// `headerd report`: renders the HTML page of a load report again from the JSON report that
// `headerd load --json` saved (docs/load-report.md), for instance after a newer headerd changed the
// page, or when only the JSON was kept; `headerd report --merge` merges the JSON reports of several
// generators of one run into one (load/merge.hpp).

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include "load/html_report.hpp"
#include "load/merge.hpp"
#include "load/report.hpp"
#include "node/cli.hpp"
#include "node/commands.hpp"
#include "node/common.hpp"
#include "p2p/enode/node_key.hpp"

namespace headerd::node {
namespace {

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

Outcome<std::string> read_text(const std::string& path) {
    const auto fail = [&path](int err) {
        return make_error(fmt::format("{}: cannot read the report: {}", path, std::generic_category().message(err)));
    };
    File f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) return fail(errno);
    std::string text;
    char buf[65536];
    while (size_t n = std::fread(buf, 1, sizeof(buf), f.get())) text.append(buf, n);
    if (std::ferror(f.get())) return fail(errno);  // e.g. EISDIR: fopen opens a directory
    return Outcome<std::string>(boost::system::in_place_value, std::move(text));
}

// Writes `text` to `path` whole or not at all (p2p::write_file_atomic); "-" is standard output.
Outcome<void> write_text(const std::string& path, const std::string& text) {
    if (path == "-") {
        if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
            return make_error("cannot write to standard output");
        }
        return {};
    }
    return p2p::write_file_atomic(path, text, 0644);
}

// A report file parsed as JSON; the error names the file.
Outcome<boost::json::value> read_report_file(const std::string& path) {
    auto text = read_text(path);
    if (!text) return text.error();
    boost::system::error_code ec;
    boost::json::value doc = boost::json::parse(*text, ec);
    if (ec) return make_error(fmt::format("{}: not a JSON document: {}", path, ec.message()));
    return doc;
}

// A merge refused: the reports are not of one run, or one is not a report.
int refuse(const std::string& message) {
    spdlog::error("report --merge: {}", message);
    return kExitUsage;
}

// `report --merge FILE...`: the reports of one run's generators merged into one.
int merge_command(const Args& args, int argc, char** argv) {
    const auto& files = args.positional();
    if (files.empty()) {
        spdlog::error("report --merge: name the JSON reports to merge (headerd load --json of each generator)");
        return kExitUsage;
    }
    std::vector<load::Threshold> thresholds;
    for (const auto& text : args.get_all("threshold")) {
        auto t = load::parse_threshold(text);
        if (!t) {
            spdlog::error("{}", t.error().message);
            return kExitUsage;
        }
        thresholds.push_back(*t);
    }
    std::vector<load::LoadedReport> inputs;
    for (const auto& path : files) {
        auto doc = read_report_file(path);
        if (!doc) return refuse(doc.error().message);
        auto r = load::read_report(*doc, path);
        if (!r) return refuse(r.error().message);
        inputs.push_back(std::move(*r));
    }
    std::vector<std::string> command{"headerd", "report"};
    for (int i = 0; i < argc; ++i) command.emplace_back(argv[i]);
    auto merged = load::merge_reports(inputs, std::move(command), {kVersion, kCommit, host_name()});
    if (!merged) return refuse(merged.error().message);
    for (const auto& w : merged->warnings) spdlog::warn("{}", w);
    if (thresholds.empty()) {
        // Judged by what the generators were judged by.
        for (const auto& text : merged->thresholds) {
            auto t = load::parse_threshold(text);
            if (!t) return refuse(fmt::format("a report's threshold: {}", t.error().message));
            thresholds.push_back(*t);
        }
    }
    const auto checked = load::check_thresholds(merged->result, thresholds);
    boost::json::object report = load::build_report(merged->result, merged->ctx, checked);
    report["merge"] = merged->merge;

    // The summary goes where the reports do not: standard error when one is written to standard output.
    std::FILE* out = args.get("json") == "-" || args.get("html") == "-" ? stderr : stdout;
    std::fprintf(out, "merged %zu reports of run %s over %.1f s\n", inputs.size(),
                 merged->ctx.run_id.empty() ? "(no run id)" : merged->ctx.run_id.c_str(), merged->result.seconds);
    std::fputs(load::summary_table(merged->result).c_str(), out);
    std::fprintf(out, "verified: %s\n", load::verified(merged->result) ? "true" : "false");
    if (auto path = args.get("json")) {
        if (auto r = write_text(*path, boost::json::serialize(report) + "\n"); !r) return fail(r.error().message);
        spdlog::info("Wrote the merged JSON report             path={}", *path);
    }
    if (auto path = args.get("html")) {
        if (auto r = write_text(*path, load::render_html_report(report)); !r) return fail(r.error().message);
        spdlog::info("Wrote the merged HTML report             path={}", *path);
    }
    bool all = true;
    for (const auto& t : checked) {
        std::fprintf(out, "threshold %-24s %s (%s)\n", t.expr.c_str(), t.ok ? "ok" : "FAILED", t.value.c_str());
        all = all && t.ok;
    }
    return all ? kExitOk : kExitFailure;
}

}  // namespace

int cmd_report(int argc, char** argv) {
    const CommandSpec spec{
        "report",
        "render a saved load report (headerd load --json) as HTML again, or merge the reports of several "
        "generators",
        "--json FILE --html FILE | --merge FILE... [--json FILE] [--html FILE] [--threshold EXPR]...",
        {{"json", "FILE",
          "the JSON report to render; with --merge, where to write the merged JSON report (- for standard output)", "",
          false},
         {"html", "FILE", "the page to write, whole or not at all; - for standard output", "", false},
         {"merge", "",
          "merge the JSON reports given as arguments (one run's generators: same chain, server, protocol and "
          "run id); exit 1 when a threshold fails, 2 when the reports are not of one run",
          "", false},
         {"threshold", "EXPR",
          "with --merge: judge the merged report (as load --threshold); default: the generators' own thresholds", "",
          false, true},
         verbosity_option()},
        true,
        "FILE...  with --merge: the generators' JSON reports"};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    if (args->has("merge")) return merge_command(*args, argc, argv);
    if (!args->positional().empty() || args->has("threshold")) {
        spdlog::error("report: files to merge and --threshold need --merge");
        return kExitUsage;
    }
    if (!args->has("json") || !args->has("html")) {
        spdlog::error("report: give --json FILE and --html FILE (or --merge FILE...)");
        return kExitUsage;
    }
    const std::string json_path = *args->get("json");
    const std::string html_path = *args->get("html");

    auto doc = read_report_file(json_path);
    if (!doc) return fail(doc.error().message);
    if (auto r = load::check_report(*doc); !r) return fail(fmt::format("{}: {}", json_path, r.error().message));

    const std::string page = load::render_html_report(doc->get_object());
    if (auto r = write_text(html_path, page); !r) return fail(r.error().message);
    spdlog::info("Wrote the HTML report                    json={} html={} bytes={}", json_path, html_path,
                 page.size());
    return kExitOk;
}

}  // namespace headerd::node
