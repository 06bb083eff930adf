#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace headerd::node {

// Progress of long work (generate, import, export, freeze, verify). On a terminal: one line
// rewritten in place at most 5 times a second with count, rate and ETA. Otherwise (logs, CI):
// an info log line every 10 seconds. finish() prints the closing summary.
class Progress {
  public:
    explicit Progress(std::string what);
    void update(uint64_t done, uint64_t total);
    void finish(uint64_t done);

  private:
    std::string what_;
    bool tty_;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point last_;
    bool printed_{false};
};

}  // namespace headerd::node
