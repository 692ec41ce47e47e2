"""Progress feedback for long runs: one helper, used by every iterative routine."""

from __future__ import annotations

from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def progress(iterable: Iterable[T], *, total: int | None = None, desc: str = "",
             enabled: bool = False) -> Iterator[T]:
    """Wrap ``iterable`` in a ``tqdm.auto`` progress bar when ``enabled``, else return it as is.

    ``tqdm.auto`` draws an ipywidgets bar in a live notebook and a text bar in a terminal.
    Library routines default to ``enabled=False`` so tests and stored notebook outputs stay quiet.
    """
    if not enabled:
        return iter(iterable)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ImportError("a progress bar (progress=True) needs tqdm: pip install 'attnlib[progress]'") from None

    return iter(tqdm(iterable, total=total, desc=desc, leave=False))
