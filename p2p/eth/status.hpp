#pragma once

// The eth handshake's Status: what we send (built from the chain config and the head) and the
// checks a remote Status must pass (geth's readStatus). encode_status/check_status take the
// negotiated version and pick the layout, so a session never branches on it: eth/68 has its own,
// every later version uses eth/69's. Every check failure has its own code and a message naming the
// field and both values, and maps to Disconnect 0x10 (subprotocol error), the reason geth sends; a
// Status that does not decode is a protocol breach (0x02). docs/wire.md describes the range we
// advertise.

#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>

#include <boost/system/result.hpp>

#include "core/chain_config.hpp"
#include "core/header_source.hpp"
#include "core/history_source.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/wire/base_protocol.hpp"

namespace headerd::eth {

enum class StatusError {
    kVersionMismatch = 1,  // Status version differs from the negotiated eth version
    kNetworkIdMismatch,
    kGenesisMismatch,
    kForkIdRejected,     // EIP-2124 filter said no
    kInvalidBlockRange,  // eth/69: earliest > latest or zero latest hash
};

const std::error_category& status_category() noexcept;
std::error_code make_error_code(StatusError e) noexcept;

struct StatusRejection {
    std::error_code code;  // a StatusError, or the decode error of a malformed Status
    std::string message;   // e.g. "network id mismatch: remote 5, local 1"
    p2p::DisconnectReason reason{p2p::DisconnectReason::kSubprotocolError};
};

using StatusCheck = boost::system::result<void, StatusRejection>;

// Appends our Status for the negotiated `version` to `out`: the eth/68 layout for 68, the eth/69
// layout carrying `version` for 69 and later.
// `earliest`: the first block of the full-block range eth/69+ announces (announced_earliest()).
void encode_status(uint64_t version, const ChainConfig& config, const Head& head, Bytes& out,
                   std::optional<uint64_t> earliest = std::nullopt);

// Decodes the peer's Status in the layout of the negotiated `version` and checks it against our
// chain (validate_status). A decode failure is a rejection with the decode error as code and
// reason kProtocolBreach; a failed check is a StatusError with kSubprotocolError.
StatusCheck check_status(uint64_t version, ByteView payload, const ChainConfig& config, uint64_t head_number,
                         uint64_t head_time);

// Our Status for eth/68: total difficulty and hash of the head, forkid at the head. (Sessions:
// superseded by encode_status.)
StatusMessage68 make_status68(const ChainConfig& config, const Head& head);
// The first block of the full-block range (bodies and receipts) a node with headers up to `head`
// and history `history` announces: eth/69 has one range, [earliest, head], and every block in it
// must be served whole. So earliest is the first block of the history when the history reaches
// the head, and the head itself otherwise (a headers-only peer: the honest minimum, as geth's
// rule for a node whose bodies stop below its head). docs/history.md, "What is announced".
uint64_t announced_earliest(const Head& head, std::optional<BlockRange> history) noexcept;
// Our Status for eth/69 (version 69; encode_status sets later versions): the range
// [earliest, head] (earliest defaults to the head: a headers-only peer).
StatusMessage69 make_status69(const ChainConfig& config, const Head& head,
                              std::optional<uint64_t> earliest = std::nullopt);
// The range update sent whenever the head changes (eth/69+), same range as make_status69.
BlockRangeUpdate make_block_range_update(const Head& head, std::optional<uint64_t> earliest = std::nullopt);

// Checks a remote Status against our chain and the version negotiated in Hello. Order as geth:
// network id, version, genesis, forkid (against our head number and time), then for eth/69+ the
// block range. (Sessions: superseded by check_status.)
StatusCheck validate_status(const StatusMessage68& remote, const ChainConfig& config, uint64_t head_number,
                            uint64_t head_time, uint64_t negotiated_version);
StatusCheck validate_status(const StatusMessage69& remote, const ChainConfig& config, uint64_t head_number,
                            uint64_t head_time, uint64_t negotiated_version);

// Called by StatusCheck::value() on a rejection.
[[noreturn]] void throw_exception_from_error(const StatusRejection& e, const boost::source_location& loc);

}  // namespace headerd::eth

template <>
struct std::is_error_code_enum<headerd::eth::StatusError> : std::true_type {};
