#include "disc/address_policy.hpp"

#include <array>
#include <cstdint>

namespace headerd::disc {
namespace {

namespace ip = boost::asio::ip;

// A prefix of an address of N bytes.
template <size_t N>
struct Prefix {
    std::array<uint8_t, N> bytes;
    unsigned bits;

    bool contains(const std::array<uint8_t, N>& a) const noexcept {
        unsigned i = 0;
        for (; i + 8 <= bits; i += 8) {
            if (a[i / 8] != bytes[i / 8]) return false;
        }
        if (i == bits) return true;
        const auto mask = static_cast<uint8_t>(0xff << (8 - (bits - i)));
        return (a[i / 8] & mask) == (bytes[i / 8] & mask);
    }
};
using Prefix4 = Prefix<4>;
using Prefix6 = Prefix<16>;

// geth's special4 (RFC 5735, RFC 5156, IANA's IPv4 special-purpose registry), without the ranges
// is_lan and loopback cover.
constexpr std::array kSpecial4{
    Prefix4{{0, 0, 0, 0}, 8},           // "this" network
    Prefix4{{192, 0, 0, 0}, 29},        // IPv4 service continuity
    Prefix4{{192, 0, 0, 9}, 32},        // PCP anycast
    Prefix4{{192, 0, 0, 170}, 32},      // NAT64/DNS64 discovery
    Prefix4{{192, 0, 0, 171}, 32},      // NAT64/DNS64 discovery
    Prefix4{{192, 0, 2, 0}, 24},        // TEST-NET-1
    Prefix4{{192, 31, 196, 0}, 24},     // AS112
    Prefix4{{192, 52, 193, 0}, 24},     // AMT
    Prefix4{{192, 88, 99, 0}, 24},      // 6to4 relay anycast
    Prefix4{{192, 175, 48, 0}, 24},     // AS112
    Prefix4{{198, 18, 0, 0}, 15},       // device benchmark testing
    Prefix4{{198, 51, 100, 0}, 24},     // TEST-NET-2
    Prefix4{{203, 0, 113, 0}, 24},      // TEST-NET-3
    Prefix4{{255, 255, 255, 255}, 32},  // limited broadcast
};

// geth's special6 (IANA's IPv6 special-purpose registry).
constexpr std::array kSpecial6{
    Prefix6{{0x01, 0x00}, 64},  // discard-only
    Prefix6{{0x20, 0x01}, 32},  // TEREDO
    Prefix6{{0x20, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01},
            128},                                       // port control protocol anycast (2001:1::1)
    Prefix6{{0x20, 0x01, 0x00, 0x02}, 48},              // benchmarking
    Prefix6{{0x20, 0x01, 0x00, 0x03}, 32},              // AMT
    Prefix6{{0x20, 0x01, 0x00, 0x04, 0x01, 0x12}, 48},  // AS112-v6
    Prefix6{{0x20, 0x01, 0x00, 0x05}, 32},              // EID space for LISP
    Prefix6{{0x20, 0x01, 0x00, 0x10}, 28},              // ORCHID (deprecated)
    Prefix6{{0x20, 0x01, 0x00, 0x20}, 28},              // ORCHIDv2
    Prefix6{{0x20, 0x01, 0x0d, 0xb8}, 32},              // documentation
    Prefix6{{0x20, 0x02}, 16},                          // 6to4
};

}  // namespace

const char* to_string(AddressVerdict v) noexcept {
    switch (v) {
        case AddressVerdict::kAllowed:
            return "allowed";
        case AddressVerdict::kUnspecified:
            return "unspecified address";
        case AddressVerdict::kSpecial:
            return "special-purpose address";
        case AddressVerdict::kLoopback:
            return "loopback address from a sender not on loopback";
        case AddressVerdict::kLan:
            return "LAN address from a sender on the internet";
    }
    return "unknown";
}

ip::address unmapped(const ip::address& a) noexcept {
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
    return a;
}

bool is_lan(const ip::address& address) noexcept {
    const ip::address a = unmapped(address);
    if (a.is_loopback()) return true;
    if (a.is_v4()) {
        const auto b = a.to_v4().to_bytes();
        return b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
               (b[0] == 169 && b[1] == 254);
    }
    const auto b = a.to_v6().to_bytes();
    return (b[0] & 0xfe) == 0xfc || a.to_v6().is_link_local();
}

bool is_special(const ip::address& address) noexcept {
    const ip::address a = unmapped(address);
    if (a.is_multicast()) return true;
    if (a.is_v4()) {
        const auto b = a.to_v4().to_bytes();
        for (const auto& p : kSpecial4) {
            if (p.contains(b)) return true;
        }
        return false;
    }
    const auto b = a.to_v6().to_bytes();
    for (const auto& p : kSpecial6) {
        if (p.contains(b)) return true;
    }
    return false;
}

bool is_unroutable(const ip::address& address) noexcept {
    return unmapped(address).is_unspecified() || is_special(address);
}

AddressVerdict check_relay(const ip::address& sender_address, const ip::address& address) noexcept {
    const ip::address a = unmapped(address);
    const ip::address sender = unmapped(sender_address);
    if (a.is_unspecified()) return AddressVerdict::kUnspecified;
    if (is_special(a)) return AddressVerdict::kSpecial;
    if (a.is_loopback() && !sender.is_loopback()) return AddressVerdict::kLoopback;
    if (is_lan(a) && !is_lan(sender)) return AddressVerdict::kLan;
    return AddressVerdict::kAllowed;
}

}  // namespace headerd::disc
