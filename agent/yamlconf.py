"""Load user-written YAML into pydantic models with errors that name the file, line and key."""
from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A user config is wrong; one line naming where and what to do."""


def _line_of(node: yaml.Node | None, loc: tuple) -> int | None:
    """The 1-based line of the deepest YAML node along a pydantic error location."""
    line = None
    for part in loc:
        if node is None:
            break
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == str(part)), None)
            if match is None:
                break
            line = match[0].start_mark.line + 1
            node = match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def load_yaml_model(path: str | Path, model: type[M]) -> M:
    """Parse and validate one YAML file; ConfigError on malformed YAML, unknown keys or bad values."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}; pass the path of a YAML file") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a text file (bytes that are not UTF-8): pass a YAML file") from exc
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: malformed YAML ({getattr(exc, 'problem', exc)}): fix the syntax") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        line = _line_of(node, loc)
        key = ".".join(str(p) for p in loc)
        where = f"{path}:{line}" if line else str(path)
        msg = {"extra_forbidden": "unknown key: check the spelling",
               "missing": "missing key: add it"}.get(err["type"], err["msg"])
        raise ConfigError(f"{where}: {key}: {msg}") from exc
