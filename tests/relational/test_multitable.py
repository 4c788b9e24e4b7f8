"""Multi-table avatarization (docs/spec/multitable.md): schema validation, the per-link
pipeline, the three linking methods, the released tables' integrity, and the metrics per scenario.

Most checks run on the reference product's tutorial database (``patient``, ``doctor``,
``visit`` in ``tests/data``, with their licence note) and on a
generated 5-table schema of four levels (hospital -> doctor -> visit <- patient,
visit -> prescription). Every structural property is checked on the released tables
themselves, not only through the run's ``LinkReport``.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from realdata import read_dataset
from scipy.stats import ks_2samp

import gpu_avatar as ga
from gpu_avatar import AvatarError
from gpu_avatar.relational.scenarios import format_summary

METHODS = ("linear_sum_assignment", "minimum_distance", "original_order")
TUTORIAL_K = 5


# ------------------------------------------------------------------------------- data
def load_tutorial() -> dict[str, pd.DataFrame]:
    """The tutorial tables patient (p_id), doctor (d_id), visit (visit_id, patient_id,
    doctor_id); the test is skipped when they are not there."""
    return {name: read_dataset(f"{name}.csv") for name in ("patient", "doctor", "visit")}


def tutorial_database(
    tables: dict[str, pd.DataFrame], patient_method: str, doctor_method="minimum_distance"
) -> ga.Database:
    db = ga.Database()
    db.add_table("patient", tables["patient"], primary_key="p_id")
    db.add_table("doctor", tables["doctor"], primary_key="d_id")
    db.add_table("visit", tables["visit"], primary_key="visit_id")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # original_order's warning: tested apart
        db.add_link("patient", "p_id", "visit", "patient_id", method=patient_method)
        db.add_link("doctor", "d_id", "visit", "doctor_id", method=doctor_method)
    return db


_RUNS: dict[tuple, tuple] = {}


def tutorial_run(method: str, seed: int = 0, k: int = TUTORIAL_K):
    """(original tables, result) of the tutorial database, cached per (method, seed, k)."""
    key = (method, seed, k)
    if key not in _RUNS:
        tables = load_tutorial()
        result = ga.avatarize_database(tutorial_database(tables, method), k=k, ncp=5, seed=seed)
        _RUNS[key] = (tables, result)
    return _RUNS[key]


def make_hospital_database(seed: int = 0) -> dict[str, pd.DataFrame]:
    """Five tables, four levels: hospital -> doctor -> visit <- patient, visit -> prescription.

    Mixed types (integers, floats with missing values, text, pandas categories, booleans,
    dates), text and integer keys, children depending on their parent, skewed children counts
    with zeros.
    """
    rng = np.random.default_rng(seed)
    n_hospitals, n_doctors, n_patients, n_visits = 10, 60, 150, 400
    hospital = pd.DataFrame(
        {
            "h_id": [f"H{i:02d}" for i in range(n_hospitals)],
            "beds": rng.integers(50, 800, n_hospitals),
            "region": pd.Categorical(rng.choice(["north", "south", "east"], n_hospitals)),
            "budget": rng.lognormal(3, 0.5, n_hospitals),
        }
    )
    doctor_hospital = rng.choice(n_hospitals, n_doctors, p=rng.dirichlet(np.full(n_hospitals, 2)))
    doctor = pd.DataFrame(
        {
            "d_id": np.arange(n_doctors) * 3 + 1000,
            "hospital_id": hospital["h_id"].to_numpy()[doctor_hospital],
            "specialty": rng.choice(
                ["gp", "cardio", "pedia", "onco"], n_doctors, p=[0.5, 0.2, 0.2, 0.1]
            ),
            "years": rng.gamma(3, 4, n_doctors)
            + hospital["beds"].to_numpy()[doctor_hospital] / 200,
            "senior": rng.random(n_doctors) < 0.3,
        }
    )
    patient = pd.DataFrame(
        {
            "p_id": [f"pat-{i}" for i in range(n_patients)],
            "age": rng.normal(55, 15, n_patients).round(1),
            "sex": rng.choice(["F", "M"], n_patients),
            "bmi": np.where(rng.random(n_patients) < 0.05, np.nan, rng.normal(26, 4, n_patients)),
        }
    )
    activity = rng.gamma(0.8, 1.0, n_patients)
    visit_patient = rng.choice(n_patients, n_visits, p=activity / activity.sum())
    visit_doctor = rng.integers(0, n_doctors, n_visits)
    visit = pd.DataFrame(
        {
            "visit_id": np.arange(n_visits),
            "patient_id": patient["p_id"].to_numpy()[visit_patient],
            "doctor_id": doctor["d_id"].to_numpy()[visit_doctor],
            "duration": rng.gamma(2, 10, n_visits) + patient["age"].to_numpy()[visit_patient] / 10,
            "urgent": rng.choice(["yes", "no"], n_visits, p=[0.2, 0.8]),
            "day": pd.Timestamp("2024-01-01")
            + pd.to_timedelta(rng.integers(0, 365, n_visits), unit="D"),
        }
    )
    n_drugs = rng.poisson(np.where(visit["urgent"] == "yes", 2.5, 0.8))
    drug_visit = np.repeat(np.arange(n_visits), n_drugs)
    n_rows = len(drug_visit)
    prescription = pd.DataFrame(
        {
            "rx_id": np.arange(n_rows) + 5,
            "visit_id": visit["visit_id"].to_numpy()[drug_visit],
            "drug": pd.Categorical(rng.choice(["a", "b", "c", "d"], n_rows)),
            "dose_mg": rng.choice([5.0, 10.0, 20.0, 40.0], n_rows) * (1 + rng.random(n_rows)),
            "refills": rng.integers(0, 4, n_rows),
        }
    )
    return dict(
        hospital=hospital, doctor=doctor, patient=patient, visit=visit, prescription=prescription
    )


HOSPITAL_LINKS = [  # parent, key, child, foreign key, method
    ("hospital", "h_id", "doctor", "hospital_id", "linear_sum_assignment"),
    ("doctor", "d_id", "visit", "doctor_id", "minimum_distance"),
    ("patient", "p_id", "visit", "patient_id", "linear_sum_assignment"),
    ("visit", "visit_id", "prescription", "visit_id", "linear_sum_assignment"),
]
HOSPITAL_KEYS = dict(
    hospital="h_id", doctor="d_id", patient="p_id", visit="visit_id", prescription="rx_id"
)


def hospital_database(tables: dict[str, pd.DataFrame]) -> ga.Database:
    db = ga.Database()
    db.add_table("hospital", tables["hospital"], "h_id", individual_level=False)
    db.add_table("doctor", tables["doctor"], "d_id", individual_level=True)  # has a parent
    db.add_table("patient", tables["patient"], "p_id")
    db.add_table("visit", tables["visit"], "visit_id")
    db.add_table("prescription", tables["prescription"], "rx_id")
    for parent, key, child, foreign_key, method in HOSPITAL_LINKS:
        db.add_link(parent, key, child, foreign_key, method=method)
    return db


@pytest.fixture(scope="module")
def hospital_run():
    tables = make_hospital_database()
    db = hospital_database(tables)
    result = ga.avatarize_database(db, k=5, ncp=5, seed=3, overrides={"hospital": {"k": 3}})
    return tables, db, result


# ---------------------------------------------------------------------------- helpers
def children_per_parent(foreign_keys: pd.Series, parent_keys: pd.Series) -> np.ndarray:
    """Number of children of every parent (zeros included), sorted."""
    counts = foreign_keys.value_counts().reindex(parent_keys, fill_value=0)
    assert counts.sum() == len(foreign_keys), "some foreign keys have no parent"
    return np.sort(counts.to_numpy())


def cardinality_similarity(original_fk, original_pk, avatar_fk, avatar_pk) -> float:
    original = children_per_parent(original_fk, original_pk)
    avatar = children_per_parent(avatar_fk, avatar_pk)
    return 1.0 - ks_2samp(original, avatar).statistic


def assert_same_shape_and_dtypes(original: pd.DataFrame, avatar: pd.DataFrame, name: str):
    assert list(avatar.columns) == list(original.columns), name
    assert len(avatar) == len(original), name
    for column in original.columns:
        assert avatar[column].dtype == original[column].dtype, (name, column)


def assert_integrity(tables: dict[str, pd.DataFrame], links, keys: dict[str, str]) -> None:
    """Every foreign key value is a primary key value of the (avatar) parent; no missing."""
    for parent, _, child, foreign_key, *_ in links:
        values = tables[child][foreign_key]
        assert values.notna().all(), (child, foreign_key)
        parent_keys = set(tables[parent][keys[parent]])
        missing = set(values) - parent_keys
        assert not missing, f"{child}.{foreign_key}: {len(missing)} value(s) with no {parent}"


def assert_fresh_unique_keys(originals, avatars, keys: dict[str, str]) -> None:
    for name, key in keys.items():
        released = avatars[name][key]
        assert released.notna().all(), name
        assert released.is_unique, f"{name}.{key} is not unique"
        reused = set(released) & set(originals[name][key])
        assert not reused, f"{name}.{key} reuses original key(s) {sorted(reused)[:5]}"


TUTORIAL_LINKS = [
    ("patient", "p_id", "visit", "patient_id"),
    ("doctor", "d_id", "visit", "doctor_id"),
]
TUTORIAL_KEYS = dict(patient="p_id", doctor="d_id", visit="visit_id")


# ---------------------------------------------------------------- tutorial: structure
@pytest.mark.parametrize("method", METHODS)
def test_tutorial_output_tables_keep_columns_dtypes_and_rows(method):
    tables, result = tutorial_run(method)
    assert set(result.tables) == set(tables)
    for name, original in tables.items():
        assert_same_shape_and_dtypes(original, result.tables[name], name)
        assert_same_shape_and_dtypes(original, result.sensitive_unshuffled_tables[name], name)


@pytest.mark.parametrize("method", METHODS)
def test_tutorial_referential_integrity_is_complete(method):
    tables, result = tutorial_run(method)
    assert_integrity(result.tables, TUTORIAL_LINKS, TUTORIAL_KEYS)
    assert_integrity(result.sensitive_unshuffled_tables, TUTORIAL_LINKS, TUTORIAL_KEYS)
    reports = {(r.parent, r.child): r for r in result.links}
    assert set(reports) == {("patient", "visit"), ("doctor", "visit")}
    assert reports["patient", "visit"].method == method
    assert reports["doctor", "visit"].method == "minimum_distance"
    assert all(r.referential_integrity == 100.0 for r in reports.values())


@pytest.mark.parametrize("method", METHODS)
def test_tutorial_keys_are_unique_and_never_original(method):
    tables, result = tutorial_run(method)
    assert_fresh_unique_keys(tables, result.tables, TUTORIAL_KEYS)
    # and so the foreign keys point to no original individual either
    visits = result.tables["visit"]
    assert not set(visits["patient_id"]) & set(tables["patient"]["p_id"])
    assert not set(visits["doctor_id"]) & set(tables["doctor"]["d_id"])


@pytest.mark.parametrize("method", METHODS)
def test_tutorial_release_is_a_shuffle_of_the_unshuffled_tables(method):
    _, result = tutorial_run(method)
    for name, key in TUTORIAL_KEYS.items():
        released = result.tables[name].sort_values(key).reset_index(drop=True)
        unshuffled = result.sensitive_unshuffled_tables[name]
        pd.testing.assert_frame_equal(released, unshuffled.sort_values(key).reset_index(drop=True))
    # the release order is not the original order
    assert not result.tables["patient"].equals(result.sensitive_unshuffled_tables["patient"])


# ------------------------------------------------------------- tutorial: cardinalities
def test_original_order_reproduces_children_per_parent_exactly():
    tables, result = tutorial_run("original_order")
    original = children_per_parent(tables["visit"]["patient_id"], tables["patient"]["p_id"])
    avatar = children_per_parent(
        result.tables["visit"]["patient_id"], result.tables["patient"]["p_id"]
    )
    np.testing.assert_array_equal(avatar, original)
    report = next(r for r in result.links if r.parent == "patient")
    assert report.cardinality_similarity == 1.0


def test_original_order_links_each_avatar_child_to_its_individuals_avatar():
    """Unshuffled row i is the avatar of original row i: avatar visit i's patient is the avatar
    of original visit i's patient."""
    tables, result = tutorial_run("original_order")
    unshuffled = result.sensitive_unshuffled_tables
    original_patient_row = pd.Index(tables["patient"]["p_id"]).get_indexer(
        tables["visit"]["patient_id"]
    )
    expected = unshuffled["patient"]["p_id"].to_numpy()[original_patient_row]
    np.testing.assert_array_equal(unshuffled["visit"]["patient_id"].to_numpy(), expected)


