#include "service/stages/publish_job.h"

#include "service/observability/stage_profile.h"

namespace cohort {
namespace service {

int64_t DeadlineNanos(std::chrono::system_clock::time_point deadline) {
  // Beyond this the deadline is as good as none (and would overflow).
  constexpr auto kForever = std::chrono::hours(24 * 365);
  const auto left = deadline - std::chrono::system_clock::now();
  if (left > kForever) return std::numeric_limits<int64_t>::max();
  return MonotonicNanos() +
         std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
}

}  // namespace service
}  // namespace cohort
