"""Streaming a Parquet dataset batch by batch (``ga.avatarize_parquet``).

The streamed batches must be exactly those of ``ga.avatarize(df, batch_size=...)`` for the same
seed, so the avatar rows are compared with the in-memory run (sorted: a streamed run releases
its rows batch by batch). Real data: the AIDS table (``pidnum`` identifier, missing ``cd496``);
synthetic mixed tables cover the dtypes (category, text, bool, nullable integers, tz-aware
datetimes, missing values).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from realdata import read_dataset

import gpu_avatar as ga
from gpu_avatar import AvatarError
from gpu_avatar.encoding import IdentifierValues, TableEncoder, fresh_identifiers
from gpu_avatar.pipeline.batches import plan_batches
from gpu_avatar.streaming.plan import plan_parquet
from gpu_avatar.streaming.release import VERDICT, record
from gpu_avatar.streaming.route import SPILL, spill_folder
from gpu_avatar.streaming.run import INCOMPLETE, MANIFEST, SUCCESS, read_manifest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CATEGORICAL_MAX_DISTINCT = 10


@pytest.fixture(scope="module")
def aids() -> tuple[pd.DataFrame, dict]:
    df = read_dataset("aids.csv", sep=";")
    types = {
        c: "categorical"
        for c in df.columns
        if c != "pidnum" and df[c].nunique() <= CATEGORICAL_MAX_DISTINCT
    }
    types["pidnum"] = "identifier"
    return df, types


def mixed_table(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Every supported kind of column, with missing values and a rare modality."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=n)
    return pd.DataFrame(
        {
            "id": rng.permutation(n) * 2 + 1,
            "x": latent + rng.normal(scale=0.5, size=n),
            "y": np.where(rng.random(n) < 0.1, np.nan, np.exp(latent)),
            "count": pd.array(
                np.where(rng.random(n) < 0.08, None, rng.poisson(5, n)), dtype="Int64"
            ),
            "level": pd.Categorical(
                np.where(
                    rng.random(n) < 0.05,
                    None,
                    rng.choice(["low", "mid", "high", "rare"], n, p=[0.5, 0.3, 0.198, 0.002]),
                ),
                categories=["high", "mid", "low", "rare", "unused"],
            ),
            "city": pd.Series(
                np.where(latent > 1.5, None, rng.choice(["Lyon", "Nantes", "Paris"], n)),
                dtype="str",
            ),
            "flag": latent + rng.normal(size=n) > 0,
            "small": rng.integers(0, 4, n),
            "when": pd.Timestamp("2021-03-01", tz="Europe/Paris")
            + pd.to_timedelta(rng.integers(0, 10**7, n), unit="s"),
        }
    )


MIXED_TYPES = {"id": "identifier", "small": "categorical"}


def write_parts(df: pd.DataFrame, folder: Path, n_files: int, row_group_size: int = 256) -> Path:
    folder.mkdir(parents=True)
    for j, rows in enumerate(np.array_split(np.arange(len(df)), n_files)):
        table = pa.Table.from_pandas(df.iloc[rows], preserve_index=False)
        pq.write_table(table, folder / f"data-{j:03d}.parquet", row_group_size=row_group_size)
    return folder


def sorted_rows(df: pd.DataFrame, drop: list) -> pd.DataFrame:
    kept = df.drop(columns=drop)
    return kept.sort_values(list(kept.columns)).reset_index(drop=True)


def check_identifiers(avatars: pd.Series, original: pd.Series) -> None:
    assert avatars.is_unique
    assert not avatars.isin(original.dropna()).any()


@pytest.fixture(scope="module")
def mixed_source(tmp_path_factory) -> tuple[pd.DataFrame, Path]:
    folder = write_parts(mixed_table(), tmp_path_factory.mktemp("mixed") / "source", 3)
    return pd.read_parquet(folder), folder


@pytest.fixture(scope="module")
def mixed_run(mixed_source, tmp_path_factory):
    """One streamed run with 3 batches, shared by the tests that only read its output."""
    df, folder = mixed_source
    destination = tmp_path_factory.mktemp("mixed_run") / "avatars"
    result = ga.avatarize_parquet(
        folder, destination, k=10, batch_size=600, seed=11, types=MIXED_TYPES, backend="cpu"
    )
    return result, destination


# ------------------------------------------------------------------------- the plan
@pytest.mark.parametrize("seed", [0, 5])
def test_plan_is_the_in_memory_plan(mixed_source, seed):
    df, folder = mixed_source
    encoder = TableEncoder(MIXED_TYPES).fit(df)
    expected = plan_batches(df, encoder, 500, np.random.SeedSequence(seed))
    streamed = plan_parquet(folder, batch_size=500, seed=seed, types=MIXED_TYPES)
    assert len(streamed) == len(expected) == 3
    for ours, theirs in zip(streamed, expected, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_plan_is_the_in_memory_plan_on_aids(aids, tmp_path):
    df, types = aids
    folder = write_parts(df, tmp_path / "aids", 2)
    back = pd.read_parquet(folder)
    encoder = TableEncoder(types).fit(back)
    for seed in (1, 2):
        expected = plan_batches(back, encoder, 700, np.random.SeedSequence(seed))
        streamed = plan_parquet(folder, batch_size=700, seed=seed, types=types)
        assert [len(p) for p in streamed] == [len(p) for p in expected]
        for ours, theirs in zip(streamed, expected, strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_mode_ties_decide_the_covering_as_in_memory(tmp_path):
    """A missing categorical cell counts as the mode (ties: first modality), as encoded."""
    n = 60
    values = np.array(["b", "a", None] * (n // 3), dtype=object)  # a and b tie
    df = pd.DataFrame({"c": pd.Series(values, dtype="str"), "x": np.arange(n) * 1.0 + 0.5})
    folder = write_parts(df, tmp_path / "ties", 2, row_group_size=7)
    back = pd.read_parquet(folder)
    encoder = TableEncoder().fit(back)
    for seed in range(6):
        expected = plan_batches(back, encoder, 20, np.random.SeedSequence(seed))
        streamed = plan_parquet(folder, batch_size=20, seed=seed, k=5)
        np.testing.assert_array_equal(streamed[0], expected[0])


def test_first_batch_covers_every_modality(mixed_source):
    df, folder = mixed_source
    first = df.iloc[plan_parquet(folder, batch_size=300, seed=3, types=MIXED_TYPES)[0]]
    assert len(first) == 300
    for column in ["level", "city", "flag", "small"]:
        assert set(first[column].dropna()) == set(df[column].dropna()), column
    for column in df.columns:
        if df[column].isna().any():
            assert first[column].isna().any() and first[column].notna().any(), column
    assert "rare" in set(first["level"])


# --------------------------------------------------------------- streamed = in memory
def test_one_batch_equals_the_unbatched_run(aids, tmp_path):
    df, types = aids
    folder = write_parts(df, tmp_path / "aids", 3)
    back = pd.read_parquet(folder)
    result = ga.avatarize_parquet(
        folder,
        tmp_path / "out",
        k=20,
        batch_size=5000,
        seed=4,
        types=types,
        backend="cpu",
        metrics=False,
    )
    avatars = pd.read_parquet(tmp_path / "out")
    expected = ga.avatarize(back, k=20, seed=4, types=types, backend="cpu").avatars
    assert result.n_batches == 1 and result.seed == 4
    pd.testing.assert_frame_equal(
        sorted_rows(avatars, ["pidnum"]), sorted_rows(expected, ["pidnum"])
    )
    # one batch: even the released order and the fresh identifiers are the in-memory ones
    pd.testing.assert_frame_equal(avatars, expected)
    check_identifiers(avatars["pidnum"], df["pidnum"])
    assert avatars["cd496"].isna().any() and avatars["cd496"].notna().any()


def test_batches_equal_the_in_memory_batches(mixed_source, mixed_run):
    df, _ = mixed_source
    result, destination = mixed_run
    avatars = pd.read_parquet(destination)
    memory = ga.avatarize(df, k=10, seed=11, types=MIXED_TYPES, batch_size=600, backend="cpu")
    assert result.n_batches == len(memory.batches) == 3
    pd.testing.assert_frame_equal(sorted_rows(avatars, ["id"]), sorted_rows(memory.avatars, ["id"]))
    check_identifiers(avatars["id"], df["id"])
    streamed_metrics = result.batch_privacy_metrics()
    memory_metrics = memory.batch_privacy_metrics().astype(float)
    pd.testing.assert_frame_equal(
        streamed_metrics, memory_metrics, check_names=False, check_exact=False, rtol=1e-12
    )
    # the whole release: its originals paired with their avatars despite every dtype
    release, expected = result.privacy_metrics(), memory.privacy_metrics()
    assert record(release) == record(expected)
    np.testing.assert_array_equal(release.hidden_per_individual, expected.hidden_per_individual)


def test_aids_batches_equal_the_in_memory_batches(aids, tmp_path):
    df, types = aids
    folder = write_parts(df, tmp_path / "aids", 2)
    back = pd.read_parquet(folder)
    ga.avatarize_parquet(
        folder,
        tmp_path / "out",
        k=15,
        batch_size=800,
        seed=9,
        types=types,
        backend="cpu",
        metrics=False,
    )
    avatars = pd.read_parquet(tmp_path / "out")
    memory = ga.avatarize(back, k=15, seed=9, types=types, batch_size=800, backend="cpu")
    pd.testing.assert_frame_equal(
        sorted_rows(avatars, ["pidnum"]), sorted_rows(memory.avatars, ["pidnum"])
    )


def test_one_row_group_larger_than_a_batch_is_routed_in_pieces(tmp_path):
    """A task holds a batch of rows at most: a row group of 1,500 rows is routed 400 at a
    time, into several pieces per batch, and gives the in-memory batches."""
    df = mixed_table(1500, seed=4)
    folder = write_parts(df, tmp_path / "one", 1, row_group_size=1500)
    settings = dict(k=10, seed=5, types=MIXED_TYPES, batch_size=400, backend="cpu")
    pieces = []

    def count_pieces(step, done, total):
        if step == "fit":
            pieces.extend((tmp_path / "out" / SPILL).glob("*/*/*.parquet"))

    ga.avatarize_parquet(folder, tmp_path / "out", metrics=False, progress=count_pieces,
                         **settings)
    assert len(pieces) > 4  # 4 batches, several pieces each
    memory = ga.avatarize(pd.read_parquet(folder), **settings)
    pd.testing.assert_frame_equal(sorted_rows(pd.read_parquet(tmp_path / "out"), ["id"]),
                                  sorted_rows(memory.avatars, ["id"]))


def test_contract_dtypes_categories_missing_pattern(mixed_source, mixed_run):
    df, folder = mixed_source
    result, destination = mixed_run
    avatars = pd.read_parquet(destination)
    assert list(avatars.columns) == list(df.columns)
    pd.testing.assert_series_equal(avatars.dtypes, df.dtypes)
    assert list(avatars["level"].cat.categories) == list(df["level"].cat.categories)
    assert set(avatars["city"].dropna()) <= set(df["city"].dropna())
    for column in df.columns:
        if df[column].isna().any():
            rate, original_rate = avatars[column].isna().mean(), df[column].isna().mean()
            assert 0 < rate < 3 * original_rate, column
        else:
            assert avatars[column].notna().all(), column
    source_schema = pq.read_schema(folder / "data-000.parquet").remove_metadata()
    for part in result.parts:
        assert pq.read_schema(destination / part).remove_metadata().equals(source_schema)
    rows = [pq.read_metadata(destination / p).num_rows for p in result.parts]
    manifest = read_manifest(destination)
    assert rows == manifest["rows_per_part"] and sum(rows) == len(df)


def test_manifest_and_markers(mixed_run):
    result, destination = mixed_run
    names = sorted(p.name for p in destination.iterdir())
    assert names == sorted([*result.parts, MANIFEST, SUCCESS, VERDICT])  # no _INCOMPLETE
    manifest = json.loads((destination / MANIFEST).read_text())
    assert manifest["complete"] and manifest["seed"] == 11
    assert manifest["parameters"]["k"] == 10 and manifest["parameters"]["batch_size"] == 600
    assert sorted(manifest["batches"]) == ["0", "1", "2"]
    hidden = [manifest["batches"][b]["metrics"]["hidden_rate"] for b in "012"]
    summary = manifest["privacy_metrics"]
    assert summary["mean"]["hidden_rate"] == pytest.approx(np.mean(hidden))
    assert summary["worst"]["hidden_rate"] == min(hidden)


# ------------------------------------------------------------------------ Parquet types
def test_parquet_round_trip_of_awkward_types(tmp_path):
    """Dictionaries differing between files, integers and booleans with nulls written
    without pandas metadata, and a stored pandas index."""
    rng = np.random.default_rng(2)
    folder = tmp_path / "source"
    folder.mkdir()
    n = 300
    for j, categories in enumerate([["a", "b"], ["c", "a", "b"]]):
        ints = rng.integers(0, 50, n).tolist()
        flags = (rng.random(n) < 0.5).tolist()
        for i in range(j, n, 9):
            ints[i] = None
            flags[i] = None
        table = pa.table(
            {
                "kind": pa.array(rng.choice(categories, n)).dictionary_encode(),
                "ints": pa.array(ints, type=pa.int32()),
                "flag": pa.array(flags, type=pa.bool_()),
                "value": pa.array(rng.normal(size=n)),
            }
        )
        pq.write_table(table, folder / f"p{j}.parquet", row_group_size=100)
    back = pd.read_parquet(folder)
    result = ga.avatarize_parquet(
        folder, tmp_path / "out", k=5, batch_size=250, seed=1, backend="cpu", metrics=False
    )
    assert result.n_batches == 3
    avatars = pd.read_parquet(tmp_path / "out")
    schema = pq.read_schema(folder / "p0.parquet")
    for part in result.parts:
        assert pq.read_schema(tmp_path / "out" / part).remove_metadata().equals(schema)
    assert list(avatars["kind"].cat.categories) == list(back["kind"].cat.categories)
    ints = pq.read_table(tmp_path / "out").column("ints")
    assert ints.null_count > 0 and pa.types.is_int32(ints.type)
    assert pq.read_table(tmp_path / "out").column("flag").null_count > 0

    frame = pd.DataFrame(
        {"a": rng.normal(size=60), "b": rng.choice(["u", "v"], 60)}, index=np.arange(60) + 100
    )
    stored = pa.Table.from_pandas(frame)
    assert "__index_level_0__" in stored.schema.names
    pq.write_table(stored, tmp_path / "indexed.parquet")
    ga.avatarize_parquet(
        tmp_path / "indexed.parquet",
        tmp_path / "out2",
        k=3,
        batch_size=40,
        seed=0,
        backend="cpu",
        metrics=False,
    )
    assert list(pd.read_parquet(tmp_path / "out2").columns) == ["a", "b"]


def test_fresh_identifiers_by_position_from_chunks_match_the_whole_column():
    integers = pd.Series([0, 1, 3, 4, 8, -2, 7], dtype="int64")
    floats = pd.Series([0.0, 2.0, 2.5, np.nan, 5.0])
    text = pd.Series(["x", "avatar_3", "avataravatar_1", "y"], dtype="str")
    expectations = {
        "integers": [2, 5, 6, 9, 10, 11, 12, 13, 14, 15, 16, 17],
        "floats": [1, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        "text": [f"avataravataravatar_{i}" for i in range(12)],
    }
    for name, original in zip(expectations, (integers, floats, text), strict=True):
        n = 12
        assert fresh_identifiers(original, n).tolist() == expectations[name]
        chunked = IdentifierValues("c").add(original.iloc[:2]).add(original.iloc[2:])
        got = np.concatenate([chunked.fresh(0, 5), chunked.fresh(5, n)])
        assert got.tolist() == expectations[name], name


# ------------------------------------------------------------------------ resume, errors
def _stop_after(label: str):
    class Stop(Exception):
        pass

    def progress(step, done, total):
        if step == label:
            raise Stop(label)

    return Stop, progress


def test_resume_finishes_an_interrupted_run(mixed_source, mixed_run, tmp_path):
    _, folder = mixed_source
    _, complete = mixed_run
    destination = tmp_path / "avatars"
    settings = dict(k=10, batch_size=600, seed=11, types=MIXED_TYPES, backend="cpu")
    Stop, progress = _stop_after("batch 1")
    with pytest.raises(Stop):
        ga.avatarize_parquet(folder, destination, progress=progress, **settings)
    assert (destination / INCOMPLETE).is_file() and not (destination / SUCCESS).exists()
    assert sorted(read_manifest(destination)["batches"]) == ["0", "1"]
    with pytest.raises(AvatarError, match="not empty"):
        ga.avatarize_parquet(folder, destination, **settings)
    with pytest.raises(AvatarError, match="cannot resume"):
        ga.avatarize_parquet(folder, destination, resume=True, **{**settings, "k": 9})

    steps = []
    settings.pop("seed")  # resume takes the recorded seed
    result = ga.avatarize_parquet(
        folder, destination, resume=True, progress=lambda *a: steps.append(a[0]), **settings
    )
    assert "batch 2" in steps and "batch 0" not in steps
    assert (destination / SUCCESS).is_file() and not (destination / INCOMPLETE).exists()
    assert not (destination / SPILL).exists()
    for part in result.parts:
        assert (destination / part).read_bytes() == (complete / part).read_bytes()
    again = ga.avatarize_parquet(folder, destination, resume=True, **settings)
    assert again.manifest["complete"] and again.parts == result.parts


def test_a_failing_batch_is_named_and_leaves_the_destination_incomplete(mixed_source, tmp_path):
    _, folder = mixed_source
    destination = tmp_path / "avatars"

    def break_batch_1(step, done, total):
        if step == "fit":
            for piece in destination.glob(f"{SPILL}/*/{spill_folder(1)}/*"):
                piece.write_bytes(b"not parquet")

    with pytest.raises(AvatarError, match=r"batch 1 \(of 3"):
        ga.avatarize_parquet(
            folder,
            destination,
            k=10,
            batch_size=600,
            seed=1,
            types=MIXED_TYPES,
            backend="cpu",
            progress=break_batch_1,
        )
    assert (destination / INCOMPLETE).is_file() and not (destination / SUCCESS).exists()
    assert not (destination / "part-00001.parquet").exists()
    assert not read_manifest(destination)["complete"]


def test_source_errors(tmp_path, mixed_source):
    _, folder = mixed_source
    out = tmp_path / "out"
    with pytest.raises(AvatarError, match="does not exist"):
        ga.avatarize_parquet(tmp_path / "nowhere", out, k=5, batch_size=100)
    (tmp_path / "empty").mkdir()
    with pytest.raises(AvatarError, match="no Parquet file"):
        ga.avatarize_parquet(tmp_path / "empty", out, k=5, batch_size=100)
    (tmp_path / "bad.parquet").write_text("a,b\n1,2\n")
    with pytest.raises(AvatarError, match="bad.parquet"):
        ga.avatarize_parquet(tmp_path / "bad.parquet", out, k=5, batch_size=100)

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pq.write_table(pa.table({"a": [1.0, 2.0], "b": ["x", "y"]}), mixed / "one.parquet")
    pq.write_table(pa.table({"a": [1, 2], "c": ["x", "y"]}), mixed / "two.parquet")
    with pytest.raises(AvatarError, match="two.parquet") as caught:
        ga.avatarize_parquet(mixed, out, k=5, batch_size=100)
    message = str(caught.value)
    assert "one.parquet" in message and "'b'" in message and "'c'" in message
    assert "'a' is int64 here but double" in message


def test_parameter_errors(tmp_path, mixed_source):
    df, folder = mixed_source
    out = tmp_path / "out"
    with pytest.raises(AvatarError, match=r"smaller than 2k \+ 1"):
        ga.avatarize_parquet(folder, out, k=20, batch_size=39)
    with pytest.raises(AvatarError, match="more than half a batch"):
        ga.avatarize_parquet(
            folder, out, k=3, batch_size=10, types={**MIXED_TYPES, "x": "categorical"},
            backend="cpu",
        )
    with pytest.raises(AvatarError, match="overlap"):
        ga.avatarize_parquet(folder, folder / "avatars", k=5, batch_size=600)
    with pytest.raises(AvatarError, match="unknown column"):
        ga.avatarize_parquet(
            folder, tmp_path / "o2", k=5, batch_size=600, types={"nope": "categorical"}
        )
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "something.txt").write_text("x")
    with pytest.raises(AvatarError, match="not empty"):
        ga.avatarize_parquet(folder, tmp_path / "full", k=5, batch_size=600, resume=True)


def test_a_batch_out_of_memory_is_told_the_batch_size_to_use():
    from gpu_avatar.streaming.run import BatchTask, batch_error

    task = BatchTask(3, 8, 400_000, 1_200_000, np.random.SeedSequence(0), True, "run")
    message = str(batch_error(task, MemoryError("Unable to allocate 3.1 GiB"), "out/"))
    assert "batch 3 (of 8, 400,000 rows)" in message
    assert "new destination with batch_size=200,000" in message
    assert "resume=True" in message
    assert "batch_size" not in str(batch_error(task, ValueError("bad value"), "out/"))
