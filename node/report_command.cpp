// `headerd report`: renders the HTML page of a load report again from the JSON report that
// `headerd load --json` saved (docs/load-report.md), for instance after a newer headerd changed the
// page, or when only the JSON was kept.

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
            return make_error("cannot write the page to standard output");
        }
        return {};
    }
    return p2p::write_file_atomic(path, text, 0644);
}

}  // namespace

int cmd_report(int argc, char** argv) {
    const CommandSpec spec{"report",
                           "render the HTML page of a saved load report (headerd load --json) again",
                           "--json FILE --html FILE",
                           {{"json", "FILE", "the JSON report written by headerd load --json", "", true},
                            {"html", "FILE", "the page to write, whole or not at all; - for standard output", "", true},
                            verbosity_option()},
                           false,
                           ""};
    int code = 0;
    auto args = start(spec, argc, argv, &code);
    if (!args) return code;
    const std::string json_path = *args->get("json");
    const std::string html_path = *args->get("html");

    auto text = read_text(json_path);
    if (!text) return fail(text.error().message);
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(*text, ec);
    if (ec) return fail(fmt::format("{}: not a JSON document: {}", json_path, ec.message()));
    if (auto r = load::check_report(doc); !r) return fail(fmt::format("{}: {}", json_path, r.error().message));

    const std::string page = load::render_html_report(doc.get_object());
    if (auto r = write_text(html_path, page); !r) return fail(r.error().message);
    spdlog::info("Wrote the HTML report                    json={} html={} bytes={}", json_path, html_path,
                 page.size());
    return kExitOk;
}

}  // namespace headerd::node
