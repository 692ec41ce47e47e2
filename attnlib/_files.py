"""Files the library and the book write and read: one home for atomic writes and for the
message about a file that is not what it should be.

Every write of user data goes through :func:`atomic_write` (or its two halves,
:func:`write_temporary` and :func:`commit`): the contents go to a temporary file
``.NAME.XXXXXXXX.tmp`` in the target's own folder, which is flushed, fsynced, given the
permissions of the umask and renamed over the target in one step (``os.replace``); the folder
is then fsynced so the rename survives a power loss. A reader, or an interruption at any point
(Ctrl-C, a full disk, SIGKILL), sees the complete old file or the complete new one; a failed
write removes its temporary file (SIGKILL cannot, and leaves ``.NAME.XXXXXXXX.tmp``).

:func:`not_an_archive` says in a few words what a file that should be an ``.npz`` archive (a
zip file) looks like instead: a Git LFS pointer, an HTML page, zeros, a bare ``.npy`` array, a
truncated archive, text. Every loader names the file, says that, and gives the command that
restores or regenerates it; no loader ever suggests unpickling.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path
from typing import BinaryIO, Callable

__all__: list[str] = []

#: The first line of a Git LFS pointer file (what a checkout without ``git lfs`` holds).
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def npz_path(path: str | Path, *, writing: bool = False) -> Path:
    """``path`` as numpy's ``savez`` names it: ``.npz`` appended when missing. With
    ``writing``, the folder must exist (``FileNotFoundError`` naming it). ``TypeError`` for a
    ``path`` that is not a str or a path."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or a path, got {type(path).__name__}")
    target = Path(path).expanduser()
    target = target if target.suffix == ".npz" else target.with_name(target.name + ".npz")
    if writing and not target.parent.is_dir():
        raise FileNotFoundError(f"path {str(path)!r}: the folder {str(target.parent)!r} does not "
                                "exist; create it first")
    return target


def write_temporary(path: Path, write: Callable[[BinaryIO], None]) -> Path:
    """Write a temporary file beside ``path`` with ``write(stream)``, flushed and fsynced, with
    the umask's permissions; return its path. On any failure it is removed and the error
    re-raised (``path`` itself is never touched)."""
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


def commit(temporary: Path, path: Path) -> None:
    """Rename ``temporary`` over ``path`` in one step and make the rename durable (fsync of
    the folder); ``temporary`` is removed if the rename fails."""
    try:
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def atomic_write(path: str | Path, write: Callable[[BinaryIO], None]) -> Path:
    """Write ``path`` atomically with ``write(stream)`` (module docstring); return ``path``."""
    path = Path(path)
    commit(write_temporary(path, write), path)
    return path


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def not_an_archive(path: Path) -> str | None:
    """None when ``path`` is a readable zip archive (an ``.npz``), else what it looks like: a
    Git LFS pointer, an HTML page, an empty file, zeros, a bare ``.npy`` array, a truncated or
    damaged archive, a text file, or other bytes."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(1024)
        size = path.stat().st_size
        if zipfile.is_zipfile(path):
            return None
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if size == 0:
        return "an empty file (0 bytes)"
    if head.startswith(_LFS_POINTER):
        return ("a Git LFS pointer, not the data (the repository was cloned without Git LFS, "
                "or `git lfs pull` was not run)")
    if not head.strip(b"\x00"):
        return (f"{size} bytes of zeros (space allocated but never written, as a crash or a "
                "full disk can leave)")
    lowered = head.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html")) or b"<html" in lowered[:200]:
        return "an HTML page (a web page or an error page saved in place of the data)"
    if head.startswith(b"\x93NUMPY"):
        return "a single .npy array, not an .npz archive of named arrays"
    if head.startswith(b"PK"):
        return f"a truncated or damaged zip archive ({size} bytes)"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return f"not an .npz (zip) archive ({size} bytes starting {head[:8]!r})"
    return f"a text file starting {head[:40].decode('utf-8', 'replace')!r}, not an .npz archive"


def restore_hint(path: Path) -> str:
    """``git lfs pull`` for a Git LFS pointer, else ``git checkout -- PATH`` (the committed
    file), as the first half of a loader's advice."""
    try:
        with open(path, "rb") as stream:
            pointer = stream.read(len(_LFS_POINTER)) == _LFS_POINTER
    except OSError:
        pointer = False
    if pointer:
        return f"fetch the data with `git lfs pull --include {path}`"
    return f"restore the committed file with `git checkout -- {path}`"
