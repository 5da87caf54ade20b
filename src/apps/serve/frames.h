// Framed messages over pipes between the server, its worker processes and their sandboxed
// children: one type byte, a 4-byte little-endian length, then the payload (JSON text).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace steptp::serve {

struct Frame {
  char type = 0;
  std::string payload;
};

// Writes the whole frame (retrying on EINTR); false when the reader is gone.
bool write_frame(int fd, char type, const std::string& payload);
// Reads one frame; nullopt on end of file or error. `deadline_ms` < 0 waits forever; when it
// passes, `*timed_out` is set and nullopt returned.
std::optional<Frame> read_frame(int fd, int64_t deadline_ms = -1, bool* timed_out = nullptr);

// Milliseconds on the monotonic clock (deadlines of read_frame).
int64_t now_ms();

}  // namespace steptp::serve
