// Writing a workload file (workload/workload.h's text format) with the SHA-256
// of its bytes, and the whole generate -> write -> summarize run that
// //bench:workload and `cohort workload` share.
//
// Stage: tools only; single-threaded.
#ifndef COHORT_WORKLOAD_WORKLOAD_FILE_H_
#define COHORT_WORKLOAD_WORKLOAD_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "workload/workload.h"

namespace cohort {
namespace workload {

struct WrittenFile {
  std::string sha256;  // lowercase hex, over exactly the bytes written
  int64_t bytes = 0;
};

// WriteTextFile() writes the pieces `produce` hands its sink, in order, to
// `path`, or to stdout if `path` is empty, and hashes them. Errors: NotFound
// if the file cannot be opened, DataLoss if a write or the close fails.
absl::StatusOr<WrittenFile> WriteTextFile(
    const std::string& path,
    absl::FunctionRef<void(absl::FunctionRef<void(absl::string_view)>)>
        produce);

// WriteWorkloadFile() writes `workload` to `path` as WriteTextFile does.
absl::StatusOr<WrittenFile> WriteWorkloadFile(const Workload& workload,
                                              const std::string& path);

// GenerateWorkloadFile() generates the workload `options` describe, writes
// it as WriteWorkloadFile does, and summarizes it over `report_sample`
// events (0 skips matching). The report's text_bytes, generate_seconds and
// write_seconds are set. REQUIRES: Validate(options).ok().
absl::StatusOr<WorkloadReport> GenerateWorkloadFile(
    const WorkloadOptions& options, const std::string& path,
    size_t report_sample);

}  // namespace workload
}  // namespace cohort

#endif  // COHORT_WORKLOAD_WORKLOAD_FILE_H_
