// BENCHCTL_HD marks the per-element functions that a CPU kernel and a CUDA kernel share: host and
// device functions under nvcc, plain functions for the C++ compiler.
#pragma once

#ifdef __CUDACC__
#define BENCHCTL_HD __host__ __device__
#else
#define BENCHCTL_HD
#endif
