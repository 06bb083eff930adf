#pragma once

// Time for the discovery services: the clocks, timers and random seeds they use, behind one small
// interface, so that the same code runs on real time (Env::real()) and on virtual time
// (VirtualEnv: the unit tests of the table rules and the simulated network of
// bench/disc_sim.cpp, docs/discovery.md "Simulation").
//
// A Timer behaves as boost::asio::steady_timer does for the uses here: expires_at() and
// expires_after() end a wait in progress, cancel() ends it without moving the expiry, and wait()
// returns at the expiry or when ended, whichever comes first (the caller looks at its own state to
// tell which). Under VirtualEnv nothing waits in real time: VirtualEnv::run_until runs the
// io_context's ready handlers, then moves the clock to the next timer or event and fires it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace headerd::disc {

using Clock = std::chrono::steady_clock;
using WallClock = std::chrono::system_clock;

// A timer's state, shared between the Timer and the Env that arms it (a virtual clock keeps only a
// weak reference, so a timer that goes first is simply skipped).
struct TimerState {
    boost::asio::steady_timer timer;
    Clock::time_point expiry{};
    explicit TimerState(boost::asio::io_context& io) : timer(io) {}
};

class Env {
  public:
    virtual ~Env() = default;
    virtual Clock::time_point now() const = 0;
    virtual WallClock::time_point wall_now() const = 0;
    // Seeds for the services' random choices (revalidation order, replacements, request ids,
    // lookup targets): random on real time, reproducible on virtual time.
    virtual uint64_t seed() = 0;
    // Makes `state`'s timer end its wait at `at` (its expiry is already set).
    virtual void arm(const std::shared_ptr<TimerState>& state, Clock::time_point at) = 0;

    // The machine's clocks and asio's timers.
    static Env& real();
};

class Timer {
  public:
    Timer(boost::asio::io_context& io, Env& env);
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

    void expires_at(Clock::time_point at);
    void expires_after(Clock::duration d) { expires_at(env_->now() + d); }
    Clock::time_point expiry() const noexcept { return state_->expiry; }
    void cancel();
    // Until the expiry, or until cancel() or a new expiry ends the wait.
    boost::asio::awaitable<void> wait();

  private:
    Env* env_;
    std::shared_ptr<TimerState> state_;
};

// Virtual time: the clock moves only when run_until moves it, to the next event, so a simulated
// day of discovery takes what its packets cost to make and check, and every run with the same
// seed takes the same steps.
class VirtualEnv final : public Env {
  public:
    explicit VirtualEnv(uint64_t seed = 1);

    Clock::time_point now() const override { return now_; }
    WallClock::time_point wall_now() const override;
    uint64_t seed() override;
    void arm(const std::shared_ptr<TimerState>& state, Clock::time_point at) override;

    // Runs `fn` when the clock reaches `at` (a datagram's delivery, a node joining or leaving).
    void at(Clock::time_point at, std::function<void()> fn);
    void after(Clock::duration d, std::function<void()> fn) { at(now_ + d, std::move(fn)); }

    // Runs `io`'s ready handlers and moves the clock from event to event until `done()` holds
    // (true), or the next event is after `until` or there is none (false; the clock is then at
    // `until`). `io` must not be run by any other thread.
    bool run_until(boost::asio::io_context& io, Clock::time_point until, const std::function<bool()>& done = {});
    bool run_for(boost::asio::io_context& io, Clock::duration d, const std::function<bool()>& done = {}) {
        return run_until(io, now_ + d, done);
    }
    // Events fired so far (timers and scheduled functions).
    uint64_t events() const noexcept { return events_; }
    size_t queued() const noexcept { return queue_.size(); }

  private:
    struct Event {
        Clock::time_point at;
        uint64_t order;  // ties fire in the order they were scheduled
        std::weak_ptr<TimerState> timer;
        std::function<void()> fn;
    };
    struct Later {
        bool operator()(const Event& a, const Event& b) const noexcept {
            return a.at != b.at ? a.at > b.at : a.order > b.order;
        }
    };
    Clock::time_point start_;
    Clock::time_point now_;
    uint64_t seed_;
    uint64_t order_{0};
    uint64_t events_{0};
    std::priority_queue<Event, std::vector<Event>, Later> queue_;
};

}  // namespace headerd::disc
