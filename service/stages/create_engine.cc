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
    if (options.index_layout == IndexLayout::kReplicated) {
      // A whole copy of the index per partition thread: the partitioned
      // engine with as many copies as partitions.
      EngineOptions replicated = options;
      replicated.index_copies = options.partitions;
      return std::unique_ptr<Engine>(new PartitionedEngine(replicated));
    }
    if (options.index_layout == IndexLayout::kPartitioned) {
      if (options.index_copies == 0 ||
          options.partitions % options.index_copies != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--index_copies: ", options.index_copies,
            " does not divide --partitions (", options.partitions,
            "): each copy takes the same number of partition threads"));
      }
      return std::unique_ptr<Engine>(new PartitionedEngine(options));
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
