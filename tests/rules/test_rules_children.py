"""Rules across a parent's children, on child tables made here and their avatars relinked
to other parents (as a database's relinking does): one death per patient, visit dates
increasing, bounded increments of a cumulative dose."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from rule_helpers import avatars_of, broken_count, neighbours_of

from gpu_avatar.errors import FixableError
from gpu_avatar.rules import BoundedSteps, CountPerParent, Increasing, Rounding, RuleSet

PATIENTS = 300


@pytest.fixture(scope="module")
def events() -> pd.DataFrame:
    """One 'recurrence' and one 'death' row per patient, as in the colon-cancer study."""
    rng = np.random.default_rng(1)
    return pd.DataFrame({
        "patient": np.repeat(np.arange(PATIENTS), 2),
        "etype": np.tile(["recurrence", "death"], PATIENTS),
        "time": rng.integers(10, 3000, 2 * PATIENTS),
        "nodes": rng.integers(0, 20, 2 * PATIENTS),
    })


@pytest.fixture(scope="module")
def three_events(events) -> pd.DataFrame:
    """Events of three types, so that a recoded row has a choice."""
    return events.assign(etype=np.tile(["recurrence", "death", "censored"], PATIENTS)[
        : len(events)])


def relinked(children: pd.DataFrame, types: dict | None = None) -> pd.DataFrame:
    """Avatars of the children, each given to a random parent (the relinking)."""
    avatars = avatars_of(children.drop(columns="patient"), types or {}, k=10)
    parents = np.random.default_rng(2).permutation(children["patient"].to_numpy())
    return avatars.assign(patient=parents)[children.columns]


@pytest.fixture(scope="module")
def visits() -> pd.DataFrame:
    """Four visits per patient: dates strictly increasing with the visit number, a
    cumulative dose growing by 0 to 20 (half units) at each visit."""
    rng = np.random.default_rng(3)
    n = 4 * PATIENTS
    table = pd.DataFrame({"patient": np.repeat(np.arange(PATIENTS), 4),
                          "visit": np.tile(np.arange(4), PATIENTS)})
    gaps = pd.Series(rng.integers(1, 60, n)).groupby(table["patient"]).cumsum()
    doses = pd.Series(rng.integers(0, 41, n) / 2).groupby(table["patient"]).cumsum()
    return table.assign(date=pd.Timestamp("2020-01-01") + pd.to_timedelta(gaps, unit="D"),
                        dose=doses)


def test_surplus_deaths_are_recoded(events):
    rules = [CountPerParent("etype", "death", by="patient"),
             CountPerParent("etype", "recurrence", by="patient")]
    avatars = relinked(events)
    assert broken_count(rules[0], avatars, events) > 0  # two deaths for some patients
    result = RuleSet(rules).apply(events, avatars, seed=0)
    counts = result.avatars.groupby("patient")["etype"].value_counts()
    assert counts.max() == 1  # so each patient has one recurrence and one death
    assert result.avatars.drop(columns="etype").equals(avatars.drop(columns="etype"))
    recoded = (result.avatars["etype"] != avatars["etype"]).sum()
    assert sum(r.rows_repaired for r in result.reports) == recoded > 0


def test_surplus_rows_take_a_value_of_their_neighbours(three_events):
    rule = CountPerParent("etype", "death", by="patient")
    originals = three_events
    avatars = relinked(originals).assign(etype="death")  # every row a death
    neighbours = neighbours_of(originals)
    fixed = RuleSet([rule]).apply(originals, avatars, neighbours=neighbours, seed=0).avatars
    assert fixed.groupby("patient")["etype"].apply(lambda e: (e == "death").sum()).max() == 1
    recoded = np.flatnonzero(fixed["etype"] != "death")
    sources = originals["etype"].to_numpy()[neighbours.indices[recoded]]
    assert (sources == fixed["etype"].to_numpy()[recoded][:, None]).any(axis=1).all()


def test_repairs_are_the_same_for_a_seed_and_leave_their_inputs_alone(three_events):
    rules = RuleSet([CountPerParent("etype", "death", by="patient")])
    avatars = relinked(three_events).assign(etype="death")
    originals_before, avatars_before = three_events.copy(), avatars.copy()
    first, again, other = (rules.apply(three_events, avatars, seed=seed).avatars
                           for seed in (0, 0, 1))
    assert first.equals(again) and not first.equals(other)  # the draws follow the seed
    assert three_events.equals(originals_before) and avatars.equals(avatars_before)


def test_visit_dates_are_sorted_within_each_patient(visits):
    rule = Increasing("date", by="patient", order="visit", strict=True)
    avatars = relinked(visits)
    assert broken_count(rule, avatars, visits) > 0
    fixed = RuleSet([rule]).apply(visits, avatars).avatars
    ordered = fixed.sort_values(["patient", "visit"], kind="stable")
    assert (ordered.groupby("patient")["date"].diff().dropna() > pd.Timedelta(0)).all()
    # values of a patient kept, only reordered (ties moved up a day)
    days = (fixed["date"] - avatars["date"]).groupby(avatars["patient"]).sum()
    assert (days >= pd.Timedelta(0)).all()
    assert fixed["date"].dtype == visits["date"].dtype


def test_a_cumulative_dose_keeps_the_originals_increments(visits):
    rules = [Rounding("dose", step=0.5), Increasing("dose", by="patient", order="visit"),
             BoundedSteps("dose", by="patient", order="visit")]
    avatars = relinked(visits)
    assert all(broken_count(rule, avatars, visits) > 0 for rule in rules)
    fixed = RuleSet(rules).apply(visits, avatars).avatars
    steps = fixed.sort_values(["patient", "visit"]).groupby("patient")["dose"].diff().dropna()
    assert steps.between(0, 20).all() and (steps * 2 == (steps * 2).round()).all()


def test_declared_bounds_of_steps(visits):
    rule = BoundedSteps("date", by="patient", order="visit", low="1D", high="30D")
    with pytest.raises(FixableError, match="original rows break it") as error:
        RuleSet([rule]).check(visits)  # the originals have gaps up to 59 days
    assert "keep_exceptions: true" in error.value.worded("yaml")
    kept = BoundedSteps("date", by="patient", order="visit", low="1D", high="30D",
                        keep_exceptions=True)
    fixed = RuleSet([kept]).apply(visits, relinked(visits)).avatars
    exempt = kept.broken(visits, visits, np.zeros(len(visits), dtype=bool))
    assert broken_count(kept, fixed, visits, exempt) == 0
    kept_rows = ~np.isin(fixed["patient"], fixed["patient"][exempt])
    steps = fixed[kept_rows].sort_values(["patient", "visit"]).groupby("patient")["date"].diff()
    assert steps.dropna().between(pd.Timedelta(days=1), pd.Timedelta(days=30)).all()
