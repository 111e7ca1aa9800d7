// Makes the engine that --mode and --index name (engine.h): the only place
// that knows every engine class, so the server and the tools depend on the
// interface alone.
//
// Thread safety: a plain function; call it from any thread.
#ifndef COHORT_SERVICE_STAGES_CREATE_ENGINE_H_
#define COHORT_SERVICE_STAGES_CREATE_ENGINE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "service/stages/engine.h"
#include "service/stages/engine_options.h"

namespace cohort {
namespace service {

// CreateEngine()
//
// The engine of `mode` ("staged": options.index_layout's engine;
// "threaded": the baseline), started and ready for Restore or serving.
// INVALID_ARGUMENT naming the flag for an unknown mode or an option out of
// range (--queue_limit, --latency_target_us, --partitions,
// --cohorts_in_flight, --threads).
absl::StatusOr<std::unique_ptr<Engine>> CreateEngine(
    const std::string& mode, const EngineOptions& options);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_CREATE_ENGINE_H_
