// Writing a file so that readers see the old contents or the new, never a part: the data goes to
// a temporary file beside the target with an unpredictable name (mkstemp: created O_EXCL, mode
// 0600, so a file or link planted at a guessable name cannot redirect the write), then is
// renamed onto it.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "base/error.h"
#include <string_view>

namespace steptp::base {

// Throws base::Error (Failed) naming the file when it cannot be written. `mode`: the file's
// permissions once in place (the temporary file is 0600 until then).
inline void write_file_atomically(const std::filesystem::path& target, std::string_view data, mode_t mode = 0644) {
  const std::string path = target.string();
  std::string tmp = path + ".tmp-XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) throw base::Error(base::ErrorKind::Failed, "cannot write " + path + ": " + std::strerror(errno));
  bool ok = true;
  for (size_t done = 0; ok && done < data.size();) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += size_t(n);
  }
  ok = ok && fchmod(fd, mode) == 0;
  const int write_errno = errno;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = ok ? errno : write_errno;
    unlink(tmp.c_str());
    throw base::Error(base::ErrorKind::Failed, "cannot write " + path + ": " + std::strerror(e));
  }
}

}  // namespace steptp::base
