// Stable site handles. A site address names *where* in a program a strategy applies — the site's
// structural coordinates as the strategy reports them (Site::path: item indices from the top-level
// body down to the nest/loop/statement; Site::detail: the strategy's own refinement, such as loop
// positions, an operand or a target) plus an occurrence number for the rare strategies that
// report two sites at the same coordinates — not a position in a recomputed site list, so adding
// or reordering the sites a strategy enumerates does not change what an address means. Traces,
// records, prompts and action answers all address sites this way (TVM's schedule addresses
// blocks and loops by stable references in the same spirit).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace steptp::strategies {

struct Site;

struct SiteAddress {
  std::vector<int> path;
  std::vector<int> detail;
  int occurrence = 0;  // among sites with the same path and detail
  bool operator==(const SiteAddress&) const = default;
};

// Address of sites[i].
SiteAddress address_of(const std::vector<Site>& sites, size_t i);
// Index of the site with that address, if the program still has it.
std::optional<size_t> find_site(const std::vector<Site>& sites, const SiteAddress& a);

// The address as one short token for prompts and action answers: "@" + path joined by "." +
// ("/" + detail joined by ".", when there is a detail) + ("#" + occurrence, when not 0), e.g.
// "@0/1.2" (item 0, loops 1 and 2) or "@" (the whole program). parse_handle is its inverse
// (nullopt for anything else).
std::string to_handle(const SiteAddress& a);
std::optional<SiteAddress> parse_handle(std::string_view h);

}  // namespace steptp::strategies
