// A prefetch the compiler keeps.
//
// GCC 12 at -O2 deletes a loop whose body is only __builtin_prefetch: it
// takes the builtin for a call without side effects and, as C++ lets it
// (-ffinite-loops), assumes such a loop ends and drops it. Every prefetch
// of ClusterStore::PrefetchRows, the next cluster's rows that phase 2 asks
// for while it checks this one, was gone from the build (issue 45's load
// report), and so was the bulk load's prefetch of predicates. An asm
// statement marked volatile is never deleted.
//
// Thread safety: stateless.
#ifndef COHORT_MATCHER_PREFETCH_H_
#define COHORT_MATCHER_PREFETCH_H_

namespace cohort {
namespace matcher {
namespace internal {

// Asks for the cache line holding `p` into every cache level. A hint: it
// never faults, whatever `p` is.
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_PREFETCH_H_
