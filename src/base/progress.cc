#include "base/progress.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <new>

#include <fmt/format.h>

namespace steptp {

struct Progress::Shared {
  std::atomic<int> done{0};
  std::atomic<double> last_line_s{-1e9};  // seconds since t0_ of the last unit line
  std::atomic<bool> drawn{false};         // Tty: a status line is on screen (a stage end closes it)
};

ProgressStyle progress_style(bool quiet) {
  if (quiet) return ProgressStyle::Off;
  return isatty(STDERR_FILENO) ? ProgressStyle::Tty : ProgressStyle::Lines;
}

std::string format_duration(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
}

Progress::Progress(std::string command, ProgressStyle style, double min_interval_s)
    : command_(std::move(command)), style_(style), min_interval_s_(min_interval_s),
      t0_(std::chrono::steady_clock::now()), stage_t0_(t0_) {
  static_assert(std::atomic<int>::is_always_lock_free && std::atomic<double>::is_always_lock_free,
                "counting across forked processes needs lock-free atomics");
  if (style_ == ProgressStyle::Off) return;
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  // Without the mapping progress is merely off: it must never fail the command it reports on.
  if (mem == MAP_FAILED) {
    style_ = ProgressStyle::Off;
    return;
  }
  shared_ = new (mem) Shared;
}

Progress::~Progress() {
  if (shared_) munmap(shared_, sizeof(Shared));
}

double Progress::since(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void Progress::emit(const std::string& s) const {
  // One write per line: lines of forked workers sharing stderr stay whole.
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(STDERR_FILENO, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += size_t(n);
  }
}

void Progress::stage_start(std::string_view stage, std::string_view unit, int total, int already,
                           std::string_view detail) {
  stage_ = stage;
  unit_ = unit;
  total_ = total;
  already_ = already;
  stage_t0_ = std::chrono::steady_clock::now();
  if (style_ == ProgressStyle::Off) return;
  shared_->done = already;
  shared_->last_line_s = -1e9;
  if (lines())
    emit(fmt::format("{}: {} started{} | elapsed {}\n", command_, stage_,
                     detail.empty() ? std::string() : fmt::format(" ({})", detail), format_duration(since(t0_))));
}

void Progress::stage_end() {
  if (style_ == ProgressStyle::Off) return;
  if (lines())
    emit(fmt::format("{}: {} done in {} | elapsed {}\n", command_, stage_, format_duration(since(stage_t0_)),
                     format_duration(since(t0_))));
  else if (shared_->drawn.exchange(false))
    emit("\n");
}

void Progress::advance(std::string_view text) {
  if (style_ == ProgressStyle::Off) return;
  unit_line(shared_->done.fetch_add(1) + 1, text);
}

void Progress::report(int done, std::string_view text) {
  if (style_ == ProgressStyle::Off) return;
  shared_->done = done;
  unit_line(done, text);
}

void Progress::unit_line(int done, std::string_view text) {
  const double now = since(t0_);
  if (lines() && done != total_ && now - shared_->last_line_s.load() < min_interval_s_) return;
  shared_->last_line_s = now;
  std::string body = total_ >= 0 ? fmt::format("{} {}/{}", unit_, done, total_) : fmt::format("{} {}", unit_, done);
  if (!text.empty()) body += fmt::format(" {}", text);
  body += fmt::format(" | elapsed {}", format_duration(now));
  // The mean time per unit finished in this stage, times the units left.
  if (total_ >= 0 && done > already_)
    body += fmt::format(" | eta {}", format_duration(since(stage_t0_) / (done - already_) * (total_ - done)));
  if (lines()) {
    emit(fmt::format("{}: {}\n", command_, body));
  } else {
    shared_->drawn = true;
    emit(fmt::format("\r[{}] {}\33[K", command_, body));  // \33[K: clear what a longer line left
  }
}

void Progress::finish(std::string_view summary) {
  if (style_ == ProgressStyle::Off) return;
  if (lines()) emit(fmt::format("{}: finished: {} | wall {}\n", command_, summary, format_duration(since(t0_))));
  else if (shared_->drawn.exchange(false))
    emit("\n");
}

}  // namespace steptp
