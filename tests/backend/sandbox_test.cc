// The sandbox's profiles (lower/sandbox), applied as serve's worker applies them: a child of
// fork_limited in a new PID namespace, in a pids cgroup, with a private job directory. Each test
// checks what a hostile job or kernel tries — read or write outside its directory, open a socket,
// exec, fork without bound — against each layer: where the layer applied, the attempt must fail;
// where the kernel refused the layer, the report must say so and why (no test is skipped).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "lower/cpu/compiler.h"
#include "lower/cpu/cpu_program.h"
#include "lower/cpu/sandbox.h"
#include "lower/sandbox/pids_cgroup.h"
#include "lower/sandbox/profile.h"
#include "backend_test_util.h"
#include "ir/leir/program_io.h"

namespace steptp::backend {
namespace {

using nlohmann::json;
using sandbox::LayerReport;

// errno of a failed attempt, 0 when it succeeded.
int attempt(int rc) { return rc < 0 ? errno : 0; }
int attempt_open(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}
int attempt_socket(int family) {
  int fd = socket(family, SOCK_STREAM, 0);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

void write_all(int fd, const std::string& s) {
  for (size_t off = 0; off < s.size();) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += size_t(n);
  }
}
std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) s.append(buf, size_t(n));
  return s;
}

// Runs `tries` in a child under the job profile, made as serve's worker makes it, and returns
// {"layers": the child's LayerReport, "tried": what `tries` returned}.
json in_job_sandbox(const std::function<json(const std::string& job_dir)>& tries, int max_pids = 64) {
  std::string no_cgroup;
  auto cgroup = sandbox::PidsCgroup::create(max_pids, &no_cgroup);
  const std::string dir = sandbox::make_job_dir("/tmp", 65534, 65534);
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  pid_t pid = cpu::fork_limited(
      int64_t{2} << 30,
      [&] {
        close(p[0]);
        setpgid(0, 0);
        std::string why = cgroup ? cgroup->join() : no_cgroup;
        LayerReport r =
            sandbox::apply_job_profile({.job_dir = dir, .extra_paths = {}, .in_new_pid_namespace = getpid() == 1});
        r.set("pids_cgroup", why.empty(), why);
        json tried = tries(dir);
        write_all(p[1], json{{"layers", r.to_json()}, {"tried", tried}}.dump());
        close(p[1]);
        kill(0, SIGKILL);  // with whatever it started (its process group)
        _exit(0);
      },
      true);
  close(p[1]);
  EXPECT_GT(pid, 0);
  std::string out = read_all(p[0]);
  close(p[0]);
  waitpid(pid, nullptr, 0);
  cgroup.reset();
  std::filesystem::remove_all(dir);
  json j = json::parse(out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << "the sandboxed child sent no report: " << out;
  return j.is_object() ? j : json{{"layers", json::object()}, {"tried", json::object()}};
}

// Where `layer` applied, the attempt must have been refused; elsewhere the report must say why
// the layer is off.
void expect_refused(const LayerReport& r, const std::string& layer, bool refused, const std::string& what) {
  if (r.applied(layer)) EXPECT_TRUE(refused) << what << " succeeded although " << layer << " applied";
  else EXPECT_FALSE(r.reason(layer).empty()) << layer << " is off without a reason";
}

// A directory outside the job's, like another user's home: readable and (to test Landlock, not
// file permissions) writable by anyone.
struct Outside {
  std::string dir, secret, victim;
  Outside() {
    dir = "/var/tmp/steptp-outside-XXXXXX";
    if (!mkdtemp(dir.data())) throw std::runtime_error("mkdtemp");
    chmod(dir.c_str(), 0777);
    secret = dir + "/secret.txt";
    victim = dir + "/victim.txt";
    std::ofstream(secret) << "secret\n";
    std::ofstream(victim) << "victim\n";
    chmod(secret.c_str(), 0644);
    chmod(victim.c_str(), 0666);
  }
  ~Outside() { std::filesystem::remove_all(dir); }
};

TEST(Sandbox, JobCannotReadOrWriteOutsideItsDirectoryNorOpenSockets) {
  Outside outside;
  json j = in_job_sandbox([&](const std::string& dir) {
    std::string cap_eff;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("CapEff:", 0) == 0) cap_eff = line.substr(7);
    return json{{"read_secret", attempt_open(outside.secret, O_RDONLY)},
                {"write_victim", attempt_open(outside.victim, O_WRONLY)},
                {"create_outside", attempt_open(outside.dir + "/new.txt", O_WRONLY | O_CREAT)},
                {"create_in_tmp", attempt_open(fmt::format("/tmp/steptp-escape-{}", getppid()), O_WRONLY | O_CREAT)},
                {"read_etc", attempt_open("/etc/passwd", O_RDONLY)},
                {"write_job_dir", attempt_open(dir + "/out.txt", O_WRONLY | O_CREAT)},
                {"read_toolchain", attempt_open("/usr/bin/g++", O_RDONLY)},
                {"inet", attempt_socket(AF_INET)},
                {"inet6", attempt_socket(AF_INET6)},
                {"unix", attempt_socket(AF_UNIX)},
                {"uid", getuid()},
                {"gid", getgid()},
                {"pid", getpid()},
                {"cap_eff", cap_eff}};
  });
  LayerReport r = LayerReport::from_json(j["layers"]);
  const json& t = j["tried"];
  SCOPED_TRACE(j.dump());
  // The job's own directory and the toolchain stay usable.
  EXPECT_EQ(t["write_job_dir"], 0);
  EXPECT_EQ(t["read_toolchain"], 0);
  EXPECT_TRUE(r.applied("job_dir")) << r.reason("job_dir");
  expect_refused(r, "landlock", t["read_secret"] == EACCES, "reading a 0644 file outside the job directory");
  expect_refused(r, "landlock", t["write_victim"] == EACCES, "writing a 0666 file outside the job directory");
  expect_refused(r, "landlock", t["create_outside"] == EACCES, "creating a file in a 0777 directory outside");
  expect_refused(r, "landlock", t["create_in_tmp"] == EACCES, "creating a file in /tmp");
  expect_refused(r, "landlock", t["read_etc"] == EACCES, "reading /etc/passwd");
  for (const char* s : {"inet", "inet6", "unix"})
    expect_refused(r, "seccomp", t[s] == EPERM, std::string("opening an ") + s + " socket");
  expect_refused(r, "user", t["uid"] == 65534 && t["gid"] == 65534, "keeping uid 0");
  expect_refused(r, "capabilities", t["cap_eff"].get<std::string>().find_first_not_of("0\t ") == std::string::npos,
                 "keeping capabilities");
  expect_refused(r, "pid_ns", t["pid"] == 1, "seeing the host's PIDs");
  EXPECT_FALSE(std::filesystem::exists(fmt::format("/tmp/steptp-escape-{}", getpid())));
}

