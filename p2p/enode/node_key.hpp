#pragma once

// The node's identity: DATADIR/nodekey (the secp256k1 private key as 64 hex characters, file mode
// 0600, created on first start and reused) and its enode URL.

#include <cstdint>
#include <string>

#include "core/result.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::p2p {

// Loads DATADIR/nodekey, or creates it (0600, written to a temporary file, fsynced and renamed)
// when it does not exist. A file that is not a valid key is an error naming it; it is never
// replaced.
Outcome<rlpx::PrivateKey> load_or_create_node_key(const std::string& datadir);

// enode://<128 hex of the public key>@HOST:PORT
std::string enode_url(const rlpx::PublicKey& key, const std::string& host, uint16_t port);

struct Enode {
    rlpx::PublicKey key;
    std::string host;
    uint16_t port{0};      // TCP (RLPx)
    uint16_t discport{0};  // UDP (discovery), when the URL gives one other than port
    uint16_t udp_port() const noexcept { return discport != 0 ? discport : port; }
};

// Parses enode://<128 hex>@HOST:PORT with an optional ?discport=N (the UDP port of discovery
// when it differs from the TCP port). PORT 0 with a discport is a discovery-only node (it cannot
// be dialled).
Outcome<Enode> parse_enode(const std::string& url);

// Writes `content` to PATH atomically (temporary file, fsync, rename) with the given mode.
Outcome<void> write_file_atomic(const std::string& path, const std::string& content, unsigned mode);

}  // namespace headerd::p2p
