"""Write the README's benchmark tables from the stored benchmark results (never typed by hand).

Usage (from the repository root)::

    python benchmarks/readme_tables.py            # rewrite the tables in README.md
    python benchmarks/readme_tables.py --check    # exit 1 if README.md differs from the JSON

Each table sits in ``README.md`` between the lines ``<!-- begin table: NAME -->`` and
``<!-- end table: NAME -->`` and is built from ``attnlib/experiments/stored/benchmark_*.json``:
``competitors`` (``bench_competitors.py``), ``floor`` (``bench_floor.py``), ``algorithm``
(``bench_algorithm.py``) and ``rerun`` (``bench_rerun.py``: serial against 2 Dask workers).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
#: a competitor's time within this fraction of attnlib's, either way, is named as about even
EVEN = 0.1
COMPETITORS = (("torch_naive", "naive autograd"), ("torch_blocked", "hand-blocked, 256 rows"),
               ("torch_compile", "torch.compile"))


def _load_range(loads: list[float]) -> str:
    return f"{min(loads):.1f}-{max(loads):.1f}"


class _Ratio(NamedTuple):
    """A competitor's time and memory as multiples of attnlib's in one configuration."""
    time: float
    memory: float
    label: str
    dtype: str
    n: int


def _ratio(ours: dict, rival: dict, label: str) -> _Ratio:
    return _Ratio(rival["seconds_median"] / ours["seconds_median"],
                  rival["peak_mb"] / max(ours["peak_mb"], 0.1), label, ours["dtype"], ours["n"])


def competitors_table(bench: dict) -> str:
    """attnlib's time and memory, and each competitor's as a multiple of attnlib's."""
    rows = {(row["impl"], row["dtype"], row["n"]): row for row in bench["rows"]}
    ns = sorted({n for _, _, n in rows})
    lines = ["| n | dtype | attnlib | " + " | ".join(label for _, label in COMPETITORS)
             + " | load avg |", "|---" * (len(COMPETITORS) + 4) + "|"]
    ratios = []
    for dtype in ("float64", "float32"):
        for n in ns:
            ours = rows.get(("attnlib", dtype, n))
            if ours is None:
                continue
            cells, loads = [], list(ours["load"])
            for impl, label in COMPETITORS:
                rival = rows.get((impl, dtype, n))
                if rival is None:
                    cells.append("not run")
                    continue
                loads += rival["load"]
                ratios.append(_ratio(ours, rival, label))
                cells.append(f"{ratios[-1].time:.2f}x time, {ratios[-1].memory:.1f}x memory")
            lines.append(f"| {n} | {dtype} | {ours['seconds_median']:.3g} s, "
                         f"{ours['peak_mb']:.0f} MB | " + " | ".join(cells)
                         + f" | {_load_range(loads)} |")
    return "\n".join(lines) + "\n\n" + _competitors_summary(ratios)


def _competitors_summary(ratios: list[_Ratio]) -> str:
    """Where attnlib was the fastest, its closest competitor in time, the competitors within
    ``EVEN`` of its time, and the smallest memory ratio from n = 2000 on."""
    configurations = sorted({(r.dtype, r.n) for r in ratios})
    beaten = sorted({(r.dtype, r.n) for r in ratios if r.time <= 1})
    closest = min(ratios)
    memory = min((r for r in ratios if r.n >= 2000), key=lambda r: r.memory)
    fastest = (f"attnlib was the fastest in {len(configurations) - len(beaten)} of "
               f"{len(configurations)} configurations run"
               + (" (not at " + ", ".join(f"n = {n} {dtype}" for dtype, n in beaten) + ")"
                  if beaten else ""))
    even = [f"{r.label} at n = {r.n}, {r.dtype} ({r.time:.2f}x)"
            for r in sorted(ratios) if abs(r.time - 1) <= EVEN]
    return (f"In this run {fastest}; its closest competitor in time: {closest.label} at n = "
            f"{closest.n}, {closest.dtype} ({closest.time:.2f}x); within {EVEN:.0%} of its time, "
            f"either way: {', '.join(even) or 'none'}; its smallest memory ratio from "
            f"n = 2000 on: {memory.memory:.1f}x ({memory.label}, n = {memory.n}, {memory.dtype}).")


def floor_table(bench: dict) -> str:
    """attnlib / floor, median over rounds with the range, by n, dtype and threads, beside the
    ratio to the earlier floor rule, and which configurations meet their target (each row's
    ``target``) under each rule."""
    rows = {(row["n"], row["dtype"], row["threads"]): row for row in bench["rows"]}
    ns = sorted({n for n, _, _ in rows})
    threads = sorted({t for _, _, t in rows})
    lines = ["| n | dtype | " + " | ".join(f"{t} thread{'s' if t > 1 else ''}: attnlib, floor, "
                                           "ratio [range]; earlier-floor ratio"
                                           + ("; CPU-time ratio" if t == 1 else "")
                                           for t in threads) + " | target | load avg |",
             "|---" * (len(threads) + 4) + "|"]
    for dtype in ("float64", "float32"):
        for n in ns:
            if (n, dtype, threads[0]) not in rows:
                continue
            cells, loads = [], []
            for t in threads:
                row = rows[(n, dtype, t)]
                loads += row["load"]
                cpu = f"; {row['cpu_ratio_median']:.2f}" if "cpu_ratio_median" in row else ""
                cells.append(f"{row['seconds_median']:.3g} s, {row['floor_seconds_median']:.3g} s, "
                             f"{row['ratio_median']:.2f} [{row['ratio_min']:.2f}, "
                             f"{row['ratio_max']:.2f}]; {row['earlier_ratio_median']:.2f}{cpu}")
            lines.append(f"| {n} | {dtype} | " + " | ".join(cells)
                         + f" | <= {rows[(n, dtype, threads[0])]['target']:g} | "
                         f"{_load_range(loads)} |")

    def judged(key: str) -> str:
        met = [f"n = {n} {dtype} {t} thread{'s' if t > 1 else ''}"
               for (n, dtype, t), row in rows.items() if row[key] <= row["target"]]
        return (f"met by {len(met)} of {len(rows)} configurations"
                + (f" ({', '.join(met)})" if met else ""))

    lines.append(f"\nTarget (median ratio <= the row's target): {judged('ratio_median')}; "
                 f"under the earlier floor rule: {judged('earlier_ratio_median')} "
                 f"({bench['meta']['date_utc']} UTC).")
    return "\n".join(lines)


