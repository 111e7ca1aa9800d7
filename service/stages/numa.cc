#include "service/stages/numa.h"

#include <numa.h>
#include <numaif.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "service/errno_status.h"

namespace cohort {
namespace service {

absl::StatusOr<int> PreferNodeOfCpu(int cpu) {
  if (numa_available() < 0) {
    return absl::FailedPreconditionError(
        "libnuma: the kernel has no NUMA support");
  }
  const int node = numa_node_of_cpu(cpu);
  if (node < 0) {
    return absl::InternalError(
        absl::StrCat("libnuma: no node for CPU ", cpu, ": ", ErrnoText(errno)));
  }
  numa_set_preferred(node);
  // numa_set_preferred reports nothing; read the policy back.
  int mode = -1;
  std::vector<unsigned long> mask(
      (numa_max_possible_node() + 1 + 8 * sizeof(unsigned long) - 1) /
      (8 * sizeof(unsigned long)));
  if (get_mempolicy(&mode, mask.data(), mask.size() * 8 * sizeof(unsigned long),
                    nullptr, 0) != 0) {
    return absl::InternalError(
        absl::StrCat("get_mempolicy: ", ErrnoText(errno)));
  }
  const size_t bits = 8 * sizeof(unsigned long);
  const bool has_node = (mask[node / bits] >> (node % bits)) & 1;
  if (mode != MPOL_PREFERRED || !has_node) {
    return absl::InternalError(absl::StrCat(
        "the memory policy did not take (mode ", mode, ", node ", node, ")"));
  }
  return node;
}

std::string NumaSummary() {
  if (numa_available() < 0) return "unavailable (no kernel NUMA support)";
  const int nodes = numa_num_configured_nodes();
  // CPUs per node via numa_node_of_cpu: numa_node_to_cpus has two symbol
  // versions, and a shared object that leaves it unresolved (Bazel's
  // fastbuild libraries) binds the old one, whose arguments differ.
  std::map<int, int> cpus_per_node;
  for (int cpu = 0; cpu < numa_num_configured_cpus(); ++cpu) {
    if (const int node = numa_node_of_cpu(cpu); node >= 0) {
      ++cpus_per_node[node];
    }
  }
  std::vector<std::string> parts;
  for (const auto& [node, count] : cpus_per_node) {
    parts.push_back(absl::StrCat(node, ": ", count, " cpus"));
  }
  return absl::StrCat(nodes, nodes == 1 ? " node" : " nodes", " (",
                      absl::StrJoin(parts, ", "), ")");
}

}  // namespace service
}  // namespace cohort
