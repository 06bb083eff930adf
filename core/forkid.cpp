#include "core/forkid.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include <boost/crc.hpp>

#include "core/rlp.hpp"

namespace headerd {
namespace {

// A remote FORK_NEXT above this is a timestamp, compared with the head time even while the
// local node is still among block forks (geth's timestampThreshold).
constexpr uint64_t kTimestampThreshold = 1438269973;

class ForkIdCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "forkid"; }
    std::string message(int ev) const override {
        switch (static_cast<ForkIdError>(ev)) {
            case ForkIdError::kRemoteStale:
                return "remote needs update";
            case ForkIdError::kLocalIncompatibleOrStale:
                return "local incompatible or needs update";
        }
        return "unknown forkid error";
    }
};

// CRC32 (IEEE) over the genesis hash followed by the big-endian 8-byte value of each fork.
class ForkChecksum {
  public:
    explicit ForkChecksum(const Hash32& genesis) noexcept { crc_.process_bytes(genesis.data(), genesis.size()); }
    void add(uint64_t fork) noexcept {
        uint8_t be[8];
        store_be64(be, fork);
        crc_.process_bytes(be, sizeof(be));
    }
    std::array<uint8_t, 4> sum() const noexcept {
        std::array<uint8_t, 4> out;
        store_be32(out.data(), static_cast<uint32_t>(crc_.checksum()));
        return out;
    }

  private:
    boost::crc_32_type crc_;
};

// Calls f(fork, is_time) for each fork forkid counts, block forks first, in order, until f returns
// false. As geth gathers them: block forks at 0, time forks at or before genesis, and any fork not
// above the previous one of its kind (duplicates) are left out.
template <class F>
void for_each_fork(const ChainConfig& c, F&& f) noexcept {
    uint64_t prev = 0;
    for (uint64_t b : c.block_forks) {
        if (b <= prev) continue;
        prev = b;
        if (!f(b, false)) return;
    }
    prev = c.genesis_time;
    for (uint64_t t : c.time_forks) {
        if (t <= prev) continue;
        prev = t;
        if (!f(t, true)) return;
    }
}

}  // namespace

const std::error_category& forkid_category() noexcept {
    static const ForkIdCategory category;
    return category;
}

std::error_code make_error_code(ForkIdError e) noexcept { return {static_cast<int>(e), forkid_category()}; }

ForkId compute_fork_id(const ChainConfig& c, uint64_t head_number, uint64_t head_time) noexcept {
    ForkChecksum crc{c.genesis_hash};
    ForkId id;
    for_each_fork(c, [&](uint64_t fork, bool is_time) {
        if (fork <= (is_time ? head_time : head_number)) {
            crc.add(fork);
            return true;
        }
        id.next = fork;
        return false;
    });
    id.hash = crc.sum();
    return id;
}

Result<void> validate_fork_id(const ChainConfig& c, uint64_t head_number, uint64_t head_time,
                              const ForkId& remote) noexcept {
    // Forks are indexed 0..n-1 with a never-passed sentinel at n; sums[j] is the checksum after
    // the first j forks. Find i, the first fork the local head has not passed, and the head value
    // it was compared with.
    size_t n = 0;
    size_t time_forks = 0;
    size_t i = 0;
    bool found = false;
    uint64_t head = 0;
    for_each_fork(c, [&](uint64_t fork, bool is_time) {
        const uint64_t h = is_time ? head_time : head_number;
        if (is_time) ++time_forks;
        if (!found && fork > h) {
            found = true;
            i = n;
            head = h;
        }
        ++n;
        return true;
    });
    if (!found) {
        // The sentinel counts as a block fork when the chain has no time forks.
        i = n;
        head = time_forks == 0 ? head_number : head_time;
        // geth accepts when even the sentinel is passed (a head of 2^64-1).
        if (head == std::numeric_limits<uint64_t>::max()) return {};
    }

    // One pass over sums[0..n]: same state (j == i), remote behind (j < i, first match, with the
    // fork that followed it) or remote ahead (j > i).
    ForkChecksum crc{c.genesis_hash};
    bool same = false;
    bool behind = false;
    bool ahead = false;
    uint64_t behind_next = 0;
    size_t j = 0;
    const auto classify = [&](uint64_t fork_j) {
        if (crc.sum() != remote.hash) return;
        if (j == i) {
            same = true;
        } else if (j < i) {
            if (!behind) behind_next = fork_j;
            behind = true;
        } else {
            ahead = true;
        }
    };
    for_each_fork(c, [&](uint64_t fork, bool) {
        classify(fork);
        crc.add(fork);
        ++j;
        return true;
    });
    classify(std::numeric_limits<uint64_t>::max());

    if (same) {
        // Rule 1: same fork state. Reject if the remote announces a fork that we already passed.
        if (remote.next > 0 &&
            (head >= remote.next || (remote.next > kTimestampThreshold && head_time >= remote.next))) {
            return ForkIdError::kLocalIncompatibleOrStale;
        }
        return {};
    }
    // Rule 2: the remote is on one of our past states and must know the fork that ended it.
    if (behind) {
        if (behind_next != remote.next) return ForkIdError::kRemoteStale;
        return {};
    }
    // Rule 3: the remote is on one of our future states; we are the one syncing.
    if (ahead) return {};
    return ForkIdError::kLocalIncompatibleOrStale;
}

void encode(Bytes& out, const ForkId& id) {
    const ByteView hash{id.hash};
    rlp::encode_header(out, {true, rlp::length(hash) + rlp::length(id.next)});
    rlp::encode(out, hash);
    rlp::encode(out, id.next);
}

Result<ForkId> decode_fork_id(ByteView& in) noexcept {
    auto payload = rlp::decode_list(in);
    if (!payload) return payload.error();
    ByteView items = *payload;
    auto hash = rlp::decode_string(items);
    if (!hash) return hash.error();
    if (hash->size() != 4) return rlp::DecodeError::kUnexpectedLength;
    auto next = rlp::decode_uint64(items);
    if (!next) return next.error();
    if (!items.empty()) return rlp::DecodeError::kTrailingBytes;
    ForkId id;
    std::copy(hash->begin(), hash->end(), id.hash.begin());
    id.next = *next;
    return id;
}

}  // namespace headerd