ALGORITHM_LABELS = {
    "loss_and_grad": "one `attention.loss_and_grad` call",
    "objective": "Algorithm 1's objective (`L_hat + R_hat`) and gradient",
    "train_bare": "one iteration of `algorithm.train` (default history)",
    "train_chapter": ("one iteration as chapter 5 calls it (truth, basin, test risk; history at "
                      "the stored iterations)"),
    "train_chapter_every": "the same, history at every iteration",
}


def algorithm_table(bench: dict) -> str:
    """Per-call and per-iteration times at n, as multiples of one loss_and_grad call, and
    which iterations meet the run's target (``meta["target"]``, median ratio)."""
    lines = [f"| at n = {bench['meta']['n']} | ms (median) | x `loss_and_grad` [range] | "
             "in CPU time |", "|---|---|---|---|"]
    for row in bench["rows"]:
        lines.append(f"| {ALGORITHM_LABELS[row['name']]} | {row['seconds_median'] * 1e3:.3g} | "
                     f"{row['ratio_median']:.2f} [{row['ratio_min']:.2f}, "
                     f"{row['ratio_max']:.2f}] | {row['cpu_ratio_median']:.2f} |")
    iterations = [row for row in bench["rows"] if row["name"].startswith("train")]
    target = bench["meta"]["target"]
    met = [row["name"] for row in iterations if row["ratio_median"] <= target]
    missed = [row["name"] for row in iterations if row["name"] not in met]
    lines.append(f"\nTarget (median ratio <= {target:g}): met by "
                 f"{', '.join(met) or 'none'}; missed by {', '.join(missed) or 'none'}.")
    lines.append(f"Load average {_load_range(bench['load'])}, "
                 f"{bench['meta']['iterations']} iterations per training run, "
                 f"{bench['meta']['rounds']} rounds, {bench['meta']['date_utc']} UTC.")
    return "\n".join(lines)


def rerun_table(bench: dict) -> str:
    """Serial against 2 Dask workers on synthetic grids of busy tasks, by task length, and the
    shortest measured task length from which 2 workers were faster."""
    lines = ["| CPU seconds per task | tasks | serial | 2 workers (start and stop included) | "
             "speed-up | overhead over serial / 2 | load avg |", "|---" * 7 + "|"]
    for row in bench["task_length_sweep"]:
        lines.append(f"| {row['task_seconds']:g} | {row['tasks']} | {row['serial_seconds']:.1f} s "
                     f"| {row['workers2_seconds']:.1f} s | {row['speedup']:.2f}x | "
                     f"{row['overhead_seconds']:.1f} s | "
                     f"{_load_range([row['load_before'], row['load_after']])} |")
    paying = [row["task_seconds"] for row in bench["task_length_sweep"] if row["speedup"] > 1]
    verdict = (f"two workers were faster from tasks of {min(paying):g} CPU seconds on"
               if paying else "two workers were faster at no task length measured")
    lines.append(f"\nIn this run {verdict}; an empty 2-worker cluster took "
                 f"{bench['meta']['cluster_startup_seconds']:.1f} s to start and stop "
                 f"({bench['meta']['date_utc']} UTC).")
    return "\n".join(lines)


TABLES = {"competitors": competitors_table, "floor": floor_table, "algorithm": algorithm_table,
          "rerun": rerun_table}


def render(readme: str) -> str:
    """``readme`` with every marked table rebuilt from its stored benchmark."""
    from attnlib import experiments

    for name, build in TABLES.items():
        pattern = re.compile(rf"(<!-- begin table: {name} -->\n).*?(\n<!-- end table: {name} -->)",
                             re.S)
        if pattern.search(readme) is None:
            raise ValueError(f"README.md has no markers for the {name!r} table")
        table = build(experiments.load_benchmark(name))
        readme = pattern.sub(lambda match: match.group(1) + table + match.group(2), readme)
    return readme


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if README.md is not what the stored results give")
    args = parser.parse_args()
    path = ROOT / "README.md"
    current = path.read_text()
    wanted = render(current)
    if args.check:
        if wanted != current:
            print("README.md's benchmark tables differ from the stored results; run "
                  "python benchmarks/readme_tables.py")
            sys.exit(1)
        print("README.md's benchmark tables match the stored results")
        return
    path.write_text(wanted)
    print(f"wrote the {', '.join(TABLES)} tables into {path}")


if __name__ == "__main__":
    main()