@pytest.mark.parametrize("method", METHODS)
def test_unshuffled_row_is_the_avatar_of_the_original_row(method):
    """Avatars are local blends of k = 5 neighbours: row i's avatar lies much closer to original
    row i than the avatars of other rows do."""
    tables, result = tutorial_run(method)
    columns = ["height", "age", "weight"]
    original = tables["patient"][columns]
    scale = original.std()
    avatar = result.sensitive_unshuffled_tables["patient"][columns]
    own = ((avatar - original) / scale).abs().mean(axis=1).mean()
    shifted = avatar.iloc[np.roll(np.arange(len(avatar)), 37)].reset_index(drop=True)
    other = ((shifted - original) / scale).abs().mean(axis=1).mean()
    assert own < 0.5 * other


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_linear_sum_assignment_keeps_children_per_parent_close(seed):
    tables, result = tutorial_run("linear_sum_assignment", seed=seed)
    similarity = cardinality_similarity(
        tables["visit"]["patient_id"],
        tables["patient"]["p_id"],
        result.tables["visit"]["patient_id"],
        result.tables["patient"]["p_id"],
    )
    assert similarity >= 0.8
    report = next(r for r in result.links if r.parent == "patient")
    assert report.cardinality_similarity == pytest.approx(similarity)
    assert report.total_cost is not None and report.total_cost > 0


