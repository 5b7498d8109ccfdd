// MCDL_HOST_DEVICE marks small functions shared by host code and CUDA kernels.
#pragma once
#ifdef __CUDACC__
#define MCDL_HOST_DEVICE __host__ __device__
#else
#define MCDL_HOST_DEVICE
#endif
