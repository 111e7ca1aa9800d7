#include "service/cluster/nats_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

absl::Status NatsError(absl::string_view what, natsStatus s, int jerr) {
  std::string message = absl::StrCat(what, ": ", natsStatus_GetText(s));
  if (jerr != 0) absl::StrAppend(&message, " (JetStream error ", jerr, ")");
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && last[0] != '\0') absl::StrAppend(&message, ": ", last);
  return absl::UnavailableError(message);
}

}  // namespace service
}  // namespace cohort
