"""Speed, memory and curve fidelity of a time-series link against the same data linked as an
ordinary child table (issue 17).

A generated database (``make_database``): ``person`` (p_id, age, sex) and ``measure``
(m_id, p_id, time, v0..v4): every person has a series of 40 to 60 points (50 on average) at
irregular times over its own span, each variable a smooth curve (rise and decay, a seasonal
wave) whose shape depends on the person's age and sex, plus noise.

For each size (``--individuals``, default 10^3, 10^4, 10^5), in freshly spawned interpreters
(``_common.measure_isolated``: the seconds of ``avatarize_database`` alone and the peak
resident memory of that process), k = 20, ncp = 5:

- ``time_series``: ``add_link(..., method="time_series")`` (FPCA, default grid and
  components);
- ``ordinary``: the same tables linked with ``linear_sum_assignment`` (``--ordinary-method``),
  each measurement row avatarized on its own and relinked.

Mean-curve distance (``relational.scenarios.mean_curve_distance``): each released series
interpolated on 50 points of its own span, mean over the normalised time grid of |avatar mean
curve - original mean curve| / the originals' point-wise std, averaged over the 5 variables.

Issue 17's target: 10^5 individuals x 50 points x 5 variables in under 2 minutes on the CPU.

    .venv/bin/python benchmarks/bench_time_series.py --markdown
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from _common import measure_isolated, print_tables, run_and_record

PACKAGES = ("gpu_avatar", "numpy", "pandas", "scipy")
N_VARIABLES, GRID = 5, 50
TARGET_INDIVIDUALS, TARGET_SECONDS = 100_000, 120


def make_database(n_individuals: int, seed: int = 0) -> dict[str, pd.DataFrame]:
    """``person`` and ``measure`` (see the module docstring), identical for identical
    arguments."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(20, 80, n_individuals)
    sex = rng.choice(np.array(["F", "M"], dtype=object), n_individuals)
    lengths = rng.integers(40, 61, n_individuals)
    owner = np.repeat(np.arange(n_individuals), lengths)
    start = rng.uniform(0, 30, n_individuals)
    span = rng.uniform(50, 150, n_individuals)
    where = rng.random(len(owner))  # irregular times: sorted uniform positions in the span
    where = where[np.lexsort((where, owner))]
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    where[first] = 0.0  # every series starts at its start
    time = start[owner] + where * span[owner]
    columns = {"m_id": np.arange(len(owner)), "p_id": owner, "time": time}
    scale = (age / 50.0)[owner]
    male = (sex == "M")[owner]
    for j in range(N_VARIABLES):
        rise = (1 + j) * where * np.exp(-3 * where * scale)
        wave = 0.3 * np.sin(2 * np.pi * (where * (1 + j) + 0.2 * male))
        columns[f"v{j}"] = 10 * (rise + wave) + rng.normal(0, 0.3, len(owner))
    person = pd.DataFrame({"p_id": np.arange(n_individuals), "age": age, "sex": sex})
    return {"person": person, "measure": pd.DataFrame(columns)}


def mean_curve_distance(original: pd.DataFrame, avatar: pd.DataFrame,
                        n_original: int, n_avatar: int) -> float:
    """The mean over variables of ``scenarios.mean_curve_distance`` between two measure
    tables (their ``p_id`` as positions: 0..n-1 in the originals, by key in the avatars)."""
    from gpu_avatar.relational.scenarios import mean_curve_distance as distance
    from gpu_avatar.relational.time_series import layout, series_curves

    variables = [f"v{j}" for j in range(N_VARIABLES)]
    curves = []
    for table, n in ((original, n_original), (avatar, n_avatar)):
        rows = pd.factorize(table["p_id"])[0]
        series = layout(rows, table["time"].to_numpy(dtype=np.float64), n)
        curves.append(series_curves(series, table, variables, GRID))
    return float(np.mean([distance(curves[0][v], curves[1][v]) for v in variables]))


def run(tables: dict[str, pd.DataFrame], method: str, seed: int) -> dict:
    import gpu_avatar as ga

    db = ga.Database()
    db.add_table("person", tables["person"], primary_key="p_id", types={"sex": "categorical"})
    series = method == "time_series"
    db.add_table("measure", tables["measure"], primary_key="m_id",
                 time="time" if series else None)
    db.add_link("person", "p_id", "measure", "p_id", method=method)
    result = ga.avatarize_database(db, k=20, ncp=5, seed=seed)
    released = result.tables
    return {
        "curve_distance": mean_curve_distance(
            tables["measure"], released["measure"], len(tables["person"]),
            len(released["person"])),
        "rows": len(released["measure"]),
    }


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--individuals", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--ordinary-method", default="linear_sum_assignment",
                        help="the ordinary link's method (default: linear_sum_assignment)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="also print for RESULTS.md")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    results: dict = {}
    for n in args.individuals:
        for method in ("time_series", args.ordinary_method):
            run_and_record(results, (n, method), 22, measure_isolated, make_database, run,
                           (n, args.seed), {"method": method, "seed": args.seed})
    rows = []
    for (n, method), outcome in results.items():
        if isinstance(outcome, str):
            rows.append([f"{n:,}", method, "-", "-", "-", "-", outcome])
            continue
        rows.append([f"{n:,}", method, f"{outcome.details['rows']:,}", f"{outcome.seconds:.2f}",
                     f"{outcome.peak_mb:,.0f}", f"{outcome.details['curve_distance']:.3f}", "ok"])
    target = results.get((TARGET_INDIVIDUALS, "time_series"))
    caption = (f"Time series: individuals x ~{GRID} points x {N_VARIABLES} variables, k = 20, "
               f"ncp = 5, seed = {args.seed}; time_series link against {args.ordinary_method}")
    if target is not None and not isinstance(target, str):
        met = "met" if target.seconds < TARGET_SECONDS else "NOT met"
        caption += (f". Target (10^5 individuals in < {TARGET_SECONDS} s): "
                    f"{target.seconds:.1f} s -> {met}")
    print_tables(caption, ["individuals", "link", "avatar rows", "seconds", "peak MB",
                           "mean-curve distance", "status"], rows, args.markdown, PACKAGES)


if __name__ == "__main__":
    main()