def test_minimum_distance_runs_and_reports_its_cardinality():
    tables, result = tutorial_run("minimum_distance")
    report = next(r for r in result.links if r.parent == "patient")
    assert report.method == "minimum_distance"
    similarity = cardinality_similarity(
        tables["visit"]["patient_id"],
        tables["patient"]["p_id"],
        result.tables["visit"]["patient_id"],
        result.tables["patient"]["p_id"],
    )
    assert 0.0 <= similarity <= 1.0
    assert report.cardinality_similarity == pytest.approx(similarity)
    assert np.isfinite(report.total_cost) and report.total_cost > 0


def test_same_seed_same_release_other_seed_other_release():
    tables = load_tutorial()
    runs = [
        ga.avatarize_database(tutorial_database(tables, "linear_sum_assignment"), k=5, seed=seed)
        for seed in (11, 11, 12)
    ]
    for name in tables:
        pd.testing.assert_frame_equal(runs[0].tables[name], runs[1].tables[name])
        pd.testing.assert_frame_equal(
            runs[0].sensitive_unshuffled_tables[name], runs[1].sensitive_unshuffled_tables[name]
        )
    assert not runs[0].tables["patient"].equals(runs[2].tables["patient"])


def test_original_order_warns_and_other_methods_do_not():
    tables = load_tutorial()
    db = ga.Database()
    db.add_table("patient", tables["patient"], primary_key="p_id")
    db.add_table("doctor", tables["doctor"], primary_key="d_id")
    db.add_table("visit", tables["visit"], primary_key="visit_id")
    with pytest.warns(UserWarning, match="original_order"):
        db.add_link("patient", "p_id", "visit", "patient_id", method="original_order")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        db.add_link("doctor", "d_id", "visit", "doctor_id", method="minimum_distance")
        db2 = ga.Database()
        db2.add_table("patient", tables["patient"], primary_key="p_id")
        db2.add_table("visit", tables["visit"].drop(columns="doctor_id"), primary_key="visit_id")
        db2.add_link("patient", "p_id", "visit", "patient_id")  # default method
    assert db2.links[0].method == "linear_sum_assignment"


# -------------------------------------------------------------------- tutorial: metrics
PRIVACY_ENTRIES = {
    ("patient", "standalone", "patient"),
    ("doctor", "standalone", "doctor"),
    ("patient", "to_top_enriched", "visit"),
    ("doctor", "to_top_enriched", "visit"),
    ("patient", "to_bottom_id_propagated", "visit"),
    ("doctor", "to_bottom_id_propagated", "visit"),
}
SIGNAL_ENTRIES = {
    ("patient", "standalone", "patient"),
    ("doctor", "standalone", "doctor"),
    ("visit", "standalone", "visit"),
    ("patient", "to_top_enriched", "visit"),
    ("doctor", "to_top_enriched", "visit"),
    ("visit", "to_bottom_information_propagated", "patient"),
    ("visit", "to_bottom_information_propagated", "doctor"),
}
_PRIVACY: dict[str, object] = {}


def tutorial_privacy(method: str):
    if method not in _PRIVACY:
        _PRIVACY[method] = tutorial_run(method)[1].privacy_metrics()
    return _PRIVACY[method]


