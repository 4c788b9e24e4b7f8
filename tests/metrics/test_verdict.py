"""The release verdict: one of three answers, with every target's margin, the worst direct-match
column, the exact copies and the attack risks as its findings; on the AIDS table and its
published avatars (tests/data), a leaked release and a database."""

from __future__ import annotations

import pytest
from realdata import read_dataset

import gpu_avatar as ga
from gpu_avatar.metrics.catalogue import PRIVACY_TARGETS, SUMMARY_METRICS
from gpu_avatar.metrics.verdict import (
    ATTACK,
    COPIES,
    EXCEPTIONS,
    FAILS,
    MEETS,
    TARGET,
    Finding,
    release_verdict,
)
from gpu_avatar.relational.scenarios import metrics_summary


@pytest.fixture(scope="module")
def published_privacy(aids):
    return ga.privacy_metrics(aids.df, aids.published, ncp=5, types=aids.metric_types)


def test_every_judged_target_is_a_finding_with_its_margin(published_privacy):
    verdict = release_verdict(published_privacy)
    targets = {f.name: f for f in verdict.findings if f.kind == TARGET}
    judged = [name for name, t in PRIVACY_TARGETS.items()
              if t.threshold is not None and getattr(published_privacy, name) is not None]
    assert sorted(targets) == sorted(judged)
    hidden = targets["hidden_rate"]
    assert hidden.decisive and hidden.passed
    assert hidden.margin == pytest.approx(published_privacy.hidden_rate - 90)
    assert targets["column_direct_match_protection"].detail["column"] == \
        published_privacy.worst_direct_match_column
    assert {f.name for f in verdict.findings if f.decisive} == set(SUMMARY_METRICS)
    assert not verdict.attacks_measured


def test_the_published_avatars_meet_the_decisive_targets(published_privacy):
    verdict = release_verdict(published_privacy)
    assert verdict.answer in (MEETS, EXCEPTIONS)
    failed = [f for f in verdict.findings if not f.passed]
    assert verdict.reasons == (failed or [f for f in verdict.findings if f.decisive])
    assert (verdict.answer == MEETS) == (not failed)


def test_a_leaked_release_does_not_meet_its_targets(aids):
    """The originals released as they are: traced, copied, and attacked."""
    training, holdout = ga.split_holdout(aids.df, 0.2, seed=1)
    privacy = ga.privacy_metrics(training, training, ncp=5, types=aids.metric_types)
    attacks = ga.attack_metrics(training, training, holdout, types=aids.types, seed=0,
                                secrets=["age", "cd40"], singling_out_queries=50)
    verdict = release_verdict(privacy, attacks)
    assert verdict.answer == FAILS
    names = {f.name for f in verdict.reasons}
    assert {"hidden_rate", "local_cloaking"} <= names
    [copies] = [f for f in verdict.findings if f.kind == COPIES]
    assert not copies.passed and copies.value == len(training)
    assert any(f.kind == ATTACK for f in verdict.reasons)
    lines = verdict.lines()
    unique = privacy.exact_copies_shared[1]
    assert verdict.unique_copies == unique > 0
    assert lines[0] == (f"verdict: The release does not meet its targets. {unique} avatars "
                        "copy rows that one original alone holds each.")
    assert any("hidden_rate 0 misses its target > 90 by 90" in line for line in lines)
    french = verdict.lines("fr")
    assert french[0].startswith("verdict : La publication n'atteint pas ses objectifs. "
                                f"{unique} avatars copient")


def test_a_missed_target_that_is_not_decisive_is_a_named_exception(published_privacy):
    exception = Finding(TARGET, "closest_rate", False, value=80.0,
                        target=PRIVACY_TARGETS["closest_rate"])
    verdict = release_verdict(published_privacy)
    decisive = tuple(f for f in verdict.findings if f.decisive)
    mixed = type(verdict)(EXCEPTIONS, (*decisive, exception), False)
    assert mixed.reasons == [exception]
    assert "closest_rate 80 misses its target > 90 by 10" in str(mixed)


def test_copies_of_unique_rows_are_named_in_the_answer(published_privacy):
    """Copies of rows held by several originals are a named exception below the answer;
    copies of a row one original alone holds are said in the answer's sentence."""
    decisive = tuple(f for f in release_verdict(published_privacy).findings if f.decisive)
    shared = Finding(COPIES, "exact_copies", False, value=4, detail={"shared": {2: 4}})
    verdict = type(release_verdict(published_privacy))(EXCEPTIONS, (*decisive, shared), False)
    assert verdict.unique_copies == 0
    assert verdict.lines()[0] == "verdict: The release meets its targets with named exceptions."
    unique = Finding(COPIES, "exact_copies", False, value=7, detail={"shared": {1: 3, 2: 4}})
    verdict = type(verdict)(EXCEPTIONS, (*decisive, unique), False)
    assert verdict.lines()[0] == ("verdict: The release meets its targets with named "
                                  "exceptions. 3 avatars copy rows that one original alone "
                                  "holds each.")
    one = Finding(COPIES, "exact_copies", False, value=1, detail={"shared": {1: 1}})
    assert type(verdict)(EXCEPTIONS, (*decisive, one), False).lines()[0].endswith(
        " 1 avatar copies a row that one original alone holds.")


def test_a_database_verdict_names_the_scenario():
    db = ga.Database()
    for name, key in (("patient", "p_id"), ("doctor", "d_id"), ("visit", "visit_id")):
        db.add_table(name, read_dataset(f"{name}.csv"), primary_key=key)
    db.add_link("patient", "p_id", "visit", "patient_id", method="linear_sum_assignment")
    db.add_link("doctor", "d_id", "visit", "doctor_id", method="minimum_distance")
    result = ga.avatarize_database(db, k=5, seed=0)
    privacy = result.privacy_metrics()
    verdict = release_verdict(privacy)
    assert verdict.answer in (MEETS, EXCEPTIONS, FAILS)
    wheres = {f.where for f in verdict.findings}
    assert {(e.table, e.scenario, e.reference) for e in privacy} == wheres
    summary = metrics_summary(result, privacy)  # a cell passes when its every scenario does
    for _, cell in summary.iterrows():
        decisive = [f for f in verdict.findings if f.decisive
                    and f.where[0] == cell["table"] and f.where[2] == cell["reference"]]
        assert cell["passed"] == all(f.passed for f in decisive)
    text = "\n".join(verdict.lines())
    for finding in verdict.reasons:
        table, scenario, reference = finding.where
        assert f"{table}, {scenario} against {reference}: " in text


def test_what_was_not_measured_is_not_judged(published_privacy):
    from dataclasses import replace

    unmeasured = replace(published_privacy, closest_rate=float("nan"), exact_copies=None)
    verdict = release_verdict(unmeasured)
    assert "closest_rate" not in {f.name for f in verdict.findings}
    assert not [f for f in verdict.findings if f.kind == COPIES]
    assert verdict.lines()  # every finding writes
    with pytest.raises(ga.AvatarError, match="needs privacy metrics"):
        release_verdict([])
