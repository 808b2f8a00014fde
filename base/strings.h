// Small text helpers every layer uses: ASCII case folding and trimming (locale-free: a
// spec, a quant name or a command's output read the same on every machine) and HTML
// escaping for the pages orch writes (report HTML, the coordinator's status page). Pure.
#pragma once

#include <string>
#include <string_view>

namespace orch {

// `text` with A-Z mapped to a-z; every other byte as it is.
std::string Lower(std::string_view text);

// `text` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string Trim(std::string_view text);
// `text` without trailing ASCII whitespace.
std::string TrimEnd(std::string_view text);

// `text` with & < > " written as entities: safe in element text and in attribute
// values quoted with " (as every page orch writes quotes them).
std::string EscapeHtml(std::string_view text);

}  // namespace orch
