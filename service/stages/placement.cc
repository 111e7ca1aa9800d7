#include "service/stages/placement.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "service/stages/numa.h"

namespace cohort {
namespace service {
namespace {

// Pins the calling thread to the index-th allowed CPU; returns the CPU, or
// -1 if it is not pinned.
int Pin(uint32_t index, uint32_t partitions) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  if (cpus.size() < partitions) return -1;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  CPU_SET(cpus[index], &mine);
  if (pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine) != 0) {
    std::fprintf(stderr, "cohortd: could not pin partition %u to CPU %d\n",
                 index, cpus[index]);
    return -1;
  }
  return cpus[index];
}

}  // namespace

uint32_t UsableCpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return std::max(1u, std::thread::hardware_concurrency());
  }
  return static_cast<uint32_t>(CPU_COUNT(&allowed));
}

uint32_t UsableCpusPerCopy(uint32_t copies) {
  return std::max<uint32_t>(1, UsableCpus() / std::max<uint32_t>(copies, 1));
}

bool OverSubscribed(uint32_t partitions) {
  return partitions > UsableCpus();
}

bool SetBatch() {
  sched_param param{};
  param.sched_priority = 0;
  if (const int err =
          pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
      err != 0) {
    std::fprintf(stderr, "cohortd: could not run a partition thread under "
                 "SCHED_BATCH: error %d\n", err);
    return false;
  }
  return true;
}

void PlacePartitionThread(uint32_t index, const EngineOptions& options,
                          StageProfile* profile) {
  if (OverSubscribed(options.partitions)) SetBatch();
  std::optional<uint32_t> cpu, node;
  if (options.pin_cores) {
    if (const int pinned = Pin(index, options.partitions); pinned >= 0) {
      cpu = pinned;
    }
  }
  if (options.numa && cpu.has_value()) {
    // Before the first allocation of the index: every page this thread
    // faults in from here on comes from the node of its CPU.
    absl::StatusOr<int> preferred = PreferNodeOfCpu(static_cast<int>(*cpu));
    if (preferred.ok()) {
      node = static_cast<uint32_t>(*preferred);
    } else {
      std::fprintf(stderr, "cohortd: partition %u: --numa: %s\n", index,
                   std::string(preferred.status().message()).c_str());
    }
  }
  profile->SetPlacement(cpu, node);
}

}  // namespace service
}  // namespace cohort
