#include "service/stages/create_engine.h"

#include "absl/strings/str_cat.h"
#include "service/stages/cohort_pipeline.h"
#include "service/stages/partitioned_engine.h"
#include "service/stages/sharded_engine.h"
#include "service/stages/threaded_engine.h"

namespace cohort {
namespace service {

absl::StatusOr<std::unique_ptr<Engine>> CreateEngine(
    const std::string& mode, const EngineOptions& options) {
  if (options.queue_limit == 0) {
    return absl::InvalidArgumentError("--queue_limit must be at least 1");
  }
  if (absl::Status s = CheckLatencyTarget(options.latency_target_us); !s.ok()) {
    return s;
  }
  if (mode == "staged") {
    if (options.partitions == 0) {
      return absl::InvalidArgumentError("--partitions must be at least 1");
    }
    if (options.cohorts_in_flight > CohortPipeline::kMaxBuffers) {
      return absl::InvalidArgumentError(
          absl::StrCat("--cohorts_in_flight: at most ",
                       CohortPipeline::kMaxBuffers, " (0 = the default)"));
    }
    if (absl::Status s = CohortPipeline::CheckStealUnits(options.steal_units);
        !s.ok()) {
      return s;
    }
    if (options.index_layout != IndexLayout::kShardedPhase1) {
      // Partitioned, or replicated: the partitioned engine with a copy of
      // the index per partition thread.
      if (absl::Status s =
              CheckIndexCopies(options.partitions, options.index_copies);
          !s.ok()) {
        return s;
      }
      EngineOptions resolved = options;
      resolved.index_copies = ResolveIndexCopies(options, /*subscriptions=*/0);
      return std::unique_ptr<Engine>(new PartitionedEngine(resolved));
    }
    return std::unique_ptr<Engine>(new ShardedEngine(options));
  }
  if (mode == "threaded") {
    if (options.threads == 0) {
      return absl::InvalidArgumentError("--threads must be at least 1");
    }
    return std::unique_ptr<Engine>(new ThreadedEngine(options));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--mode: unknown mode \"", mode, "\"; use staged or threaded"));
}

}  // namespace service
}  // namespace cohort
