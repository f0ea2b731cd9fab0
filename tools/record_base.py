"""The base of rocport's records (tools/records.py): dataclasses as far as `dataclasses` can tell
(`fields`, `asdict`, `replace`, `is_dataclass`, and so LangGraph's checkpoint serialiser), written out
instead of made by `@dataclass`. `rocport scan` builds Failures and starts in ~0.1 s; importing
`dataclasses` (with `inspect`, `ast`, `dis`) and generating the records' methods was ~7 ms of each start.
What `dataclasses` reads is built the first time it asks (`_DataclassFields`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from dataclasses import Field
    from typing import Any, ClassVar, Self


class _DataclassFields:
    """A record's `__dataclass_fields__`, made on first read (by `dataclasses`) from its FIELDS: the fields
    of a dataclass with the same field names in the same order, which is all `fields`, `asdict`,
    `replace` and `is_dataclass` read."""

    def __get__(self, instance: object, owner: type[Record]) -> dict[str, Field[Any]]:
        made: dict[str, Field[Any]] | None = owner.__dict__.get("_made_fields")
        if made is None:
            from dataclasses import make_dataclass

            made = vars(make_dataclass(owner.__name__, owner.FIELDS))["__dataclass_fields__"]
            owner._made_fields = made
        return made


class Record:
    """A record: equality, repr and dataclass fields over FIELDS (its `__init__` parameters, in order),
    and the JSON round trip."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()
    _made_fields: ClassVar[dict[str, Field[Any]] | None] = None
    if TYPE_CHECKING:
        __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    else:
        __dataclass_fields__ = _DataclassFields()
    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as a dataclass

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{self.__class__.__qualname__}({shown})"

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON types (nested records become dicts)."""
        from dataclasses import asdict

        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """The record from its dict; keys it does not know are ignored."""
        return cls(**{k: v for k, v in data.items() if k in cls.FIELDS})

    @classmethod
    def coerce(cls, value: Self | dict[str, Any]) -> Self:
        """The record itself, or one read from its dict (run state saved before the state was typed)."""
        return cls.from_dict(value) if isinstance(value, dict) else value
