#include "service/stages/engine_options.h"

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

absl::StatusOr<IndexLayout> ParseIndexLayout(absl::string_view name) {
  for (IndexLayout layout :
       {IndexLayout::kPartitioned, IndexLayout::kShardedPhase1,
        IndexLayout::kReplicated}) {
    if (name == IndexLayoutName(layout)) return layout;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--index: unknown layout \"", name,
                   "\"; use partitioned, sharded_phase1 or replicated"));
}

absl::string_view IndexLayoutName(IndexLayout layout) {
  switch (layout) {
    case IndexLayout::kPartitioned:
      return "partitioned";
    case IndexLayout::kShardedPhase1:
      return "sharded_phase1";
    case IndexLayout::kReplicated:
      return "replicated";
  }
  return "?";
}

absl::Status CheckLatencyTarget(int64_t us) {
  if (us < 0 || us > kMaxLatencyTargetUs) {
    return absl::InvalidArgumentError(
        absl::StrCat("--latency_target_us: between 0 (off) and ",
                     kMaxLatencyTargetUs, " (one minute)"));
  }
  return absl::OkStatus();
}

}  // namespace service
}  // namespace cohort
