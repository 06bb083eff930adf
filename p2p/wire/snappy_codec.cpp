#include "p2p/wire/snappy_codec.hpp"

#include <string>

#include <snappy.h>

namespace headerd::p2p {
namespace {

class SnappyCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "snappy"; }
    std::string message(int ev) const override {
        switch (static_cast<SnappyError>(ev)) {
            case SnappyError::kTooLarge:
                return "declared uncompressed size too large";
            case SnappyError::kCorrupt:
                return "corrupt snappy data";
            case SnappyError::kSendTooLarge:
                return "payload too large to send";
        }
        return "unknown snappy error";
    }
};

const char* chars(const uint8_t* p) noexcept { return reinterpret_cast<const char*>(p); }

}  // namespace

const std::error_category& snappy_category() noexcept {
    static const SnappyCategory category;
    return category;
}

std::error_code make_error_code(SnappyError e) noexcept { return {static_cast<int>(e), snappy_category()}; }

Result<size_t> snappy_uncompressed_length(ByteView compressed) noexcept {
    size_t n = 0;
    if (!snappy::GetUncompressedLength(chars(compressed.data()), compressed.size(), &n)) return SnappyError::kCorrupt;
    return n;
}

Result<ByteView> snappy_compress(ByteView in, Bytes& buf) {
    if (in.size() > kMaxSendSize) return SnappyError::kSendTooLarge;
    const size_t max = snappy::MaxCompressedLength(in.size());
    if (buf.size() < max) buf.resize(max);
    size_t n = 0;
    snappy::RawCompress(chars(in.data()), in.size(), reinterpret_cast<char*>(buf.data()), &n);
    return ByteView{buf.data(), n};
}

Result<ByteView> snappy_decompress(ByteView compressed, Bytes& buf, size_t max_size) noexcept {
    auto n = snappy_uncompressed_length(compressed);
    if (!n) return n.error();
    if (*n > max_size) return SnappyError::kTooLarge;
    if (buf.size() < *n) buf.resize(*n);
    // An empty vector may have a null data(); snappy writes nothing for a zero length.
    uint8_t dummy = 0;
    uint8_t* out = *n == 0 ? &dummy : buf.data();
    if (!snappy::RawUncompress(chars(compressed.data()), compressed.size(), reinterpret_cast<char*>(out))) {
        return SnappyError::kCorrupt;
    }
    return *n == 0 ? ByteView{} : ByteView{out, *n};
}

}  // namespace headerd::p2p
