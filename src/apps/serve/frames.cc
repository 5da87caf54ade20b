// Framed pipe messages (see frames.h).
#include "apps/serve/frames.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace steptp::serve {
namespace {

// A frame's payload may not exceed this (a runaway child cannot make the reader allocate more).
constexpr uint32_t kMaxPayload = 64u << 20;

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Reads exactly n bytes before the deadline.
bool read_all(int fd, char* p, size_t n, int64_t deadline_ms, bool* timed_out) {
  while (n > 0) {
    if (deadline_ms >= 0) {
      int64_t left = deadline_ms - now_ms();
      if (left <= 0) {
        if (timed_out) *timed_out = true;
        return false;
      }
      pollfd pfd{fd, POLLIN, 0};
      int r = poll(&pfd, 1, int(std::min<int64_t>(left, 1000)));
      if (r < 0 && errno != EINTR) return false;
      if (r <= 0) continue;
    }
    ssize_t got = read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= size_t(got);
  }
  return true;
}

}  // namespace

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool write_frame(int fd, char type, const std::string& payload) {
  char head[5] = {type};
  uint32_t n = uint32_t(payload.size());
  for (int i = 0; i < 4; ++i) head[1 + i] = char((n >> (8 * i)) & 0xff);
  return write_all(fd, head, 5) && write_all(fd, payload.data(), payload.size());
}

std::optional<Frame> read_frame(int fd, int64_t deadline_ms, bool* timed_out) {
  char head[5];
  if (!read_all(fd, head, 5, deadline_ms, timed_out)) return std::nullopt;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= uint32_t(uint8_t(head[1 + i])) << (8 * i);
  if (n > kMaxPayload) return std::nullopt;
  Frame f{head[0], std::string(n, '\0')};
  if (!read_all(fd, f.payload.data(), n, deadline_ms, timed_out)) return std::nullopt;
  return f;
}

}  // namespace steptp::serve
