"""Command line: ``python -m attnbook.experiments [NAME ...]`` reruns and stores experiments.

Without a name it lists the registered experiments (``*`` marks those with a stored file).
``--all`` reruns every experiment that has a stored file (long, unstored ones such as
``darcy_large`` run only when named). Every name is checked before anything runs: an unknown
name prints the usage and the list of experiments and exits with status 2.
``--add-manifest [NAME ...]`` writes the manifest (shape, dtype, SHA-256 of every array) of
stored files from their current contents, without rerunning anything: without names, of every
stored file that has none or one without hashes; with names, of those files (after a
deliberate edit). ``load`` refuses a file without a manifest.

``--workers K`` runs the tasks of each experiment on a local Dask cluster of K single-threaded
worker processes listening on 127.0.0.1 only; ``--scheduler ADDRESS`` (e.g.
``tls://10.0.0.5:8786``, a cluster started with ``dask scheduler`` and ``dask worker``) on an
existing cluster, with ``--tls-ca-file``, ``--tls-cert`` and ``--tls-key`` for ``tls://``
(``tcp://`` is plaintext and unauthenticated, and Dask sends pickles, i.e. code, over it: a
warning says so unless the scheduler is on this machine). The stored histories are the serial
ones, task by task. A failed task stops the run at once with its error (exit status 1).

Runs resume: every finished task of a run (and every finished phase of a run of several,
such as ``darcy_large``) is kept in the experiment's task cache, ``$ATTNBOOK_CACHE/tasks/NAME``
(default ``~/.cache/attnbook/tasks/NAME``, outside the repository), keyed by its settings and the
code's version; a rerun after an interruption or a failure reuses them (a line says how many)
and runs only the rest, with the same result as an uninterrupted run. The cache of a run is
deleted once it is saved; ``--fresh`` deletes it before running.

Ctrl-C (or SIGTERM) stops the run, also during a save: the experiment being run is not saved
and its stored file is untouched (a save is never cut between its steps: an interrupt that
arrives during them is delivered after them, and the message then says the run was saved),
experiments saved before it stay saved, and the exit status is 130 (143 for SIGTERM). The store
is checked for writability before anything runs; a failed save (a full disk) prints the error
and exits with status 1, saying "untouched" only when nothing in the store changed, and
otherwise what is on disk and the command that settles it.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from . import (_split_legacy_manifests, add_manifest, check_writable, registry, run, save,
               stored_files, stored_names, task_cache)
from ._tasks import check_workers, require_distributed


def _listing(experiments: dict) -> str:
    stored = set(stored_names())
    return "\n".join(f"{'*' if name in stored else ' '} {name:32s} {summary}"
                     for name, (_, summary) in sorted(experiments.items()))


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, or 2 for a usage error)."""
    experiments = registry()
    parser = argparse.ArgumentParser(prog="python -m attnbook.experiments", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="experiments to run and store")
    parser.add_argument("--all", action="store_true",
                        help="rerun every experiment that has a stored file")
    parser.add_argument("--add-manifest", action="store_true",
                        help="write the manifest of the named stored files (or of every "
                             "stored file without a hashed one) from their contents (no rerun)")
    parser.add_argument("--workers", type=int, default=None, metavar="K",
                        help="run the tasks on a local Dask cluster of K worker processes")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run the tasks on the Dask cluster of this scheduler address")
    parser.add_argument("--fresh", action="store_true",
                        help="delete the finished tasks an interrupted run left in the task "
                             "cache before running (default: reuse them)")
    for option, what in (("--tls-ca-file", "certificate authority"),
                         ("--tls-cert", "client certificate"), ("--tls-key", "client key")):
        parser.add_argument(option, default=None, metavar="FILE",
                            help=f"TLS {what} (PEM) for a tls:// scheduler")
    args = parser.parse_args(argv)
    security = _security(args)
    if args.workers is not None:
        try:
            check_workers(args.workers)
            if args.scheduler is not None:
                raise ValueError("workers cannot be combined with --scheduler")
        except ValueError as exc:
            parser.print_usage(sys.stderr)
            print(f"error: --{exc}", file=sys.stderr)
            return 2
    if args.add_manifest:
        return _add_manifests(args.names)
    if args.all and args.names:
        parser.print_usage(sys.stderr)
        print("error: give experiment names or --all, not both", file=sys.stderr)
        return 2
    names = stored_names() if args.all else args.names
    if not names:
        print(_listing(experiments))
        return 0
    unknown = [name for name in names if name not in experiments]
    if unknown:
        parser.print_usage(sys.stderr)
        print(f"error: unknown experiment(s) {', '.join(map(repr, unknown))}; nothing was run. "
              f"Known experiments (* = stored):\n{_listing(experiments)}", file=sys.stderr)
        return 2
    try:
        check_writable()
    except OSError as exc:
        print(f"error: {exc.strerror}; nothing was run", file=sys.stderr)
        return 1
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        for name in names:
            status = _run_and_save(name, args, security)
            if status:
                return status
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def _run_and_save(name: str, args: argparse.Namespace, security: object | None) -> int:
    """Run ``name`` with its task cache, save it, and delete the cache; on a failure print
    what happened and what is on disk, and return the exit status (0 when saved)."""
    start = time.perf_counter()
    cache = task_cache(name)
    if args.fresh:
        cache.clear()
    kept = f"; its finished tasks are kept in {cache.folder} and a rerun resumes from them"
    try:
        history = run(name, full=True, progress=True, workers=args.workers,
                      scheduler=args.scheduler, security=security, resume=True)
        path = save(name, history)
    except (KeyboardInterrupt, Terminated) as exc:
        word = "terminated" if isinstance(exc, Terminated) else "interrupted"
        print(f"\n{word}: {_not_saved(name, exc)}{kept}", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    except OSError as exc:
        print(f"error: saving {name} failed ({exc}): {_not_saved(name, exc)}{kept}",
              file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a failed task or experiment
        notes = "".join(f"\n  {note}" for note in getattr(exc, "__notes__", []))
        print(f"error: {name} failed ({type(exc).__name__}: {exc}){notes}; "
              f"{_not_saved(name, exc)}", file=sys.stderr)
        return 1
    cache.clear()
    print(f"{name}: saved {path} in {time.perf_counter() - start:.1f} s")
    return 0


def _not_saved(name: str, exc: BaseException) -> str:
    """What a failure left in the store: ``save`` sets ``stored_state`` when it had begun to
    change it (None or absent: nothing changed)."""
    state = getattr(exc, "stored_state", None)
    return state or f"{name} was not saved (its stored file, if any, is untouched)"


def _security(args: argparse.Namespace) -> object | None:
    """A ``distributed.Security`` from the ``--tls-*`` options (None without them); warns
    when ``--scheduler`` is a plaintext ``tcp://`` address of another machine."""
    address = args.scheduler or ""
    if address.startswith("tcp://") and not address.startswith(("tcp://127.", "tcp://localhost",
                                                                "tcp://[::1]")):
        print("warning: tcp:// is plaintext and unauthenticated and Dask exchanges pickles "
              "(code) over it; use it only on a trusted network, or tls:// with --tls-ca-file, "
              "--tls-cert and --tls-key", file=sys.stderr)
    files = (args.tls_ca_file, args.tls_cert, args.tls_key)
    if not any(files):
        return None
    require_distributed()
    from distributed import Security

    return Security(tls_ca_file=args.tls_ca_file, tls_client_cert=args.tls_cert,
                    tls_client_key=args.tls_key, require_encryption=True)


class Terminated(Exception):
    """Raised in the main thread by SIGTERM, so a run or a save stops like on Ctrl-C."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _add_manifests(names: list[str]) -> int:
    """``--add-manifest``: the named stored files, or every one without a hashed manifest
    (after splitting the older single ``manifests.json`` into one tracked file per run)."""
    if not names:
        try:
            split = _split_legacy_manifests()
        except (OSError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if split:
            print(f"moved the tracked manifests of {len(split)} runs out of manifests.json "
                  "into one NAME.manifest.json each")
    files = stored_files()
    missing = [name for name in names if name not in files]
    if missing:
        print(f"error: no stored file for {', '.join(map(repr, missing))}", file=sys.stderr)
        return 2
    for name in names or files:
        if add_manifest(name, rewrite=bool(names)):
            print(f"{name}: manifest written from its current contents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