TEST(Sandbox, ForkBombStaysBoundedByThePidsCgroup) {
  const int max_pids = 32;
  json j = in_job_sandbox(
      [](const std::string&) {
        int made = 0, err = 0;
        for (int i = 0; i < 400; ++i) {
          pid_t c = fork();
          if (c == 0) {
            pause();
            _exit(0);
          }
          if (c < 0) {
            err = errno;
            break;
          }
          ++made;
        }
        return json{{"forked", made}, {"errno", err}};
      },
      max_pids);
  LayerReport r = LayerReport::from_json(j["layers"]);
  SCOPED_TRACE(j.dump());
  // The bomb's own parent survived to report (and so did this test process).
  ASSERT_TRUE(j["tried"].contains("forked"));
  expect_refused(r, "pids_cgroup", j["tried"]["forked"] < max_pids && j["tried"]["errno"] == EAGAIN,
                 "forking without bound");
}

// A kernel-run child of a sandboxed job (as run_sandboxed and tune's measuring child are): no
// exec, no process creation, no sockets, no file system, but threads.
TEST(Sandbox, KernelRunCannotExecForkOrOpenFilesButRunsThreads) {
  json j = in_job_sandbox([](const std::string&) {
    sandbox::set_kernel_profile_for_children(true);
    int q[2];
    if (pipe(q) != 0) return json{{"error", "pipe"}};
    pid_t kid = cpu::fork_limited(int64_t{1} << 30, [&] {
      pid_t c = fork();
      if (c == 0) _exit(0);
      int forked = c < 0 ? errno : 0;
      int raw_fork = attempt(int(syscall(SYS_fork)));
      bool thread_ran = false;
      std::thread([&] { thread_ran = true; }).join();
      json out = {{"profile", sandbox::kernel_profile_report().to_json()},
                  {"fork", forked},
                  {"raw_fork", raw_fork},
                  {"read_toolchain", attempt_open("/usr/bin/g++", O_RDONLY)},
                  {"create_tmp", attempt_open("/tmp/steptp-kernel-escape", O_WRONLY | O_CREAT)},
                  {"inet", attempt_socket(AF_INET)},
                  {"thread", thread_ran}};
      write_all(q[1], out.dump() + "\n");
      // Last, as a successful exec would end this child: the errno follows on a line of its own.
      char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
      int exec = attempt(execv("/bin/true", argv));
      write_all(q[1], std::to_string(exec));
      _exit(0);
    });
    close(q[1]);
    std::string text = read_all(q[0]);
    waitpid(kid, nullptr, 0);
    size_t nl = text.find('\n');
    json out = json::parse(text.substr(0, nl), nullptr, false);
    if (!out.is_object()) return json{{"kernel_child_output", text}};
    out["exec"] = nl == std::string::npos || nl + 1 == text.size() ? 0 : std::stoi(text.substr(nl + 1));
    return out;
  });
  SCOPED_TRACE(j.dump());
  const json& t = j["tried"];
  ASSERT_TRUE(t.contains("profile"));
  LayerReport k = LayerReport::from_json(t["profile"]);
  EXPECT_TRUE(t["thread"].get<bool>()) << "threads must still run (OpenMP)";
  expect_refused(k, "seccomp_kernel", t["exec"] == EPERM, "execve");
  expect_refused(k, "seccomp_kernel", t["fork"] == EPERM, "fork (clone without CLONE_THREAD)");
  expect_refused(k, "seccomp_kernel", t["raw_fork"] == EPERM, "the fork system call");
  expect_refused(k, "seccomp_kernel", t["inet"] == EPERM, "opening a socket");
  expect_refused(k, "seccomp_kernel", t["read_toolchain"] == EACCES, "reading a file");
  expect_refused(k, "seccomp_kernel", t["create_tmp"] == EACCES, "creating a file");
  EXPECT_FALSE(std::filesystem::exists("/tmp/steptp-kernel-escape"));
}

