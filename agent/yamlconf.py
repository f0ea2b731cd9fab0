"""The one loader of user-written YAML (jobs, profiles, sweeps, eval tasks) into pydantic models, with
errors that name the file, the line and the key.

Each caller passes its own error class (JobError, ProfileError, TaskError, ...) so its CLI keeps
reporting one line `rocport: error: ...`; the wording of every YAML problem is the same everywhere.
"""

from __future__ import annotations

import yaml

from tools.files import path_text

# typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py): a scan's first run, before
# its profile is memoised, reads the YAML here
TYPE_CHECKING = False
if TYPE_CHECKING:
    from os import PathLike
    from typing import Any, TypeVar

    from pydantic import BaseModel

    M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A user config is wrong; one line naming where and what to do."""


def line_of(node: yaml.Node | None, loc: tuple) -> int | None:
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


def key_lines(node: yaml.Node | None) -> dict[tuple[str, ...], int]:
    """The line of every mapping key, by dotted path (for files merged before they are validated)."""
    lines: dict[tuple[str, ...], int] = {}

    def walk(node: yaml.Node | None, prefix: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                path = (*prefix, str(key_node.value))
                lines[path] = key_node.start_mark.line + 1
                walk(value_node, path)

    walk(node, ())
    return lines


_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", None)
"""libyaml's parser under PyYAML's safe constructor and resolver (same data, same node tags), when
PyYAML was built with it: ~10x faster than the pure-Python parser, ~3 ms of a profile load."""


def _parse(text: str) -> tuple[Any, yaml.Node | None]:
    """The data of one YAML document and its node tree as written (for line numbers), in one parse.
    A document libyaml rejects is parsed again by the pure-Python parser, so that every error reads
    as it always did. With a merge key (`<<`) the data is built from a second parse: building
    flattens merged mappings in place, and line numbers must read the tree as written."""
    for loader_class in (_FAST_LOADER, yaml.SafeLoader) if _FAST_LOADER else (yaml.SafeLoader,):
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            if "<<" in text:
                return yaml.load(text, Loader=loader_class), node  # noqa: S506 (a safe loader)
            return (loader.construct_document(node) if node else None), node
        except yaml.YAMLError:
            if loader_class is yaml.SafeLoader:
                raise
        finally:
            loader.dispose()
    raise AssertionError("unreachable: the pure-Python parser answers or raises")


def read_yaml(
    path: str | PathLike[str], *, error: type[Exception] = ConfigError, what: str = "a YAML file"
) -> tuple[dict[str, Any], yaml.Node | None]:
    """The top-level mapping of one YAML file and its node tree (for line numbers); an empty file is {}.

    `error` on an unreadable file, bytes that are not UTF-8, malformed YAML or a top level that is not a
    mapping; `what` says what the file should be."""
    path = path_text(path)  # named in messages as pathlib names it, without its import (scan start)
    try:
        with open(path) as stream:
            text = stream.read()
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a text file (bytes that are not UTF-8): pass {what}") from exc
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror}; pass the path of {what}") from exc
    try:
        data, node = _parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}: line {mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or "cannot parse"
        raise error(f"{where}: malformed YAML: {problem}; fix the syntax") from exc
    if data is None:
        return {}, node
    if not isinstance(data, dict):
        raise error(f"{path}: {what} is a YAML mapping of keys at the top level, got {type(data).__name__}")
    return data, node


def validate(
    model: type[M],
    data: dict[str, Any],
    path: str | PathLike[str],
    node: yaml.Node | None = None,
    *,
    error: type[Exception] = ConfigError,
) -> M:
    """`model` from `data` read out of `path`; `error` names the file, the line and the key."""
    from pydantic import ValidationError  # here: read_yaml alone (a plain scan's profile) needs none

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        line = line_of(node, loc)
        key = ".".join(str(p) for p in loc)
        where = f"{path}:{line}" if line else str(path)
        msg = {"extra_forbidden": "unknown key: check the spelling", "missing": "missing key: add it"}.get(
            err["type"], err["msg"]
        )
        raise error(f"{where}: {key}: {msg}") from exc


def load_yaml_model(
    path: str | PathLike[str],
    model: type[M],
    *,
    error: type[Exception] = ConfigError,
    what: str = "a YAML file",
) -> M:
    """Parse and validate one YAML file; `error` on malformed YAML, unknown keys or bad values."""
    data, node = read_yaml(path, error=error, what=what)
    return validate(model, data, path, node, error=error)
