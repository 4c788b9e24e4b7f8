"""Checks shared by the privacy and signal metrics: the avatars must be the original table's
columns, with compatible dtypes (text held as object, str, string or category counts as one),
variable arguments must name columns, and the privacy metrics' avatars must be row-aligned
with the originals (``check_row_alignment``).

Row alignment, a one-sided sign test in the metric projection. The rows are split into
``n // 2`` disjoint pairs (i, j), drawn once with a fixed seed, whatever the avatars' order.
In each pair the avatars as given are compared with the avatars swapped:
``d(x_i, y_i) + d(x_j, y_j)`` against ``d(x_i, y_j) + d(x_j, y_i)``; ties are left out.
For avatars in an order unrelated to the originals' (a released, shuffled file), the shuffle
is as likely to have put either avatar of a pair first, independently from pair to pair:
the number of pairs closer as given is then exactly Binomial(pairs, 1/2). The test refuses
unless that number is improbable under this law: its p-value must be at most
``ALIGNMENT_LEVEL`` (1e-6), the probability that a shuffled file is accepted. Genuine
avatars, barycentres of their original's neighbours, are closer as given in most pairs: on
the AIDS table (1,069 pairs) 99.5 % with the published avatars (k = 20, p = 2e-309), 93 % at
k = 500 (p = 2e-210), 83 % at k = 1,000 (p = 2e-113); on WBCD (340 pairs) 96 % (p = 3e-77),
78 % at k = n - 1 (p = 2e-25). 1,000 shuffles of either: 41-59 %, the smallest p-value 3e-4.
A test on ``pairs`` pairs cannot go below 2^-pairs, so a table of fewer than 40 rows cannot
be checked; nor can avatars made with k close to the number of rows of some tables (AIDS at
k = n - 1: 55 %, p = 6e-4), which hardly depend on their own original: for them, and for
avatars aligned by construction, ``check_alignment=False``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend
from ..encoding import validate_table
from ..encoding.kinds import DROPPED, IDENTIFIER, is_text
from ..errors import AvatarError, AvatarTypeError, FixableError
from ..neighbours.distances import rowwise_squared
from ..parameters import column_kind

ALIGNMENT_LEVEL = 1e-6  # the largest p-value accepted: a shuffled file's chance to pass
_ALIGNMENT_PAIRING_SEED = 0


def _compatible(original: pd.Series, other: pd.Series) -> bool:
    if original.dtype == other.dtype:
        return True
    return is_text(original.dtype) and is_text(other.dtype)


def released_part(types: Mapping[Any, str], *tables: Any) -> list[Any]:
    """The plan (checked ``types``) and each of ``tables`` without the columns no metric
    compares: those it drops from the release (the avatars have none) and the identifiers
    (fresh values or pseudonyms, of another dtype than the originals' maybe)."""
    dropped = {c for c in types if column_kind(types[c]) in (DROPPED, IDENTIFIER)}
    kept = {c: kind for c, kind in types.items() if c not in dropped}
    return [kept, *(table.drop(columns=[c for c in table.columns if c in dropped])
                    if isinstance(table, pd.DataFrame) else table for table in tables)]


def check_same_table(
    original: pd.DataFrame, other: pd.DataFrame, other_name: str, same_rows: bool
) -> pd.DataFrame:
    """``other`` with ``original``'s column order, after checking columns, dtypes and rows.
    Text columns held differently (object against str, say) are cast to the original's
    dtype, so that both compare value by value."""
    validate_table(original, "original")
    if not isinstance(other, pd.DataFrame):
        raise AvatarTypeError(
            f"{other_name} must be a pandas DataFrame, got {type(other).__name__}"
        )
    missing = [c for c in original.columns if c not in other.columns]
    extra = [c for c in other.columns if c not in original.columns]
    if missing or extra:
        raise AvatarError(
            f"{other_name} must have the original's columns: missing {missing}, extra {extra}"
        )
    other = other[list(original.columns)]
    differing = {
        c: (str(original[c].dtype), str(other[c].dtype))
        for c in original.columns
        if not _compatible(original[c], other[c])
    }
    if differing:
        raise AvatarError(
            f"{other_name} dtypes differ from the original's (original, {other_name}): "
            f"{differing}; cast them to the original dtypes"
        )
    recast = [c for c in original.columns if original[c].dtype != other[c].dtype]
    if recast:
        other = other.astype({c: _text_dtype(original[c]) for c in recast})
    if len(other) == 0:
        raise AvatarError(f"{other_name} has no rows; give rows of the original table's kind")
    floats = [c for c in original.columns if pd.api.types.is_float_dtype(other[c].dtype)]
    infinite = [c for c in floats if np.isinf(other[c].to_numpy(float, na_value=np.nan)).any()]
    if infinite:
        raise AvatarError(
            f"{other_name} column(s) {infinite} hold infinite values, which no metric can "
            "place (avatars never do): replace them, or pass the avatars gpu_avatar returned"
        )
    if same_rows and len(other) != len(original):
        raise AvatarError(
            f"{other_name} has {len(other)} rows but the original has {len(original)}: "
            "privacy metrics need the unshuffled avatars, row i = avatar of original row i"
        )
    return other


def _text_dtype(original: pd.Series) -> Any:
    """The dtype avatars' text is cast to: the original's, or its categories' (avatar
    modalities absent from the original's categories must not become missing)."""
    if isinstance(original.dtype, pd.CategoricalDtype):
        return original.dtype.categories.dtype
    return original.dtype


def check_variables(original: pd.DataFrame, variables: Any, argument: str) -> list[Any] | None:
    """A list of existing column names (a single name, tuples and numpy scalars included, is
    accepted), or None."""
    if variables is None:
        return None
    if isinstance(variables, str) or _is_column(original, variables):
        names = [variables]
    elif isinstance(variables, Iterable):
        names = list(variables)
    else:
        raise AvatarTypeError(
            f"{argument} must be a column name or a list of them, got {variables!r}"
        )
    unknown = [v for v in names if v not in original.columns]
    if unknown:
        raise AvatarError(f"{argument} names unknown column(s) {unknown}")
    if not names:
        raise AvatarError(f"{argument} is empty; give at least one column or None")
    return names


def _is_column(df: pd.DataFrame, name: Any) -> bool:
    try:
        return name in df.columns
    except TypeError:  # unhashable: a list of names
        return False


@dataclass(frozen=True)
class AlignmentTest:
    """The sign test of row alignment (module docstring): pairs of rows whose avatars are
    closer to their originals as given than swapped, pairs not tied, and the p-value of
    that count for avatars in an order unrelated to the originals'."""

    closer: int
    pairs: int
    p_value: float

    @property
    def aligned(self) -> bool:
        return self.p_value <= ALIGNMENT_LEVEL


def alignment_test(originals: Any, avatars: Any, backend: Backend) -> AlignmentTest:
    """The sign test on coordinates (row i of ``avatars`` claimed to be the avatar of row i
    of ``originals``), as backend arrays."""
    from scipy.stats import binom

    n, xp = originals.shape[0], backend.xp
    order = np.random.default_rng(_ALIGNMENT_PAIRING_SEED).permutation(n)
    first, second = backend.asarray(order[: n // 2]), backend.asarray(order[n // 2 : n // 2 * 2])

    def distances(rows, avatar_rows):
        return xp.sqrt(rowwise_squared(originals[rows], avatars[avatar_rows], xp))

    given = distances(first, first) + distances(second, second)
    swapped = distances(first, second) + distances(second, first)
    closer, farther = int((given < swapped).sum()), int((given > swapped).sum())
    pairs = closer + farther
    p_value = float(binom.sf(closer - 1, pairs, 0.5)) if pairs else 1.0
    return AlignmentTest(closer, pairs, p_value)


def check_row_alignment(originals: Any, avatars: Any, backend: Backend) -> AlignmentTest:
    """``alignment_test``, raising a ``FixableError`` when the avatars cannot be told from a
    shuffled file."""
    test = alignment_test(originals, avatars, backend)
    if not test.aligned:
        raise shuffled_error(test)
    return test


def shuffled_error(test: AlignmentTest, then: str = "") -> FixableError:
    """The error for avatars that ``test`` cannot tell from a shuffled file: that first, with
    its fix (another file), then ``then``, another problem of the same avatars (their
    columns), which the right file may not have."""
    odds = (f"even {test.pairs} of {test.pairs} pairs closer as given would not reach "
            f"{ALIGNMENT_LEVEL:g}: too few rows to tell a shuffled file"
            if 0.5 ** test.pairs > ALIGNMENT_LEVEL else
            f"a shuffled file does that as often (sign test p-value {test.p_value:.2g}, "
            f"above {ALIGNMENT_LEVEL:g})")
    lead = ("the avatars look like a released, shuffled file: on the columns both have, they "
            "are" if then else "the avatars are")
    then = f"; also, {then}" if then else ""
    return FixableError(
        f"{lead} not shown row-aligned with the originals: in "
        f"{test.closer} of {test.pairs} pairs of rows they are closer to their originals "
        f"as given than swapped, and {odds}; the privacy metrics need row i = avatar of "
        "original row i, not the released (shuffled) avatars",
        {
            "python": "pass result.sensitive_unshuffled_avatars (or the file written by "
            "--unshuffled-output); check_alignment=False skips the test for unshuffled "
            "avatars it cannot tell (few rows, k close to the row count)" + then,
            "cli": "pass the unshuffled avatars written by gpu-avatar avatarize "
            "--unshuffled-output; --no-alignment-check skips the test for unshuffled "
            "avatars it cannot tell (few rows, k close to the row count)" + then,
        },
    )