// A compiled OpenMP kernel (libgomp makes its threads with clone(CLONE_THREAD), after clone3 is
// refused) runs under the kernel-run profile with the result it has outside the sandbox.
TEST(Sandbox, OpenMpKernelRunsUnderTheKernelProfile) {
  testing::TempDir cache("sandbox-kernels");
  cpu::KernelCompiler cc({.cache_dir = cache.path});
  auto prog = leir::program_from_text(
      "input A: f64[64]\noutput C: f64[64]\nP^{64}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}*3;];", "omp.leir");
  auto built = cpu::build_cpu_programs({prog}, {}, &cc);
  ASSERT_TRUE(built[0].program) << built[0].error;
  leir::TensorMap in{{"A", {leir::DType::F64, {64}, std::vector<double>(64, 2.0)}}};
  json j = in_job_sandbox([&](const std::string&) {
    sandbox::set_kernel_profile_for_children(true);
    auto r = cpu::run_sandboxed(*built[0].program, in, {.time_limit_s = 20, .threads = 2});
    json out = {{"status", std::string(cpu::to_string(r.status))}, {"message", r.message}};
    if (r.status == cpu::RunStatus::Ok) out["C"] = r.outputs.at("C").data;
    return out;
  });
  SCOPED_TRACE(j.dump());
  ASSERT_EQ(j["tried"]["status"], "ok");
  EXPECT_EQ(j["tried"]["C"].get<std::vector<double>>(), std::vector<double>(64, 6.0));
}

TEST(Sandbox, ReportNamesEveryLayerAndWhatIsMissing) {
  LayerReport a, b;
  for (const auto& name : sandbox::layer_names()) a.set(name, true), b.set(name, true);
  EXPECT_TRUE(a.complete());
  b.set("pid_ns", false, "unshare(CLONE_NEWPID): Operation not permitted");
  a.meet(b);
  ASSERT_EQ(a.missing().size(), 1u);
  EXPECT_EQ(a.missing()[0].first, "pid_ns");
  EXPECT_NE(a.describe().find("pid_ns: off (unshare(CLONE_NEWPID): Operation not permitted)"), std::string::npos);
  EXPECT_EQ(LayerReport::from_json(a.to_json()).describe(), a.describe());
  LayerReport none;
  EXPECT_EQ(none.missing().size(), sandbox::layer_names().size()) << "an unset layer counts as missing";
}

}  // namespace
}  // namespace steptp::backend
