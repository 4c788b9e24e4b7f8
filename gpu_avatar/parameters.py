"""One validated parameter set for every way to avatarize: ``avatarize``, ``avatarize_parquet``,
``distributed.avatarize``, ``avatarize_database`` (with per-table overrides) and the command
line. Each parameter's name, default, allowed values and check are written here once; the
other modules call these checks for their own arguments.

    params = AvatarParameters(k=10, seed=0)      # checked once, frozen
    ga.avatarize(df, parameters=params)          # or the same names as keywords:
    ga.avatarize(df, k=10, seed=0)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .errors import AvatarError, AvatarTypeError

# Allowed values, one definition each.
# How the encoder treats a column: a variable (continuous, categorical), an identifier
# (pseudonyms), excluded from the method and reattached, or dropped from the release.
KINDS = ("continuous", "categorical", "identifier", "excluded", "dropped")
DATETIME = "datetime"  # declared as "datetime" or "datetime:FORMAT": a continuous column of dates
PSEUDONYM = "pseudonym"  # declared "pseudonym[:STRATEGY[:OPTIONS]]": an identifier's strategy
REATTACH_METHODS = ("row_order", "coordinate_similarity")  # how an excluded column comes back
KIND_HEADS = (*KINDS, DATETIME, PSEUDONYM)  # what a declaration starts with, before any ":"
IMPUTATIONS = ("median", "mean", "mode", "knn")
CATEGORICAL_RULES = ("draw", "argmax")
# How a neighbour at distance 0 (an exact duplicate) is weighted (synthesis.py): "paper" by
# 1 / 1e-12, all the weight; "bounded" as if it were at the row's nearest non-zero distance.
ZERO_DISTANCE_RULES = ("paper", "bounded")
# An avatar identical to an original row that no other original holds (over the columns the
# direct-match metrics compare): "keep" it, or "redraw" its weights and draws until it is not
# (at most ``UNIQUE_COPY_ATTEMPTS`` times; ``pipeline/copies.py``).
UNIQUE_COPIES_RULES = ("keep", "redraw")
# Exact neighbour searches and distance-rank reductions: "kdtree" and "numba" both name the
# compiled k-d tree (numba on the CPU, numba-cuda on the GPU), "brute" the array tiles.
ENGINES = ("auto", "brute", "numba", "kdtree", "faiss", "cuml")
METRIC_ENGINES = ("auto", "brute", "kdtree", "numba")
SINGLING_OUT_MODES = ("univariate", "multivariate")
BACKENDS = ("auto", "cpu", "gpu")
LINK_METHODS = ("linear_sum_assignment", "minimum_distance", "original_order",
                "time_series")  # parent links; time_series: the child holds curves
SERIES_PROJECTIONS = ("fpca", "flatten")  # how a time-series link projects its curves
# A database table may override these (``types`` are declared with the table; the seed and
# the backend are the run's).
ADVICE_CANDIDATES = (5, 10, 20, 30, 50)  # the values of k that advise tries by default
METRIC_NCP = 5  # axes of the metric projection when no run says (docs/spec/metrics.md, section 1)
ADVICE_MARGIN = 0.02  # advise's headroom over each target, a share of its threshold
TABLE_OVERRIDES = ("k", "ncp", "column_weights", "imputation", "categorical", "zero_distance",
                   "engine", "batch_size", "rare_modalities", "column_rare_modalities",
                   "rare_modality_name", "calibrate_shares", "unique_copies")  # fmt: skip
RARE_MODALITY_NAME = "other"  # the modality that rare text modalities are grouped into


def check_integer(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an int within ``[low, high]``; a bool, float or text is refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise AvatarTypeError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"{low} <= {name}" + (f" <= {high}" if high is not None else "")
        raise AvatarError(f"{name} = {value} is out of range: need {bound}")
    return int(value)


def check_number(name: str, value: Any, low: float, high: float | None = None) -> float:
    """``value`` as a float within ``[low, high]``; a bool or text is refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise AvatarTypeError(f"{name} must be a number, got {value!r}")
    if not low <= value <= (math.inf if high is None else high):
        bounds = f"{low:g} <= {name}" + ("" if high is None else f" <= {high:g}")
        raise AvatarError(f"{name} = {value} is out of range: need {bounds}")
    return float(value)


