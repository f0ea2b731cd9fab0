// rocport's sample HIP kernel: compiled inside the ROCm build image by `make demo` and the tests.
#include <hip/hip_runtime.h>

__global__ void vector_add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

// A host entry point so the shared library has something to link and export.
extern "C" hipError_t launch_vector_add(const float* a, const float* b, float* out, int n) {
  hipLaunchKernelGGL(vector_add, dim3((n + 255) / 256), dim3(256), 0, 0, a, b, out, n);
  return hipGetLastError();
}
