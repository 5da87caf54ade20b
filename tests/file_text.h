// The whole contents of a file, for tests that compare outputs or show a log on failure.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

// "" when the file cannot be read (the comparison that follows then fails and says so).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
