// ErrnoStatus(): a failed system call as an absl::Status whose code says what
// an operator can do about it (PERMISSION_DENIED, NOT_FOUND,
// RESOURCE_EXHAUSTED for a full disk, INVALID_ARGUMENT, else UNAVAILABLE)
// and whose message is "<what>: <strerror>". Used by the journal and the
// data directory code.
#ifndef COHORT_SERVICE_ERRNO_STATUS_H_
#define COHORT_SERVICE_ERRNO_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

absl::Status ErrnoStatus(int error, absl::string_view what);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_ERRNO_STATUS_H_
