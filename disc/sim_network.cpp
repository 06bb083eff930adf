#include "disc/sim_network.hpp"

#include <algorithm>
#include <cmath>

namespace headerd::disc {

void SimTransport::send(const udp::endpoint& to, ByteView datagram) {
    if (closed_) return;
    if (behind_nat_) opened_[SimNetwork::key(to)] = net_->env_.now();
    net_->send(*this, to, datagram);
}

void SimTransport::close() {
    if (closed_) return;
    closed_ = true;
    receive_ = nullptr;
    opened_.clear();
}

SimNetwork::SimNetwork(VirtualEnv& env, SimNetworkConfig config) : env_(env), config_(config), rng_(config.seed) {}

uint64_t SimNetwork::key(const udp::endpoint& e) {
    const auto a = e.address();
    const uint64_t ip = a.is_v4() ? a.to_v4().to_uint() : 0;
    return (ip << 16) | e.port();
}

std::shared_ptr<SimTransport> SimNetwork::attach(const udp::endpoint& at, bool behind_nat) {
    auto& slot = at_[key(at)];
    if (auto held = slot.lock(); held && !held->closed_) return nullptr;
    auto t = std::make_shared<SimTransport>(*this, at, behind_nat);
    slot = t;
    return t;
}

Clock::duration SimNetwork::latency(const udp::endpoint& a, const udp::endpoint& b) const {
    // One draw per pair, the same both ways: a generator seeded by the pair.
    const uint64_t ka = key(a);
    const uint64_t kb = key(b);
    std::mt19937_64 pair_rng(std::min(ka, kb) * 0x9e3779b97f4a7c15ULL ^ std::max(ka, kb) ^ config_.seed);
    std::lognormal_distribution<double> dist(std::log(static_cast<double>(config_.median_latency.count())),
                                             config_.latency_sigma);
    const double ms = std::clamp(dist(pair_rng), static_cast<double>(config_.min_latency.count()),
                                 static_cast<double>(config_.max_latency.count()));
    return std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
}

void SimNetwork::send(SimTransport& from, const udp::endpoint& to, ByteView datagram) {
    ++stats_.sent;
    stats_.bytes += datagram.size();
    if (intercept && !intercept(from.at_, to, datagram)) return;
    if (config_.loss > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < config_.loss) {
        ++stats_.lost;
        return;
    }
    auto delay = latency(from.at_, to);
    if (config_.jitter.count() > 0) {
        delay += std::chrono::microseconds(std::uniform_int_distribution<int64_t>(
            0, std::chrono::duration_cast<std::chrono::microseconds>(config_.jitter).count())(rng_));
    }
    env_.after(delay, [this, src = from.at_, to, bytes = Bytes(datagram.begin(), datagram.end())] {
        deliver(src, to, bytes);
    });
}

void SimNetwork::deliver(const udp::endpoint& from, const udp::endpoint& to, const Bytes& datagram) {
    const auto it = at_.find(key(to));
    auto t = it == at_.end() ? nullptr : it->second.lock();
    if (!t || t->closed_ || !t->receive_) {
        ++stats_.unreachable;
        return;
    }
    if (t->behind_nat_) {
        const auto opened = t->opened_.find(key(from));
        if (opened == t->opened_.end() || env_.now() - opened->second > config_.nat_timeout) {
            ++stats_.filtered;
            return;
        }
    }
    ++stats_.delivered;
    // Hold the transport: the receiver may close it.
    auto receive = t->receive_;
    receive(datagram, from);
}

}  // namespace headerd::disc
