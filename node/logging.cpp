#include "node/logging.hpp"

#include <memory>

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace headerd::node {
namespace {

// geth prints upper-case, fixed-width level names.
class LevelFlag final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
        static constexpr std::string_view kNames[] = {"TRACE", "DEBUG", "INFO ", "WARN ", "ERROR", "CRIT ", "     "};
        const auto name = kNames[static_cast<size_t>(msg.level)];
        dest.append(name.data(), name.data() + name.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<LevelFlag>(); }
};

}  // namespace

Outcome<void> setup_logging(int verbosity) {
    if (verbosity < 0 || verbosity > 5)
        return make_error(fmt::format("--verbosity {} is out of range 0..5", verbosity));
    auto logger = spdlog::stderr_color_mt("headerd");
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<LevelFlag>('*').set_pattern("%^%*%$ [%m-%d|%H:%M:%S.%e] %v");
    logger->set_formatter(std::move(formatter));
    static constexpr spdlog::level::level_enum kLevels[] = {spdlog::level::off,   spdlog::level::err,
                                                            spdlog::level::warn,  spdlog::level::info,
                                                            spdlog::level::debug, spdlog::level::trace};
    logger->set_level(kLevels[verbosity]);
    spdlog::set_default_logger(logger);
    return {};
}

}  // namespace headerd::node
