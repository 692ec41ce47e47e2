"""Command line: ``python -m attnlib.experiments [NAME ...]`` reruns and stores experiments.

Without a name it lists the registered experiments. ``--all`` reruns every one of them.
"""

from __future__ import annotations

import argparse
import time

from . import registry, run, save


def main(argv: list[str] | None = None) -> None:
    experiments = registry()
    parser = argparse.ArgumentParser(prog="python -m attnlib.experiments", description=__doc__)
    parser.add_argument("names", nargs="*", help="experiments to run and store")
    parser.add_argument("--all", action="store_true", help="run every registered experiment")
    args = parser.parse_args(argv)
    names = sorted(experiments) if args.all else args.names
    if not names:
        for name, (_, summary) in sorted(experiments.items()):
            print(f"{name:32s} {summary}")
        return
    for name in names:
        start = time.perf_counter()
        history = run(name, full=True, progress=True)
        path = save(name, history)
        print(f"{name}: saved {path} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
