#include "p2p/eth/status.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/hex.hpp"

namespace headerd::eth {
namespace {

class StatusCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "eth-status"; }
    std::string message(int ev) const override {
        switch (static_cast<StatusError>(ev)) {
            case StatusError::kVersionMismatch:
                return "protocol version mismatch";
            case StatusError::kNetworkIdMismatch:
                return "network id mismatch";
            case StatusError::kGenesisMismatch:
                return "genesis mismatch";
            case StatusError::kForkIdRejected:
                return "fork id rejected";
            case StatusError::kInvalidBlockRange:
                return "invalid block range";
        }
        return "unknown status error";
    }
};

std::string fork_id_text(const ForkId& id) { return fmt::format("{}/{}", to_hex0x(ByteView{id.hash}), id.next); }

StatusRejection reject(StatusError e, std::string message) { return StatusRejection{e, std::move(message)}; }

// The checks eth/68 and eth/69 share, in geth's order.
StatusCheck validate_common(uint64_t version, uint64_t network_id, const Hash32& genesis, const ForkId& fork_id,
                            const ChainConfig& config, uint64_t head_number, uint64_t head_time,
                            uint64_t negotiated_version) {
    if (network_id != config.network_id) {
        return reject(StatusError::kNetworkIdMismatch,
                      fmt::format("network id mismatch: remote {}, local {}", network_id, config.network_id));
    }
    if (version != negotiated_version) {
        return reject(StatusError::kVersionMismatch,
                      fmt::format("status version mismatch: remote {}, negotiated {}", version, negotiated_version));
    }
    if (genesis != config.genesis_hash) {
        return reject(StatusError::kGenesisMismatch, fmt::format("genesis mismatch: remote {}, local {}",
                                                                 to_hex0x(genesis), to_hex0x(config.genesis_hash)));
    }
    if (auto r = validate_fork_id(config, head_number, head_time, fork_id); !r) {
        return reject(
            StatusError::kForkIdRejected,
            fmt::format("fork id rejected ({}): remote {}, local {}", r.error().message(), fork_id_text(fork_id),
                        fork_id_text(compute_fork_id(config, head_number, head_time))));
    }
    return {};
}

}  // namespace

const std::error_category& status_category() noexcept {
    static const StatusCategory category;
    return category;
}

std::error_code make_error_code(StatusError e) noexcept { return {static_cast<int>(e), status_category()}; }

void throw_exception_from_error(const StatusRejection& e, const boost::source_location&) {
    throw std::runtime_error(e.message);
}

StatusMessage68 make_status68(const ChainConfig& config, const Head& head) {
    StatusMessage68 s;
    s.network_id = config.network_id;
    s.total_difficulty = head.total_difficulty;
    s.head_hash = head.hash;
    s.genesis_hash = config.genesis_hash;
    s.fork_id = compute_fork_id(config, head.number, head.timestamp);
    return s;
}

uint64_t announced_earliest(const Head& head, std::optional<BlockRange> history) noexcept {
    if (history && history->first <= head.number && history->last >= head.number) return history->first;
    return head.number;
}

StatusMessage69 make_status69(const ChainConfig& config, const Head& head, std::optional<uint64_t> earliest) {
    StatusMessage69 s;
    s.network_id = config.network_id;
    s.genesis_hash = config.genesis_hash;
    s.fork_id = compute_fork_id(config, head.number, head.timestamp);
    s.earliest = std::min(earliest.value_or(head.number), head.number);
    s.latest = head.number;
    s.latest_hash = head.hash;
    return s;
}

void encode_status(uint64_t version, const ChainConfig& config, const Head& head, Bytes& out,
                   std::optional<uint64_t> earliest) {
    if (!has_block_range(version)) {
        StatusMessage68 s = make_status68(config, head);
        s.version = static_cast<uint32_t>(version);
        s.encode(out);
        return;
    }
    StatusMessage69 s = make_status69(config, head, earliest);
    s.version = static_cast<uint32_t>(version);
    s.encode(out);
}

StatusCheck check_status(uint64_t version, ByteView payload, const ChainConfig& config, uint64_t head_number,
                         uint64_t head_time) {
    const auto malformed = [](const std::error_code& ec) {
        return StatusRejection{ec, "Status: " + ec.message(), p2p::DisconnectReason::kProtocolBreach};
    };
    if (!has_block_range(version)) {
        auto s = StatusMessage68::decode(payload);
        if (!s) return malformed(s.error());
        return validate_status(*s, config, head_number, head_time, version);
    }
    auto s = StatusMessage69::decode(payload);
    if (!s) return malformed(s.error());
    return validate_status(*s, config, head_number, head_time, version);
}

BlockRangeUpdate make_block_range_update(const Head& head, std::optional<uint64_t> earliest) {
    return {std::min(earliest.value_or(head.number), head.number), head.number, head.hash};
}

StatusCheck validate_status(const StatusMessage68& remote, const ChainConfig& config, uint64_t head_number,
                            uint64_t head_time, uint64_t negotiated_version) {
    return validate_common(remote.version, remote.network_id, remote.genesis_hash, remote.fork_id, config, head_number,
                           head_time, negotiated_version);
}

StatusCheck validate_status(const StatusMessage69& remote, const ChainConfig& config, uint64_t head_number,
                            uint64_t head_time, uint64_t negotiated_version) {
    if (auto r = validate_common(remote.version, remote.network_id, remote.genesis_hash, remote.fork_id, config,
                                 head_number, head_time, negotiated_version);
        !r) {
        return r;
    }
    const BlockRangeUpdate range{remote.earliest, remote.latest, remote.latest_hash};
    if (auto r = range.validate(); !r) {
        return reject(StatusError::kInvalidBlockRange,
                      fmt::format("invalid block range ({}): earliest {}, latest {}, latest hash {}",
                                  r.error().message(), remote.earliest, remote.latest, to_hex0x(remote.latest_hash)));
    }
    return {};
}
}  // namespace headerd::eth
