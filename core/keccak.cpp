#include "core/keccak.hpp"

#include <cryptopp/keccak.h>

namespace headerd {

struct Keccak256::State {
    CryptoPP::Keccak_256 hash;
};

Hash32 keccak256(ByteView data) noexcept {
    CryptoPP::Keccak_256 h;
    Hash32 out;
    h.CalculateDigest(out.data(), data.data(), data.size());
    return out;
}

Keccak256::Keccak256() : state_(std::make_unique<State>()) {}
Keccak256::~Keccak256() = default;
Keccak256::Keccak256(const Keccak256& other) : state_(std::make_unique<State>(*other.state_)) {}
Keccak256& Keccak256::operator=(const Keccak256& other) {
    if (this != &other) *state_ = *other.state_;
    return *this;
}
Keccak256::Keccak256(Keccak256&&) noexcept = default;
Keccak256& Keccak256::operator=(Keccak256&&) noexcept = default;

void Keccak256::update(ByteView data) noexcept { state_->hash.Update(data.data(), data.size()); }

Hash32 Keccak256::digest() const noexcept {
    CryptoPP::Keccak_256 copy = state_->hash;
    Hash32 out;
    copy.Final(out.data());
    return out;
}

}  // namespace headerd
