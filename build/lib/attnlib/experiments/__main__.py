"""Command line: ``python -m attnlib.experiments [NAME ...]`` reruns and stores experiments.

Without a name it lists the registered experiments (``*`` marks those with a stored file).
``--all`` reruns every experiment that has a stored file (long, unstored ones such as
``darcy_large`` run only when named). Every name is checked before anything runs: an unknown
name prints the usage and the list of experiments and exits with status 2.
``--add-manifest`` gives stored files written before manifests existed a manifest built from
their own keys and shapes (nothing is rerun).

``--workers K`` runs the tasks of each experiment on a local Dask cluster of K single-threaded
worker processes; ``--scheduler ADDRESS`` (e.g. ``tcp://10.0.0.5:8786``, a cluster started with
``dask scheduler`` and ``dask worker``) on an existing cluster. The stored histories are the
serial ones, task by task. Ctrl-C stops the run: the experiment being run is not saved (its
stored file is untouched), experiments saved before it stay saved, and the exit status is 130.
"""

from __future__ import annotations

import argparse
import sys
import time

from . import add_manifest, registry, run, save, stored_names


def _listing(experiments: dict) -> str:
    stored = set(stored_names())
    return "\n".join(f"{'*' if name in stored else ' '} {name:32s} {summary}"
                     for name, (_, summary) in sorted(experiments.items()))


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, or 2 for a usage error)."""
    experiments = registry()
    parser = argparse.ArgumentParser(prog="python -m attnlib.experiments", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="experiments to run and store")
    parser.add_argument("--all", action="store_true",
                        help="rerun every experiment that has a stored file")
    parser.add_argument("--add-manifest", action="store_true",
                        help="add a manifest to stored files that have none (no rerun)")
    parser.add_argument("--workers", type=int, default=None, metavar="K",
                        help="run the tasks on a local Dask cluster of K worker processes")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run the tasks on the Dask cluster of this scheduler address")
    args = parser.parse_args(argv)
    if args.workers is not None and (args.workers < 1 or args.scheduler is not None):
        parser.print_usage(sys.stderr)
        print("error: --workers must be a positive integer and cannot be combined with "
              "--scheduler", file=sys.stderr)
        return 2
    if args.add_manifest:
        for name in stored_names():
            if add_manifest(name):
                print(f"{name}: manifest added")
        return 0
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
    for name in names:
        start = time.perf_counter()
        try:
            history = run(name, full=True, progress=True, workers=args.workers,
                          scheduler=args.scheduler)
        except KeyboardInterrupt:
            print(f"\ninterrupted: {name} was not saved (its stored file, if any, is "
                  "untouched)", file=sys.stderr)
            return 130
        path = save(name, history)
        print(f"{name}: saved {path} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
