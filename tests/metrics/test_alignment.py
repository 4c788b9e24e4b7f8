"""Row alignment (``metrics/checks.py``): the privacy metrics and the report refuse avatars that
cannot be told from a shuffled file, and accept genuine unshuffled avatars, at large k too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.backend import CPU
from gpu_avatar.metrics.checks import alignment_test
from gpu_avatar.metrics.privacy import metric_coordinates


def _coordinates(data, avatars=None):
    avatars = data.published if avatars is None else avatars
    x, (y,), _ = metric_coordinates(data.df, [avatars], data.ncp, data.metric_types, "mean", CPU)
    return x, y


def _released(avatars: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    return avatars.sample(frac=1, random_state=seed).reset_index(drop=True)


@pytest.mark.parametrize("name", ["aids", "wbcd"])
def test_published_avatars_pass_and_shuffles_follow_the_exact_law(name, request):
    data = request.getfixturevalue(name)
    x, y = _coordinates(data)
    genuine = alignment_test(x, y, CPU)
    assert genuine.pairs >= len(data.df) // 2 - 2  # a tie or two at most
    assert genuine.closer / genuine.pairs > 0.95 and genuine.p_value < 1e-70
    rng = np.random.default_rng(0)
    shuffled = [alignment_test(x, y[rng.permutation(len(y))], CPU) for _ in range(300)]
    assert not any(test.aligned for test in shuffled)
    # Binomial(pairs, 1/2) exactly: half the pairs closer as given, p-values super-uniform
    share = np.array([test.closer / test.pairs for test in shuffled])
    assert abs(share.mean() - 0.5) < 0.01
    assert np.mean([test.p_value <= 0.1 for test in shuffled]) <= 0.1 + 3 * np.sqrt(0.09 / 300)


def test_privacy_metrics_refuse_the_released_file(aids):
    with pytest.raises(ga.FixableError, match=r"not shown row-aligned.*p-value 0\.\d+.*"
                       r"sensitive_unshuffled_avatars.*check_alignment=False"):
        ga.privacy_metrics(aids.df, _released(aids.published), ncp=5, types=aids.metric_types)
    skipped = ga.privacy_metrics(aids.df, _released(aids.published), ncp=5,
                                 types=aids.metric_types, check_alignment=False)
    assert skipped.hidden_rate > 99  # what a shuffled file scores: the refusal's reason


@pytest.mark.parametrize("name, k", [("aids", 500), ("wbcd", 341)])
def test_avatars_at_large_k_pass_and_their_release_is_refused(name, k, request):
    data = request.getfixturevalue(name)
    result = ga.avatarize(data.df, k=k, ncp=data.ncp, types=data.types, seed=0)
    x, y = _coordinates(data, result.sensitive_unshuffled_avatars)
    assert alignment_test(x, y, CPU).p_value < 1e-40
    metrics = ga.privacy_metrics(data.df, result.sensitive_unshuffled_avatars, ncp=data.ncp,
                                 types=data.metric_types)
    assert metrics.hidden_rate == result.privacy_metrics(types=data.metric_types).hidden_rate
    with pytest.raises(ga.FixableError, match="not shown row-aligned"):
        ga.privacy_metrics(data.df, result.avatars, ncp=data.ncp, types=data.metric_types)


def test_avatars_of_the_bundled_aids_table_pass():
    path = Path(ga.__file__).parent / "data" / "aids.csv"  # ';'-separated, pidnum an identifier
    df, types = ga.read_table(path), {"pidnum": "identifier"}
    result = ga.avatarize(df, k=20, seed=1, types=types)
    ga.privacy_metrics(df, result.sensitive_unshuffled_avatars, types=types)  # not refused
    with pytest.raises(ga.FixableError, match="not shown row-aligned"):
        ga.privacy_metrics(df, result.avatars, types=types)


def test_too_few_rows_to_tell_are_refused_unless_the_test_is_skipped():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.normal(size=30) + 0.5, "y": rng.normal(size=30) + 0.25})
    result = ga.avatarize(df, k=3, seed=0)
    with pytest.raises(ga.FixableError, match="too few rows to tell a shuffled file"):
        ga.privacy_metrics(df, result.sensitive_unshuffled_avatars, ncp=2)
    measured = ga.privacy_metrics(df, result.sensitive_unshuffled_avatars, ncp=2,
                                  check_alignment=False)
    assert measured.hidden_rate == result.privacy_metrics(ncp=2).hidden_rate
    with pytest.raises(ga.AvatarTypeError, match="check_alignment must be True or False"):
        ga.privacy_metrics(df, result.sensitive_unshuffled_avatars, check_alignment="no")


def test_the_report_refuses_the_released_file(wbcd):
    from gpu_avatar.report import table_part

    with pytest.raises(ga.FixableError, match="not shown row-aligned"):
        table_part(wbcd.df, _released(wbcd.published), types=wbcd.metric_types, ncp=2)


def test_the_gpu_counts_the_same_pairs(wbcd, gpu):
    x, y = _coordinates(wbcd)
    for avatars in (y, y[np.random.default_rng(1).permutation(len(y))]):
        expected = alignment_test(x, avatars, CPU)
        assert alignment_test(gpu.asarray(x), gpu.asarray(avatars), gpu) == expected
    released = _released(wbcd.published)
    with pytest.raises(ga.FixableError, match="not shown row-aligned"):
        ga.privacy_metrics(wbcd.df, released, ncp=2, types=wbcd.metric_types, backend=gpu)