def check_flag(name: str, value: Any) -> bool:
    """``value`` as a bool: True or False only (``bool("no")`` would read True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise AvatarTypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise AvatarTypeError(f"{name} must be one of {choices}, got {value!r}")
    if value not in choices:
        raise AvatarError(f"{name}={value!r} is not one of {choices}")
    return value


def check_k(k: Any, n_rows: int | None = None) -> int:
    """Neighbours per avatar: 2 <= k, and k < n when the number of rows is known."""
    return check_integer("k", k, 2, None if n_rows is None else n_rows - 1)


def check_ncp(ncp: Any) -> int:
    """Projection axes used for the distances: a positive integer."""
    return check_integer("ncp", ncp, 1)


def date_format_of(kind: Any) -> str | None:
    """The format of a declared ``datetime:FORMAT`` kind (None for a plain ``datetime``)."""
    return kind.partition(":")[2] or None


def is_datetime_kind(kind: Any) -> bool:
    return isinstance(kind, str) and kind.partition(":")[0] == DATETIME


def column_kind(declared: Any) -> str | None:
    """The kind (``KINDS``) of a checked declaration; None for an undeclared column."""
    if declared is None:
        return None
    head = declared.partition(":")[0]
    return {DATETIME: "continuous", PSEUDONYM: "identifier"}.get(head, head)


def is_variable(declared: Any) -> bool:
    """Whether a checked declaration (None: undeclared) makes the column a variable."""
    return column_kind(declared) in (None, "continuous", "categorical")


def reattach_method(declared: Any) -> str:
    """How an ``excluded:METHOD`` column comes back (``REATTACH_METHODS``)."""
    return declared.partition(":")[2]


KINDS_DOCUMENTED = "docs/guide/columns.md"


def kinds_listed() -> str:
    """The kinds a column may be declared, on one short line, and where they are told."""
    excluded = "|".join(REATTACH_METHODS)
    return (f"continuous, categorical, {DATETIME}[:FORMAT], identifier, {PSEUDONYM}:STRATEGY, "
            f"excluded:{excluded}, dropped (see {KINDS_DOCUMENTED})")


def check_types(types: Any, where: str = "types") -> dict[Any, str]:
    """The column plan: a mapping column -> declaration (``kinds_listed``, told in
    ``KINDS_DOCUMENTED``; a pseudonym also as a ``Pseudonym`` or a mapping of its options),
    each written in its checked text form; None is no declaration."""
    if types is None:
        return {}
    if not isinstance(types, Mapping):
        raise AvatarTypeError(
            f"{where} must map column names to kinds, got {type(types).__name__}; kinds: "
            f"{kinds_listed()}"
        )
    return {column: check_declaration(declared, f"{where}[{column!r}]")
            for column, declared in types.items()}


def check_declaration(declared: Any, where: str) -> str:
    """One column's declaration in its checked text form (``where``: the column, as the entry
    point names it)."""
    head, _, tail = declared.partition(":") if isinstance(declared, str) else (None, "", "")
    if head == DATETIME or (head in KINDS and head != "excluded" and not tail):
        return declared
    if head == "excluded" and tail in REATTACH_METHODS:
        return declared
    if head == "excluded":
        raise AvatarError(f"{where}={declared!r}: an excluded column needs how it comes back, "
                          f"one of {[f'excluded:{m}' for m in REATTACH_METHODS]}")
    from .encoding.pseudonyms import Pseudonym  # pseudonyms.py builds on this module

    if head == PSEUDONYM or isinstance(declared, (Pseudonym, Mapping)):
        try:
            spec = Pseudonym.of(declared)
        except AvatarError as error:
            raise type(error)(f"{where}: {error}") from None
        text = spec.text  # the plan's form, read back by every entry point: it must be exact
        try:
            exact = Pseudonym.from_text(text) == spec
        except AvatarError:
            exact = False
        if not exact:
            raise AvatarError(
                f"{where}: this pseudonym does not read back from its text form {text!r}; "
                "give a pattern or constant without ',name=' and a text constant that does "
                "not read as an integer")
        return "identifier" if text == PSEUDONYM else text
    shown = repr(declared) if head is None else repr(head) + (" (options not repeated)"
                                                             if tail else "")  # a key?
    raise AvatarError(f"{where}={shown} is not a kind; kinds: {kinds_listed()}")


def check_column_weights(weights: Any) -> dict[Any, float]:
    """A mapping column -> finite weight > 0; None is uniform weights."""
    if weights is None:
        return {}
    if not isinstance(weights, Mapping):
        raise AvatarTypeError(f"column_weights must map column names to weights, got {weights!r}")
    checked = {}
    for column, weight in weights.items():
        if isinstance(weight, (bool, np.bool_)) or not isinstance(weight, (int, float, np.number)):
            raise AvatarTypeError(f"column_weights[{column!r}] must be a number, got {weight!r}")
        if not math.isfinite(weight) or weight <= 0:
            raise AvatarError(f"column_weights[{column!r}] must be finite and > 0, got {weight}")
        checked[column] = float(weight)
    return checked


def check_rare_threshold(name: str, value: Any) -> int | float | None:
    """None (no grouping), a count (an integer >= 1: modalities held by fewer rows are rare)
    or a share (a float in (0, 1): modalities held by a smaller share of the rows are rare)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return check_integer(name, value, 1)
    if isinstance(value, (float, np.floating)):
        if not 0 < value < 1:
            raise AvatarError(
                f"{name} = {value} is neither a count nor a share: give an integer count "
                "(e.g. 5: modalities of fewer than 5 rows are rare) or a share in (0, 1) "
                "(e.g. 0.01: modalities of under 1 % of the rows)"
            )
        return float(value)
    raise AvatarTypeError(
        f"{name} must be an integer count, a share in (0, 1) or None, got {value!r}"
    )


