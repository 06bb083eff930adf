#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include <boost/system/result.hpp>

namespace headerd {

// Decoders in core/ return a Result: no exceptions, no allocation on failure. The error is a
// std::error_code whose category names the layer (rlp, header, ...).
template <class T>
using Result = boost::system::result<T, std::error_code>;

// What a caller may want to act on; everything else is kOther and only its message matters.
enum class ErrorKind : uint8_t {
    kOther = 0,
    kInUse,    // the resource is held by another process (a datadir another headerd has open)
    kCorrupt,  // stored bytes are damaged (a failed checksum, an undecodable item); Error::block says where
};

// Layers above core (ancient, db, node) report failures that must name the file, offset, block
// or peer involved; the message is built on the (cold) failure path only. Callers branch on
// `kind`, never on the text.
struct Error {
    std::string message;
    ErrorKind kind{ErrorKind::kOther};
    // For kCorrupt: the first block (freezer item) found damaged, when the reader knows it.
    std::optional<uint64_t> block{};
};

template <class T = void>
using Outcome = boost::system::result<T, Error>;

inline Error make_error(std::string message, ErrorKind kind = ErrorKind::kOther) {
    return Error{std::move(message), kind, std::nullopt};
}

// A kCorrupt error that names the damaged block.
inline Error corrupt_error(std::string message, uint64_t block) {
    return Error{std::move(message), ErrorKind::kCorrupt, block};
}

// Called by Outcome<T>::value() when it holds an Error.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

}  // namespace headerd
