#include "disc/env.hpp"

#include <random>

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/awaitable.hpp"

namespace headerd::disc {
namespace {

class RealEnv final : public Env {
  public:
    Clock::time_point now() const override { return Clock::now(); }
    WallClock::time_point wall_now() const override { return WallClock::now(); }
    uint64_t seed() override { return (static_cast<uint64_t>(device_()) << 32) | device_(); }
    void arm(const std::shared_ptr<TimerState>& state, Clock::time_point at) override { state->timer.expires_at(at); }

  private:
    std::random_device device_;
};

// A virtual timer's asio timer never expires by itself: the virtual clock cancels it.
constexpr auto kNever = Clock::time_point::max();

}  // namespace

Env& Env::real() {
    static RealEnv env;
    return env;
}

Timer::Timer(boost::asio::io_context& io, Env& env) : env_(&env), state_(std::make_shared<TimerState>(io)) {}

Timer::~Timer() { state_->timer.cancel(); }

void Timer::expires_at(Clock::time_point at) {
    state_->expiry = at;
    env_->arm(state_, at);
}

void Timer::cancel() { state_->timer.cancel(); }

boost::asio::awaitable<void> Timer::wait() {
    // Already due: returns after the handlers ready now, as asio's timer does (under virtual time
    // the asio timer would wait for a cancel that already came).
    if (state_->expiry <= env_->now()) {
        co_await boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::use_awaitable);
        co_return;
    }
    auto state = state_;  // the wait may outlive a Timer destroyed by its owner
    co_await state->timer.async_wait(kTuple);
}

VirtualEnv::VirtualEnv(uint64_t seed)
    : start_(Clock::time_point{} + std::chrono::hours(1)), now_(start_), seed_(seed) {}

WallClock::time_point VirtualEnv::wall_now() const {
    // A fixed day (2026-01-01 00:00 UTC) plus the virtual time passed: packet expirations and the
    // node database's ages work as on a real clock.
    constexpr auto kEpoch = WallClock::time_point{std::chrono::seconds{1767225600}};
    return kEpoch + std::chrono::duration_cast<WallClock::duration>(now_ - start_);
}

uint64_t VirtualEnv::seed() {
    // splitmix64: distinct, reproducible seeds from one.
    uint64_t z = (seed_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void VirtualEnv::arm(const std::shared_ptr<TimerState>& state, Clock::time_point at) {
    state->timer.expires_at(kNever);  // ends a wait in progress, as a real re-arm does
    if (at == kNever) return;         // "until cancelled"
    queue_.push(Event{at, order_++, state, {}});
}

void VirtualEnv::at(Clock::time_point at, std::function<void()> fn) {
    queue_.push(Event{std::max(at, now_), order_++, {}, std::move(fn)});
}

bool VirtualEnv::run_until(boost::asio::io_context& io, Clock::time_point until, const std::function<bool()>& done) {
    for (;;) {
        // Everything runnable at this instant, including what it posts.
        do {
            io.restart();
        } while (io.poll() > 0);
        if (done && done()) return true;
        if (queue_.empty() || queue_.top().at > until) {
            if (until != Clock::time_point::max()) now_ = std::max(now_, until);
            return false;
        }
        Event e = queue_.top();
        queue_.pop();
        now_ = std::max(now_, e.at);
        ++events_;
        if (e.fn) {
            e.fn();
        } else if (auto state = e.timer.lock(); state && state->expiry == e.at) {
            state->timer.cancel();
        }
    }
}

}  // namespace headerd::disc
