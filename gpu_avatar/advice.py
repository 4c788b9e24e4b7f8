"""``advise``: the k that meets every privacy target with the least signal loss; for a
database, ``advise_database``: the k whose summary matrix passes in every cell.

One sweep over candidate values of k shares what does not depend on k: the encoder and the
projection are fitted once, and one exact neighbour search at the largest candidate gives every
candidate its neighbours (the k nearest by (distance, index) are the first k of the k_max
nearest). Each candidate's avatars are then synthesized with the run's seed, exactly as
``avatarize(df, k=k, seed=seed)`` makes them, and measured with ``privacy_metrics`` and
``signal_metrics``: a candidate's row holds the values those calls give.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .backend import resolve_backend, to_pandas
from .encoding import EncodedTable, fresh_identifiers, validate_table
from .encoding.identifying import refuse_undeclared
from .encoding.rare import protection_if_grouped
from .errors import AvatarError, AvatarTypeError, FixableError
from .metrics import attack_metrics, privacy_metrics, signal_metrics
from .metrics.catalogue import (
    CATALOGUE,
    HIGHER,
    LOWER,
    PRIVACY_TARGETS,
    SIGNAL_TARGETS,
    SUMMARY_METRICS,
    Target,
)
from .metrics.checks import check_same_table
from .metrics.holdout import attack_seed
from .neighbours import nearest_neighbours
from .parameters import (
    ADVICE_CANDIDATES,
    ADVICE_MARGIN,
    AvatarParameters,
    MetricOptions,
    avatar_parameters,
    check_integer,
    check_number,
    metric_options,
    seed_sequence,
)
from .pipeline.copies import redraw_unique_copies
from .pipeline.model import check_device_memory, decode_avatars, fit_model, synthesize_avatars
from .planning.model import planned_parameters
from .progress import ProgressLike, Steps
from .synthesis import shuffle_order


@dataclass
class Advice:
    """The recommended parameters and the evidence behind them.

    ``k`` and ``ncp``: the recommendation (``k`` None when no candidate meets every target);
    ``parameters``: the run's parameters with that ``k`` and the sweep's seed (pass them to
    ``avatarize``); ``candidates``: one row per candidate k, every privacy metric, the mean
    Hellinger distance and correlation difference, a pass flag per target and ``passed``;
    ``reason``: why this candidate, or what to try next; ``shortfall``: when none passes,
    what the closest misses (``reason`` without the advice, which names Python keywords).
    """

    k: int | None
    ncp: int
    parameters: AvatarParameters | None
    candidates: pd.DataFrame = field(repr=False)
    reason: str
    targets: dict[str, Target] = field(repr=False, default_factory=dict)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # databases: per table
    shortfall: str = ""


TABLE_TARGETS = tuple(PRIVACY_TARGETS)  # what advise judges
DATABASE_TARGETS = SUMMARY_METRICS  # what advise_database judges: the summary matrix's cells


def check_targets(given: Mapping[str, Any] | None, judged: Sequence[str] = TABLE_TARGETS,
                  name: str = "targets") -> dict[str, float]:
    """``given`` thresholds by metric name, checked: each names a metric of ``judged`` and is a
    number. ``name``: the argument in the caller's words (the command line's ``--targets``)."""
    given = {} if given is None else given
    if not isinstance(given, Mapping):
        raise AvatarTypeError(f"{name} must map privacy metric names to thresholds, got {given!r}")
    unknown = [metric for metric in given if metric not in judged]
    if unknown:
        raise AvatarError(f"{name} names {unknown}, not among the privacy metrics the advice "
                          f"judges: {', '.join(judged)}")
    return {metric: check_number(f"{name}[{metric!r}]", threshold, -np.inf)
            for metric, threshold in given.items()}


def _targets(given: Mapping[str, Any] | None, margin: float,
             judged: Sequence[str] = TABLE_TARGETS) -> dict[str, Target]:
    """The targets of the ``judged`` privacy metrics, with ``given`` thresholds replacing the
    defaults they name, each moved ``margin`` (a share of the threshold) in the direction that
    makes it harder."""
    thresholds = {name: PRIVACY_TARGETS[name].threshold for name in judged
                  if PRIVACY_TARGETS[name].threshold is not None}
    thresholds.update(check_targets(given, judged))
    harder = {HIGHER: 1 + margin, LOWER: 1 - margin}
    return {name: Target(PRIVACY_TARGETS[name].better,
                         threshold * harder[PRIVACY_TARGETS[name].better])
            for name, threshold in thresholds.items()}


def _refuse_unmeasured(given: Mapping[str, Any] | None, options: MetricOptions,
                       holdout: Any) -> None:
    """A target whose metric ``options`` (and the holdout) do not measure would read as met:
    refused, saying what it needs (``Metric.needs``)."""
    for name in check_targets(given):
        need = CATALOGUE[name].needs
        if need and (holdout if need == "holdout" else getattr(options, need)) is None:
            raise FixableError(f"targets: {name} is not measured without {need}",
                               {"python": f"give {need}= (or drop the target)",
                                "cli": f"give --{need.replace('_', '-')} (or drop the target)"})


def _candidates(given: Sequence[int] | None, n: int) -> list[int]:
    if given is None:
        usable = [k for k in ADVICE_CANDIDATES if k < n]
        return usable or [max(2, n // 2)]
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence) or not given:
        raise AvatarTypeError(f"candidates must be a non-empty list of k values, got {given!r}")
    values = sorted({check_integer("candidates", k, 2) for k in given})
    if values[-1] >= n:
        raise AvatarError(f"candidates: k = {values[-1]} must be below the {n} rows of the table")
    return values


def advise(
    df: pd.DataFrame,
    *,
    targets: Mapping[str, float] | None = None,
    candidates: Sequence[int] | None = None,
    margin: float = ADVICE_MARGIN,
    holdout: pd.DataFrame | None = None,
    options: MetricOptions | Mapping[str, Any] | None = None,
    parameters: AvatarParameters | None = None,
    progress: ProgressLike = None,
    plan: Any = None,
    **settings: Any,
) -> Advice:
    """Sweep ``candidates`` values of k (default ``ADVICE_CANDIDATES`` below the row count)
    and recommend the one that meets every privacy target (``metrics.catalogue``; ``targets``
    maps metric names to thresholds that replace the defaults) with the least signal loss
    (the lowest mean Hellinger distance, then correlation difference), preferring those that
    release no copy of a row one original alone holds (the column ``unique_copies``; with
    ``unique_copies="redraw"``, those left after the redraws). A candidate passes
    with ``margin`` to spare (a share of each threshold: hidden rate above 91.8 % rather than
    90 % at the default 0.02), so that avatarizing with another seed still passes. Given a
    ``holdout`` (rows kept out of ``df``: ``split_holdout``), the candidates that meet the
    targets are also attacked (``attack_metrics`` on the release, seeded by ``attack_seed`` of
    the run's seed, as ``prepare_release`` measures them; the column
    ``measurable_attack_risks`` counts the risks of attacks that learn from the release), and
    the recommendation is one with no measurable risk, else with the fewest (the reason says
    which). ``options``: the privacy metrics' ``MetricOptions``, as the release will be
    measured (a target whose metric they do not measure is refused).

    The other parameters are ``avatarize``'s (``ncp``, ``seed``, ``types``, ...: as
    ``parameters`` and/or keywords; ``k`` is what is swept). A seed is drawn when none is
    given, and kept in ``Advice.parameters``: avatarizing with it reproduces the measured
    candidate exactly; another seed gives another draw of the same law. ``plan``: as
    ``avatarize`` takes it.
    """
    frame = to_pandas(df)
    validate_table(frame)
    parameters = planned_parameters(avatar_parameters(parameters, **settings), plan,
                                    frame.columns)
    refuse_undeclared(frame, parameters.types)  # before any work, as avatarize
    if parameters.batch_size is not None and len(frame) > parameters.batch_size:
        raise AvatarError("advise sweeps a table avatarized in one batch; give it without "
                          f"batch_size (here {parameters.batch_size}) or advise on a sample")
    margin = check_number("margin", margin, 0.0, 1.0)
    options = metric_options(options)
    _refuse_unmeasured(targets, options, holdout)
    targets = _targets(targets, margin)
    ks = _candidates(candidates, len(frame))
    if holdout is not None:
        holdout = check_same_table(frame, to_pandas(holdout), "holdout", same_rows=False)
    sequence = seed_sequence(parameters.seed)
    backend = resolve_backend(parameters.backend)
    check_device_memory(backend, len(frame), frame.shape[1], ks[-1], parameters.ncp)
    steps = Steps(progress, "advise", total=1 + len(ks))
    steps.start("fit and neighbours")
    model, encoded = fit_model(frame, parameters.replace(k=ks[-1]), backend)
    run = model.parameters
    coordinates = model.projection.transform(encoded, run.ncp)
    indices, distances = nearest_neighbours(coordinates, ks[-1], backend, run.engine)
    steps.advance()
    identifiers = {name: fresh_identifiers(frame[name], len(frame))
                   for name in model.encoder.identifier_columns_}
    rows, lifts = [], {}
    first = backend.xp.ascontiguousarray  # the k nearest: the first k of the k_max nearest
    for k in ks:
        steps.start(f"k = {k}")
        continuous, codes, _ = synthesize_avatars(
            model, encoded, first(indices[:, :k]), first(distances[:, :k]),
            np.random.SeedSequence(sequence.entropy))
        avatars = decode_avatars(model, frame, EncodedTable(continuous, codes,
                                                            encoded.n_modalities),
                                 coordinates, identifiers)
        if run.unique_copies == "redraw":  # as avatarize_rows
            avatars, _ = redraw_unique_copies(
                model, frame, avatars, encoded, first(indices[:, :k]), first(distances[:, :k]),
                coordinates, identifiers, np.random.SeedSequence(sequence.entropy))
        privacy = privacy_metrics(  # as result.privacy_metrics() measures
            frame, avatars, options.with_defaults(ncp=run.ncp, check_alignment=False),
            holdout=holdout, types=dict(run.types), backend=backend)
        signal = signal_metrics(frame, avatars, types=dict(run.types), backend=backend)
        row = _row(k, privacy, signal, targets)
        lifts[k] = protection_if_grouped(privacy.column_direct_match_protection_per_variable,
                                         model.encoder.categorical_columns_)
        if holdout is not None and row["passed"]:  # the attacks of a candidate worth taking
            released = avatars.iloc[shuffle_order(len(frame), sequence)]  # as avatarize
            with warnings.catch_warnings():  # on how many queries: the release's run says
                warnings.simplefilter("ignore", UserWarning)
                attacks = attack_metrics(frame, released, holdout, types=dict(run.types),
                                         seed=attack_seed(int(sequence.entropy)),
                                         backend=backend)
            row[ATTACK_RISKS] = len(attacks.measurable_risks)
        rows.append(row)
        steps.advance()
    steps.close()
    table = pd.DataFrame(rows).set_index("k")
    return _recommend(table, targets, run.replace(seed=int(sequence.entropy), backend=backend.name),
                      margin, lifts)


def _row(k: int, privacy, signal, targets: Mapping[str, Target]) -> dict[str, Any]:
    row: dict[str, Any] = {"k": k}
    row.update({name: getattr(privacy, name) for name in PRIVACY_TARGETS})
    row["distance_to_closest_baseline"] = privacy.distance_to_closest_baseline
    row[UNIQUE_COPIES] = privacy.exact_copies_shared.get(1, 0)
    row.update({name: getattr(signal, name) for name in SIGNAL_TARGETS})
    flags = {f"{name} passed": target.passed(row[name]) for name, target in targets.items()}
    row.update(flags)
    row["passed"] = all(flag is not False for flag in flags.values())
    return row


def _recommend(table: pd.DataFrame, targets: Mapping[str, Target], run: AvatarParameters,
               margin: float, lifts: Mapping[int, float] | None = None):
    """The passing candidate with the least signal loss (among those without copies of
    unique rows if any is, and given a holdout, with the fewest measurable attack risks), or
    why none passes (the pass flag of a target
    ``name``: the column ``"<name> passed"``), and, given ``lifts`` (per k, the
    column_direct_match_protection that grouping rare modalities would give), what grouping
    would lift."""
    loss = ["hellinger_mean", "correlation_difference_ratio"]
    passing = table[table["passed"]]
    if len(passing):
        attacks = copies = ""
        if UNIQUE_COPIES in table:
            fewest = int(passing[UNIQUE_COPIES].min())
            passing = passing[passing[UNIQUE_COPIES] == fewest]
            copies = ("" if not fewest else
                      f" (each candidate that meets them copies rows one original alone holds, "
                      f"this one {fewest}: unique_copies='redraw' draws them again)")
        if ATTACK_RISKS in table:
            fewest = int(passing[ATTACK_RISKS].min())
            passing = passing[passing[ATTACK_RISKS] == fewest]
            attacks = (" and shows no measurable attack risk against the holdout" if not fewest
                       else f" and shows the fewest measurable attack risks against the holdout "
                       f"({fewest}: none that meets the targets shows none; the verdict names "
                       "them)")
        k = int(passing.sort_values(loss, na_position="last").index[0])
        row = table.loc[k]
        met = [f"{name} {targets[name].text()}" for name in targets
               if row[f"{name} passed"] in (True,)]
        reason = (
            f"k = {k} meets every privacy target measured ({', '.join(met)}; with a "
            f"{100 * margin:g} % margin){attacks} with the least signal loss among the "
            f"{len(passing)} candidate(s) that do: mean Hellinger "
            f"{row['hellinger_mean']:.3f}, correlation difference "
            f"{row['correlation_difference_ratio']:.2f}{copies}"
        )
        return Advice(k, run.ncp, run.replace(k=k), table, reason, dict(targets))
    failed = {k: [f"{n} {table.loc[k, n]:.3g} (target {targets[n].text()})" for n in targets
                  if table.loc[k, f"{n} passed"] in (False,)] for k in table.index}
    closest = min(failed, key=lambda k: (len(failed[k]), -k))
    reason = (
        f"no candidate k in {list(table.index)} meets every privacy target (with a "
        f"{100 * margin:g} % margin); the closest, k = {closest}, misses "
        f"{', '.join(failed[closest])}"
    )
    direct = "column_direct_match_protection"
    lifted = (lifts or {}).get(closest)
    if (lifted is not None and table.loc[closest].get(f"{direct} passed") in (False,)
            and lifted > table.loc[closest, direct]):
        reason += (f"; grouping the rare modalities of the categorical columns would release "
                   f"none of their unique values, lifting {direct} to {lifted:.3g}")
    return Advice(None, run.ncp, None, table, f"{reason}; {next_steps(PYTHON_NAMES)}",
                  dict(targets), shortfall=reason)


ATTACK_RISKS = "measurable_attack_risks"  # given a holdout: attacks that learn from the release
UNIQUE_COPIES = "unique_copies"  # avatars identical to a row one original alone holds
PYTHON_NAMES = {"candidates": "candidates=[...]", "ncp": "ncp", "weights": "column_weights",
                "rare": "rare_modalities"}
COMMAND_LINE_NAMES = {"candidates": "--candidates K ...", "ncp": "--ncp",
                      "weights": "--column-weights", "rare": "--rare-modalities"}


def next_steps(names: Mapping[str, str]) -> str:
    """What to try when no candidate passes, with the options' ``names`` in the caller's
    interface (Python keywords here, command-line options in the CLI)."""
    return (f"try larger k ({names['candidates']}), more projection axes ({names['ncp']}), "
            f"{names['weights']} that lower the weight of identifying columns, or fewer "
            f"modalities (group rare ones: {names['rare']})")


def advise_database(
    db: Any,
    *,
    targets: Mapping[str, float] | None = None,
    candidates: Sequence[int] | None = None,
    margin: float = ADVICE_MARGIN,
    repeats: int = 1,
    parameters: AvatarParameters | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    assignment_block_size: int | None = None,
    progress: ProgressLike = None,
    plan: Any = None,
    **settings: Any,
) -> Advice:
    """``advise`` for a database: every candidate k (capped below the row count of each table
    that ``overrides`` gives no k of its own) runs ``avatarize_database`` with ``repeats``
    seeds (the first: the run's; more judge other draws too: a table of 50 individuals moves
    its hidden rate by 2 points per individual, and by up to 10 from one seed to another), and
    its privacy summary matrices (each individual-level table against each table, worst
    scenario per cell) are judged: a candidate passes when every cell's hidden rate and median
    local cloaking, at their worst over the repeats, pass their targets with ``margin`` to
    spare (``targets`` replaces the thresholds it names among ``DATABASE_TARGETS``, e.g.
    ``{"hidden_rate": 95}``). The recommendation is the passing candidate with the lowest mean
    Hellinger distance over the tables (``Advice.overrides`` hold the caps); the other
    arguments are ``avatarize_database``'s."""
    from .relational.linking import avatarize_database
    from .relational.scenarios import STANDALONE
    from .relational.schema import Database
    from .relational.treatments import planned_database

    if not isinstance(db, Database):
        raise AvatarTypeError(f"expected a gpu_avatar.Database, got {type(db).__name__}")
    if plan is not None:
        db = planned_database(db, plan)
    base = avatar_parameters(parameters, **settings)
    margin = check_number("margin", margin, 0.0, 1.0)
    repeats = check_integer("repeats", repeats, 1)
    targets = _targets(targets, margin, DATABASE_TARGETS)
    sizes = {name: len(table.data) for name, table in db.tables.items()}
    ks = _candidates(candidates, max(sizes.values()))
    sequence = seed_sequence(base.seed)
    # the run's seed, then others drawn from it (the same for every candidate)
    seeds = [int(sequence.entropy), *map(int, sequence.generate_state(repeats - 1, np.uint64))]
    steps = Steps(progress, "advise_database", total=len(ks))
    rows, run_overrides = [], {}
    for k in ks:
        steps.start(f"k = {k}")
        merged = {name: dict((overrides or {}).get(name, {})) for name in sizes}
        for name, n in sizes.items():  # k capped below the row count of a table without its own
            if n <= k and "k" not in merged[name]:
                merged[name]["k"] = n - 1
        run_overrides[k] = {name: o for name, o in merged.items() if o}
        summaries = []
        for repeat, seed in enumerate(seeds):
            result = avatarize_database(db, parameters=base.replace(k=k, seed=seed),
                                        overrides=run_overrides[k],
                                        assignment_block_size=assignment_block_size)
            summaries.append(result.metrics_summary())
            if repeat == 0:  # the signal of the run's own seed: the release's
                signal = result.signal_metrics().to_frame()
        summary = pd.concat(summaries)
        row: dict[str, Any] = {"k": k}
        for name, target in targets.items():
            worst = PRIVACY_TARGETS[name].worst(summary[name])
            row[f"worst {name}"] = worst
            row[f"worst {name} passed"] = target.passed(worst)
        row["cells passing"] = f"{int(summaries[0]['passed'].sum())} of {len(summaries[0])}"
        standalone = signal[signal["scenario"] == STANDALONE]
        row["hellinger_mean"] = float(standalone["hellinger_mean"].mean())
        row["correlation_difference_ratio"] = float(
            standalone["correlation_difference_ratio"].mean())
        row["passed"] = all(row[f"worst {name} passed"] is not False for name in targets)
        rows.append(row)
        steps.advance()
    steps.close()
    table = pd.DataFrame(rows).set_index("k")
    run = base.replace(seed=int(sequence.entropy))
    advice = _recommend(table, {f"worst {n}": t for n, t in targets.items()}, run, margin)
    if advice.k is not None:
        advice.overrides = run_overrides[advice.k]  # what the measured run was given
    return advice
