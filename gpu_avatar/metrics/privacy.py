"""Privacy metrics: how well the avatars protect the individuals they come from.

Distances live in a metric projection fitted on the ORIGINALS (FAMD/PCA/MCA as in the
avatarization, missing values imputed for this projection only, no missing indicators), first
``ncp`` axes; the unshuffled avatars are projected with the same model. Definitions (see
docs/spec/metrics.md, section 2; the last five are this project's, in the reference
product's spirit):

- ``hidden_rate``: % of originals whose nearest avatar is not their own; a tie between the own
  avatar and another counts as hidden only when the other has the lower index.
- ``local_cloaking``: median over i of ``#{j != i : d(x_i, y_j) <= d(x_i, y_i)}``.
- ``distance_to_closest``: median over avatars of the distance to the closest original.
  Reported, not judged: its scale is the table's. Read it beside
  ``distance_to_closest_baseline``, the originals' median distance to their nearest OTHER
  original in the same space (and, given a holdout, ``holdout_distance_to_closest``, the
  holdout rows' median distance to their closest original).
- ``closest_distances_ratio``: median over avatars of d1 / d2 (closest / second closest
  original; 1 when d2 = 0); ``closest_distances_ratio_baseline``: the same for each original
  among the other originals.
- ``closer_to_training_rate`` (given a holdout): % of avatars strictly closer to an original
  than to any holdout row (SDMetrics' DCROverfittingProtection counts these). Avatars are
  built from the originals, so most are; the figure shows how far they stay from leaking.
- ``closest_rate``: % of avatars not at risk; at risk = distance to closest below the
  ``closest_rate_percentage_threshold`` percentile of the originals' nearest-other distances
  AND ratio below ``closest_rate_ratio_threshold``.
- ``row_direct_match_protection``: % of original rows with no identical avatar row (all
  variables; identifier columns left out, a missing value equals a missing value).
- ``column_direct_match_protection``: minimum over variables of
  ``100 * (1 - share of originals whose value is unique in the original and appears in the
  avatars)``; per-variable values in ``column_direct_match_protection_per_variable``.
- ``categorical_hidden_rate``: on ``categorical_hidden_rate_variables``, % of originals whose
  own avatar is not the only avatar equal to them on those variables.
- ``correlation_protection_rate``: on ``known_variables``, n2 = originals whose combination is
  unique among originals and that match exactly one avatar (categorical equal, numeric within
  +/- 5 % of the column's original mean); ``100 * (1 - round(n2 * (1 - hidden_rate / 100)) / n)``.
- ``inference_continuous`` / ``inference_categorical``: an attacker knowing
  ``known_variables`` links each original to the closest avatar on them (FAMD of those
  variables; the lowest index among equally close ones) and reads ``target``. Continuous:
  mean absolute error of that guess divided by the error of guessing the avatars' median
  (1 = the link teaches nothing). Categorical: accuracy of the guess; the accuracy of guessing
  the avatars' most frequent value is in ``inference_baseline``.
- ``exact_copies`` (docs/spec/metrics.md, section 8): the number of avatars identical to an
  original row, as for ``row_direct_match_protection``; ``exact_copies_shared`` counts them
  by how many originals hold the copied row (``{1: 3, 2: 16}``: 3 avatars copy a row held by
  one original, 16 a row held by two). A copy of a row many originals share tells less about
  each of them.

"Identical" and "equal" in the direct-match metrics, the categorical hidden rate and the
correlation protection's unique combinations: equal as values, exactly (0.1 + 0.2 is not 0.3,
-0.0 is 0.0, text in any dtype, a missing value equals a missing value), computed on integer
codes in the backend's arrays (``matches.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend, ensure_fits, resolve_backend, to_pandas
from ..encoding import CATEGORICAL, TableEncoder
from ..encoding.kinds import EXCLUDED
from ..errors import AvatarError
from ..neighbours.search import (
    nearest_neighbours,
    nearest_reference,
    nearest_reference_distances,
)
from ..parameters import (
    METRIC_NCP,
    MetricOptions,
    check_types,
    column_kind,
    is_variable,
    metric_options,
)
from ..projection.projection import Projection, projection_kind
from . import matches
from .catalogue import PRIVACY_TARGETS, metrics_frame
from .checks import (
    ALIGNMENT_LEVEL,
    alignment_test,
    check_row_alignment,
    check_same_table,
    check_variables,
    released_part,
    shuffled_error,
)
from .reductions import DistanceRanks, distance_ranks
from .timing import timed

NUMERIC_MATCH_TOLERANCE = 0.05  # of the column's original mean, for correlation protection


@dataclass
class PrivacyMetrics:
    """Privacy metric values (None where not computable) and per-individual vectors."""

    hidden_rate: float
    local_cloaking: float
    distance_to_closest: float
    closest_distances_ratio: float
    closest_rate: float
    row_direct_match_protection: float
    exact_copies: int
    column_direct_match_protection: float
    categorical_hidden_rate: float | None
    correlation_protection_rate: float | None
    inference_continuous: float | None
    inference_categorical: float | None
    local_cloaking_per_individual: np.ndarray = field(repr=False)
    hidden_per_individual: np.ndarray = field(repr=False)
    distance_to_closest_per_avatar: np.ndarray = field(repr=False)
    closest_distances_ratio_per_avatar: np.ndarray = field(repr=False)
    column_direct_match_protection_per_variable: dict[str, float] = field(repr=False)
    exact_copies_shared: dict[int, int] = field(repr=False)
    inference_baseline: float | None = None
    distance_to_closest_baseline: float | None = None
    closest_distances_ratio_baseline: float | None = None
    holdout_distance_to_closest: float | None = None
    closer_to_training_rate: float | None = None
    ncp: int = 0
    seconds: float | None = field(default=None, compare=False)  # to compute them

    @property
    def worst_direct_match_column(self) -> Any:
        """The variable whose values the avatars copy most (``column_direct_match_protection``
        is its protection)."""
        per_variable = self.column_direct_match_protection_per_variable
        return min(per_variable, key=per_variable.get)

    def exact_copies_text(self, tr: Callable[..., str] = str.format) -> str:
        """The exact copies by how many originals hold the copied row (``copies_text``)."""
        return copies_text(self.exact_copies_shared, tr)

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: value, target, passed; for the distances, the same figure
        for the originals among themselves (``baseline``) and, given a holdout, for the
        holdout against the originals (``holdout baseline``)."""
        frame = metrics_frame(
            {name: getattr(self, name) for name in PRIVACY_TARGETS}, PRIVACY_TARGETS
        )
        frame["baseline"] = frame["holdout baseline"] = np.nan
        for name in BASELINES:
            frame.loc[name, "baseline"] = _number(getattr(self, f"{name}_baseline"))
        frame.loc["distance_to_closest", "holdout baseline"] = _number(
            self.holdout_distance_to_closest
        )
        return frame


