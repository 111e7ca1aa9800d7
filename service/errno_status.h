// ErrnoStatus(): a failed system call as an absl::Status whose code says what
// an operator can do about it (PERMISSION_DENIED, NOT_FOUND,
// RESOURCE_EXHAUSTED for a full disk, INVALID_ARGUMENT, else UNAVAILABLE)
// and whose message is "<what>: <strerror>". Used by the journal and the
// data directory code.
//
// Thread safety: both functions may be called from any thread.
#ifndef COHORT_SERVICE_ERRNO_STATUS_H_
#define COHORT_SERVICE_ERRNO_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

absl::Status ErrnoStatus(int error, absl::string_view what);

// ErrnoText()
//
// The system's text for errno value `error` ("No such file or directory"),
// from strerror_r: unlike std::strerror it is safe to call from several
// threads at once (the journal thread, the snapshot thread and the front
// stage all report system errors).
std::string ErrnoText(int error);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_ERRNO_STATUS_H_
