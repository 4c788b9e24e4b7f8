"""Rules within rows and over a table, on the AIDS originals (with derived columns) and
their avatars: every rule holds on every repaired row, by the repair each documents."""

from __future__ import annotations

import numpy as np
import pandas as pd
from rule_helpers import avatars_of, broken_count, neighbours_of

from gpu_avatar.rules import (
    Derived,
    FixedCombinations,
    GroupMean,
    Inequality,
    Neighbours,
    Range,
    Rounding,
    RuleSet,
    SumTo,
)

ROWS = np.arange(0, 400, 7)  # the avatars a test breaks on purpose


def broken_avatars(avatars: pd.DataFrame, **columns) -> pd.DataFrame:
    """A copy of ``avatars`` with ``columns`` set on ``ROWS`` (a value or a function of the
    rows' values)."""
    out = avatars.copy()
    for column, value in columns.items():
        current = out[column].iloc[ROWS]
        out.loc[out.index[ROWS], column] = value(current) if callable(value) else value
    return out


def repaired(rules, originals, avatars, **options) -> pd.DataFrame:
    return RuleSet(rules).apply(originals, avatars, seed=0, **options).avatars


# ------------------------------------------------------------------------------ inequality
def test_encoded_inequalities_hold_on_every_avatar_at_the_dates_precision(table, types):
    # a chain, decoded in order; end is encoded once, so the third is held by repairs
    rules = RuleSet([Inequality("mid", "end", strict=True), Inequality("entry", "mid"),
                     Inequality("entry", "end", strict=True)])
    encoded = rules.encode(table)
    assert encoded["end"].dtype == np.float64 and encoded.columns.equals(table.columns)
    result = rules.apply(table, avatars_of(encoded, types), encoded=True, seed=0)
    avatars = result.avatars
    assert (avatars["entry"] <= avatars["mid"]).all() and (avatars["mid"] < avatars["end"]).all()
    assert avatars.dtypes.equals(table.dtypes)
    assert (avatars["end"] == avatars["end"].dt.normalize()).all()  # whole days, as originals
    assert [r.held_by for r in result.reports] == ["encoding", "encoding", "repair"]
    assert [r.rows_repaired for r in result.reports] == [0, 0, 0]  # held by construction


def test_a_broken_inequality_takes_its_gap_from_the_neighbours(table, avatars):
    bad = broken_avatars(avatars, end=lambda end: end - pd.Timedelta(days=5000))
    rule = Inequality("entry", "end", strict=True)
    assert broken_count(rule, bad, table) == len(ROWS)
    source = 11  # every avatar drawn from original row 11 alone
    single = Neighbours(np.full((len(table), 1), source), np.ones((len(table), 1)))
    fixed = repaired([rule], table, bad, neighbours=single)
    gap = table["end"].iloc[source] - table["entry"].iloc[source]
    assert (fixed["end"].iloc[ROWS] - fixed["entry"].iloc[ROWS] == gap).all()
    untouched = np.setdiff1d(np.arange(len(table)), ROWS)
    assert fixed.iloc[untouched].equals(bad.iloc[untouched])

    weighted = repaired([rule], table, bad, neighbours=neighbours_of(table))
    assert broken_count(rule, weighted, table) == 0


def test_without_neighbours_the_smallest_gap_of_the_originals_is_used(table, avatars):
    bad = broken_avatars(avatars, days=1)
    rule = Inequality(14, "days")  # days >= 14, against a constant
    fixed = repaired([rule], table, bad)
    assert (fixed["days"].iloc[ROWS] == table["days"].min()).all()
    assert fixed["days"].dtype == table["days"].dtype and broken_count(rule, fixed, table) == 0