def check_column_rare_modalities(thresholds: Any) -> dict[Any, int | float | None]:
    """A mapping column -> threshold (``check_rare_threshold``; None: that column is never
    grouped, whatever ``rare_modalities`` says); None is no mapping."""
    if thresholds is None:
        return {}
    if not isinstance(thresholds, Mapping):
        raise AvatarTypeError(
            f"column_rare_modalities must map column names to thresholds, got {thresholds!r}"
        )
    return {column: check_rare_threshold(f"column_rare_modalities[{column!r}]", value)
            for column, value in thresholds.items()}


def check_rare_modality_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise AvatarTypeError(f"rare_modality_name must be a non-empty text, got {name!r}")
    return name


def check_seed(seed: Any) -> int | np.random.SeedSequence | None:
    """None (fresh entropy), a non-negative integer or a ``SeedSequence``."""
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return seed
    return check_integer("seed", seed, 0)


def seed_sequence(seed: Any) -> np.random.SeedSequence:
    """The run's SeedSequence: fresh entropy when ``seed`` is None."""
    seed = check_seed(seed)
    return seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)


def check_batch_size(batch_size: Any, k: int) -> int | None:
    """None (one batch) or at least 2k + 1: batches are cut to equal sizes, so each holds at
    least ``(batch_size + 1) // 2`` rows, and each needs k + 1 (a row and its k neighbours)."""
    if batch_size is None:
        return None
    batch_size = check_integer("batch_size", batch_size, 1)
    if batch_size < 2 * k + 1:
        raise AvatarError(
            f"batch_size = {batch_size} is smaller than 2k + 1 = {2 * k + 1}: batches of equal "
            f"size hold at least half of it, and each needs k + 1 = {k + 1} rows for its own "
            "neighbour search; raise batch_size or lower k"
        )
    return batch_size


