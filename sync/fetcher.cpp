#include "sync/fetcher.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/block_header.hpp"
#include "core/hex.hpp"

namespace headerd::sync {

Fetcher::Fetcher(uint64_t next, const Hash32& expect, uint64_t floor, uint64_t window)
    : next_(next), expect_(expect), floor_(std::min(floor, next)), window_(std::max<uint64_t>(1, window)) {}

std::optional<Task> Fetcher::assign(uint64_t amount) {
    if (done() || amount == 0) return std::nullopt;
    verified_.clear();
    // The window: nothing below next - window is handed out, so what is held stays bounded.
    const uint64_t window_low = next_ >= window_ ? next_ - window_ + 1 : 0;
    const uint64_t low = std::max(window_low, floor_);
    if (!returned_.empty()) {
        auto it = returned_.begin();
        const uint64_t origin = it->first;
        const uint64_t have = it->second;
        returned_.erase(it);
        if (have > amount) returned_.emplace(origin - amount, have - amount);
        return Task{origin, std::min(have, amount)};
    }
    const uint64_t top = assigned_low_ ? (*assigned_low_ == 0 ? 0 : *assigned_low_ - 1) : next_;
    if ((assigned_low_ && *assigned_low_ == 0) || top < low) return std::nullopt;
    const uint64_t n = std::min(amount, top - low + 1);
    assigned_low_ = top + 1 - n;
    return Task{top, n};
}

void Fetcher::release(const Task& task) {
    if (task.amount == 0 || task.origin > next_) return;  // verified meanwhile (cannot happen) or empty
    // Only what is still unverified goes back.
    returned_[task.origin] = task.amount;
}

std::optional<Fault> Fetcher::deliver(const Task& task, size_t owner, p2p::HeadersReply reply) {
    verified_.clear();
    const auto& headers = reply.headers;
    if (headers.empty()) {
        release(task);
        return std::nullopt;
    }
    auto fault = [&](std::string reason) {
        release(task);
        return Fault{owner, std::move(reason)};
    };
    if (headers.size() > task.amount) {
        return fault(fmt::format("replied {} headers to a request for {}", headers.size(), task.amount));
    }
    std::vector<Hash32> hashes(headers.size());
    Hash32 parent{};
    for (size_t i = 0; i < headers.size(); ++i) {
        auto peek = peek_header(headers[i]);
        if (!peek) return fault(fmt::format("header {} of the reply is malformed: {}", i, peek.error().message()));
        const uint64_t want = task.origin - i;
        if (peek->number != want) {
            return fault(fmt::format("header {} of the reply is block {}, expected block {} (reverse from {})", i,
                                     peek->number, want, task.origin));
        }
        hashes[i] = header_hash(headers[i]);
        if (i > 0 && hashes[i] != parent) {
            return fault(fmt::format("block {} hash {} is not the parent hash {} of block {}", want,
                                     to_hex0x(hashes[i]), to_hex0x(parent), want + 1));
        }
        parent = peek->parent_hash;
    }
    if (headers.size() < task.amount) release(Task{task.origin - headers.size(), task.amount - headers.size()});
    if (task.origin > next_) return std::nullopt;  // a range verified meanwhile
    const uint64_t origin = task.origin;
    held_.insert_or_assign(origin, Held{origin, owner, std::move(reply), std::move(hashes)});
    return std::nullopt;
}

void Fetcher::drop_owner(size_t owner) {
    // verified_ stays: advance() drops a liar after verifying replies whose views it returns.
    for (auto it = held_.begin(); it != held_.end();) {
        if (it->second.owner == owner) {
            release(Task{it->first, it->second.hashes.size()});
            it = held_.erase(it);
        } else {
            ++it;
        }
    }
}

std::optional<Fault> Fetcher::advance(const JoinFn& join, Verified& verified) {
    verified.headers.clear();
    verified.linked = false;
    verified_.clear();
    while (!done()) {
        auto it = held_.find(next_);
        if (it == held_.end()) break;
        Held held = std::move(it->second);
        held_.erase(it);
        if (held.hashes.front() != expect_) {
            release(Task{held.origin, held.hashes.size()});
            drop_owner(held.owner);
            return Fault{held.owner, fmt::format("block {} has hash {}, but the verified chain above says {}",
                                                 held.origin, to_hex0x(held.hashes.front()), to_hex0x(expect_))};
        }
        size_t keep = held.hashes.size();
        for (size_t i = 0; i < held.hashes.size(); ++i) {
            const uint64_t number = held.origin - i;
            const ByteView rlp = held.reply.headers[i];
            verified.headers.push_back(db::SkeletonHeader{rlp, held.hashes[i], number});
            const Hash32 parent = peek_header(rlp)->parent_hash;  // checked in deliver()
            const Join j = join(number, held.hashes[i], parent);
            if (j == Join::kWrongGenesis) {
                wrong_genesis_ = true;
                verified.headers.pop_back();
                keep = i;
                break;
            }
            if (j == Join::kLinked) {
                linked_ = true;
                keep = i + 1;
                break;
            }
            expect_ = parent;
            if (number == floor_) {
                below_floor_ = true;
                keep = i + 1;
                break;
            }
            next_ = number - 1;
        }
        if (linked_ || wrong_genesis_ || below_floor_) {
            next_ = held.origin - (keep == 0 ? 0 : keep - 1);
            // Nothing below the join is needed any more.
            held_.clear();
            returned_.clear();
        }
        verified_.push_back(std::move(held));
    }
    verified.linked = linked_;
    return std::nullopt;
}

void Fetcher::lower_floor(uint64_t floor) {
    if (floor >= floor_ || !exhausted()) return;
    below_floor_ = false;
    floor_ = floor;
    // The block the floor stopped at was verified: the download goes on right below it.
    if (next_ > 0) {
        next_ -= 1;
        assigned_low_ = next_ + 1;
    }
}

}  // namespace headerd::sync