# ----------------------------------------------------------------------------------- range
def test_a_range_moves_values_to_the_bound_they_passed(table, avatars):
    bad = broken_avatars(avatars, wtkg=lambda w: w * 3, entry=pd.Timestamp("1980-05-01"))
    rules = [Range("wtkg"), Range("entry", low="1990-03-01")]
    fixed = repaired(rules, table, bad)
    assert (fixed["wtkg"].iloc[ROWS] <= table["wtkg"].max()).all()
    assert (fixed["wtkg"].iloc[ROWS] == table["wtkg"].max()).sum() >= len(ROWS) // 2
    assert (fixed["entry"].iloc[ROWS] == pd.Timestamp("1990-03-01")).all()
    assert all(broken_count(rule, fixed, table) == 0 for rule in rules)


# ----------------------------------------------------------------------- fixed combinations
def test_fixed_combinations_encoded_give_only_seen_combinations(table, avatars, types):
    rule = FixedCombinations(["strat", "str2"])
    assert broken_count(rule, avatars, table) > 0  # drawn one column at a time
    rules = RuleSet([rule])
    encoded = rules.encode(table)
    assert "strat+str2" in encoded and "strat" not in encoded
    avatars_encoded = avatars_of(encoded, types | {"strat+str2": "categorical"})
    decoded = rules.apply(table, avatars_encoded, encoded=True).avatars
    assert broken_count(rule, decoded, table) == 0
    assert decoded.columns.equals(table.columns) and decoded.dtypes.equals(table.dtypes)


def test_an_unseen_combination_changes_the_fewest_columns(table, avatars):
    rule = FixedCombinations(["strat", "str2", "treat"])
    bad = broken_avatars(avatars, strat=1, str2=1)  # strat 1 always has str2 0
    broken = rule.broken(bad, table, np.zeros(len(bad), dtype=bool))
    fixed = repaired([rule], table, bad)
    assert broken_count(rule, fixed, table) == 0
    changed = (fixed[list(rule.columns)] != bad[list(rule.columns)]).sum(axis=1).to_numpy()
    assert np.array_equal(changed > 0, broken) and (changed[broken] == 1).all()


def test_an_unseen_combination_becomes_the_closest_of_its_neighbours(table, avatars):
    rule = FixedCombinations(["strat", "str2", "treat"])
    bad = broken_avatars(avatars, strat=1, str2=1)
    rows = np.flatnonzero(rule.broken(bad, table, np.zeros(len(bad), dtype=bool)))
    neighbours = neighbours_of(table)
    fixed = repaired([rule], table, bad, neighbours=neighbours)
    columns = list(rule.columns)
    candidates = table[columns].to_numpy()[neighbours.indices[rows]]  # (rows, k, columns)
    before, after = (frame[columns].to_numpy()[rows][:, None, :] for frame in (bad, fixed))
    assert (candidates == after).all(axis=2).any(axis=1).all()  # a neighbour's combination
    fewest = (candidates != before).sum(axis=2).min(axis=1)
    assert np.array_equal((after[:, 0] != before[:, 0]).sum(axis=1), fewest)


# -------------------------------------------------------------------------------- derived
def test_a_derived_flag_is_recomputed_on_the_avatars(table, avatars, types):
    rule = Derived("treat", "arms != 0")
    assert broken_count(rule, avatars, table) > 0  # treat and arms drawn apart
    fixed = repaired([rule], table, avatars)
    assert (fixed["treat"] == (fixed["arms"] != 0)).all() and fixed["treat"].dtype == np.int64

    rules = RuleSet([rule])
    assert "treat" not in rules.encode(table)  # encoded: not avatarized, computed after
    decoded = rules.apply(table, avatars_of(rules.encode(table), types), encoded=True).avatars
    assert (decoded["treat"] == (decoded["arms"] != 0)).all()


def test_a_derived_number_is_computed_at_the_columns_precision(table, avatars):
    originals = table.assign(ratio=(table["cd40"] / table["cd80"]).round(2))
    rule = Derived("ratio", "cd40 / cd80")
    fixed = repaired([rule], originals, avatars.assign(ratio=0.5))
    assert (fixed["ratio"] == (fixed["cd40"] / fixed["cd80"]).round(2)).all()


