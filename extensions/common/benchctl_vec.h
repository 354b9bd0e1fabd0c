// Include first, before any ATen header, with BENCHCTL_VEC_NAME defined as a name unique to the
// extension (e.g. benchctl_grid_sample).
//
// The build compiles with -march=native, but ATen's SIMD types only use AVX2/AVX-512 when a
// CPU_CAPABILITY_* macro says so (libtorch sets it per kernel file). Without it Vectorized<T> falls
// back to scalar loops. The unique namespace name keeps these inline definitions apart from
// libtorch's and other extensions'.
#pragma once

#define BENCHCTL_VEC_CAT_(a, b) a##b
#define BENCHCTL_VEC_CAT(a, b) BENCHCTL_VEC_CAT_(a, b)

#if !defined(CPU_CAPABILITY)
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#define CPU_CAPABILITY BENCHCTL_VEC_CAT(BENCHCTL_VEC_NAME, _avx512)
#define CPU_CAPABILITY_AVX512
#elif defined(__AVX2__) && defined(__FMA__)
#define CPU_CAPABILITY BENCHCTL_VEC_CAT(BENCHCTL_VEC_NAME, _avx2)
#define CPU_CAPABILITY_AVX2
#endif
#endif