def test_privacy_metrics_have_one_entry_per_table_scenario_and_reference():
    privacy = tutorial_privacy("linear_sum_assignment")
    assert {(e.table, e.scenario, e.reference) for e in privacy} == PRIVACY_ENTRIES
    # the visits are enriched with each of their two parents: two entries, told apart by `via`
    propagated = [e for e in privacy if e.scenario == "to_bottom_id_propagated"]
    assert {(e.table, e.via) for e in propagated} == {
        (table, via) for table in ("patient", "doctor") for via in ("patient", "doctor")
    }
    result = tutorial_run("linear_sum_assignment")[1]
    for entry in (e for e in privacy if e.scenario == "standalone"):  # the table alone
        variables = result.database.variables(entry.table)
        direct = ga.privacy_metrics(result.originals[entry.table][variables],
                                    result.sensitive_unshuffled_tables[entry.table][variables],
                                    ncp=5)  # fmt: skip
        pd.testing.assert_frame_equal(entry.metrics.to_frame(), direct.to_frame())
    frame = privacy.to_frame()
    assert len(frame) == len(privacy)
    assert {"table", "scenario", "reference", "hidden_rate", "local_cloaking"} <= set(frame)


def test_to_top_enriched_exposes_original_order_links():
    """Keeping every avatar visit with its own patient's avatar lets the number and content of
    visits single patients out: the enriched scenario must see it."""

    def enriched_hidden_rate(method):
        return next(
            e.metrics.hidden_rate
            for e in tutorial_privacy(method)
            if (e.table, e.scenario) == ("patient", "to_top_enriched")
        )

    assert (
        enriched_hidden_rate("original_order") < enriched_hidden_rate("linear_sum_assignment") - 20
    )


def test_signal_metrics_have_one_entry_per_table_scenario_and_reference():
    signal = tutorial_run("linear_sum_assignment")[1].signal_metrics()
    assert {(e.table, e.scenario, e.reference) for e in signal} == SIGNAL_ENTRIES
    assert len(signal) == len(SIGNAL_ENTRIES)
    assert len(signal.to_frame()) == len(SIGNAL_ENTRIES)


@pytest.mark.parametrize("method", ["linear_sum_assignment", "original_order"])
def test_metrics_summary_gives_the_worst_scenario_of_every_cell_as_numbers(method):
    _, result = tutorial_run(method)
    privacy = tutorial_privacy(method)
    summary = result.metrics_summary(privacy)
    assert list(summary.columns) == [
        "table", "reference", "scenario", "hidden_rate", "local_cloaking", "passed",
    ]  # fmt: skip
    cells = {(row.table, row.reference): row for row in summary.itertuples()}
    expected_cells = {(e.table, e.reference) for e in privacy}
    assert set(cells) == expected_cells
    assert ("patient", "doctor") not in cells and ("doctor", "patient") not in cells
    for (table, reference), row in cells.items():
        entries = [e for e in privacy if (e.table, e.reference) == (table, reference)]
        worst = min(entries, key=lambda e: e.metrics.hidden_rate)
        assert row.scenario == worst.scenario
        assert row.hidden_rate == worst.metrics.hidden_rate
        assert row.local_cloaking == worst.metrics.local_cloaking
        assert row.passed == (worst.metrics.hidden_rate > 90 and worst.metrics.local_cloaking > 5)
    for table in ("patient", "doctor"):
        assert cells[(table, table)].scenario == "standalone"
    # the display: individual-level tables x tables, one sentence a cell
    matrix = format_summary(summary, result)
    assert list(matrix.index) == ["patient", "doctor"]
    assert list(matrix.columns) == ["patient", "doctor", "visit"]
    assert matrix.loc["patient", "doctor"] == ""
    row = cells[("patient", "visit")]
    assert matrix.loc["patient", "visit"] == (
        f"{row.scenario}: {row.hidden_rate:.1f} % (LC {row.local_cloaking:g}) "
        + ("pass" if row.passed else "FAIL")
    )
    # without a precomputed list, the summary computes the same one
    pd.testing.assert_frame_equal(result.metrics_summary(), summary)


# ------------------------------------------------------------------ generated schema
def test_four_level_schema_runs_end_to_end_with_integrity(hospital_run):
    tables, db, result = hospital_run
    assert db.topological_order().index("hospital") < db.topological_order().index("doctor")
    for name, original in tables.items():
        assert_same_shape_and_dtypes(original, result.tables[name], name)
    assert_integrity(result.tables, HOSPITAL_LINKS, HOSPITAL_KEYS)
    assert_integrity(result.sensitive_unshuffled_tables, HOSPITAL_LINKS, HOSPITAL_KEYS)
    assert_fresh_unique_keys(tables, result.tables, HOSPITAL_KEYS)
    # deeper levels point at the avatar keys of their parents, not at the originals
    assert not set(result.tables["prescription"]["visit_id"]) & set(tables["visit"]["visit_id"])
    assert not set(result.tables["doctor"]["hospital_id"]) & set(tables["hospital"]["h_id"])
    assert len(result.links) == len(HOSPITAL_LINKS)
    for report in result.links:
        assert report.referential_integrity == 100.0
        assert 0.0 <= report.cardinality_similarity <= 1.0
    # text and boolean columns keep their values' domain
    assert set(result.tables["doctor"]["senior"]) <= {True, False}
    assert set(result.tables["visit"]["urgent"]) <= {"yes", "no"}
    # a parent avatar with no child is allowed (zeros in the count), and the deepest LSA link
    # keeps the skewed prescriptions-per-visit distribution close
    deepest = next(r for r in result.links if r.child == "prescription")
    assert deepest.cardinality_similarity >= 0.8


