#include "p2p/admission.hpp"

namespace headerd::p2p {

PeerAdmission::PeerAdmission(size_t max_peers, size_t max_pending, const NodeId& self)
    : max_peers_(max_peers), max_pending_(max_pending < 1 ? 1 : max_pending), self_(self) {}

bool PeerAdmission::try_begin_handshake() {
    std::lock_guard lock(mutex_);
    if (pending_.load(std::memory_order_relaxed) >= max_pending_) {
        refused_ = true;
        return false;
    }
    pending_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void PeerAdmission::end_handshake() {
    bool notify = false;
    {
        std::lock_guard lock(mutex_);
        pending_.fetch_sub(1, std::memory_order_relaxed);
        notify = refused_;
        refused_ = false;
    }
    if (notify && slot_free_) slot_free_();
}

PeerAdmission::Verdict PeerAdmission::admit(const NodeId& id) {
    if (id == self_) return Verdict::kSelf;
    std::lock_guard lock(mutex_);
    if (ids_.count(id) != 0) return Verdict::kDuplicate;
    if (ids_.size() >= max_peers_) return Verdict::kFull;
    ids_.insert(id);
    peers_.store(ids_.size(), std::memory_order_relaxed);
    return Verdict::kAdmitted;
}

void PeerAdmission::release(const NodeId& id) {
    std::lock_guard lock(mutex_);
    ids_.erase(id);
    peers_.store(ids_.size(), std::memory_order_relaxed);
}

}  // namespace headerd::p2p
