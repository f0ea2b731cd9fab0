"""Read and write the safetensors format with numpy only (the ROCm container has no safetensors package).

Layout: 8-byte little-endian header size, a JSON header {name: {dtype, shape, data_offsets}}, raw bytes.
"""
from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np

INDEX_FILE = "model.safetensors.index.json"
# Storage dtype per safetensors dtype; BF16 is kept as raw uint16 bits on disk.
STORAGE = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "U8": np.uint8, "I8": np.int8,
           "I32": np.int32, "I64": np.int64, "F8_E4M3": np.uint8}
# The torch dtype name each safetensors dtype loads as (what the loader and expected_params report).
TORCH_NAMES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "U8": "uint8", "I8": "int8",
               "I32": "int32", "I64": "int64", "F8_E4M3": "float8_e4m3fn"}


class CheckpointError(ValueError):
    """A checkpoint file is missing or not valid safetensors."""


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (round to nearest even)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16).astype(np.uint16)


def bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def write_file(path: Path, tensors: dict[str, tuple[str, np.ndarray]]) -> None:
    """Write {name: (safetensors dtype, array)}; BF16 arrays are given as float values."""
    header: dict[str, dict] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, (dtype, array) in tensors.items():
        stored = bf16_bits(array) if dtype == "BF16" else np.ascontiguousarray(array, dtype=STORAGE[dtype])
        data = stored.tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        f.writelines(blobs)


def read_header(path: Path) -> tuple[dict[str, dict], int]:
    """The JSON header (without __metadata__) and the byte offset where tensor data starts."""
    try:
        with open(path, "rb") as f:
            size = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(size))
    except (OSError, struct.error, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not a readable safetensors file ({exc})") from exc
    header.pop("__metadata__", None)
    return header, 8 + size


def iter_file(path: Path) -> Iterator[tuple[str, str, np.ndarray]]:
    """Yield (name, safetensors dtype, array) in file order; BF16 comes back as float32 values."""
    header, start = read_header(path)
    data = np.memmap(path, dtype=np.uint8, mode="r")
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = data[start + begin:start + end].view(STORAGE[info["dtype"]]).reshape(info["shape"])
        array = bf16_to_float32(raw) if info["dtype"] == "BF16" else np.array(raw)
        yield name, info["dtype"], array