def test_four_level_schema_metrics_follow_declared_individual_levels(hospital_run):
    tables, db, result = hospital_run
    assert [t for t in tables if db.is_individual_level(t)] == ["doctor", "patient"]
    privacy = result.privacy_metrics()
    entries = {(e.table, e.scenario, e.reference) for e in privacy}
    assert {e[0] for e in entries} == {"doctor", "patient"}
    assert ("doctor", "to_bottom_id_propagated", "hospital") in entries  # doctor has a parent
    assert ("doctor", "to_top_enriched", "visit") in entries
    assert ("patient", "to_bottom_id_propagated", "prescription") in entries  # grand-children
    summary = format_summary(result.metrics_summary(privacy), result)
    assert set(summary.index) == {"doctor", "patient"}
    assert list(summary.columns) == db.topological_order()
    assert summary.loc["patient", "hospital"] == ""
    assert summary.loc["doctor", "hospital"].startswith("to_bottom_id_propagated")
    signal = result.signal_metrics()
    assert {(e.table, e.scenario) for e in signal if e.scenario == "standalone"} == {
        (t, "standalone") for t in tables
    }


def test_string_and_categorical_foreign_keys_keep_integrity():
    """A pandas ``category`` foreign key must take the new keys, not stay on the old ones."""
    tables = make_hospital_database(seed=1)
    tables["visit"]["patient_id"] = tables["visit"]["patient_id"].astype("category")
    db = ga.Database()
    db.add_table("patient", tables["patient"], "p_id")
    db.add_table("visit", tables["visit"].drop(columns="doctor_id"), "visit_id")
    db.add_link("patient", "p_id", "visit", "patient_id")
    result = ga.avatarize_database(db, k=5, seed=0)
    released = result.tables["visit"]["patient_id"]
    assert isinstance(released.dtype, pd.CategoricalDtype)
    assert released.notna().all()
    assert set(released) <= set(result.tables["patient"]["p_id"])
    assert result.links[0].referential_integrity == 100.0


# ------------------------------------------------------------------------- validation
def small_tables(n_parents=20, n_children=60, seed=0):
    rng = np.random.default_rng(seed)
    parent = pd.DataFrame(
        {"pid": np.arange(n_parents) + 100, "x": rng.normal(size=n_parents), "c": "a"}
    )
    parent["c"] = rng.choice(["a", "b"], n_parents)
    child = pd.DataFrame(
        {
            "cid": np.arange(n_children),
            "pid": rng.integers(100, 100 + n_parents, n_children),
            "y": rng.normal(size=n_children),
        }
    )
    return parent, child


def small_database(parent, child, **link_options) -> ga.Database:
    db = ga.Database().add_table("parent", parent, "pid").add_table("child", child, "cid")
    return db.add_link("parent", "pid", "child", "pid", **link_options)


def test_cycle_is_refused_naming_the_tables():
    parent, child = small_tables()
    parent = parent.assign(cid=child["cid"].iloc[: len(parent)].to_numpy())
    db = small_database(parent, child)
    db.add_link("child", "cid", "parent", "cid")
    with pytest.raises(AvatarError, match=r"cycle.*'child'|cycle.*'parent'"):
        ga.avatarize_database(db, k=3, seed=0)


def test_self_reference_is_a_cycle():
    parent, _ = small_tables()
    parent["manager"] = parent["pid"].to_numpy()[::-1]
    db = ga.Database().add_table("person", parent, "pid")
    db.add_link("person", "pid", "person", "manager")
    with pytest.raises(AvatarError, match="cycle.*person"):
        ga.avatarize_database(db, k=3, seed=0)


def test_unknown_tables_and_columns_are_named():
    parent, child = small_tables()
    db = ga.Database().add_table("parent", parent, "pid").add_table("child", child, "cid")
    with pytest.raises(AvatarError, match="'ghost'"):
        db.add_link("ghost", "pid", "child", "pid")
    with pytest.raises(AvatarError, match="'ghost'"):
        db.add_link("parent", "pid", "ghost", "pid")
    with pytest.raises(AvatarError, match="'child'.*'parent_id'"):
        db.add_link("parent", "pid", "child", "parent_id")
    with pytest.raises(AvatarError, match="'x'.*primary key of 'parent'"):
        db.add_link("parent", "x", "child", "pid")
    with pytest.raises(AvatarError, match="'other'.*'id'"):
        ga.Database().add_table("other", parent, primary_key="id")
    with pytest.raises(AvatarError, match="'other'.*'zz'"):
        ga.Database().add_table("other", parent, "pid", types={"zz": "categorical"})
    with pytest.raises(AvatarError, match="'parent'.*already"):
        db.add_table("parent", parent, "pid")


@pytest.mark.parametrize("problem", ["duplicate", "missing"])
def test_primary_key_must_be_unique_and_not_null(problem):
    parent, child = small_tables()
    parent["pid"] = parent["pid"].astype(float)
    if problem == "duplicate":
        parent.loc[3, "pid"] = parent.loc[4, "pid"]
        message = (r"'parent'.*'pid'.*not unique \(1 repeated value\(s\), in rows 4, 5 by "
                   r"position\); name a unique key")
    else:
        parent.loc[3, "pid"] = np.nan
        message = r"'parent'.*'pid' is missing in 1 row\(s\); give those rows a key"
    child = child[child["pid"].isin(parent["pid"])]
    with pytest.raises(AvatarError, match=message):
        ga.avatarize_database(small_database(parent, child), k=3, seed=0)


def test_orphans_are_counted_and_shown():
    parent, child = small_tables()
    child.loc[[5, 6, 7], "pid"] = [999, 998, 999]
    with pytest.raises(AvatarError, match=r"3 row\(s\) of 'child'.*'pid'.*parent\.pid") as error:
        ga.avatarize_database(small_database(parent, child), k=3, seed=0)
    assert "(rows 6, 7, 8, by position)" in str(error.value) and "999" not in str(error.value)
    assert "drop_orphans=True" in str(error.value)
    for entry in ("cli", "yaml"):  # the fix in the words of the command line, a YAML file
        assert "drop_orphans=True" not in error.value.worded(entry)
        assert ("links: - {parent: parent, child: child, foreign_key: pid, drop_orphans: true}"
                in error.value.worded(entry))


