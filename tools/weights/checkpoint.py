"""Tensor names, dtypes and shapes of a safetensors checkpoint, read from headers only.

A safetensors file starts with an 8-byte little-endian header length and a JSON header
{name: {"dtype", "shape", "data_offsets"}, "__metadata__": {...}}; a sharded checkpoint adds
`model.safetensors.index.json` with a `weight_map` {name: shard file}. Nothing here reads tensor
data, so a 700B checkpoint's names load from its index in milliseconds and its shapes from one
header read per shard.
"""

from __future__ import annotations

import json
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INDEX_NAME = "model.safetensors.index.json"
# A header larger than this is not a safetensors header (the format caps it at 100 MB).
MAX_HEADER_BYTES = 100 * 1024 * 1024


class CheckpointError(ValueError):
    """A checkpoint is missing or corrupt; the one-line message names the file and what to do."""


@dataclass(slots=True)
class TensorInfo:
    """One tensor as the checkpoint declares it."""

    name: str
    shard: str
    """The shard file name (relative to the checkpoint directory)."""
    dtype: str | None = None
    shape: list[int] | None = None


@dataclass
class Checkpoint:
    """The tensors of one checkpoint and its model config (config.json), when present."""

    root: Path
    tensors: dict[str, TensorInfo]
    shards: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    has_shapes: bool = False

    @property
    def names(self) -> list[str]:
        return list(self.tensors)

    @property
    def num_hidden_layers(self) -> int | None:
        """The decoder layer count; a layer index equal to it is an MTP/nextn head (GLM, DeepSeek)."""
        for holder in (self.config, self.config.get("text_config") or {}):
            value = holder.get("num_hidden_layers")
            if isinstance(value, int):
                return value
        return None


def read_header(path: Path) -> dict[str, TensorInfo]:
    """The tensors declared in one safetensors file's header (reads only the header bytes)."""
    try:
        with path.open("rb") as fh:
            size_bytes = fh.read(8)
            if len(size_bytes) < 8:
                raise CheckpointError(
                    f"{path}: truncated safetensors file (no header length); re-download this shard"
                )
            (size,) = struct.unpack("<Q", size_bytes)
            if size > MAX_HEADER_BYTES:
                raise CheckpointError(
                    f"{path}: header length {size} is not a safetensors header; "
                    f"the file is corrupt or not safetensors, re-download it"
                )
            raw = fh.read(size)
            data_bytes = path.stat().st_size - 8 - size
    except OSError as exc:
        raise CheckpointError(
            f"{path}: cannot read ({exc.strerror}); check the path and permissions"
        ) from exc
    if len(raw) < size:
        raise CheckpointError(
            f"{path}: truncated header ({len(raw)} of {size} bytes); re-download this shard"
        )
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: header is not valid JSON ({exc}); re-download this shard") from exc
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: header is not a JSON object; re-download this shard")
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(meta, dict) or "dtype" not in meta or "shape" not in meta:
            raise CheckpointError(
                f"{path}: tensor {name!r} has no dtype/shape in the header; re-download this shard"
            )
        _check_extent(path, name, meta.get("data_offsets"), data_bytes)
        tensors[name] = TensorInfo(name, path.name, meta["dtype"], meta["shape"])
    return tensors


def _check_extent(path: Path, name: str, offsets: object, data_bytes: int) -> None:
    """A tensor's data_offsets [begin, end) must lie inside the file's data section: a header that claims
    more bytes than the file holds is a truncated or forged shard, found before any load is tried."""
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
    ):
        raise CheckpointError(
            f"{path}: tensor {name!r} has no [begin, end] data_offsets in the header; re-download this shard"
        )
    begin, end = offsets
    if not 0 <= begin <= end:
        raise CheckpointError(
            f"{path}: tensor {name!r} has data_offsets {offsets} (begin after end); re-download this shard"
        )
    if end > data_bytes:
        raise CheckpointError(
            f"{path}: tensor {name!r} ends at byte {end} of the data but the file holds "
            f"{max(data_bytes, 0)}; the shard is truncated or corrupt, re-download it"
        )


def read_index(path: Path) -> dict[str, str]:
    """The weight_map {tensor name: shard file} of a `model.safetensors.index.json`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc.strerror}); check the path") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc}); re-download the index") from exc
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise CheckpointError(f"{path}: no 'weight_map' of tensor name -> shard file; re-download the index")
    return weight_map


def _read_config(root: Path) -> dict[str, Any]:
    path = root / "config.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc}); fix or re-download config.json") from exc
    return data if isinstance(data, dict) else {}


def _from_index(root: Path, index: Path, shapes: bool, threads: int) -> Checkpoint:
    weight_map = read_index(index)
    shards = sorted(set(weight_map.values()))
    missing = [s for s in shards if not (root / s).is_file()]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise CheckpointError(
            f"{index}: names shard {missing[0]}{more} which is not in {root}; "
            f"download the missing shards or fix the index"
        )
    if not shapes:
        names_only = {name: TensorInfo(name, shard) for name, shard in weight_map.items()}
        return Checkpoint(root, names_only, shards, _read_config(root), has_shapes=False)
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(shards)))) as pool:
        headers = list(pool.map(lambda s: read_header(root / s), shards))
    tensors: dict[str, TensorInfo] = {}
    for header in headers:
        tensors.update(header)
    if absent := weight_map.keys() - tensors.keys():
        name = min(absent)
        raise CheckpointError(
            f"{index}: maps {name!r} to {weight_map[name]}, whose header has no such tensor; "
            f"the index and shards are from different downloads"
        )
    if len(tensors) > len(weight_map):  # tensors the index does not list are not loaded by frameworks either
        tensors = {n: tensors[n] for n in weight_map}
    return Checkpoint(root, tensors, shards, _read_config(root), has_shapes=True)


def load_checkpoint(path: str | Path, *, shapes: bool = True, threads: int = 4) -> Checkpoint:
    """Read a checkpoint directory, index file or single .safetensors file (headers only).

    With `shapes=False` a sharded checkpoint is read from its index alone (names, no dtypes/shapes).
    """
    path = Path(path)
    if path.is_file() and path.name.endswith(".json"):
        return _from_index(path.parent, path, shapes, threads)
    if path.is_file():
        return Checkpoint(path.parent, read_header(path), [path.name], _read_config(path.parent), True)
    if not path.is_dir():
        raise CheckpointError(
            f"{path}: no such checkpoint; pass a directory with *.safetensors files, "
            f"an index JSON or a .safetensors file"
        )
    if (path / INDEX_NAME).is_file():
        return _from_index(path, path / INDEX_NAME, shapes, threads)
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise CheckpointError(
            f"{path}: no {INDEX_NAME} and no *.safetensors files; "
            f"point at the model directory that holds them"
        )
    tensors: dict[str, TensorInfo] = {}
    for file in files:
        tensors.update(read_header(file))
    return Checkpoint(path, tensors, [f.name for f in files], _read_config(path), has_shapes=True)
