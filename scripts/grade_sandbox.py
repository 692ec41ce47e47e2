"""The bubblewrap sandbox of scripts/grade.py: one fresh sandbox per run of a notebook.

:func:`run_sandboxed` runs a command under ``bwrap`` in new user, mount, PID, network, IPC and
UTS namespaces, with no capabilities, the seccomp filter of ``scripts/seccomp_filter.py``, the
system's ``/usr`` and the Python environment read-only plus the folders it is given, private
in-memory ``/tmp`` and ``/submission``, limits on time, memory, processes and file size, and
(when the grader runs as root) an unprivileged user id of its own; every process it started is
killed before it returns. :func:`check_sandbox` is the grader's start-up check: one trivial
sandbox, and one line saying why when it cannot run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import seccomp_filter
from grade_records import RESULT_LIMIT
from grade_sheet import cell_text


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run on this machine (bwrap missing or refused); one line."""


@dataclass
class Sandbox:
    """How a notebook is run: bwrap, the bound folders, limits, the seccomp filter, and the
    sandboxes running now (stopped together by :meth:`Grader.stop`)."""

    bwrap: str
    python: str
    stage: Path                          # grader-private, never bound whole
    binds: list[tuple[str, str]]         # (source, destination) read-only
    attnlib_home: str                    # where attnlib is imported from in the environment
    memory_mb: int
    as_root: bool
    seccomp: bytes                       # the BPF program (scripts/seccomp_filter.py)
    running: dict[int, subprocess.Popen] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: bool = False


def make_sandbox(stage: Path, memory_mb: int) -> Sandbox:
    """Find bwrap and the folders the environment's Python needs; raise
    :class:`SandboxUnavailable` with the fix when bwrap is missing."""
    import attnlib

    bwrap = shutil.which("bwrap")
    if not bwrap:
        raise SandboxUnavailable("the trusted grader needs bubblewrap: apt-get install "
                                 "bubblewrap (or pass --engine otter for the unsafe otter run "
                                 "path)")
    try:
        program = seccomp_filter.program()
    except RuntimeError as error:
        raise SandboxUnavailable(str(error)) from error
    binds = []
    for path in {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix}:
        if not path.startswith("/usr/") and path != "/usr":
            binds.append((path, path))
    return Sandbox(bwrap, sys.executable, stage, sorted(set(binds)),
                   str(Path(attnlib.__path__[0]).resolve()), memory_mb, os.geteuid() == 0,
                   program)


def _sandbox_command(box: Sandbox, binds: list[tuple[str, str]], uid: int, timeout: float,
                     args_fd: int, seccomp_fd: int, argv: list[str]) -> tuple[list[str], list[str]]:
    """The command running ``argv`` in a sandbox with ``binds`` (read-only) besides the
    environment, and bwrap's arguments, which it reads from ``args_fd`` (so the sandbox's
    /proc/1/cmdline shows none); the seccomp program is read from ``seccomp_fd``."""
    binds = [*box.binds, *binds]
    bwrap = ["--unshare-all", "--unshare-user", "--disable-userns",
             "--die-with-parent", "--new-session", "--cap-drop", "ALL",
             "--seccomp", str(seccomp_fd),
             "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
             "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
             "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
             "--ro-bind-try", "/etc/fonts", "/etc/fonts",
             "--proc", "/proc", "--dev", "/dev",
             "--size", str(256 * 2 ** 20), "--tmpfs", "/tmp",
             "--size", str(256 * 2 ** 20), "--tmpfs", "/submission",
             "--chdir", "/submission", "--uid", "1000", "--gid", "1000", "--clearenv",
             "--setenv", "HOME", "/submission", "--setenv", "TMPDIR", "/tmp",
             "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "MPLBACKEND", "Agg",
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "OPENBLAS_NUM_THREADS", "1",
             "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--setenv", "LANG", "C.UTF-8"]
    mounts = []
    if box.as_root:
        # The sandbox runs as an unprivileged user id of its own. The environment may sit where
        # that id cannot reach (a Python under /root): root binds each folder in a private mount
        # namespace to a place it can, and bwrap, started as that id, binds it from there.
        # (Each sandbox mounts in a namespace of its own: they share the empty mount points.)
        for index, (source, dest) in enumerate(binds):
            staged = box.stage / "mnt" / str(index)
            staged.mkdir(parents=True, exist_ok=True)
            mounts.append(f"mount --bind {shlex.quote(source)} {shlex.quote(str(staged))} && "
                          f"mount -o remount,bind,ro {shlex.quote(str(staged))}")
            bwrap += ["--ro-bind", str(staged), dest]
    else:
        for source, dest in binds:
            bwrap += ["--ro-bind", source, dest]
    start = [box.bwrap, "--args", str(args_fd), *argv]
    limits = ["prlimit", f"--as={box.memory_mb * 2 ** 20}", f"--cpu={int(timeout) + 5}",
              f"--fsize={256 * 2 ** 20}", "--nofile=256", "--core=0"]
    if box.as_root:
        limits.append("--nproc=64")        # counts this submission's own user id only
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        script = " && ".join(mounts + ['exec "$@"'])
        return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script,
                "sh", *limits, "--", *drop, *start], bwrap
    # without root the sandbox shares the caller's user id: allow what it already runs + 64
    own = sum(1 for status in Path("/proc").glob("[0-9]*/status") if _real_uid(status) ==
              os.getuid())
    return [*limits, f"--nproc={own + 64}", "--", *start], bwrap


