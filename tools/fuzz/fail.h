// How a fuzz target reports a broken property: it prints "<program>: what"
// to stderr and aborts, which libFuzzer (and the corpus replay main) turn
// into a saved crash input. Used by every target in matcher/, service/ and
// client/ (tools/fuzz/README.md).
//
// Thread safety: may be called from any thread; it does not return.
#ifndef COHORT_TOOLS_FUZZ_FAIL_H_
#define COHORT_TOOLS_FUZZ_FAIL_H_

#include <errno.h>  // program_invocation_short_name (glibc)

#include <cstdio>
#include <cstdlib>

#include "absl/strings/string_view.h"

namespace cohort {
namespace fuzz {

[[noreturn]] inline void Fail(absl::string_view what) {
  std::fprintf(stderr, "%s: %.*s\n", program_invocation_short_name,
               static_cast<int>(what.size()), what.data());
  std::abort();
}

}  // namespace fuzz
}  // namespace cohort

#endif  // COHORT_TOOLS_FUZZ_FAIL_H_
