#include "p2p/enode/node_key.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "core/hex.hpp"

namespace headerd::p2p {

Outcome<void> write_file_atomic(const std::string& path, const std::string& content, unsigned mode) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return make_error(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
    ::fchmod(fd, mode);  // O_CREAT's mode is filtered by the umask
    size_t done = 0;
    while (done < content.size()) {
        const ssize_t w = ::write(fd, content.data() + done, content.size() - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            return make_error(fmt::format("cannot write {}: {}", tmp, std::strerror(err)));
        }
        done += static_cast<size_t>(w);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        ::unlink(tmp.c_str());
        return make_error(fmt::format("cannot sync {}: {}", tmp, std::strerror(errno)));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return make_error(fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(err)));
    }
    return {};
}

Outcome<rlpx::PrivateKey> load_or_create_node_key(const std::string& datadir) {
    const std::string path = (std::filesystem::path(datadir) / "nodekey").string();
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
        std::ifstream in(path);
        std::string text;
        in >> text;
        auto bytes = from_hex(text);
        if (!in && !in.eof()) return make_error(fmt::format("cannot read node key {}", path));
        if (!bytes || bytes->size() != 32) {
            return make_error(fmt::format("node key {} is not 64 hex characters; fix or remove it", path));
        }
        auto key = rlpx::PrivateKey::from_bytes(*bytes);
        if (!key) return make_error(fmt::format("node key {} is not a valid secp256k1 key", path));
        return *key;
    }
    auto key = rlpx::PrivateKey::generate();
    if (!key) return make_error(fmt::format("cannot generate a node key: {}", key.error().message()));
    if (auto r = write_file_atomic(path, to_hex(key->bytes()) + "\n", 0600); !r) return r.error();
    return *key;
}

std::string enode_url(const rlpx::PublicKey& key, const std::string& host, uint16_t port) {
    return fmt::format("enode://{}@{}:{}", to_hex(key.bytes()), host, port);
}

Outcome<Enode> parse_enode(const std::string& url) {
    constexpr std::string_view kScheme = "enode://";
    auto bad = [&](std::string_view why) { return make_error(fmt::format("bad enode URL '{}': {}", url, why)); };
    if (url.rfind(kScheme, 0) != 0) return bad("must start with enode://");
    std::string_view rest = std::string_view(url).substr(kScheme.size());
    const size_t at = rest.find('@');
    if (at == std::string_view::npos) return bad("missing @HOST:PORT");
    auto key_bytes = from_hex(rest.substr(0, at));
    if (!key_bytes || key_bytes->size() != 64) return bad("the node id must be 128 hex characters");
    auto key = rlpx::PublicKey::from_bytes(*key_bytes);
    if (!key) return bad("the node id is not a valid secp256k1 public key");
    std::string_view hostport = rest.substr(at + 1);
    std::string_view query;
    if (const size_t q = hostport.find('?'); q != std::string_view::npos) {
        query = hostport.substr(q + 1);
        hostport = hostport.substr(0, q);
    }
    const size_t colon = hostport.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return bad("missing :PORT");
    std::string host(hostport.substr(0, colon));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    // A decimal of at most 65535; nullopt for anything else.
    auto number = [](std::string_view digits) -> std::optional<uint16_t> {
        unsigned v = 0;
        if (digits.empty()) return std::nullopt;
        for (char c : digits) {
            if (c < '0' || c > '9' || v > 65535) return std::nullopt;
            v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (v > 65535) return std::nullopt;
        return static_cast<uint16_t>(v);
    };
    const auto port = number(hostport.substr(colon + 1));
    if (!port) return bad("bad port");
    std::optional<uint16_t> discport = 0;  // ?discport=0, as geth reads it, means none
    if (!query.empty()) {
        constexpr std::string_view kDiscport = "discport=";
        if (query.rfind(kDiscport, 0) != 0) return bad("the only query it may have is ?discport=N");
        discport = number(query.substr(kDiscport.size()));
        if (!discport) return bad("bad discport");
    }
    // TCP port 0 is a node that only does discovery (geth writes it so); it needs its UDP port.
    if (*port == 0 && *discport == 0) return bad("bad port");
    return Enode{*key, std::move(host), *port, *discport};
}

}  // namespace headerd::p2p