def _real_uid(status: Path) -> int | None:
    try:
        return int(next(line for line in status.read_text().splitlines()
                        if line.startswith("Uid:")).split()[1])
    except (OSError, StopIteration, ValueError):
        return None


def _kill_user(uid: int) -> None:
    """Kill every process whose real user id is ``uid`` (a sandbox's own id: all of them were
    started by that sandbox)."""
    for status in Path("/proc").glob("[0-9]*/status"):
        if _real_uid(status) == uid:
            try:
                os.kill(int(status.parent.name), signal.SIGKILL)
            except OSError:
                continue


_uids = iter(range(2_000_000_000 + (os.getpid() % 1000) * 100_000, 4_000_000_000))
_uid_lock = threading.Lock()


def _next_uid() -> int:
    with _uid_lock:
        return next(_uids)


def _pipe_with(data: bytes) -> int:
    """The read end of a pipe already holding ``data`` (at most a pipe's capacity)."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read


def run_sandboxed(box: Sandbox, binds: list[tuple[str, str]], argv: list[str],
                  timeout: float) -> tuple[str, bytes, str, int, int]:
    """Run ``argv`` in a fresh sandbox: (status ``done`` or ``timeout``, its standard output (at
    most RESULT_LIMIT bytes), the end of its standard error, its exit status, its user id).
    Every process it started is killed before this returns."""
    uid = _next_uid()
    args_read, args_write = os.pipe()
    seccomp_read = None
    try:
        seccomp_read = _pipe_with(box.seccomp)
        command, bwrap_args = _sandbox_command(box, binds, uid, timeout, args_read,
                                               seccomp_read, argv)
        os.write(args_write, b"".join(arg.encode() + b"\0" for arg in bwrap_args))
        os.close(args_write)
        args_write = None
        with box.lock:
            if box.stopping:
                raise SandboxUnavailable("the grader is stopping")
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       stdin=subprocess.DEVNULL, start_new_session=True,
                                       pass_fds=(args_read, seccomp_read))
            box.running[process.pid] = process
    finally:
        for fd in (args_read, args_write, seccomp_read):
            if fd is not None:
                os.close(fd)
    chunks: list[bytes] = []
    size = 0

    def read() -> None:
        nonlocal size
        while chunk := process.stdout.read1(65536):
            if size < RESULT_LIMIT:
                chunks.append(chunk[:RESULT_LIMIT - size])
            size += len(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        process.wait(timeout=timeout)
        status = "done"
    except subprocess.TimeoutExpired:
        status = "timeout"
    finally:
        _end(box, process, uid)
        reader.join(timeout=5)
    stderr = process.stderr.read()[-2000:].decode(errors="replace")
    return status, b"".join(chunks), stderr, process.returncode, uid


def _end(box: Sandbox, process: subprocess.Popen, uid: int) -> None:
    """Kill a sandbox's processes (its process group, and as root everything of its user id)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if box.as_root:
        _kill_user(uid)
    process.wait()
    with box.lock:
        box.running.pop(process.pid, None)


def check_sandbox(box: Sandbox, timeout: float = 60) -> None:
    """The start-up check: run ``print('sandbox ok')`` in one sandbox; raise
    :class:`SandboxUnavailable` with one line saying why when it does not."""
    empty = Path(tempfile.mkdtemp(prefix="check-", dir=box.stage))
    try:
        empty.chmod(0o755)
        status, out, err, code, _ = run_sandboxed(
            box, [(str(empty), "/grader")], [box.python, "-c", "print('sandbox ok')"], timeout)
    finally:
        shutil.rmtree(empty, ignore_errors=True)
    if status != "done" or code != 0 or out.strip() != b"sandbox ok":
        reason = next((line.strip() for line in reversed(err.splitlines()) if line.strip()),
                      f"exit status {code}" if status == "done" else f"no answer in {timeout:g} s")
        raise SandboxUnavailable(
            f"the sandbox cannot start on this machine ({cell_text(reason, 300)}): bubblewrap "
            "needs unprivileged user namespaces (or run as root); --engine otter grades "
            "without it, unsafely")
