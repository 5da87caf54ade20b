#include "lower/sandbox/landlock.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

// Debian 12's kernel headers stop at ABI 2; the rights and fields of later ABIs are the kernel's
// stable UAPI values (include/uapi/linux/landlock.h), used only when landlock_abi() has them.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace steptp::backend::sandbox {
namespace {

// struct landlock_ruleset_attr as of ABI 6; an older kernel accepts it while the fields it does
// not know are zero.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};

constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                                 LANDLOCK_ACCESS_FS_IOCTL_DEV;

uint64_t handled_fs(int abi) {
  uint64_t r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: execute .. make_sym
  if (abi >= 2) r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return r;
}

uint64_t rights(Access a, uint64_t handled) {
  const uint64_t read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  switch (a) {
    case Access::Read: return read & handled;
    case Access::ReadExec: return (read | LANDLOCK_ACCESS_FS_EXECUTE) & handled;
    case Access::ReadWrite:
      return (read | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV) &
             handled;
    case Access::Full: return handled;
  }
  return 0;
}

}  // namespace

int landlock_abi(std::string* why) {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0 && why)
    *why = errno == EOPNOTSUPP ? "Landlock is disabled in this kernel (boot parameter lsm=)"
                               : fmt::format("Landlock is not available: {}", std::strerror(errno));
  return abi < 0 ? 0 : int(abi);
}

std::string restrict_paths(const std::vector<PathRule>& rules) {
  std::string why;
  const int abi = landlock_abi(&why);
  if (abi == 0) return why;
  RulesetAttr attr;
  attr.handled_access_fs = handled_fs(abi);
  if (abi >= 4) attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
  if (abi >= 6) attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
  int ruleset = int(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return fmt::format("landlock_create_ruleset: {}", std::strerror(errno));
  for (const auto& r : rules) {
    int fd = open(r.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      why = fmt::format("cannot open {}: {}", r.path, std::strerror(errno));
      break;
    }
    struct stat st {};
    fstat(fd, &st);
    landlock_path_beneath_attr beneath{};
    beneath.parent_fd = fd;
    beneath.allowed_access = rights(r.access, attr.handled_access_fs);
    // Rights that only make sense beneath a directory are refused (EINVAL) on a file.
    if (!S_ISDIR(st.st_mode)) beneath.allowed_access &= kFileRights;
    long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
    int err = errno;
    close(fd);
    if (rc != 0) {
      why = fmt::format("landlock_add_rule {}: {}", r.path, std::strerror(err));
      break;
    }
  }
  if (why.empty() && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
    why = fmt::format("landlock_restrict_self: {}", std::strerror(errno));
  close(ruleset);
  return why;
}

}  // namespace steptp::backend::sandbox
