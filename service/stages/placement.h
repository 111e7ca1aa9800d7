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
// done) and says on stderr what failed. With more partitions than usable
// CPUs (OverSubscribed), runs the thread under SCHED_BATCH (SetBatch).
void PlacePartitionThread(uint32_t index, const EngineOptions& options,
                          StageProfile* profile);

// The CPUs this process may run on (its affinity mask; the hardware's
// count, at least 1, if that cannot be read).
uint32_t UsableCpus();

// The usable CPUs shared out over `copies` index copies (at least 1 each):
// what one copy's pipeline may wake threads for (CohortPipeline's `cpus`).
uint32_t UsableCpusPerCopy(uint32_t copies);

// Whether `partitions` threads outnumber the usable CPUs.
bool OverSubscribed(uint32_t partitions);

// Runs the calling thread under SCHED_BATCH (no privilege needed): its
// wake-ups do not preempt the thread running, which keeps its CPU until
// its time slice ends. With more partition threads than CPUs, a partition
// thread woken for a share would otherwise preempt one inside a share and
// hold up that share's cohort (on 2 CPUs, 16 threads served 3-9% more;
// bench/reports/2026-11-28-epyc2-issue43-steal-units). Not with CPUs to
// spare: there a woken thread finds a free CPU, and a batch thread would
// wait out the time slice of whatever else runs (gRPC, the reply stage).
// Returns false, saying why on stderr, if the kernel refused.
bool SetBatch();

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_PLACEMENT_H_
