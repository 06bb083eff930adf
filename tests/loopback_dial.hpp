#pragma once

// Raw TCP connections from a chosen loopback address, for the tests of the server's inbound limits
// (tests/p2p_inbound_limit_test.cpp, tests/hostile_peer.cpp). All of 127.0.0.0/8 is loopback on
// Linux, so a client bound to 127.0.1.5 looks to the server like another host of another subnet
// than one bound to 127.0.0.2.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace headerd::testing {

// A connected socket from `from` (an IPv4 address, port chosen by the kernel) to host:port, or -1.
inline int dial_from(const std::string& from, const std::string& host, uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in local{};
    local.sin_family = AF_INET;
    sockaddr_in remote{};
    remote.sin_family = AF_INET;
    remote.sin_port = htons(port);
    if (::inet_pton(AF_INET, from.c_str(), &local.sin_addr) != 1 ||
        ::inet_pton(AF_INET, host.c_str(), &remote.sin_addr) != 1) {
        ::close(fd);
        return -1;
    }
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0 ||
        ::connect(fd, reinterpret_cast<const sockaddr*>(&remote), sizeof remote) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Whether the server has closed (or reset) the connection. Consumes nothing else: a devp2p server
// sends nothing before the client's auth packet.
inline bool closed_now(int fd) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    char b = 0;
    const ssize_t n = ::recv(fd, &b, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

}  // namespace headerd::testing
