// NUMA placement of partition memory (--numa, docs/DESIGN.md section 4).
//
// A partition thread pinned to a CPU calls PreferNodeOfCpu once, before it
// allocates its index: from then on the pages that thread faults in (its
// glibc arena, so its shard's columns and dictionaries) come from the CPU's
// node, falling back to other nodes only when that node is full (the
// MPOL_PREFERRED policy, set with libnuma's numa_set_preferred; a strict
// bind would turn a full node into allocation failures). On a one-node
// machine the policy names node 0 and changes nothing, but the same code
// runs.
//
// Thread safety: PreferNodeOfCpu sets the calling thread's policy only;
// NumaSummary reads machine facts. Both may be called from any thread.
#ifndef COHORT_SERVICE_STAGES_NUMA_H_
#define COHORT_SERVICE_STAGES_NUMA_H_

#include <string>

#include "absl/status/statusor.h"

namespace cohort {
namespace service {

// Sets the calling thread's memory policy to prefer the node of `cpu`, reads
// the policy back to check it took, and returns the node. FAILED_PRECONDITION
// if the kernel has no NUMA support (libnuma's numa_available), INTERNAL if
// setting or reading the policy fails.
absl::StatusOr<int> PreferNodeOfCpu(int cpu);

// "2 nodes (0: cpus 0-7, 1: cpus 8-15)"-like description of the machine for
// the startup line, or why NUMA is unavailable.
std::string NumaSummary();

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_NUMA_H_
