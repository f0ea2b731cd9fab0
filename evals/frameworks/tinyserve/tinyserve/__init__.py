"""tinyserve: a small sglang-shaped serving framework (numpy on the CPU, kernels in csrc/)."""
import os

# Requests run one per thread on tiny matrices: BLAS worker threads on top only fight over the cores
# (measured 40x slower prefill on a loaded 2-core host). Set before any submodule imports numpy.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

__version__ = "0.1.0"
