// Handing freed memory back to the kernel after a burst of garbage (a
// recovery's state, a snapshot's fold), whichever allocator the binary
// links (third_party/BUILD.bazel: gperftools' tcmalloc, or glibc's malloc
// in the sanitizer builds).
//
// Thread safety: safe from any thread.
#ifndef COHORT_SERVICE_RELEASE_MEMORY_H_
#define COHORT_SERVICE_RELEASE_MEMORY_H_

#include <malloc.h>

// gperftools' C interface (malloc_extension_c.h), declared weak: null
// where tcmalloc is not linked.
extern "C" void MallocExtension_ReleaseFreeMemory(void)
    __attribute__((weak));

namespace cohort {
namespace service {

// Returns the free pages of the allocator in use to the kernel: tcmalloc
// keeps freed spans in its page heap and glibc in its arenas, so without
// this a process stays as large as its largest burst.
inline void ReleaseFreeMemory() {
  if (MallocExtension_ReleaseFreeMemory != nullptr) {
    MallocExtension_ReleaseFreeMemory();
  }
  malloc_trim(0);
}

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_RELEASE_MEMORY_H_
