#include "service/errno_status.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

std::string ErrnoText(int error) {
  // GNU strerror_r returns a pointer to the text, which is either a static
  // string or written into `buffer`.
  char buffer[256];
  return strerror_r(error, buffer, sizeof(buffer));
}

absl::Status ErrnoStatus(int error, absl::string_view what) {
  const std::string text = absl::StrCat(what, ": ", ErrnoText(error));
  switch (error) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(text);
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(text);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(text);
    case EISDIR:
    case EINVAL:
      return absl::InvalidArgumentError(text);
    default:
      return absl::UnavailableError(text);
  }
}

}  // namespace service
}  // namespace cohort
