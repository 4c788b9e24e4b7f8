"""``prepare_release``: the advise, avatarize, metrics, attacks and report workflow in one call
gives what the separate calls give (the same avatars, metrics and attack risks); the metric
options are one checked object shared by every entry point."""

from __future__ import annotations

import pickle

import pytest

import gpu_avatar as ga
from gpu_avatar.metrics.holdout import attack_seed
from gpu_avatar.metrics.verdict import ANSWERS


@pytest.fixture(scope="module")
def split(aids):
    return ga.split_holdout(aids.df, 0.2, seed=3)


def test_the_workflow_gives_what_the_separate_calls_give(aids, split, tmp_path):
    training, holdout = split
    release = ga.prepare_release(training, k=20, holdout=holdout, types=aids.types, seed=7,
                                 options={"known_variables": ["age", "wtkg"], "target": "cd40"},
                                 report=tmp_path / "report.html")
    alone = ga.avatarize(training, k=20, types=aids.types, seed=7)
    assert release.avatars.equals(alone.avatars)
    privacy = alone.privacy_metrics(known_variables=["age", "wtkg"], target="cd40",
                                    holdout=holdout)
    assert release.privacy.hidden_rate == privacy.hidden_rate
    assert release.privacy.inference_continuous == privacy.inference_continuous
    assert release.privacy.holdout_distance_to_closest == privacy.holdout_distance_to_closest
    assert release.attack_seed == attack_seed(alone.seed)
    attacks = ga.attack_metrics(training, alone.avatars, holdout, types=aids.types,
                                seed=release.attack_seed)
    assert release.attacks.to_frame().equals(attacks.to_frame())
    assert release.verdict.answer in ANSWERS and release.verdict.attacks_measured
    html = release.report.read_text(encoding="utf-8")
    assert html.index('id="table-verdict"') < html.index('id="table-parameters"')


def test_k_auto_avatarizes_the_candidate_advised_with_the_holdout(aids, split):
    """The advice attacks the candidates that meet the targets as the release is attacked:
    the chosen one's count of measurable risks is the release's, and the fewest."""
    training, holdout = split
    release = ga.prepare_release(training, k="auto", candidates=[10, 20, 50], holdout=holdout,
                                 types=aids.types, seed=2)
    advice = release.advice
    assert release.result.parameters.k == advice.k
    assert release.result.seed == advice.parameters.seed
    passing = advice.candidates[advice.candidates["passed"]]
    row = advice.candidates.loc[advice.k]
    assert row["measurable_attack_risks"] == passing["measurable_attack_risks"].min()
    assert release.privacy.hidden_rate == row["hidden_rate"]
    assert len(release.attacks.measurable_risks) == row["measurable_attack_risks"]
    assert "measurable attack risk" in advice.reason


def test_the_workflow_refuses_what_it_cannot_honour(aids):
    with pytest.raises(ga.AvatarError, match="k='auto'"):
        ga.prepare_release(aids.df, k=20, candidates=[10], types=aids.types)
    with pytest.raises(ga.AvatarError, match="measure=True"):
        ga.prepare_release(aids.df, report="r.html", measure=False, types=aids.types)
    quick = ga.prepare_release(aids.df.head(200), k=5, measure=False, types=aids.types, seed=0)
    assert quick.privacy is None and quick.verdict is None and len(quick.avatars) == 200


def test_metric_options_are_checked_once_and_shared(aids):
    options = ga.MetricOptions(ncp=3, known_variables=["age", "wtkg"], target=["cd40"])
    assert options.known_variables == ("age", "wtkg") and options.target == "cd40"
    assert pickle.loads(pickle.dumps(options)) == options
    frame, published = aids.df.head(400), aids.published.head(400)
    given = ga.privacy_metrics(frame, published, options, types=aids.metric_types)
    keywords = ga.privacy_metrics(frame, published, ncp=3, known_variables=["age", "wtkg"],
                                  target="cd40", types=aids.metric_types)
    assert given.to_frame().equals(keywords.to_frame()) and given.ncp == 3
    with pytest.raises(ga.AvatarError, match="target needs known_variables"):
        ga.MetricOptions(target="cd40")
    with pytest.raises(ga.AvatarError, match="target must be one column"):
        ga.MetricOptions(known_variables=["age"], target=["cd40", "age"])
    with pytest.raises(ga.AvatarError, match=r"unknown metric option\(s\) \['engin'\]"):
        ga.privacy_metrics(frame, published, engin="brute")
    with pytest.raises(ga.AvatarError, match="closest_rate_percentage_threshold"):
        options.replace(closest_rate_percentage_threshold=120)


def test_a_runs_metric_options_leave_ncp_and_alignment_to_the_run(aids):
    """Given as an object or as names, a run's options use its ncp and skip the alignment
    test (its unshuffled avatars are aligned by construction), unless they say otherwise."""
    small = aids.df.head(30)[["age", "wtkg", "karnof", "gender", "race"]]
    result = ga.avatarize(small, k=5, ncp=3, types={"gender": "categorical",
                                                    "race": "categorical"}, seed=0)
    as_object = result.privacy_metrics(ga.MetricOptions(known_variables=["age"]))
    as_names = result.privacy_metrics(known_variables=["age"])
    assert as_object.ncp == as_names.ncp == 3
    assert as_object.hidden_rate == as_names.hidden_rate
    assert result.privacy_metrics(ncp=2).ncp == 2
    with pytest.raises(ga.AvatarError, match="row-aligned|cannot tell"):
        result.privacy_metrics(check_alignment=True)  # 30 rows: the test cannot tell


def test_advice_refuses_a_target_its_options_do_not_measure(aids):
    with pytest.raises(ga.FixableError, match="correlation_protection_rate is not measured "
                                              "without known_variables"):
        ga.advise(aids.df, targets={"correlation_protection_rate": 95}, types=aids.types)
    with pytest.raises(ga.FixableError, match="closer_to_training_rate .* without holdout"):
        ga.advise(aids.df, targets={"closer_to_training_rate": 60}, types=aids.types)
    with pytest.raises(ga.AvatarError, match="target needs known_variables"):  # before the work
        ga.prepare_release(aids.df, k=20, options={"target": "cd40"}, types=aids.types)
    with pytest.raises(ga.AvatarError, match=r"known_variables names unknown column\(s\)"):
        ga.prepare_release(aids.df, k=20, options={"known_variables": ["agee"]},
                           types=aids.types)