COPIES_SHOWN = 3  # multiplicities named by ``copies_text``; the rest summed (a short line)


def copies_text(shared: Mapping[int, int], tr: Callable[..., str] = str.format) -> str:
    """Exact copies by how many originals hold the copied row, the first ``COPIES_SHOWN``
    multiplicities named and the rest summed, e.g. "3 of a unique row, 16 of a row held by 2,
    5 of a row held by 3, 40 of rows held by 4 or more"; ``tr`` writes each part (the
    report's translator)."""
    items = sorted(shared.items())
    parts = [
        tr("{avatars} of a unique row", avatars=avatars) if held == 1
        else tr("{avatars} of a row held by {originals}", avatars=avatars, originals=held)
        for held, avatars in items[:COPIES_SHOWN]
    ]
    if len(items) > COPIES_SHOWN:
        parts.append(tr("{avatars} of rows held by {originals} or more",
                        avatars=sum(a for _, a in items[COPIES_SHOWN:]),
                        originals=items[COPIES_SHOWN][0]))
    return ", ".join(parts)


BASELINES = ("distance_to_closest", "closest_distances_ratio")  # reported beside a baseline


def _number(value: float | None) -> float:
    return np.nan if value is None else float(value)


def _ratio(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """d1 / d2 per row, 1 where d2 = 0."""
    ratio = np.ones_like(first)
    np.divide(first, second, out=ratio, where=second > 0)
    return ratio


def metric_coordinates(
    original: pd.DataFrame,
    others: list[pd.DataFrame],
    ncp: int,
    types: Mapping[Any, str] | None,
    imputation: str,
    backend: Backend,
) -> tuple[Any, list[Any], TableEncoder]:
    """Coordinates of the originals and of each table in ``others`` on the first ``ncp`` axes
    of a projection fitted on the originals (identifier columns left out)."""
    variables = [c for c in original.columns if is_variable((types or {}).get(c))]
    types = {c: kind for c, kind in (types or {}).items() if c in variables}
    encoder = TableEncoder(types, imputation, missing_indicators=False)
    encoded = encoder.fit_transform(original[variables])
    kind = projection_kind(encoded.continuous.shape[1], encoded.categorical.shape[1])
    weights = np.ones(len(encoder.variable_sources_))
    projection = Projection(kind, weights, backend).fit(encoded)
    ncp = min(ncp, projection.n_components_)
    coordinates = projection.transform(encoded, ncp)
    projected = [projection.transform(encoder.transform(o[variables]), ncp) for o in others]
    return coordinates, projected, encoder


def _refuse_shuffled(original: pd.DataFrame, avatars: Any, types: Mapping[Any, str],
                     options: MetricOptions, backend: Any, problem: str) -> None:
    """Avatars refused for ``problem`` (their columns, as a release lacks the dropped ones):
    refused first as a shuffled file when the columns both have show them so, since the fix
    is then another file (the unshuffled avatars), not the columns."""
    if not isinstance(avatars, pd.DataFrame) or len(avatars) != len(original):
        return
    shared = [c for c in original.columns if c in avatars.columns]
    try:
        common = check_same_table(original[shared], avatars[shared], "unshuffled_avatars",
                                  same_rows=True)
        backend = resolve_backend(backend)
        x, (y,), _ = metric_coordinates(original[shared], [common], options.ncp, types,
                                        options.imputation, backend)
    except AvatarError:  # nothing shared to test: the columns are the problem
        return
    test = alignment_test(x, y, backend)
    if not test.aligned and 0.5 ** test.pairs <= ALIGNMENT_LEVEL:
        raise shuffled_error(test, then=problem) from None


def _matching_space(
    original: pd.DataFrame, avatars: pd.DataFrame, variables: list[Any], encoder: TableEncoder
) -> tuple[np.ndarray, np.ndarray]:
    """Points where "match on the variables" is a Chebyshev distance <= 1."""
    columns_o, columns_a = [], []
    for column in variables:
        if encoder.specs_[column].kind == CATEGORICAL:
            codes = pd.factorize(pd.concat([original[column], avatars[column]]).astype(object))[0]
            scaled = 4.0 * codes.astype(np.float64)  # different codes are > 1 apart; NaN: -4
        else:
            values = np.concatenate(
                [
                    encoder.continuous_values(encoder.specs_[column], original[column]),
                    encoder.continuous_values(encoder.specs_[column], avatars[column]),
                ]
            )
            tolerance = NUMERIC_MATCH_TOLERANCE * abs(np.nanmean(values[: len(original)]))
            scaled = values / max(tolerance, np.finfo(float).tiny)
            finite = scaled[np.isfinite(scaled)]
            far = (np.abs(finite).max() if finite.size else 0.0) * 2 + 10.0
            scaled = np.where(np.isnan(scaled), far, scaled)  # missing matches missing only
        columns_o.append(scaled[: len(original)])
        columns_a.append(scaled[len(original) :])
    return np.column_stack(columns_o), np.column_stack(columns_a)


def _correlation_protection_rate(
    original: pd.DataFrame,
    avatars: pd.DataFrame,
    variables: list[Any],
    encoder: TableEncoder,
    hidden_rate: float,
    backend: Backend,
) -> float:
    n = len(original)
    unique_rows = np.flatnonzero(matches.unique_rows(original, variables, backend))
    points_o, points_a = _matching_space(original, avatars, variables, encoder)
    # the avatars within 1 on every variable, counted up to 2: only "exactly one" matters
    found = backend.kernels.count_within(backend, backend.asarray(points_o[unique_rows]),
                                         backend.asarray(points_a), 1.0, 2)  # fmt: skip
    n2 = int((found == 1).sum())
    return 100.0 * (1.0 - round(n2 * (1.0 - hidden_rate / 100.0)) / n)


def _inference(
    original: pd.DataFrame,
    avatars: pd.DataFrame,
    known: list[Any],
    target: Any,
    encoder: TableEncoder,
    types: Mapping[Any, str] | None,
    imputation: str,
    backend: Backend,
) -> tuple[str, float, float]:
    """(kind of target, attack value, marginal-guess baseline); see the module docstring."""
    known_types = {c: k for c, k in (types or {}).items() if c in known}
    x, (y,), _ = metric_coordinates(
        original[known], [avatars[known]], len(known) * 1000, known_types, imputation, backend
    )
    closest, _ = nearest_reference(x, y, backend)
    truth, guessed_from = original[target], avatars[target]
    observed = truth.notna().to_numpy()
    if encoder.specs_[target].kind == CATEGORICAL:
        guess = guessed_from.to_numpy()[closest]
        accuracy = float((guess[observed] == truth.to_numpy()[observed]).mean())
        baseline = float((truth[observed] == guessed_from.mode(dropna=True).iloc[0]).mean())
        return CATEGORICAL, accuracy, baseline
    spec = encoder.specs_[target]
    true_values = encoder.continuous_values(spec, truth)
    avatar_values = encoder.continuous_values(spec, guessed_from)
    guess = avatar_values[closest]
    usable = observed & ~np.isnan(guess)
    attack_error = np.abs(guess[usable] - true_values[usable]).mean()
    marginal_error = np.abs(np.nanmedian(avatar_values) - true_values[observed]).mean()
    ratio = attack_error / marginal_error if marginal_error > 0 else np.nan
    return "continuous", float(ratio), float(marginal_error)


def check_metric_columns(original: pd.DataFrame, options: MetricOptions,
                         types: Mapping[Any, str]) -> tuple[list | None, list | None,
                                                            list | None]:
    """The columns the options name, checked against ``original`` and its ``types``:
    ``known_variables``, ``[target]`` and ``categorical_hidden_rate_variables`` (each None
    when not given)."""
    known = check_variables(original, options.known_variables, "known_variables")
    targets = check_variables(original, options.target, "target")
    chr_variables = check_variables(
        original, options.categorical_hidden_rate_variables, "categorical_hidden_rate_variables"
    )
    if types:  # the metric projection drops identifiers from types: catch misspelt names here
        check_variables(original, list(types), "types")
    if targets is not None and len(targets) != 1:
        raise AvatarError(f"target must be one column, got {targets}")
    apart = {c for c, declared in types.items() if not is_variable(declared)}
    for argument, names in (("known_variables", known), ("target", targets)):
        if names and apart.intersection(names):
            raise AvatarError(f"{argument} cannot use column(s) {sorted(apart)}: they are not "
                              "variables (identifiers, excluded or dropped)")
    return known, targets, chr_variables


@timed
def privacy_metrics(
    original: pd.DataFrame,
    unshuffled_avatars: pd.DataFrame,
    options: MetricOptions | Mapping[str, Any] | None = None,
    *,
    types: Mapping[Any, str] | None = None,
    backend: str | Backend = "auto",
    holdout: pd.DataFrame | None = None,
    reduction: Callable[[Any, Any, Backend], DistanceRanks] | None = None,
    **settings: Any,
) -> PrivacyMetrics:
    """Privacy metrics of ``unshuffled_avatars`` (row i = avatar of ``original`` row i).

    ``options``: a ``MetricOptions`` (``ncp``, ``known_variables``, ``target``, thresholds,
    ``engine``, ``check_alignment``, ...), whose names may also be given as keywords
    (``settings``). Avatars that cannot be told from a shuffled file (the release) are
    refused: every metric would then compare an original with someone else's avatar and pass;
    the sign test and its level are in ``checks.py``. ``check_alignment=False`` skips it, for
    avatars aligned by construction or that the test cannot tell (fewer than 40 rows, k close
    to the number of rows). ``holdout``: rows of the same table kept out of the avatarization
    (``split_holdout``), projected with the originals' model, for the holdout distances.

    ``types`` as in ``avatarize`` (use the avatarization's); ``reduction(originals, avatars,
    backend)`` replaces the engine's distance-rank reduction (``gpu_avatar.distributed`` runs
    it as Dask tasks). See the module docstring for every definition.
    """
    options = metric_options(options, **settings).with_defaults(ncp=METRIC_NCP,
                                                                 check_alignment=True)
    held = [] if holdout is None else [to_pandas(holdout)]
    types, original = check_types(types), to_pandas(original)
    if isinstance(original, pd.DataFrame):  # else refused by check_same_table, naming it
        check_metric_columns(original, options, types)
    types, original, avatars, *held = released_part(
        types, original, to_pandas(unshuffled_avatars), *held)
    try:
        avatars = check_same_table(original, avatars, "unshuffled_avatars", same_rows=True)
    except AvatarError as error:
        if options.check_alignment:
            _refuse_shuffled(original, avatars, types, options, backend, str(error))
        raise
    others = [avatars, *(check_same_table(original, h, "holdout", same_rows=False)
                         for h in held)]
    known, targets, chr_variables = check_metric_columns(original, options, types)  # the rest
    ncp, imputation = options.ncp, options.imputation
    backend = resolve_backend(backend)
    # per row: both coordinate sets with their chunks (4 ncp), the two trees' copies and the
    # queries in leaf order (3 ncp), own distances, orders and per-row results (16 values)
    n = len(original)
    ensure_fits(backend, n, 8 * (7 * ncp + 16), f"privacy metrics of {n:,} rows")

    x, (y, *held), encoder = metric_coordinates(original, others, ncp, types, imputation,
                                                 backend)
    if options.check_alignment:
        check_row_alignment(x, y, backend)
    if reduction is None:
        ranks = distance_ranks(x, y, backend, options.engine)
    else:
        ranks = reduction(x, y, backend)
    hidden_rate = 100.0 * float(ranks.hidden.mean())
    ratio = _ratio(ranks.closest, ranks.second_closest)
    _, others_distances = nearest_neighbours(x, min(2, n - 1), backend)
    others_distances = backend.to_numpy(others_distances)
    nearest_other = others_distances[:, 0]
    risk_distance = np.percentile(nearest_other, options.closest_rate_percentage_threshold)
    at_risk = (ranks.closest < risk_distance) & (ratio < options.closest_rate_ratio_threshold)
    holdout_distance = closer_to_training = None
    if held:
        holdout_distance = float(np.median(nearest_reference_distances(held[0], x, backend)))
        to_holdout = nearest_reference_distances(y, held[0], backend)
        closer_to_training = 100.0 * float((ranks.closest < to_holdout).mean())

    compared = encoder.columns_ + [c for c in original.columns  # excluded columns count
                                   if column_kind(types.get(c)) == EXCLUDED]
    direct = matches.direct_matches(original[compared], avatars[compared], backend)
    inference = {"continuous": None, CATEGORICAL: None}
    baseline = None
    if known is not None and targets is not None:
        kind, value, baseline = _inference(
            original, avatars, known, targets[0], encoder, types, imputation, backend
        )
        inference[kind] = value
    return PrivacyMetrics(
        hidden_rate=hidden_rate,
        local_cloaking=float(np.median(ranks.local_cloaking)),
        distance_to_closest=float(np.median(ranks.closest)),
        closest_distances_ratio=float(np.median(ratio)),
        closest_rate=100.0 * (1.0 - float(at_risk.mean())),
        row_direct_match_protection=direct.row_protection,
        exact_copies=sum(direct.exact_copies.values()),
        column_direct_match_protection=min(direct.column_protection.values()),
        categorical_hidden_rate=None
        if chr_variables is None
        else matches.categorical_hidden_rate(original, avatars, chr_variables, backend),
        correlation_protection_rate=None
        if known is None
        else _correlation_protection_rate(
            original, avatars, known, encoder, hidden_rate, backend
        ),
        inference_continuous=inference["continuous"],
        inference_categorical=inference[CATEGORICAL],
        local_cloaking_per_individual=ranks.local_cloaking,
        hidden_per_individual=ranks.hidden,
        distance_to_closest_per_avatar=ranks.closest,
        closest_distances_ratio_per_avatar=ratio,
        column_direct_match_protection_per_variable=direct.column_protection,
        exact_copies_shared=direct.exact_copies,
        inference_baseline=baseline,
        distance_to_closest_baseline=float(np.median(nearest_other)),
        closest_distances_ratio_baseline=float(
            np.median(_ratio(nearest_other, others_distances[:, -1]))
        ),
        holdout_distance_to_closest=holdout_distance,
        closer_to_training_rate=closer_to_training,
        ncp=int(x.shape[1]),
    )
