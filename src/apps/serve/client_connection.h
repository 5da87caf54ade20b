// Whether the client of a request still waits for its reply. cpp-httplib 0.11 (Debian 12) gives
// a handler no access to its connection, yet a request whose client has gone (a trainer's
// time-out, a cancelled batch) should give up its place in the queue instead of costing a worker
// later. The handler's socket is found by its TCP addresses (remote and local address and port
// identify one connection) among the process's descriptors; it stays open while the handler
// runs, since the thread that would close it is the one running the handler.
#pragma once

#include <string>

namespace steptp::serve {

class ClientConnection {
 public:
  // Finds the socket of the connection remote_addr:remote_port -> local_port. When it cannot be
  // found (or the addresses are not IP), `gone()` is always false.
  ClientConnection(const std::string& remote_addr, int remote_port, int local_port);

  // True once the client has closed or reset the connection (an orderly close with no request
  // bytes pending, or an error on the socket). Never blocks.
  bool gone() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace steptp::serve
