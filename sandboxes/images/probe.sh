# Run inside a freshly built image: what does its hipcc accept? Prints key=value lines.
# Usage: sh probe.sh ARCH...
export HIP_PLATFORM=amd
dir=$(mktemp -d)
cd "$dir" || exit 1
printf '#include <hip/hip_runtime.h>\n__global__ void add_one(float* x) { x[threadIdx.x] += 1.0f; }\n' > k.hip
echo "hipcc_path=$(command -v hipcc)"
echo "clang_version=$(hipcc --version 2>/dev/null | grep -m1 'clang version')"
echo "hip_version=$(hipcc --version 2>/dev/null | grep -m1 'HIP version' | sed 's/^HIP version: *//')"
echo "rocm_version=$(dpkg-query -W -f='${Version}' libamdhip64-dev 2>/dev/null)"
archs=""
for a in "$@"; do
  if hipcc --offload-arch="$a" -c k.hip -o "k_$a.o" >/dev/null 2>&1; then archs="$archs,$a"; fi
done
echo "offload_archs=${archs#,}"
# hipcub/rocprim headers do not support every target the compiler does (rocprim's 128-bit atomics).
printf '#include <hipcub/hipcub.hpp>\n__global__ void k(int* x) { x[0] = 1; }\n' > cub.hip
cub=""
for a in "$@"; do
  if hipcc --offload-arch="$a" -c cub.hip -o "cub_$a.o" >/dev/null 2>&1; then cub="$cub,$a"; fi
done
echo "hipcub_archs=${cub#,}"
cd / && rm -rf "$dir"