def check_backend(backend: Any) -> Any:
    """A backend name (``BACKENDS``) or a resolved ``Backend``."""
    if isinstance(backend, str):
        return check_choice("backend", backend, BACKENDS)
    if hasattr(backend, "xp") and hasattr(backend, "name"):  # a Backend (backend.choice)
        return backend
    raise AvatarTypeError(f"backend must be one of {BACKENDS} or a Backend, got {backend!r}")


class _Settings:
    """What the checked, frozen parameter sets share: their names, a checked ``replace`` and
    pickling as plain values (Dask ships them to workers), checked again when rebuilt."""

    _WHAT = "parameter"

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self, **changes: Any):
        """A copy with ``changes``, checked; an unknown name is refused, naming the valid ones."""
        unknown = sorted(set(changes) - set(self.names()))
        if unknown:
            raise AvatarTypeError(
                f"unknown {self._WHAT}(s) {unknown}; the {self._WHAT}s are {list(self.names())}"
            )
        return dataclasses.replace(self, **changes) if changes else self

    def plain(self) -> dict[str, Any]:
        """Every value, mappings as dicts."""
        return {name: dict(value) if isinstance(value, Mapping) else value
                for name, value in ((n, getattr(self, n)) for n in self.names())}

    def __reduce__(self):
        return _rebuild, (type(self), self.plain())

    @classmethod
    def of(cls, given: Any = None, **settings: Any):
        """``given`` (one of these, a mapping of its names, or None for the defaults) with the
        keyword ``settings`` applied."""
        if given is None:
            given = cls()
        elif isinstance(given, Mapping):
            given = cls().replace(**given)
        elif not isinstance(given, cls):
            raise AvatarTypeError(f"expected a {cls.__name__}, got {type(given).__name__}")
        return given.replace(**settings)


def _rebuild(cls: type, values: dict[str, Any]) -> Any:
    return cls(**values)


