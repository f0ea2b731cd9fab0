"""tinyserve: a small sglang-shaped serving framework (numpy on the CPU, kernels in csrc/)."""

__version__ = "0.1.0"
