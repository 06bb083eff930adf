#pragma once

// Headers, blocks and transactions as JSON-RPC shows them (the field names and forms of geth's
// RPCMarshalHeader, RPCMarshalBlock and RPCTransaction): quantities as 0x-hex without leading
// zeros, data as 0x-hex. Every value comes from the stored RLP; a transaction's sender is
// recovered from its signature. docs/rpc.md.

#include <cstdint>
#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "core/block_header.hpp"
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "core/uint256.hpp"

namespace headerd::rpc {

// "0x" and the big-endian bytes `b` as a quantity: no leading zero digits, "0x0" for none.
std::string quantity(ByteView b);
std::string quantity(uint64_t v);
std::string quantity(const U256& v);

// The header's fields with `hash`; geth's RPCMarshalHeader.
boost::json::object header_json(const BlockHeader& header, const Hash32& hash);

// Where a transaction sits: what its JSON names beside its own fields.
struct TransactionPlace {
    Hash32 block_hash{};
    uint64_t block_number{0};
    uint64_t index{0};
    std::optional<U256> base_fee;  // the block's, for the effective gasPrice of EIP-1559 transactions
};

// keccak256 of the transaction's canonical encoding (the legacy RLP list, or type || payload), from
// its item in a body's transaction list.
Result<Hash32> transaction_hash(ByteView item) noexcept;

// The transaction's JSON (legacy, EIP-2930, EIP-1559, EIP-4844 and EIP-7702 forms), its sender
// recovered from the signature. An error names what is malformed.
Outcome<boost::json::object> transaction_json(ByteView item, const TransactionPlace& place);

// The block: header fields, "size" (bytes of rlp([header, transactions, uncles(, withdrawals)])),
// "uncles" (their hashes), "transactions" (hashes, or whole objects with `full`) and "withdrawals"
// where the body has them. REQUIRES: `body` was checked against the header.
Outcome<boost::json::object> block_json(const BlockHeader& header, ByteView header_rlp, const Hash32& hash,
                                        ByteView body, bool full);

// rlp([header, transactions, uncles(, withdrawals)]): the block as debug_getRawBlock returns it.
Result<Bytes> raw_block(ByteView header_rlp, ByteView body);

}  // namespace headerd::rpc