@dataclass(frozen=True)
class AvatarParameters(_Settings):
    """How to avatarize a table; checked when made, immutable after.

    - ``k``: neighbours per avatar (2 <= k < rows; Avatar paper: 20);
    - ``ncp``: projection axes used for the neighbour search;
    - ``column_weights``: weight per column in the projection (default 1);
    - ``types``: the column plan, column -> "continuous", "categorical", "datetime",
      "identifier", "pseudonym:STRATEGY", "excluded:METHOD" or "dropped" (``kinds_listed``;
      variables are detected otherwise);
    - ``imputation``: temporary filling of missing values, one of ``IMPUTATIONS``;
    - ``categorical``: "draw" a neighbour's modality by weight, or take the "argmax";
    - ``zero_distance``: a neighbour at distance 0 (an exact duplicate) given all the weight,
      as in the paper ("paper": a duplicated row comes out as its own avatar), or weighted as
      the nearest distinct one ("bounded");
    - ``engine``: the exact neighbour search, one of ``ENGINES``;
    - ``backend``: "auto", "cpu" or "gpu" (or a resolved ``Backend``);
    - ``seed``: None (fresh entropy, recorded in the result), an integer or a SeedSequence;
    - ``batch_size``: above this many rows, the table is avatarized in batches;
    - ``rare_modalities``: the modalities of a categorical column held by fewer rows than
      this count (an integer), or by a smaller share of the rows (a float in (0, 1)), are
      grouped before the projection (``encoding/rare.py``): text ones into
      ``rare_modality_name``, ordered ones (ordered categories, numbers, dates) with their
      neighbours; ``column_rare_modalities`` gives a column its own threshold (None: never
      grouped); None: no grouping;
    - ``calibrate_shares``: after the draws, each categorical column's modality shares and
      each column's missing share are brought back to the original's, by changing the
      values of the avatars whose neighbours weigh most for them (``pipeline/calibration.py``);
    - ``unique_copies``: an avatar identical to an original row that one original alone holds
      is kept ("keep") or drawn again, weights and draws, until it is not ("redraw", a bounded
      number of times; ``pipeline/copies.py``).
    """

    k: int = 20
    ncp: int = 5
    column_weights: Mapping[Any, float] = field(default_factory=dict)
    types: Mapping[Any, str] = field(default_factory=dict)
    imputation: str = "median"
    categorical: str = "draw"
    zero_distance: str = "paper"
    engine: str = "auto"
    backend: Any = "auto"
    seed: Any = None
    batch_size: int | None = None
    rare_modalities: int | float | None = None
    column_rare_modalities: Mapping[Any, int | float | None] = field(default_factory=dict)
    rare_modality_name: str = RARE_MODALITY_NAME
    calibrate_shares: bool = True
    unique_copies: str = "redraw"

    def __post_init__(self) -> None:
        checked = {
            "k": check_k(self.k),
            "ncp": check_ncp(self.ncp),
            "column_weights": MappingProxyType(check_column_weights(self.column_weights)),
            "types": MappingProxyType(check_types(self.types)),
            "imputation": check_choice("imputation", self.imputation, IMPUTATIONS),
            "categorical": check_choice("categorical", self.categorical, CATEGORICAL_RULES),
            "zero_distance": check_choice(
                "zero_distance", self.zero_distance, ZERO_DISTANCE_RULES
            ),
            "engine": check_choice("engine", self.engine, ENGINES),
            "backend": check_backend(self.backend),
            "seed": check_seed(self.seed),
            "rare_modalities": check_rare_threshold("rare_modalities", self.rare_modalities),
            "column_rare_modalities": MappingProxyType(
                check_column_rare_modalities(self.column_rare_modalities)),
            "rare_modality_name": check_rare_modality_name(self.rare_modality_name),
            "calibrate_shares": check_flag("calibrate_shares", self.calibrate_shares),
            "unique_copies": check_choice("unique_copies", self.unique_copies,
                                          UNIQUE_COPIES_RULES),
        }
        checked["batch_size"] = check_batch_size(self.batch_size, checked["k"])
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def for_rows(self, n_rows: int) -> AvatarParameters:
        """Itself, after checking that ``k`` suits a table of ``n_rows`` rows."""
        check_k(self.k, n_rows)
        return self

    def as_dict(self) -> dict[str, Any]:
        """Plain values (dicts, the backend's name; the seed left out: results record the
        entropy they used)."""
        out = self.plain()
        del out["seed"]
        out["backend"] = getattr(self.backend, "name", self.backend)
        return out


