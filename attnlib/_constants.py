"""Constants that carry their own documentation, so that ``help()`` explains them.

``help(attnlib.attention.BLOCK_ELEMENTS)`` on a plain ``2 ** 18`` prints the documentation of
``int``: the ``#:`` comment above the assignment is read by Sphinx only. :func:`documented`
returns the value as an instance of a subclass of its type (``int``, ``float``, ``str``,
``tuple``, ``frozenset`` or ``dict``) whose *instance* ``__doc__`` is the constant's own
documentation, which :mod:`pydoc` (and so ``help()``) shows together with the value::

    BLOCK_ELEMENTS = documented(2 ** 18, "Target entries of one block's work array.")

The instance is the value in every other respect: it compares and hashes as the plain value,
its ``repr`` (and so ``str``, f-strings and ``json.dumps``) is the plain value's, numpy takes
it as a size or an index, and arithmetic on it returns plain ints and floats. It pickles and
copies with its documentation (Dask ships constants to its workers).

One exception: ``help()`` (and ``pydoc.render_doc``) takes *any* str, a documented one
included, as the name of an object or topic to look up, so ``help(NAME)`` of a str constant
cannot show its doc. Its ``__doc__``, Sphinx and ``pydoc.plaintext.document(NAME)`` still
do; prefer a tuple or another type where ``help()`` matters.

Examples
--------
>>> import pickle
>>> from attnlib._constants import documented
>>> LIMIT = documented(10 ** 3, "Largest number of widgets.")
>>> LIMIT, LIMIT == 1000, LIMIT + 1, f"{LIMIT:,}"
(1000, True, 1001, '1,000')
>>> LIMIT.__doc__
'Largest number of widgets.'
>>> pickle.loads(pickle.dumps(LIMIT)).__doc__
'Largest number of widgets.'
"""

from __future__ import annotations

import sys
from typing import Any, TypeVar

__all__ = ["documented", "DocumentedInt", "DocumentedFloat", "DocumentedStr", "DocumentedTuple",
           "DocumentedFrozenset", "DocumentedDict"]

_V = TypeVar("_V")


class _Documented:
    """Shared behaviour of the documented constants: the plain value's repr, and pickling and
    copying through :func:`documented` so that the documentation survives. No ``__slots__``:
    each instance keeps its own ``__doc__`` (and ``__module__``) in its ``__dict__``."""

    #: The builtin type the constant is an instance of (set by each subclass).
    _plain_type: type = object

    def plain(self) -> Any:
        """The constant as an instance of its builtin type, without the documentation."""
        return self._plain_type(self)

    def __repr__(self) -> str:
        return repr(self.plain())

    def __reduce__(self) -> tuple[Any, ...]:
        return (documented, (self.plain(), self.__doc__, self.__dict__.get("__module__")))


class DocumentedInt(_Documented, int):
    """An ``int`` constant of attnlib that carries its own documentation (see
    :func:`documented`); ``help()`` on it shows the value and what it is."""

    _plain_type = int


class DocumentedFloat(_Documented, float):
    """A ``float`` constant of attnlib that carries its own documentation (see
    :func:`documented`); ``help()`` on it shows the value and what it is."""

    _plain_type = float


class DocumentedStr(_Documented, str):
    """A ``str`` constant of attnlib that carries its own documentation (see
    :func:`documented`) in its ``__doc__``. ``help()`` looks any str up as a name instead of
    documenting it, so the doc shows through ``pydoc.plaintext.document(constant)``."""

    _plain_type = str


class DocumentedTuple(_Documented, tuple):
    """A ``tuple`` constant of attnlib that carries its own documentation (see
    :func:`documented`); ``help()`` on it shows the value and what it is."""

    _plain_type = tuple


class DocumentedFrozenset(_Documented, frozenset):
    """A ``frozenset`` constant of attnlib that carries its own documentation (see
    :func:`documented`); ``help()`` on it shows the value and what it is."""

    _plain_type = frozenset


class DocumentedDict(_Documented, dict):
    """A ``dict`` constant of attnlib that carries its own documentation (see
    :func:`documented`); ``help()`` on it shows the value and what it is. It is as mutable as
    any dict; copies made with ``dict(...)`` or ``.copy()`` are plain dicts."""

    _plain_type = dict


#: The documented class of each supported builtin type, most specific first (``bool`` is an
#: ``int`` but cannot be subclassed, so it is refused rather than turned into 0 or 1).
_CLASSES: tuple[tuple[type, type], ...] = (
    (int, DocumentedInt), (float, DocumentedFloat), (str, DocumentedStr),
    (tuple, DocumentedTuple), (frozenset, DocumentedFrozenset), (dict, DocumentedDict))


def documented(value: _V, doc: str, module: str | None = None) -> _V:
    """``value`` (an int, float, str, tuple, frozenset or dict) with ``doc`` as its own
    documentation: an instance of :class:`DocumentedInt`, :class:`DocumentedFloat`, ... that
    equals, hashes, prints and pickles as the value, and that ``help()`` documents with
    ``doc``.

    ``module`` (default: the calling module's ``__name__``) becomes the instance's
    ``__module__``, so that ``help()`` and :func:`inspect.getmodule` name the module that
    defines the constant. Raises ``TypeError`` for other types (``bool`` included) and
    ``ValueError`` for an empty ``doc``.

    Examples
    --------
    >>> from attnlib._constants import documented
    >>> NAMES = documented(("a", "b"), "The names of the two things.")
    >>> NAMES, NAMES == ("a", "b"), "a" in NAMES, NAMES + ("c",)
    (('a', 'b'), True, True, ('a', 'b', 'c'))
    >>> RATE = documented(0.25, "A rate.")
    >>> f"{RATE:.3g}", RATE * 4, type(RATE * 4).__name__
    ('0.25', 1.0, 'float')
    """
    if not isinstance(doc, str) or not doc.strip():
        raise ValueError(f"doc must be a non-empty string, got {doc!r}")
    if isinstance(value, bool):
        raise TypeError("a bool constant cannot carry documentation (bool cannot be subclassed)")
    for base, cls in _CLASSES:
        if isinstance(value, base):
            break
    else:
        raise TypeError(f"documented() takes an int, float, str, tuple, frozenset or dict, "
                        f"got {type(value).__name__}")
    if doc == cls.__doc__:
        raise ValueError("doc must differ from the documented class's own docstring")
    if isinstance(value, _Documented):
        value = value.plain()
    constant = cls(value)
    constant.__doc__ = doc
    if module is None:
        module = sys._getframe(1).f_globals.get("__name__")
    if module is not None:
        constant.__module__ = module
    return constant
