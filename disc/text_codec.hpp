#pragma once

// The two binary-to-text encodings of discovery's text forms (RFC 4648, without padding): URL-safe
// base64 for ENRs ("enr:...") and DNS tree signatures, base32 (the standard alphabet, upper case)
// for DNS tree hashes and keys, since DNS names are case-insensitive and base32 survives that.
//
// The decoders are strict: they refuse padding, characters outside the alphabet, and a last
// character whose unused low bits are not zero, so one byte string has exactly one text form
// (DNS tree entries are named by the hash of their text, and an ENR's text is compared as is).

#include <optional>
#include <string>
#include <string_view>

#include "core/bytes.hpp"

namespace headerd::disc {

std::string base64url_encode(ByteView data);
std::optional<Bytes> base64url_decode(std::string_view text);

std::string base32_encode(ByteView data);
// With `canonical` false, unused low bits of the last character are ignored: a DNS tree hash may be
// the first characters of a longer hash's text, whose last one then carries bits of the next byte.
std::optional<Bytes> base32_decode(std::string_view text, bool canonical = true);

}  // namespace headerd::disc
