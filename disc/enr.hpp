#pragma once

// Ethereum Node Records (EIP-778) with the "v4" identity scheme: a signed, versioned set of
// key/value pairs that says who a node is (its secp256k1 key) and where and how to reach it (ip,
// tcp, udp, their IPv6 variants, and the `eth` entry with the node's EIP-2124 fork id). The record
// is RLP: [signature, seq, k1, v1, k2, v2, ...], keys sorted and unique, at most 300 bytes; the
// signature is 64 bytes r || s over keccak256(rlp([seq, k1, v1, ...])) by the record's own key. Its
// text form is "enr:" and the record in URL-safe base64 without padding. See docs/discovery.md.
//
// Sans-I/O: bytes in, bytes out.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "core/bytes.hpp"
#include "core/forkid.hpp"
#include "core/result.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::disc {

inline constexpr size_t kEnrMaxSize = 300;

enum class EnrError {
    kTooBig = 1,     // the encoded record is above 300 bytes
    kMalformed,      // not an RLP list [signature, seq, k, v, ...] (or bytes after it)
    kNotSorted,      // keys out of order
    kDuplicateKey,   // a key twice
    kUnknownScheme,  // no "id", or an identity scheme other than "v4"
    kBadKey,         // "secp256k1" missing or not a compressed point on the curve
    kBadSignature,   // the signature does not verify with the record's key
    kBadText,        // not "enr:" followed by URL-safe base64 without padding
};

const std::error_category& enr_category() noexcept;
std::error_code make_error_code(EnrError e) noexcept;

// A verified record. Invariant: encoded() is at most 300 bytes, its keys are sorted and unique,
// its "id" is "v4" and its signature verifies with its "secp256k1" key.
class Enr {
  public:
    // Decodes and verifies a record.
    static Result<Enr> decode(ByteView rlp) noexcept;
    // The text form: "enr:" + URL-safe base64 of the RLP, without padding.
    static Result<Enr> from_text(std::string_view text) noexcept;

    uint64_t seq() const noexcept { return seq_; }
    ByteView encoded() const noexcept { return encoded_; }
    std::string text() const;
    const rlpx::PublicKey& public_key() const noexcept { return *key_; }
    // keccak256 of the uncompressed key: the id discv4, discv5 and enode URLs use.
    Hash32 node_id() const noexcept { return key_->node_id(); }

    // The value stored under `key`, as the RLP item it is (a string or a list), if present.
    std::optional<ByteView> value(std::string_view key) const noexcept;
    // Every key and its RLP item, in order.
    const std::map<std::string, Bytes, std::less<>>& pairs() const noexcept { return pairs_; }

    // The known entries, decoded; nullopt when absent or of the wrong shape (an ip of 5 bytes, a
    // port of 3). As in geth, such a value does not make the record invalid: only its reader fails.
    std::optional<std::array<uint8_t, 4>> ip() const noexcept;
    std::optional<std::array<uint8_t, 16>> ip6() const noexcept;
    std::optional<uint16_t> tcp() const noexcept;
    std::optional<uint16_t> udp() const noexcept;
    // tcp6/udp6, or tcp/udp when the record has no IPv6-specific port (EIP-778).
    std::optional<uint16_t> tcp6() const noexcept;
    std::optional<uint16_t> udp6() const noexcept;
    // The `eth` entry, [[fork hash, fork next], ...]: the first fork id (extra elements ignored).
    std::optional<ForkId> eth() const noexcept;

  private:
    friend class EnrBuilder;
    Enr() = default;
    // The string value of `key` if it is N bytes long.
    template <size_t N>
    std::optional<std::array<uint8_t, N>> fixed(std::string_view key) const noexcept;

    Bytes encoded_;
    uint64_t seq_{0};
    std::map<std::string, Bytes, std::less<>> pairs_;
    std::optional<rlpx::PublicKey> key_;  // always set (PublicKey has no empty state)
};

// Makes and signs a record: set the entries, then sign() with the node's key, which adds "id" (v4)
// and "secp256k1". A node re-signs with a higher seq whenever an entry changes.
class EnrBuilder {
  public:
    explicit EnrBuilder(uint64_t seq) : seq_(seq) {}

    // Sets `key` to an RLP item (a string or a list), replacing what it held.
    EnrBuilder& set(std::string key, Bytes rlp_item);
    EnrBuilder& ip(const std::array<uint8_t, 4>& address);
    EnrBuilder& ip6(const std::array<uint8_t, 16>& address);
    EnrBuilder& tcp(uint16_t port);
    EnrBuilder& udp(uint16_t port);
    EnrBuilder& tcp6(uint16_t port);
    EnrBuilder& udp6(uint16_t port);
    // The `eth` entry: [[fork hash, fork next]].
    EnrBuilder& eth(const ForkId& id);

    // kTooBig when the signed record would exceed 300 bytes.
    Result<Enr> sign(const rlpx::PrivateKey& key) const;

  private:
    uint64_t seq_;
    std::map<std::string, Bytes, std::less<>> pairs_;
};

}  // namespace headerd::disc

template <>
struct std::is_error_code_enum<headerd::disc::EnrError> : std::true_type {};