@dataclass(frozen=True)
class MetricOptions(_Settings):
    """How a release's privacy is measured; checked when made, immutable after. Shared by
    ``privacy_metrics``, the batch, streaming and Dask paths, the database scenarios, the
    report and the command line (docs/spec/metrics.md; definitions in
    ``metrics/privacy.py``).

    - ``ncp``: axes of the metric projection (None: the run's for a run's own metrics, else
      ``METRIC_NCP``; the avatarization's is the recommended value);
    - ``known_variables``: the columns an attacker knows (correlation protection, inference);
    - ``target``: the one column an attacker infers from ``known_variables``;
    - ``categorical_hidden_rate_variables``: the columns of the categorical hidden rate;
    - ``imputation``: fills missing values for the metric projection only (the mean, as for
      the published reference values);
    - ``closest_rate_percentage_threshold`` (a percentile, 0-100) and
      ``closest_rate_ratio_threshold``: when an avatar counts as at risk for ``closest_rate``;
    - ``engine``: the exact distance-rank reduction, one of ``METRIC_ENGINES``;
    - ``check_alignment``: refuse avatars not row-aligned with the originals (a released,
      shuffled file); None: off for a run's own avatars (aligned by construction), else on.

    Column names are checked against the table when measured (``check_columns``).
    """

    _WHAT = "metric option"

    ncp: int | None = None
    known_variables: Any = None
    target: Any = None
    categorical_hidden_rate_variables: Any = None
    imputation: str = "mean"
    closest_rate_percentage_threshold: float = 0.3
    closest_rate_ratio_threshold: float = 0.3
    engine: str = "auto"
    check_alignment: bool | None = None

    def __post_init__(self) -> None:
        target = self.target
        if isinstance(target, list):
            if len(target) != 1:
                raise AvatarError(f"target must be one column, got {target}")
            target = target[0]
        if target is not None and self.known_variables is None:
            raise AvatarError(
                "target needs known_variables: the inference metrics infer the target from "
                "what an attacker knows; give known_variables too"
            )
        checked = {
            "ncp": None if self.ncp is None else check_ncp(self.ncp),
            "known_variables": _columns(self.known_variables),
            "target": target,
            "categorical_hidden_rate_variables": _columns(
                self.categorical_hidden_rate_variables),
            "imputation": check_choice("imputation", self.imputation, IMPUTATIONS),
            "closest_rate_percentage_threshold": check_number(
                "closest_rate_percentage_threshold", self.closest_rate_percentage_threshold,
                0, 100),
            "closest_rate_ratio_threshold": check_number(
                "closest_rate_ratio_threshold", self.closest_rate_ratio_threshold, 0),
            "engine": check_choice("engine", self.engine, METRIC_ENGINES),
            "check_alignment": None if self.check_alignment is None else check_flag(
                "check_alignment", self.check_alignment),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def with_defaults(self, *, ncp: int, check_alignment: bool) -> MetricOptions:
        """Itself, with the ``ncp`` and ``check_alignment`` left to the caller (None) set:
        a run's own metrics use the run's ncp and no alignment test."""
        return self.replace(ncp=ncp if self.ncp is None else self.ncp,
                            check_alignment=check_alignment if self.check_alignment is None
                            else self.check_alignment)


def _columns(names: Any) -> Any:
    """A list of column names as a tuple (the options are frozen); a single name as given."""
    return tuple(names) if isinstance(names, list) else names


def table_parameters(
    base: AvatarParameters, overrides: Mapping[str, Mapping[str, Any]] | None, tables: list[str]
) -> dict[str, AvatarParameters]:
    """Every table's parameters: ``base`` with the table's ``overrides`` (names from
    ``TABLE_OVERRIDES``) applied."""
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, Mapping):
        raise AvatarTypeError(
            f"overrides must map table names to parameters, e.g. {{'visit': {{'k': 5}}}}, got "
            f"{overrides!r}"
        )
    unknown = [t for t in overrides if t not in tables]
    if unknown:
        raise AvatarError(f"overrides names unknown table(s) {unknown}; tables: {tables}")
    out = {}
    for table in tables:
        changes = overrides.get(table) or {}
        if not isinstance(changes, Mapping):
            raise AvatarTypeError(
                f"overrides[{table!r}] must map parameter names to values, got {changes!r}"
            )
        refused = sorted(set(changes) - set(TABLE_OVERRIDES))
        if refused:
            raise AvatarError(
                f"overrides[{table!r}] sets {refused}, which a table cannot override; a table "
                f"may override {list(TABLE_OVERRIDES)}"
            )
        try:
            out[table] = base.replace(**changes)
        except AvatarError as error:  # say which table's override is wrong
            raise type(error)(f"overrides[{table!r}]: {error}") from None
    return out


def avatar_parameters(parameters: AvatarParameters | None = None, **settings: Any):
    """The parameters of one call: ``parameters`` (default: the defaults) with the keyword
    ``settings`` applied."""
    if parameters is not None and not isinstance(parameters, AvatarParameters):
        raise AvatarTypeError(
            f"parameters must be an AvatarParameters, got {type(parameters).__name__}"
        )
    return AvatarParameters.of(parameters, **settings)


def metric_options(options: MetricOptions | Mapping[str, Any] | None = None, **settings: Any):
    """The metric options of one call: ``options`` (a ``MetricOptions``, a mapping of its
    names, or None for the defaults) with the keyword ``settings`` applied."""
    if options is not None and not isinstance(options, (MetricOptions, Mapping)):
        raise AvatarTypeError(
            f"options must be a MetricOptions or a mapping of its names, got "
            f"{type(options).__name__}"
        )
    return MetricOptions.of(options, **settings)
