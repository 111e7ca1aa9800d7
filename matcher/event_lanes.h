// A cohort's values of one attribute in event order (EventLanes), and the
// kernels that find at once which of them lie within a row's inline or
// lead range (cluster_store.h): a cohort's check of such a range is then a
// few vector comparisons, where counting the cohort's sorted values below
// each bound (LeadMask) was two searches with branches that mispredict.
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
// row's lead range can be checked on these lanes too. `wide[i]`: event i's
// value as it is, for wide clusters' bounds and the leads elsewhere (a
// range over epoch milliseconds, say).
struct alignas(64) EventLanes {
  int32_t value[kEventLanes] = {};
  int64_t wide[kEventLanes] = {};
  uint64_t present = 0;
  bool exact = true;
};

// The lanes of an attribute none of a cohort's events has.
inline const EventLanes kAbsentLanes{};

namespace lanes_internal {

// What the kernels below need of a register of lanes of type T (int32_t
// or int64_t), for AVX2 (256-bit) and AVX-512 (512-bit): how many lanes it
// holds, a broadcast, and the comparisons.
template <typename T>
struct Ops {
  static constexpr bool k32 = sizeof(T) == 4;
  static constexpr int kPer256 = 32 / sizeof(T);
  static constexpr int kPer512 = 64 / sizeof(T);
  __attribute__((target("avx2"))) static __m256i Set256(T x) {
    if constexpr (k32) return _mm256_set1_epi32(x);
    return _mm256_set1_epi64x(x);
  }
  __attribute__((target("avx2"))) static __m256i Greater256(__m256i a,
                                                            __m256i b) {
    if constexpr (k32) return _mm256_cmpgt_epi32(a, b);
    return _mm256_cmpgt_epi64(a, b);
  }
  // The sign bit of each lane.
  __attribute__((target("avx2"))) static uint32_t Bits256(__m256i m) {
    if constexpr (k32) {
      return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(m)));
    }
    return static_cast<uint32_t>(_mm256_movemask_pd(_mm256_castsi256_pd(m)));
  }
  __attribute__((target("avx512f"))) static __m512i Set512(T x) {
    if constexpr (k32) return _mm512_set1_epi32(x);
    return _mm512_set1_epi64(x);
  }
  // The lanes of v within [low, high].
  __attribute__((target("avx512f"))) static uint64_t Within512(
      __m512i v, __m512i low, __m512i high) {
    if constexpr (k32) {
      return _mm512_mask_cmple_epi32_mask(_mm512_cmpge_epi32_mask(v, low), v,
                                          high);
    }
    return _mm512_mask_cmple_epi64_mask(_mm512_cmpge_epi64_mask(v, low), v,
                                        high);
  }
};

}  // namespace lanes_internal

// The events whose value, values[i] for event i, lies in [lo, hi], of
// those in `present`: over EventLanes::value with int32 bounds (compared
// as they are: the narrow bounds' unbounded ends, INT32_MIN and
// INT32_MAX, hold for every clamped value) or over EventLanes::wide with
// int64 ones. For CPUs with AVX2 and with AVX-512 (simd.h says which to
// call). Not always_inline: a caller compiled for the same target inlines
// them with `flatten` (ClusterStore::InlineColumns).
template <typename T>
__attribute__((target("avx2"))) inline uint64_t LaneMaskAvx2(
    const T* values, uint64_t present, T lo, T hi) {
  using Ops = lanes_internal::Ops<T>;
  constexpr int kPer = Ops::kPer256;
  const __m256i low = Ops::Set256(lo);
  const __m256i high = Ops::Set256(hi);
  uint64_t outside = 0;
#pragma GCC unroll 16
  for (int q = 0; q < kEventLanes / kPer; ++q) {
    const __m256i v =
        _mm256_load_si256(reinterpret_cast<const __m256i*>(values + kPer * q));
    const __m256i out =
        _mm256_or_si256(Ops::Greater256(low, v), Ops::Greater256(v, high));
    outside |= static_cast<uint64_t>(Ops::Bits256(out)) << (kPer * q);
  }
  return ~outside & present;
}

template <typename T>
__attribute__((target("avx512f"))) inline uint64_t LaneMaskAvx512(
    const T* values, uint64_t present, T lo, T hi) {
  using Ops = lanes_internal::Ops<T>;
  constexpr int kPer = Ops::kPer512;
  const __m512i low = Ops::Set512(lo);
  const __m512i high = Ops::Set512(hi);
  uint64_t within = 0;
#pragma GCC unroll 16
  for (int q = 0; q < kEventLanes / kPer; ++q) {
    const __m512i v = _mm512_load_si512(values + kPer * q);
    within |= Ops::Within512(v, low, high) << (kPer * q);
  }
  return within & present;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_EVENT_LANES_H_
