"""Copies of unique rows (``unique_copies``): on a coarse table, "keep" releases avatars
identical to a row one person alone holds; "redraw" draws them again (``pipeline/copies.py``)
and counts those redrawn and those left, deterministically for a seed and whatever the
batches."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.pipeline.copies import unique_copies
from gpu_avatar.synthesis import redraw_uniforms


@pytest.fixture(scope="module")
def coarse() -> pd.DataFrame:
    """300 rows of six columns of 2 to 4 modalities: about half the rows unique."""
    rng = np.random.default_rng(3)
    modalities = {"a": list("xyz"), "b": list("pq"), "c": list("uvw"), "d": [0, 1, 2],
                  "e": list("st"), "f": list("ghij")}
    return pd.DataFrame({c: rng.choice(m, 300) for c, m in modalities.items()})


def copies_of_unique_rows(result) -> int:
    return result.privacy_metrics().exact_copies_shared.get(1, 0)


def test_keep_leaves_copies_of_unique_rows_and_redraw_removes_them(coarse):
    kept = ga.avatarize(coarse, k=5, seed=1, backend="cpu", unique_copies="keep")
    assert kept.unique_copies_redrawn is None and kept.unique_copies_text() == ""
    assert copies_of_unique_rows(kept) > 20
    redrawn = ga.avatarize(coarse, k=5, seed=1, backend="cpu", unique_copies="redraw")
    left = copies_of_unique_rows(redrawn)
    assert left == redrawn.unique_copies_stayed < 0.1 * redrawn.unique_copies_redrawn
    assert redrawn.unique_copies_redrawn == copies_of_unique_rows(kept)  # the same first draw
    assert redrawn.unique_copies_text() == (
        f"{redrawn.unique_copies_redrawn} copies of a unique row redrawn, {left} left")
    # only the copies change
    same = (kept.sensitive_unshuffled_avatars == redrawn.sensitive_unshuffled_avatars).all(axis=1)
    assert (~same).sum() <= redrawn.unique_copies_redrawn


def test_redraw_is_deterministic_for_a_seed_and_batch_by_batch(coarse):
    first = ga.avatarize(coarse, k=5, seed=2, backend="cpu", unique_copies="redraw")
    again = ga.avatarize(coarse, k=5, seed=2, backend="cpu", unique_copies="redraw")
    pd.testing.assert_frame_equal(first.avatars, again.avatars)
    batched = ga.avatarize(coarse, k=5, seed=2, backend="cpu", unique_copies="redraw",
                           batch_size=150)
    kept = ga.avatarize(coarse, k=5, seed=2, backend="cpu", unique_copies="keep",
                        batch_size=150)
    # each batch against its own rows: a copy of another batch's unique row stays
    assert copies_of_unique_rows(batched) < copies_of_unique_rows(kept)
    left = sum(unique_copies(coarse.iloc[positions],
                             batched.sensitive_unshuffled_avatars.iloc[positions],
                             list(coarse.columns), ga.resolve_backend("cpu")).sum()
               for positions in batched.batches)
    assert left == batched.unique_copies_stayed

def test_redraw_numbers_depend_on_the_row_and_attempt_only():
    seed = np.random.SeedSequence(5)
    rows = np.array([3, 70_000, 9])
    alone = np.vstack([redraw_uniforms(np.array([r]), 4, seed, 0) for r in rows])
    np.testing.assert_array_equal(redraw_uniforms(rows, 4, seed, 0), alone)
    assert not np.array_equal(redraw_uniforms(rows, 4, seed, 1), alone)


def test_unique_copies_are_copies_of_rows_one_original_holds():
    original = pd.DataFrame({"g": ["a", "a", "b", "c"]})
    avatars = pd.DataFrame({"g": ["a", "b", "d", "c"]})
    found = unique_copies(original, avatars, ["g"], ga.resolve_backend("cpu"))
    np.testing.assert_array_equal(found, [False, True, False, True])


def test_the_option_is_checked():
    with pytest.raises(ga.AvatarError, match="unique_copies"):
        ga.AvatarParameters(unique_copies="drop")


def test_the_command_line_redraws_and_says_so(tmp_path, capsys, coarse):
    from cli_helpers import run_main

    table = tmp_path / "in.csv"
    coarse.to_csv(table, index=False)
    status, out, err = run_main(capsys, "avatarize", table, tmp_path / "out.csv", "--k", "5",
                                "--seed", "1", "--backend", "cpu", "--unique-copies", "redraw")
    assert status == 0
    redrawn = ga.avatarize(coarse, k=5, seed=1, backend="cpu", unique_copies="redraw")
    assert f"; {redrawn.unique_copies_text()})" in out + err


@pytest.mark.parametrize("seed", [0, 1])
def test_redraw_keeps_wbcd_in_the_published_ranges(wbcd, seed, metric_helper):
    """WBCD (all categorical, 683 rows) copies 39-57 unique rows with the paper's method; the
    default redraws them and stays in the published ranges (test_avatarize.py)."""
    from test_avatarize import CLOAKING_RANGE, HIDDEN_RANGE

    result = ga.avatarize(wbcd.df, k=wbcd.k, ncp=wbcd.ncp, seed=seed, types=wbcd.types)
    assert result.unique_copies_redrawn > 30 and result.unique_copies_stayed == 0
    assert copies_of_unique_rows(result) == 0
    metrics = metric_helper(wbcd.df, result.sensitive_unshuffled_avatars, wbcd.metric_types,
                            wbcd.ncp)
    assert HIDDEN_RANGE[0] <= metrics.hidden_rate <= HIDDEN_RANGE[1]
    assert CLOAKING_RANGE["wbcd"][0] <= metrics.median_local_cloaking <= CLOAKING_RANGE["wbcd"][1]


@pytest.mark.parametrize("categorical", ["draw", "argmax"])
def test_the_redraws_are_the_same_on_the_gpu(gpu, categorical):
    """The device (or its stand-in) redraws the same rows into the same avatars."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.choice(list("xyz"), 80), "b": rng.choice(list("pq"), 80),
                       "c": rng.choice(list("uvwt"), 80), "n": rng.integers(0, 3, 80)})
    settings = dict(k=4, seed=1, categorical=categorical, unique_copies="redraw")
    cpu = ga.avatarize(df, backend="cpu", **settings)
    on_gpu = ga.avatarize(df, backend="gpu", **settings)
    assert cpu.unique_copies_redrawn > 0
    assert (on_gpu.unique_copies_redrawn, on_gpu.unique_copies_stayed) == \
        (cpu.unique_copies_redrawn, cpu.unique_copies_stayed)
    pd.testing.assert_frame_equal(on_gpu.sensitive_unshuffled_avatars,
                                  cpu.sensitive_unshuffled_avatars)
