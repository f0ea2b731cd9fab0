"""Checkpoint tensor names without tensor data, compared with what a framework expects."""

from tools.weights.checkpoint import (
    INDEX_NAME,
    Checkpoint,
    CheckpointError,
    TensorInfo,
    load_checkpoint,
    read_header,
    read_index,
)
from tools.weights.compare import (
    GroupDiff,
    Mismatch,
    WeightReport,
    compare,
    expected_from_hook,
    load_expected,
    normalize_dtype,
    parse_expected,
    submodule_group,
)
from tools.weights.prefix_rules import PrefixRule, Remap, apply_rules, check_rules, order_rules, stacked_name
from tools.weights.remap import RemapError, derive_remap

__all__ = [
    "INDEX_NAME",
    "Checkpoint",
    "CheckpointError",
    "GroupDiff",
    "Mismatch",
    "PrefixRule",
    "Remap",
    "RemapError",
    "TensorInfo",
    "WeightReport",
    "apply_rules",
    "check_rules",
    "compare",
    "derive_remap",
    "expected_from_hook",
    "load_checkpoint",
    "load_expected",
    "normalize_dtype",
    "order_rules",
    "parse_expected",
    "read_header",
    "read_index",
    "stacked_name",
    "submodule_group",
]
