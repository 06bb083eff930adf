#include "core/keccak.hpp"

namespace headerd {

Hash32 keccak256(ByteView data) noexcept {
    KeccakSponge<keccak_f1600_plain> sponge;
    sponge.update(data);
    return sponge.digest();
}

}  // namespace headerd