# ------------------------------------------------------------------------------------ sum
def test_shares_add_up_to_one_on_their_grid(table, avatars):
    rule = SumTo(["s1", "s2", "s3"], total=1)
    bad = broken_avatars(avatars, s1=lambda s: s + 0.3)
    assert broken_count(rule, bad, table) >= len(ROWS)
    fixed = repaired([rule], table, bad)
    shares = fixed[["s1", "s2", "s3"]]
    assert np.allclose(shares.sum(axis=1), 1, atol=1e-9)
    assert np.allclose(shares * 100, (shares * 100).round(), atol=1e-6)  # still hundredths
    rescaled = bad[["s1", "s2", "s3"]].iloc[ROWS].div(bad[["s1", "s2", "s3"]].iloc[ROWS].sum(
        axis=1), axis=0)
    assert np.abs(shares.iloc[ROWS] - rescaled).max().max() <= 0.01  # in proportion


def test_parts_that_cannot_be_rescaled_take_the_originals_shares(table, avatars):
    fixed = repaired([SumTo(["s1", "s2", "s3"])], table, broken_avatars(avatars, s1=0, s2=0,
                                                                        s3=0))
    shares = fixed[["s1", "s2", "s3"]].iloc[ROWS]
    mean = table[["s1", "s2", "s3"]].mean()
    assert (shares == shares.iloc[0]).all().all() and np.allclose(shares.sum(axis=1), 1)
    assert np.abs(shares.iloc[0] - mean).max() <= 0.01


def test_parts_follow_a_total_column(table, avatars):
    rule = SumTo(["cd40", "cd80"], total="cdsum")
    fixed = repaired([rule], table, broken_avatars(avatars, cdsum=lambda s: s + 101))
    assert (fixed["cd40"] + fixed["cd80"] == fixed["cdsum"]).all()
    assert fixed["cd40"].dtype == np.int64


# ------------------------------------------------------------------------------- rounding
def test_rounding_to_a_declared_step(table, avatars):
    assert (avatars["age5"] % 5 != 0).any()  # barycentres of multiples of 5
    weeks = pd.Timestamp(0) + pd.to_timedelta(table["age"] * 7, unit="D")  # from the epoch
    originals = table.assign(week=weeks)
    days = pd.to_timedelta(np.arange(len(avatars)) % 7, unit="D")
    shifted = avatars.assign(week=weeks + days)
    rules = [Rounding("age5", step=5), Rounding("week", step="7D")]
    fixed = repaired(rules, originals, shifted)
    assert (fixed["age5"] % 5 == 0).all()
    assert (np.abs(fixed["age5"] - avatars["age5"]) <= 2.5).all()
    assert (np.abs(fixed["week"] - shifted["week"]) <= pd.Timedelta(days=3)).all()
    assert ((fixed["week"] - pd.Timestamp(0)) % pd.Timedelta(days=7) == pd.Timedelta(0)).all()


# ----------------------------------------------------------------------------- group mean
def test_group_means_are_shifted_to_the_originals(table, avatars):
    rule = GroupMean("wtkg", by=["arms", "gender"], how="shift")
    fixed = repaired([rule], table, avatars)
    groups = ["arms", "gender"]
    targets = table.groupby(groups)["wtkg"].mean()
    assert np.allclose(fixed.groupby(groups)["wtkg"].mean(), targets, atol=5e-5)
    shift = fixed["wtkg"] - avatars["wtkg"]
    assert shift.groupby([avatars["arms"], avatars["gender"]]).std().max() < 1e-4


def test_group_means_are_rescaled_to_the_originals(table, avatars):
    rule = GroupMean("cd420", by="arms")
    means = avatars.groupby("arms")["cd420"].mean()
    targets = table.groupby("arms")["cd420"].mean()
    assert (np.abs(means - targets) > 0.5).any()
    fixed = repaired([rule], table, avatars)
    assert np.allclose(fixed.groupby("arms")["cd420"].mean(), targets, atol=0.5)
    assert fixed["cd420"].dtype == np.int64
    ratio = fixed["cd420"] / avatars["cd420"]
    assert ratio.groupby(avatars["arms"]).std().max() < 0.01  # scaled, up to rounding
