"""A torch.nn-like skeleton on numpy: parameters with weight loaders, named module trees."""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

NUMPY_DTYPES = {"bfloat16": np.float32, "float32": np.float32, "uint8": np.uint8}


class Parameter:
    """A named weight. bfloat16 values are held as float32; `dtype` is what the checkpoint must provide."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "bfloat16"):
        self.data = np.zeros(shape, dtype=NUMPY_DTYPES[dtype])
        self.dtype = dtype
        self.name = ""
        self.weight_loader: Callable = default_weight_loader

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)


def torch_size(shape) -> str:
    return f"torch.Size([{', '.join(str(int(d)) for d in shape)}])"


def check_shape(param: Parameter, target_shape: tuple[int, ...], loaded_weight: np.ndarray) -> None:
    """Raise torch's size-mismatch error when a checkpoint tensor does not fit its parameter (slice)."""
    if tuple(target_shape) == tuple(loaded_weight.shape):
        return
    loaded_dtype = "uint8" if loaded_weight.dtype == np.uint8 else "bfloat16"
    raise RuntimeError(
        "Error(s) in loading state_dict for tinyserve:\n"
        f"\tsize mismatch for {param.name}: copying a param with shape {torch_size(loaded_weight.shape)} "
        f"from checkpoint, the shape in current model is {torch_size(target_shape)}.\n"
        f"\tparam {param.name} has dtype torch.{param.dtype}, checkpoint tensor has dtype torch.{loaded_dtype}")


def default_weight_loader(param: Parameter, loaded_weight: np.ndarray) -> None:
    check_shape(param, param.shape, loaded_weight)
    param.data[...] = loaded_weight


class Module:
    """Parameters and submodules are attributes; names follow attribute order, like torch."""

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        for attr, value in vars(self).items():
            name = f"{prefix}.{attr}" if prefix else attr
            if isinstance(value, Parameter):
                yield name, value
            elif isinstance(value, Module):
                yield from value.named_parameters(name)

    def name_parameters(self) -> None:
        """Give every parameter its full dotted name (used in load errors)."""
        for name, param in self.named_parameters():
            param.name = name


class ModuleList(Module):
    """Submodules named 0, 1, 2, ... like torch.nn.ModuleList."""

    def __init__(self, modules: list[Module]):
        self.items = list(modules)

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        for i, module in enumerate(self.items):
            yield from module.named_parameters(f"{prefix}.{i}" if prefix else str(i))

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, i: int) -> Module:
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)
