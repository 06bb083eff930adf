#include "p2p/rlpx/error.hpp"

#include <string>

namespace headerd::rlpx {
namespace {

class Category final : public std::error_category {
  public:
    const char* name() const noexcept override { return "rlpx"; }
    std::string message(int ev) const override {
        switch (static_cast<Errc>(ev)) {
            case Errc::kInvalidPrivateKey:
                return "invalid secp256k1 private key";
            case Errc::kInvalidPublicKey:
                return "invalid secp256k1 public key";
            case Errc::kInvalidSignature:
                return "invalid recoverable signature";
            case Errc::kRandomFailure:
                return "random number generator failed";
            case Errc::kCryptoFailure:
                return "crypto library call failed";
            case Errc::kEciesTooShort:
                return "ECIES message too short";
            case Errc::kEciesInvalidPoint:
                return "ECIES ephemeral key is not a valid uncompressed point";
            case Errc::kEciesBadMac:
                return "ECIES MAC mismatch";
            case Errc::kHandshakeWrongState:
                return "handshake call out of order or after a failure";
            case Errc::kHandshakeSizeTooLarge:
                return "handshake packet size above limit";
            case Errc::kHandshakeSizeTooSmall:
                return "handshake packet size below ECIES overhead";
            case Errc::kMalformedAuth:
                return "malformed auth message";
            case Errc::kMalformedAck:
                return "malformed ack message";
            case Errc::kFrameWrongState:
                return "frame read out of order, wrong length or after a failure";
            case Errc::kBadHeaderMac:
                return "bad frame header MAC";
            case Errc::kBadFrameMac:
                return "bad frame MAC";
            case Errc::kFrameTooLarge:
                return "frame size above limit";
        }
        return "unknown rlpx error";
    }
};

}  // namespace

const std::error_category& rlpx_category() noexcept {
    static const Category category;
    return category;
}

std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), rlpx_category()}; }

}  // namespace headerd::rlpx
