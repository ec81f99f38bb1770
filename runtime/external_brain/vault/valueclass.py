"""Small record classes for the modules every CLI call imports, without `dataclasses`.

Why not dataclasses: importing it pulls in `inspect`, and each class it builds is generated and
exec'd — about 7 ms of a search whose whole budget beside Python's own start-up is ~15 ms
(docs/decisions.md, measured with `python3 -X importtime`). `valueclass` gives those classes what
they used from it: an `__init__` from the annotated fields (defaults are the class attributes;
`factory(list)` for a fresh mutable default), `__repr__`, `__eq__`, and `frozen=True` (immutable
and hashable). Fields named with a leading underscore take no part in `__eq__` or `__repr__`.
Modules off the start-up path keep using dataclasses.
"""

from __future__ import annotations


class factory:
    """A default made fresh for each instance, like `dataclasses.field(default_factory=...)`."""

    def __init__(self, make) -> None:
        self.make = make


def valueclass(cls=None, *, frozen: bool = False):
    """Class decorator: see the module docstring."""
    if cls is None:
        return lambda klass: _build(klass, frozen)
    return _build(cls, frozen)


def _build(cls, frozen: bool):
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        for name in klass.__dict__.get("__annotations__", {}):
            if name not in names:
                names.append(name)
    defaults = {name: getattr(cls, name) for name in names if hasattr(cls, name)}
    for name, value in defaults.items():
        if isinstance(value, factory) and name in cls.__dict__:
            delattr(cls, name)
    shown = [name for name in names if not name.startswith("_")]
    set_field = object.__setattr__

    def __init__(self, *args, **kwargs) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} arguments, {len(args)} given")
        values = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names or name in values:
                raise TypeError(f"{cls.__name__}() got an unexpected or repeated argument {name!r}")
            values[name] = value
        for name in names:
            if name in values:
                value = values[name]
            elif name in defaults:
                value = defaults[name]
                if isinstance(value, factory):
                    value = value.make()
            else:
                raise TypeError(f"{cls.__name__}() is missing the argument {name!r}")
            set_field(self, name, value)

    def __repr__(self) -> str:
        return f"{cls.__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in shown)

    cls.__init__ = __init__
    cls.__repr__ = __repr__
    cls.__eq__ = __eq__
    if frozen:
        def __setattr__(self, name, value):
            raise AttributeError(f"{cls.__name__} is immutable: cannot set {name!r}")

        cls.__setattr__ = __setattr__
        cls.__delattr__ = __setattr__
        cls.__hash__ = lambda self: hash(tuple(getattr(self, n) for n in shown))
    else:
        cls.__hash__ = None
    return cls