@pytest.mark.parametrize("keys", ["text", "category"])
def test_text_keys_against_number_keys_are_a_type_mismatch_not_orphans(keys):
    parent, child = small_tables()
    child["pid"] = child["pid"].astype(str).astype(keys if keys == "category" else object)
    with pytest.raises(ga.FixableError, match=r"link parent->child: child.pid holds text "
                       r"\(e.g. a 3-character text shaped 999\) but parent.pid holds numbers, so "
                       r"no value can match "
                       r"\(a type mismatch, not orphans\); cast the column") as error:
        ga.avatarize_database(small_database(parent, child), k=3, seed=0)
    assert "orphan" not in error.value.worded("yaml").replace("not orphans", "")
    assert "write child.pid as numbers, like parent.pid, in its file" in error.value.worded(
        "yaml")
    child["pid"] = child["pid"].astype(int)  # the fix
    assert ga.avatarize_database(small_database(parent, child), k=3, seed=0).links[
        0].referential_integrity == 100.0
    parent["pid"] = pd.to_datetime(parent["pid"], unit="D")  # dates against numbers
    with pytest.raises(ga.FixableError, match="child.pid holds numbers .* holds dates"):
        ga.avatarize_database(small_database(parent, child), k=3, seed=0)


def test_errors_while_a_database_is_avatarized_name_the_table():
    parent, child = small_tables()
    child["note"] = ["x", "y", "z"] * 20
    db = small_database(parent, child)
    db.tables["child"].types["note"] = "continuous"  # a text column declared continuous
    with pytest.raises(AvatarError, match=r"^table 'child': column 'note' is declared "
                       r"continuous but 60 cells \(rows 1, 2, 3 and 57 more: the first a "
                       r"1-character text shaped a\) do not read as a number"):
        ga.avatarize_database(db, k=3, seed=0)
    child["note"] = None  # a column without a value
    with pytest.raises(AvatarError, match=r"^table 'child': column\(s\) \['note'\] have no "):
        ga.avatarize_database(small_database(parent, child), k=3, seed=0)


@pytest.mark.parametrize("method", ["linear_sum_assignment", "minimum_distance", "original_order"])
def test_a_missing_foreign_key_is_a_child_without_a_parent(method):
    """Kept (not an orphan), its missing rate avatarized like any missing value; every
    avatar foreign key that is present points at an avatar parent; the metrics run."""
    parent, child = small_tables(n_parents=40, n_children=600, seed=3)
    child["pid"] = child["pid"].astype(float)
    without = np.random.default_rng(1).random(len(child)) < 0.2
    child.loc[without, "pid"] = np.nan
    before = child.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # original_order warns: it is expected
        db = small_database(parent, child, method=method)
    result = ga.avatarize_database(db, k=10, seed=0)
    pd.testing.assert_frame_equal(child, before)  # the input is not modified
    avatars = result.tables["child"]
    assert len(avatars) == len(child) and avatars.dtypes.equals(child.dtypes)
    share = avatars["pid"].isna().mean()
    assert abs(share - without.mean()) < 0.06, share
    present = avatars["pid"].dropna()
    assert present.isin(result.tables["parent"]["pid"]).all()
    assert result.links[0].referential_integrity == 100.0
    # unshuffled: row i is the avatar of child i; original_order keeps each one's presence
    unshuffled = result.sensitive_unshuffled_tables["child"]
    if method == "original_order":
        np.testing.assert_array_equal(unshuffled["pid"].isna().to_numpy(), without)
    privacy = result.privacy_metrics().to_frame()
    assert privacy["hidden_rate"].notna().all()
    signal = result.signal_metrics().to_frame()
    assert signal["hellinger_mean"].notna().all()


def test_drop_orphans_drops_them_with_a_warning():
    parent, child = small_tables()
    child.loc[[5, 6, 7], "pid"] = [999, 998, 999]
    db = small_database(parent, child, drop_orphans=True)
    with pytest.warns(UserWarning, match=r"3 row\(s\) of 'child'.*dropped"):
        result = ga.avatarize_database(db, k=3, seed=0)
    assert len(result.tables["child"]) == len(child) - 3
    assert len(result.tables["parent"]) == len(parent)
    assert result.tables["child"]["pid"].isin(result.tables["parent"]["pid"]).all()
    assert result.links[0].referential_integrity == 100.0
    assert len(child) == 60  # the user's frame is not modified


def test_dropped_orphans_take_their_own_children_along_only_when_asked():
    parent, child = small_tables()
    child.loc[[5, 6], "pid"] = [999, 998]
    rng = np.random.default_rng(1)
    grandchild = pd.DataFrame(
        {"gid": np.arange(90), "cid": rng.integers(0, 60, 90), "z": rng.normal(size=90)}
    )
    grandchild.loc[[0, 1, 2], "cid"] = [5, 6, 5]  # children of the orphans
    n_orphans = int(grandchild["cid"].isin([5, 6]).sum())

    def database(drop_grand_orphans: bool) -> ga.Database:
        db = small_database(parent, child, drop_orphans=True).add_table("grand", grandchild, "gid")
        return db.add_link("child", "cid", "grand", "cid", drop_orphans=drop_grand_orphans)

    message = rf"{n_orphans} row\(s\) of 'grand' have a 'cid' absent from child.cid \(rows? \d"
    with pytest.warns(UserWarning), pytest.raises(AvatarError, match=message):
        ga.avatarize_database(database(False), k=3, seed=0)
    with pytest.warns(UserWarning) as record:
        result = ga.avatarize_database(database(True), k=3, seed=0)
    messages = [str(w.message) for w in record]
    assert any("2 row(s) of 'child'" in m and "dropped" in m for m in messages)
    assert any(f"{n_orphans} row(s) of 'grand'" in m and "dropped" in m for m in messages)
    assert len(result.tables["grand"]) == 90 - n_orphans
    assert len(result.tables["child"]) == 58
    assert result.tables["grand"]["cid"].isin(result.tables["child"]["cid"]).all()


