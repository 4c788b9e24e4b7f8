"""Attack-based risks: singling out, linkability and inference, measured against a holdout.

The definitions are Giomi et al., "A Unified Framework for Quantifying Privacy Risk in
Synthetic Data" (PETS 2023), as the ``anonymeter`` package implements them; the attacks run on
this library's arrays and exact neighbour engines, on every row rather than a sample:

- **singling out**: queries built from the avatars alone (univariate: a value seen once, the
  minimum or maximum of a column; multivariate: ``singling_out_columns`` columns of an avatar,
  each as ``=`` for a category or ``>=``/``<=`` for a number on the avatar's side of the median)
  that match exactly one avatar; success = a query matching exactly one original. The holdout
  count is rescaled to the originals' size by anonymeter's fitted correction.
- **linkability**: the attacker holds two sets of columns of the same people
  (``linkability_columns``, by default the variables split in two halves); an individual is
  linked when one avatar is among the ``n_neighbours`` nearest of both halves.
- **inference**: for each ``secrets`` column, the secret of the nearest avatar on every other
  variable; correct when equal (categories) or within ``INFERENCE_TOLERANCE`` of the guess,
  relatively (numbers).

Distances are anonymeter's mixed-type (Gower-like) distance: per number ``|a - b|`` over the
column's range (over the attacked rows and the avatars), per category 0 when equal and 1
otherwise; a missing value is at 0 from a missing value and at 1 (a whole range) from any
present one (``neighbours/references.py``, exact, ties to the lower avatar index).

Where this differs from anonymeter 1.1.0, on purpose: two missing values count as equal
(anonymeter adds 1, and ranks a number missing against a present one last); the singling-out
rate is over the queries found (anonymeter divides by the number asked for, which lowers the
risk when fewer are found); a number is guessed within the tolerance of ``|guess|`` (anonymeter
divides by the signed guess, so every negative guess counts as right); datetimes and
timedeltas are guessed exactly (anonymeter: exact for every non-numeric column, which they
are in pandas), as a 5 % tolerance on seconds since 1970 would be years.

Each attack also runs against the holdout (people not in the release) and as a random guess
(the baseline). With success rates estimated by Wilson score intervals, the risk is
``(attack - holdout) / (1 - holdout)`` bounded to [0, 1], with its error propagated to a
confidence interval; a risk whose interval starts above 0 is a measurable risk. An attack that
does no better than the random guess, or than on the holdout (one-sided Fisher exact test),
learns nothing from the release, whatever its risk (near a success rate of 1 the risk's formula
magnifies chance differences): it is never the headline.

One module per attack (``singling_out``, ``linkability``, ``inference``), as anonymeter splits
its evaluators, beside the shared ``risk`` statistics, the ``results`` and the prepared
``values``; ``attack_metrics`` checks the parameters and runs them all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...backend import Backend, resolve_backend, to_pandas
from ...errors import AvatarError, AvatarTypeError
from ...parameters import (
    SINGLING_OUT_MODES,
    check_choice,
    check_integer,
    check_number,
    check_types,
    is_variable,
    seed_sequence,
)
from ...planning.model import Plan
from ...progress import ProgressLike, Steps
from ...streams import ATTACK_STREAMS, child
from ..checks import check_same_table, check_variables, released_part
from ..timing import timed
from .inference import INFERENCE_TOLERANCE, inference_attack
from .linkability import linkability_attack
from .results import AttackMetrics, AttackResult
from .singling_out import (
    SINGLING_OUT_COLUMNS,
    SINGLING_OUT_MAX_ATTEMPTS,
    SINGLING_OUT_QUERIES,
    DistinctRows,
    singling_out_attack,
)
from .values import prepare_values, range_scaled

__all__ = [
    "INFERENCE_TOLERANCE", "SINGLING_OUT_COLUMNS", "SINGLING_OUT_MAX_ATTEMPTS",
    "SINGLING_OUT_QUERIES", "AttackMetrics", "AttackResult", "attack_metrics",
]  # fmt: skip


@timed
def attack_metrics(
    original: pd.DataFrame,
    avatars: pd.DataFrame,
    holdout: pd.DataFrame,
    *,
    secrets: Any = None,
    linkability_columns: Sequence[Sequence[Any]] | None = None,
    n_neighbours: int = 1,
    singling_out_modes: Sequence[str] = SINGLING_OUT_MODES,
    singling_out_queries: int = SINGLING_OUT_QUERIES,
    singling_out_columns: int = SINGLING_OUT_COLUMNS,
    singling_out_max_attempts: int = SINGLING_OUT_MAX_ATTEMPTS,
    confidence_level: float = 0.95,
    types: Mapping[Any, str] | None = None,
    seed: Any = None,
    backend: str | Backend = "auto",
    progress: ProgressLike = None,
    plan: Any = None,
) -> AttackMetrics:
    """Singling-out, linkability and inference risks of the release ``avatars`` (any row
    order) of the training rows ``original``, measured against ``holdout`` (rows of the same
    table kept out of the avatarization: ``split_holdout``). See the module docstring.

    ``secrets``: the columns an inference attack guesses (default: every variable), each from
    all the others; ``linkability_columns``: the attacker's two sets of columns (default: the
    variables split in two halves); ``n_neighbours``: avatars per half a link may go through;
    ``types`` as in ``avatarize`` (identifier columns are left out); ``seed`` draws the
    queries and the baselines; ``plan`` (as ``avatarize`` takes it) gives the kinds, ``types``
    over them.
    """
    types = check_types(types)
    given = to_pandas(original)  # its names: a column the attacks leave out is named so
    if plan is not None:
        plan = Plan.of(plan)
        types = plan.types_for(given.columns, types, where=plan.source or "the plan")
    types, original, avatars, holdout = released_part(
        types, given, to_pandas(avatars), to_pandas(holdout))
    avatars = check_same_table(original, avatars, "avatars", same_rows=False)
    holdout = check_same_table(original, holdout, "holdout", same_rows=False)
    if types:
        check_variables(original, list(types), "types")
    variables = [c for c in original.columns if is_variable(types.get(c))]
    if len(variables) < 2:
        raise AvatarError(
            f"the attacks need at least 2 variables (an attacker knows some and guesses "
            f"others), got {variables}"
        )
    secret_names = check_variables(given, secrets, "secrets") or variables
    identifiers = [name for name in secret_names if name not in variables]
    if identifiers:
        raise AvatarError(f"secrets cannot be identifier column(s): {identifiers}")
    halves = _linkability_halves(given, variables, linkability_columns)
    modes = [singling_out_modes] if isinstance(singling_out_modes, str) else list(
        singling_out_modes)
    for mode in modes:
        check_choice("singling_out_modes", mode, SINGLING_OUT_MODES)
    n_queries = check_integer("singling_out_queries", singling_out_queries, 1)
    n_columns = check_integer("singling_out_columns", singling_out_columns, 1, len(variables))
    max_attempts = check_integer("singling_out_max_attempts", singling_out_max_attempts, 1)
    confidence = check_number("confidence_level", confidence_level, 0.0, 1.0)
    if not 0.0 < confidence < 1.0:
        raise AvatarError(f"confidence_level must be strictly between 0 and 1, got {confidence}")
    backend = resolve_backend(backend)
    n_neighbours = check_integer("n_neighbours", n_neighbours, 1,
                                 min(len(avatars), backend.max_k))

    values = prepare_values(original, avatars, holdout, variables, types)
    position = {c: j for j, c in enumerate(variables)}
    sequence = seed_sequence(seed)  # children derived, not spawned: the same seed object
    rngs = {name: np.random.default_rng(child(sequence, stream))  # the same draws every time
            for name, stream in ATTACK_STREAMS.items()}
    steps = Steps(progress, "attacks", total=len(modes) + 1 + len(secret_names))
    results = []
    distinct = DistinctRows.of(values, backend) if modes else None
    for mode in modes:
        with steps.step(f"singling out ({mode})"):
            results.append(singling_out_attack(distinct, values.categorical, mode, n_queries,
                                               n_columns, max_attempts, confidence, backend,
                                               rngs["singling out"]))
    constant = values.constant
    scaled = {name: range_scaled(getattr(values, name), values.avatars, values.categorical,
                                 constant)
              for name in ("original", "holdout")}
    with steps.step("linkability"):
        results.append(linkability_attack(values, scaled,
                                          [[position[c] for c in half] for half in halves],
                                          n_neighbours, confidence, backend, rngs["linkability"]))
    for name in secret_names:
        with steps.step(f"inference of {name}"):
            results.append(inference_attack(values, scaled, position[name], confidence,
                                            backend, rngs["inference"]))
    return AttackMetrics(results)


def _linkability_halves(original, variables, columns) -> list[list[Any]]:
    if columns is None:
        middle = len(variables) // 2
        return [variables[:middle], variables[middle:]]
    if isinstance(columns, str) or not isinstance(columns, Sequence) or len(columns) != 2:
        raise AvatarTypeError(
            "linkability_columns must be two lists of columns (what each of the attacker's two "
            f"sources holds), got {columns!r}"
        )
    halves = [check_variables(original, half, "linkability_columns") for half in columns]
    for half in halves:
        if any(name not in variables for name in half):
            raise AvatarError(f"linkability_columns cannot use identifier columns: {half}")
    return halves
