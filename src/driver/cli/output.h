// Where a command's text result goes: the --out file if one was given, else stdout.
#pragma once

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

#include "base/error.h"

namespace steptp::cli {

inline void write_result(const std::string& out_path, const std::string& text) {
  if (out_path.empty()) {
    std::cout << text;
    return;
  }
  std::ofstream f(out_path);
  if (!(f << text)) throw base::Error(base::ErrorKind::Failed, fmt::format("cannot write {}", out_path));
}

}  // namespace steptp::cli