def test_primary_key_cannot_be_a_foreign_key():
    parent, child = small_tables()
    child = child.assign(cid=child["pid"].to_numpy())
    child = child.drop_duplicates("cid")
    db = ga.Database().add_table("parent", parent, "pid").add_table("child", child, "cid")
    with pytest.raises(AvatarError, match="'cid'.*primary key of 'child'"):
        db.add_link("parent", "pid", "child", "cid")


def test_same_parent_referenced_twice_is_refused():
    parent, child = small_tables()
    child["second_pid"] = child["pid"].to_numpy()[::-1]
    db = small_database(parent, child)
    with pytest.raises(AvatarError, match="'child'.*'parent'.*twice"):
        db.add_link("parent", "pid", "child", "second_pid")


def refused(call, *fix: str) -> str:
    """The one-line message of ``call``'s refusal, which holds ``fix`` and no key value."""
    with pytest.raises(AvatarError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message and all(part in message for part in fix), message
    assert not re.search(r"\b1[0-9][0-9]\b", message), message  # the parents' keys: 100-119
    return message


def test_odd_tables_are_refused_with_the_fix_and_no_value():
    """#37: each refused in one line with its fix, quoting no value."""
    parent, child = small_tables()
    refused(lambda: ga.Database().add_table("child", child.assign(y2=child["y"]).rename(
        columns={"y2": "y"}), "cid"), "table 'child': duplicate column name(s) ['y']",
        "rename them to be unique")
    refused(lambda: ga.Database().add_table("child", child.astype(
        {"y": pd.SparseDtype(float)}), "cid"), "df['y'] = df['y'].sparse.to_dense()")
    keys_only = ga.Database().add_table("parent", parent[["pid"]], "pid")
    refused(lambda: ga.avatarize_database(keys_only, k=3, seed=0),
            "'parent' has no variable besides its keys", "or leave it out of the database")
    missing_key = small_database(parent.astype({"pid": float}).assign(
        pid=lambda d: d["pid"].where(d.index != 4)), child)
    refused(lambda: ga.avatarize_database(missing_key, k=3, seed=0),
            "primary key 'pid' is missing in 1 row(s)", "data.dropna(subset=['pid'])")
    repeated = small_database(parent.assign(pid=parent["pid"].where(parent.index != 4, 105)),
                              child)
    refused(lambda: ga.avatarize_database(repeated, k=3, seed=0),
            "'pid' is not unique (1 repeated value(s)", "; name a unique key")


def test_empty_table_is_refused():
    parent, child = small_tables()
    db = small_database(parent, child.iloc[:0])
    with pytest.raises(AvatarError, match="'child' is empty: no row to avatarize; add its rows, "
                                          r"or leave it out of the database \(no add_table\)"):
        ga.avatarize_database(db, k=3, seed=0)
    with pytest.raises(AvatarError, match="no table"):
        ga.avatarize_database(ga.Database(), k=3, seed=0)


def test_k_must_be_below_every_tables_row_count_and_may_be_per_table():
    parent, child = small_tables(n_parents=20, n_children=60)
    db = small_database(parent, child)
    with pytest.raises(AvatarError, match=r"'parent' has 20 rows: k = 20"):
        ga.avatarize_database(db, k=20, seed=0)
    with pytest.raises(AvatarError, match=r"k = 1 is out of range: need 2 <= k"):
        ga.avatarize_database(db, k=1, seed=0)
    result = ga.avatarize_database(db, k=30, ncp=2, seed=0, overrides={"parent": {"k": 4}})
    assert result.table_results["parent"].parameters.k == 4
    assert result.table_results["child"].parameters.k == 30
    with pytest.raises(AvatarError, match=r"'parent' has 20 rows.*overrides=\{'parent': \{'k': 5"
                       ) as error:
        ga.avatarize_database(db, k=30, seed=0)
    assert error.value.worded("yaml").endswith("give the table its own k, e.g. tables: "
                                               "{parent: {k: 5}}")
    assert "lower --k, or give the table its own k in a YAML file (tables: {parent: {k: 5}}" \
        in error.value.worded("cli")
    with pytest.raises(AvatarError, match="unknown table.*'ghost'"):
        ga.avatarize_database(db, k=4, seed=0, overrides={"ghost": {"k": 3}})
    with pytest.raises(AvatarError, match="'child' has 60 rows: k = 60"):
        ga.avatarize_database(db, k=4, seed=0, overrides={"child": {"k": 60}})
    with pytest.raises(AvatarError, match=r"overrides\['child'\] sets \['seed'\]"):
        ga.avatarize_database(db, k=4, seed=0, overrides={"child": {"seed": 1}})
    with pytest.raises(AvatarError, match="types are declared per table"):
        ga.avatarize_database(db, k=4, types={"x": "categorical"})


def test_bad_method_name_lists_the_methods():
    parent, child = small_tables()
    db = ga.Database().add_table("parent", parent, "pid").add_table("child", child, "cid")
    with pytest.raises(AvatarError, match="'nearest'.*minimum_distance"):
        db.add_link("parent", "pid", "child", "pid", method="nearest")


def test_not_a_database_is_refused():
    with pytest.raises(AvatarError, match="Database"):
        ga.avatarize_database({"patient": pd.DataFrame()}, k=3)


def test_arguments_are_checked_before_any_table_is_avatarized():
    parent, child = small_tables()
    db = small_database(parent, child)
    calls = []
    for settings, error, message in (
        (dict(assignment_block_size=0), AvatarError, "assignment_block_size = 0 is out of range"),
        (dict(assignment_block_size="a"), ga.AvatarTypeError,
         "assignment_block_size must be an integer, got 'a'"),
        (dict(overrides=[("child", {"k": 3})]), ga.AvatarTypeError,
         "overrides must map table names to parameters"),
        (dict(overrides={"child": {"k": 0}}), AvatarError,
         r"overrides\['child'\]: k = 0 is out of range"),
    ):  # fmt: skip
        with pytest.raises(error, match=message):
            ga.avatarize_database(db, k=3, seed=0, progress=lambda *step: calls.append(step),
                                  **settings)  # fmt: skip
    assert calls == []  # refused up front, not after the parent's avatarization


def test_a_database_prints_its_tables_and_links_and_no_value():
    tables = load_tutorial()
    db = tutorial_database(tables, "linear_sum_assignment")
    assert repr(db) == (
        "Database: 3 tables, 2 links\n"
        "  table 'patient': 130 rows x 5 columns, primary key 'p_id'\n"
        "  table 'doctor': 50 rows x 3 columns, primary key 'd_id'\n"
        "  table 'visit': 300 rows x 5 columns, primary key 'visit_id'\n"
        "  link patient.p_id <- visit.patient_id (linear_sum_assignment)\n"
        "  link doctor.d_id <- visit.doctor_id (minimum_distance)")
    one = ga.Database().add_table("doctor", tables["doctor"], primary_key="d_id")
    assert str(one).splitlines()[0] == "Database: 1 table" and repr(ga.Database()) == (
        "Database: no table")


def test_table_declarations_are_checked_as_written():
    parent, child = small_tables()
    with pytest.raises(ga.AvatarTypeError, match="primary_key must be one column name, got"):
        ga.Database().add_table("parent", parent, ["pid"])
    with pytest.raises(ga.AvatarTypeError, match="individual_level must be True or False"):
        ga.Database().add_table("parent", parent, "pid", individual_level="no")
    db = ga.Database().add_table("parent", parent, "pid").add_table("child", child, "cid")
    with pytest.raises(ga.AvatarTypeError, match="drop_orphans must be True or False"):
        db.add_link("parent", "pid", "child", "pid", drop_orphans="no")


def test_fresh_keys_that_do_not_fit_the_key_type_are_refused():
    """uint8 keys 50..249: 200 fresh keys avoiding them run past 255 and would wrap onto
    real keys (duplicates, integrity silently lost)."""
    parent, child = small_tables(n_parents=200, n_children=300)
    parent["pid"] = np.arange(50, 250, dtype=np.uint8)
    child["pid"] = np.random.default_rng(0).integers(50, 250, 300).astype(np.uint8)
    with pytest.raises(AvatarError, match=r"'pid' \(uint8\) cannot hold fresh values"):
        ga.avatarize_database(small_database(parent, child), k=3, seed=0)


def test_a_parent_without_children_and_zero_counts_are_handled():
    """Parents with no child at all (zeros) and a parent table whose every row has children."""
    parent, child = small_tables(n_parents=30, n_children=40)
    child["pid"] = np.where(child["pid"] < 115, child["pid"], 100)  # 15 childless parents
    result = ga.avatarize_database(small_database(parent, child), k=4, seed=0)
    counts = children_per_parent(result.tables["child"]["pid"], result.tables["parent"]["pid"])
    assert counts.sum() == 40
    assert (counts == 0).sum() >= 5
    assert result.links[0].referential_integrity == 100.0


def test_a_parent_with_two_children_tables_keeps_both_links():
    tables = make_hospital_database(seed=2)
    rng = np.random.default_rng(5)
    lab = pd.DataFrame(
        {
            "lab_id": np.arange(300),
            "patient_id": rng.choice(tables["patient"]["p_id"], 300),
            "value": rng.normal(size=300),
        }
    )
    db = ga.Database().add_table("patient", tables["patient"], "p_id")
    db.add_table("visit", tables["visit"].drop(columns="doctor_id"), "visit_id")
    db.add_table("lab", lab, "lab_id")
    db.add_link("patient", "p_id", "visit", "patient_id")
    db.add_link("patient", "p_id", "lab", "patient_id")
    result = ga.avatarize_database(db, k=5, seed=0)
    for child in ("visit", "lab"):
        assert_integrity(
            result.tables, [("patient", "p_id", child, "patient_id")], {"patient": "p_id"}
        )
        original = tables["visit"] if child == "visit" else lab
        similarity = cardinality_similarity(
            original["patient_id"],
            tables["patient"]["p_id"],
            result.tables[child]["patient_id"],
            result.tables["patient"]["p_id"],
        )
        assert similarity >= 0.75, child
    entries = {(e.table, e.scenario, e.reference) for e in result.privacy_metrics()}
    assert {
        ("patient", "to_top_enriched", "visit"),
        ("patient", "to_top_enriched", "lab"),
    } <= entries


def test_large_child_table_in_batches_keeps_integrity_and_contract():
    """A child table above its batch_size is avatarized in batches; links stay whole."""
    rng = np.random.default_rng(5)
    parents = pd.DataFrame(
        {"pid": np.arange(120), "age": rng.normal(50, 10, 120), "sex": rng.choice(["F", "M"], 120)}
    )
    children = pd.DataFrame(
        {
            "cid": np.arange(1500),
            "pid": rng.integers(0, 120, 1500),
            "dose": rng.gamma(2.0, 3.0, 1500),
            "drug": rng.choice(["a", "b", "c"], 1500),
        }
    )
    db = ga.Database()
    db.add_table("parent", parents, primary_key="pid")
    db.add_table("child", children, primary_key="cid")
    db.add_link("parent", "pid", "child", "pid")
    result = ga.avatarize_database(db, k=10, seed=1, overrides={"child": {"batch_size": 500}})
    assert result.table_results["child"].batches is not None
    assert len(result.table_results["child"].batches) == 3
    child = result.tables["child"]
    assert child.shape == children.shape and child.dtypes.equals(children.dtypes)
    assert child["pid"].isin(result.tables["parent"]["pid"]).all()
    assert set(child["drug"]) <= {"a", "b", "c"}
