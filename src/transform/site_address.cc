#include "transform/site_address.h"

#include <algorithm>

#include <fmt/format.h>

#include "transform/strategy.h"

namespace steptp::strategies {

SiteAddress address_of(const std::vector<Site>& sites, size_t i) {
  SiteAddress a{sites[i].path, sites[i].detail, 0};
  for (size_t k = 0; k < i; ++k)
    if (sites[k].path == a.path && sites[k].detail == a.detail) a.occurrence++;
  return a;
}

std::optional<size_t> find_site(const std::vector<Site>& sites, const SiteAddress& a) {
  int seen = 0;
  for (size_t i = 0; i < sites.size(); ++i)
    if (sites[i].path == a.path && sites[i].detail == a.detail && seen++ == a.occurrence) return i;
  return std::nullopt;
}

std::string to_handle(const SiteAddress& a) {
  std::string h = fmt::format("@{}", fmt::join(a.path, "."));
  if (!a.detail.empty()) h += fmt::format("/{}", fmt::join(a.detail, "."));
  if (a.occurrence) h += fmt::format("#{}", a.occurrence);
  return h;
}

std::optional<SiteAddress> parse_handle(std::string_view h) {
  if (h.empty() || h[0] != '@' || h.size() > 256) return std::nullopt;
  SiteAddress a;
  std::vector<int>* into = &a.path;
  size_t i = 1;
  while (i < h.size()) {
    char c = h[i];
    if (c == '/' && into == &a.path) { into = &a.detail; ++i; continue; }
    if (c == '#') {
      if (i + 1 >= h.size() || h.find_first_not_of("0123456789", i + 1) != std::string_view::npos || h.size() - i > 6)
        return std::nullopt;
      a.occurrence = std::stoi(std::string(h.substr(i + 1)));
      return a;
    }
    size_t end = std::min(h.find_first_not_of("0123456789", i), h.size());
    if (end == i || end - i > 6) return std::nullopt;  // a number must come here
    into->push_back(std::stoi(std::string(h.substr(i, end - i))));
    i = end;
    if (i < h.size() && h[i] == '.') {
      if (++i == h.size()) return std::nullopt;
    }
  }
  return a;
}

}  // namespace steptp::strategies
