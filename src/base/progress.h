// Progress of long commands (generate, tune, optimize) on stderr. On a terminal one status line
// is redrawn in place; without one (CI, nohup, Slurm logs) whole lines are written: a line per
// stage start and end, a line per finished unit with elapsed time, done/total and an ETA, and a
// final summary, so a log shows where a run is. --quiet turns both off. stdout is never touched,
// so `--json` output stays parseable.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace steptp {

enum class ProgressStyle { Off, Tty, Lines };

// Off when `quiet`; else Tty when stderr is a terminal, Lines otherwise.
ProgressStyle progress_style(bool quiet);

// "45s", "2m31s", "1h02m".
std::string format_duration(double seconds);

class Progress {
 public:
  // `command` prefixes every line. In Lines style a unit line follows the previous one only after
  // `min_interval_s` (the last unit of a stage always gets its line), which keeps logs readable
  // where units take well under a second.
  Progress(std::string command, ProgressStyle style, double min_interval_s = 0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  ProgressStyle style() const { return style_; }
  bool lines() const { return style_ == ProgressStyle::Lines; }

  // A stage of `total` units named `unit` (total < 0: unknown, no ETA), of which `already` are
  // done before it starts (a resumed run): the ETA counts only units finished in this stage.
  // `detail` ends the start line ("70 roots").
  void stage_start(std::string_view stage, std::string_view unit, int total, int already = 0,
                   std::string_view detail = {});
  void stage_end();
  // One more unit finished, `text` describing it ("matmul_relu done (3 records)"). Callable from
  // processes forked after stage_start: the count lives in shared memory and each line is one
  // write(2), so workers' lines neither get lost nor interleave.
  void advance(std::string_view text);
  // `done` units finished in all (for a caller that counts itself, e.g. the tuner's trials).
  void report(int done, std::string_view text);
  // The final line ("roots 70, records 1234"), with the wall time since construction.
  void finish(std::string_view summary);

 private:
  void unit_line(int done, std::string_view text);
  void emit(const std::string& s) const;
  double since(std::chrono::steady_clock::time_point t) const;

  struct Shared;
  std::string command_, stage_, unit_;
  ProgressStyle style_;
  double min_interval_s_;
  int total_ = -1, already_ = 0;
  std::chrono::steady_clock::time_point t0_, stage_t0_;
  // An anonymous shared mapping, so forked workers count into the same place (none when Off).
  Shared* shared_ = nullptr;
};

}  // namespace steptp
