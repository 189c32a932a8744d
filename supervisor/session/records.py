"""Small immutable-by-convention records for the hook path.

``typing.NamedTuple`` classes cost a few hundred microseconds each to create
at import (their field annotations are compiled even when postponed), and the
hooks import these modules on every tool call. A ``__slots__`` class with
positional construction, equality and unpacking does the same job for free.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t


class Factory:
    """A default that is made afresh for each record (a list, say), like dataclasses' default_factory."""

    __slots__ = ("make",)

    def __init__(self, make: t.Callable[[], t.Any]) -> None:
        self.make = make


class Record:
    """Fields are the subclass's ``__slots__``, in order; ``_defaults`` gives the optional ones.

    Also off the hook path it replaces dataclasses and NamedTuple: importing
    those (with inspect and typing) costs every claude-run a megabyte of memory,
    and a fleet runs one per pane.
    """

    __slots__: tuple[str, ...] = ()
    _defaults: t.ClassVar[dict[str, t.Any]] = {}

    def __init__(self, *values: t.Any, **named: t.Any) -> None:
        if len(values) > len(self.__slots__):
            raise TypeError(f"{type(self).__name__} takes {len(self.__slots__)} fields")
        given = dict(zip(self.__slots__, values))
        for key, value in named.items():
            if key not in self.__slots__ or key in given:
                raise TypeError(f"{type(self).__name__}: unexpected or repeated field {key!r}")
            given[key] = value
        for name, default in self._defaults.items():
            if name not in given:
                given[name] = default.make() if isinstance(default, Factory) else default
        missing = [name for name in self.__slots__ if name not in given]
        if missing:
            raise TypeError(f"{type(self).__name__} is missing {', '.join(missing)}")
        for key, value in given.items():
            object.__setattr__(self, key, value)

    def __iter__(self) -> t.Iterator[t.Any]:
        return (getattr(self, name) for name in self.__slots__)

    def __getitem__(self, index: int) -> t.Any:
        return getattr(self, self.__slots__[index])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
