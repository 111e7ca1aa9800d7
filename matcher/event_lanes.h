// A cohort's values of one attribute in event order (EventLanes), and the
// kernels that find at once which of them lie within a row's narrow inline
// range (cluster_store.h): a cohort's check of such a range is then a few
// vector comparisons, where counting the cohort's sorted values below each
// bound (LeadMask) was two searches with branches that mispredict.
//
// Thread safety: plain values and pure functions; a cohort's lanes are
// written by phase 1 (CohortMasks) and read-only once it is done.
#ifndef COHORT_MATCHER_EVENT_LANES_H_
#define COHORT_MATCHER_EVENT_LANES_H_

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace cohort {
namespace matcher {
namespace internal {

// An event's value as a narrow inline range compares it (NarrowBound in
// cluster_store.h): a value past int32 is held by the unbounded end only.
inline int32_t Clamp32(int64_t v) {
  return static_cast<int32_t>(
      std::min<int64_t>(std::max<int64_t>(v, INT32_MIN), INT32_MAX));
}

// Lanes: one per event of a cohort (kMaxCohortChunk).
inline constexpr int kEventLanes = 64;

// value[i]: event i's value of the attribute clamped to int32 (Clamp32,
// as a narrow inline range's bounds compare it: NarrowBound), where bit i
// of `present` says it has one; 0 elsewhere.
// `exact`: every value lies strictly within int32 (not at its ends), so
// that int64 bounds clamped to int32 (Clamp32) compare as they are: a
// row's lead range can be checked on these lanes too.
struct alignas(64) EventLanes {
  int32_t value[kEventLanes] = {};
  uint64_t present = 0;
  bool exact = true;
};

// The lanes of an attribute none of a cohort's events has.
inline const EventLanes kAbsentLanes{};

// The events of `lanes` whose value lies in [lo, hi] (int32 bounds,
// compared as they are: the narrow bounds' unbounded ends, INT32_MIN and
// INT32_MAX, hold for every clamped value), for CPUs with AVX2 and with
// AVX-512 (simd.h says which to call). Not always_inline: a caller
// compiled for the same target inlines them with `flatten`
// (ClusterStore's NarrowInlineColumn).
__attribute__((target("avx2"))) inline uint64_t LaneMaskAvx2(
    const EventLanes& lanes, int32_t lo, int32_t hi) {
  const __m256i low = _mm256_set1_epi32(lo);
  const __m256i high = _mm256_set1_epi32(hi);
  uint64_t outside = 0;
#pragma GCC unroll 8
  for (int q = 0; q < kEventLanes / 8; ++q) {
    const __m256i v = _mm256_load_si256(
        reinterpret_cast<const __m256i*>(lanes.value + 8 * q));
    const __m256i out = _mm256_or_si256(_mm256_cmpgt_epi32(low, v),
                                        _mm256_cmpgt_epi32(v, high));
    outside |= static_cast<uint64_t>(static_cast<uint32_t>(
                   _mm256_movemask_ps(_mm256_castsi256_ps(out))))
               << (8 * q);
  }
  return ~outside & lanes.present;
}

__attribute__((target("avx512f"))) inline uint64_t LaneMaskAvx512(const EventLanes& lanes, int32_t lo, int32_t hi) {
  const __m512i low = _mm512_set1_epi32(lo);
  const __m512i high = _mm512_set1_epi32(hi);
  uint64_t within = 0;
#pragma GCC unroll 4
  for (int q = 0; q < kEventLanes / 16; ++q) {
    const __m512i v = _mm512_load_si512(lanes.value + 16 * q);
    const __mmask16 k =
        _mm512_mask_cmple_epi32_mask(_mm512_cmpge_epi32_mask(v, low), v, high);
    within |= static_cast<uint64_t>(k) << (16 * q);
  }
  return within & lanes.present;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_EVENT_LANES_H_
