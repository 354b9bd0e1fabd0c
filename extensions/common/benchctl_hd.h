// BENCHCTL_HD marks the per-element functions that a CPU kernel and a CUDA kernel share: host and
// device functions under nvcc, plain functions for the C++ compiler.
#pragma once

// BENCHCTL_UNROLL asks nvcc to unroll the loop after it (loops over compile-time sizes); the C++ compiler
// decides for itself.
#ifdef __CUDACC__
#define BENCHCTL_HD __host__ __device__
#define BENCHCTL_UNROLL _Pragma("unroll")
#else
#define BENCHCTL_HD
#define BENCHCTL_UNROLL
#endif
