// Where a partition thread runs and where its memory comes from
// (--pin_cores, --numa; docs/DESIGN.md section 4): shared by the partition
// threads of both staged engines.
//
// Thread safety: PlacePartitionThread changes the calling thread only (its
// CPU affinity and memory policy) and records the result in `profile`,
// which is thread-safe.
#ifndef COHORT_SERVICE_STAGES_PLACEMENT_H_
#define COHORT_SERVICE_STAGES_PLACEMENT_H_

#include <cstdint>

#include "service/observability/stage_profile.h"
#include "service/stages/engine_options.h"

namespace cohort {
namespace service {

// Called by partition `index`'s thread before it allocates anything of its
// index. With options.pin_cores, pins the thread to the index-th CPU this
// process may run on, if there are at least options.partitions of them;
// with options.numa too, makes the thread's memory come from that CPU's
// node (numa.h). Records the CPU and node in `profile` (unset where not
// done) and says on stderr what failed.
void PlacePartitionThread(uint32_t index, const EngineOptions& options,
                          StageProfile* profile);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_PLACEMENT_H_
