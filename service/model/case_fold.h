// Case folding for OP_EQUALS_IGNORE_CASE (issue 44): Unicode's simple case
// folding (CaseFolding.txt, statuses C and S; the version is
// kCaseFoldUnicodeVersion), applied to the UTF-8 code points of a byte
// string. Bytes that are not well-formed UTF-8 (a stray continuation byte,
// a truncated or overlong sequence, a surrogate, a code point above
// U+10FFFF) are kept as they are, one byte at a time, so every byte string
// has a fold and equal strings have equal folds.
//
// Simple folding maps one code point to one, so "Straße" and "STRASSE"
// fold apart ("ß" and "ẞ" fold together). Event Ruler's equals-ignore-case
// instead lets each UTF-16 unit of the pattern match its Java lower- or
// upper-case form; the two agree on letters with one lower and one upper
// form (ASCII, Latin, Greek, Cyrillic, ...), and README.md's table says
// where they differ.
//
// The table is generated (tools/gen_case_fold.py, from Debian's
// unicode-data package), and the Python client folds with the same one.
//
// Thread safety: pure functions.
#ifndef COHORT_SERVICE_MODEL_CASE_FOLD_H_
#define COHORT_SERVICE_MODEL_CASE_FOLD_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

// The Unicode version of the table, e.g. "15.0.0".
absl::string_view CaseFoldVersion();

// The simple case folding of code point `c` (itself if it has none).
uint32_t FoldCodePoint(uint32_t c);

// `bytes` with every well-formed UTF-8 code point folded.
std::string FoldCase(absl::string_view bytes);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_CASE_FOLD_H_
