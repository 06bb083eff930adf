#pragma once

// Which addresses discovery accepts, decided in one place for every way an address enters: a
// discv4 Neighbors answer, an ENRResponse record, a discv5 NODES record, a DNS node list record and
// a dial candidate (docs/discovery.md, "Address policy"). The rules are geth's
// (p2p/netutil/net.go, CheckRelayAddr), applied after an IPv4-mapped IPv6 address is turned back
// into its IPv4 address:
// - no node lives at an unspecified, multicast or special-purpose address (geth's special4 and
//   special6 lists: "this" network, TEST-NETs, benchmarking, 6to4 relays, limited broadcast, ...);
// - a loopback address only from a loopback sender;
// - a LAN address (RFC 1918, fc00::/7, link-local) only from a LAN or loopback sender.
// Sans-I/O and stateless.

#include <boost/asio/ip/address.hpp>

namespace headerd::disc {

enum class AddressVerdict : uint8_t {
    kAllowed = 0,
    kUnspecified,  // 0.0.0.0, ::
    kSpecial,      // multicast or a special-purpose range
    kLoopback,     // a loopback address from a sender that is not on loopback
    kLan,          // a LAN address from a sender on the internet
};
const char* to_string(AddressVerdict v) noexcept;

// The IPv4 address of an IPv4-mapped IPv6 address (::ffff:a.b.c.d); any other address unchanged.
boost::asio::ip::address unmapped(const boost::asio::ip::address& ip) noexcept;

// Loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7) or link-local (169.254/16, fe80::/10),
// as geth's AddrIsLAN: exempt from the table's IP limits, and relayed only by LAN senders. Shared
// address space (100.64/10, carrier-grade NAT) is not LAN, as in geth: those addresses are one
// operator's, not ours.
bool is_lan(const boost::asio::ip::address& ip) noexcept;
// Multicast or one of geth's special-purpose ranges (IANA's special-purpose registries).
bool is_special(const boost::asio::ip::address& ip) noexcept;
// Addresses no node can be reached at: unspecified, multicast, special-purpose.
bool is_unroutable(const boost::asio::ip::address& ip) noexcept;

// geth's CheckRelayAddr: may `sender` (the address a packet came from, or the DNS server a list
// came from) tell us of a node at `ip`?
AddressVerdict check_relay(const boost::asio::ip::address& sender, const boost::asio::ip::address& ip) noexcept;
inline bool relay_allowed(const boost::asio::ip::address& sender, const boost::asio::ip::address& ip) noexcept {
    return check_relay(sender, ip) == AddressVerdict::kAllowed;
}

}  // namespace headerd::disc
