// Finding a request's connection and noticing its client leave (see client_connection.h).
#include "apps/serve/client_connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

namespace steptp::serve {
namespace {

// The port and address of a socket address, when it is IPv4 or IPv6.
bool split(const sockaddr_storage& a, in6_addr* addr, int* port) {
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    // As an IPv4-mapped IPv6 address, so both families compare in one form.
    std::memset(addr, 0, sizeof *addr);
    addr->s6_addr[10] = addr->s6_addr[11] = 0xff;
    std::memcpy(&addr->s6_addr[12], &v4.sin_addr, 4);
    *port = ntohs(v4.sin_port);
    return true;
  }
  if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    *addr = v6.sin6_addr;
    *port = ntohs(v6.sin6_port);
    return true;
  }
  return false;
}

bool parse_ip(const std::string& text, in6_addr* out) {
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    std::memset(out, 0, sizeof *out);
    out->s6_addr[10] = out->s6_addr[11] = 0xff;
    std::memcpy(&out->s6_addr[12], &v4, 4);
    return true;
  }
  return inet_pton(AF_INET6, text.c_str(), out) == 1;
}

}  // namespace

ClientConnection::ClientConnection(const std::string& remote_addr, int remote_port, int local_port) {
  in6_addr want{};
  if (remote_port <= 0 || local_port <= 0 || !parse_ip(remote_addr, &want)) return;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != 0 || fd == dirfd(dir)) continue;
    sockaddr_storage peer{}, self{};
    socklen_t pl = sizeof peer, sl = sizeof self;
    // Non-sockets fail here with ENOTSOCK: no need to read the link first.
    if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&self), &sl) != 0) continue;
    in6_addr pa{}, sa{};
    int pp = 0, sp = 0;
    if (!split(peer, &pa, &pp) || !split(self, &sa, &sp)) continue;
    if (pp == remote_port && sp == local_port && std::memcmp(&pa, &want, sizeof pa) == 0) {
      fd_ = int(fd);
      break;
    }
  }
  closedir(dir);
}

bool ClientConnection::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  if (p.revents & POLLIN) {
    char c;
    // 0: an orderly close; bytes: a pipelined next request, which is no reason to give up.
    ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0;
  }
  return false;
}

}  // namespace steptp::serve
