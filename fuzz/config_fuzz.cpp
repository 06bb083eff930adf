// libFuzzer target for the TOML config file (`--config FILE`, node/config.cpp on toml++): the input
// is the file's text, read for every command headerd has (node::command_specs()).
//
// It asserts, for each command: parse_config returns values or an error, never throws or crashes;
// an error names the file first ("fuzz.toml..."); accepted values are options of that command,
// never `config`, a flag's value is "true"; and writing the accepted values back as a config file
// (toml++'s writer, every value a string in the command's table) reads back to the same values.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "node/common.hpp"
#include "node/config.hpp"

using namespace headerd;

namespace {

constexpr const char* kSource = "fuzz.toml";

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "config_fuzz: %s\n", what.c_str());
    std::abort();
}

const std::vector<node::CommandSpec>& specs() {
    static const std::vector<node::CommandSpec> all = node::command_specs();
    return all;
}

const node::OptionSpec* option_of(const node::CommandSpec& spec, const std::string& name) {
    for (const auto& o : spec.options) {
        if (o.name == name) return &o;
    }
    return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (const node::CommandSpec& spec : specs()) {
        auto values = node::parse_config(text, kSource, spec, specs());
        if (!values) {
            if (!values.error().message.starts_with(kSource))
                fail("an error that does not name the file: " + values.error().message);
            continue;
        }
        toml::table own;
        for (const auto& [name, value] : *values) {
            const node::OptionSpec* option = option_of(spec, name);
            if (option == nullptr) fail("a value for an option the command lacks: " + name);
            if (name == "config") fail("config set from a config file");
            if (option->value_name.empty() && value != "true") fail("a flag with a value other than true: " + name);
            if (option->value_name.empty()) {
                own.insert_or_assign(node::config_key(name), true);
            } else {
                own.insert_or_assign(node::config_key(name), value);
            }
        }
        toml::table root;
        root.insert_or_assign(spec.name, std::move(own));
        std::ostringstream written;
        written << root;
        auto again = node::parse_config(written.str(), kSource, spec, specs());
        if (!again)
            fail("the accepted values, written back, do not read: " + again.error().message + "\n" + written.str());
        if (*again != *values) fail("the accepted values, written back, read otherwise:\n" + written.str());
    }
    return 0;
}
