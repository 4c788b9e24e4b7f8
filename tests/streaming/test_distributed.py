"""Dask: ``ga.distributed.avatarize`` and ``ga.distributed.privacy_metrics``.

A ``LocalCluster`` with two single-threaded worker processes must give exactly the files of the
local streamed run for the same seed, and exactly the values of ``ga.privacy_metrics``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_release import SETTINGS as RELEASE_SETTINGS
from test_release import resampled
from test_streaming import MIXED_TYPES, aids, mixed_table, sorted_rows, write_parts  # noqa: F401

import gpu_avatar as ga
from gpu_avatar import AvatarError
from gpu_avatar.distributed.avatarize import DaskScheduler
from gpu_avatar.distributed.metrics import split_regions
from gpu_avatar.errors import MissingExtraError
from gpu_avatar.metrics.reductions import distance_ranks
from gpu_avatar.streaming.release import VERDICT
from gpu_avatar.streaming.route import SPILL, spill_folder
from gpu_avatar.streaming.run import INCOMPLETE, SUCCESS, read_manifest

distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")


pytestmark = pytest.mark.slow  # end-to-end: deselect with -m 'not slow'

@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as dask_client,
    ):
        yield dask_client


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dask") / "source"
    return write_parts(mixed_table(1200, seed=3), folder, 3)


def assert_same_metrics(spread, local) -> None:
    """The same privacy metrics, per individual too, bit for bit."""
    pd.testing.assert_frame_equal(spread.to_frame(), local.to_frame())
    for name in ("local_cloaking_per_individual", "hidden_per_individual",
                 "distance_to_closest_per_avatar", "closest_distances_ratio_per_avatar"):
        np.testing.assert_array_equal(getattr(spread, name), getattr(local, name))


SETTINGS = dict(k=8, batch_size=400, seed=21, types=MIXED_TYPES, backend="cpu")


def test_dask_run_equals_the_local_streamed_run(client, source, tmp_path):
    local = ga.avatarize_parquet(source, tmp_path / "local", **SETTINGS)
    steps = []
    dask = ga.distributed.avatarize(
        source,
        tmp_path / "dask",
        client=client,
        progress=lambda s, d, t: steps.append(s),
        **SETTINGS,
    )
    assert dask.parts == local.parts and len(dask.parts) == 3
    assert sorted(p.name for p in (tmp_path / "dask").iterdir()) == sorted(
        p.name for p in (tmp_path / "local").iterdir()
    )
    for part in local.parts:
        assert (tmp_path / "dask" / part).read_bytes() == (tmp_path / "local" / part).read_bytes()
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "dask"), pd.read_parquet(tmp_path / "local")
    )
    ours, theirs = read_manifest(tmp_path / "dask"), read_manifest(tmp_path / "local")
    assert ours["scheduler"] == "dask" and theirs["scheduler"] == "local"
    for key in ("parameters", "seed", "rows_per_part", "privacy_metrics", "release"):
        assert ours[key] == theirs[key], key
    assert sorted(s for s in steps if s.startswith("batch")) == ["batch 0", "batch 1", "batch 2"]


def test_dask_run_reports_the_whole_release_metrics(client, aids, tmp_path):  # noqa: F811
    """The issue's case (a table resampled with duplicates): the Dask run's whole-release
    metrics, distance ranks on the workers, are the local streamed run's, bit for bit."""
    df, types = aids
    folder = tmp_path / "source"
    folder.mkdir()
    resampled(df).to_parquet(folder / "a.parquet", index=False)
    with pytest.warns(UserWarning, match="does not meet its targets"):
        local = ga.avatarize_parquet(folder, tmp_path / "local", types=types,
                                     **RELEASE_SETTINGS)
    with pytest.warns(UserWarning, match="does not meet its targets"):
        dask = ga.distributed.avatarize(folder, tmp_path / "dask", client=client, types=types,
                                        **RELEASE_SETTINGS)
    assert_same_metrics(dask.privacy_metrics(), local.privacy_metrics())
    assert dask.verdict().lines() == local.verdict().lines()
    assert (tmp_path / "dask" / VERDICT).read_text() == (tmp_path / "local" / VERDICT).read_text()


def test_a_failing_task_names_its_batch(client, source, tmp_path):
    destination = tmp_path / "dask"

    def break_batch_2(step, done, total):
        if step == "fit":
            for piece in destination.glob(f"{SPILL}/*/{spill_folder(2)}/*"):
                piece.write_bytes(b"broken")

    with pytest.raises(AvatarError, match=r"batch 2 \(of 3"):
        ga.distributed.avatarize(
            source, destination, client=client, progress=break_batch_2, **SETTINGS
        )
    assert (destination / INCOMPLETE).is_file() and not (destination / SUCCESS).exists()
    assert not (destination / "part-00002.parquet").exists()
    # the other batches are recorded; resume re-routes (the spill file is broken) and finishes
    result = ga.distributed.avatarize(
        source, destination, client=client, resume=True, **{**SETTINGS, "seed": None}
    )
    assert (destination / SUCCESS).is_file() and len(result.parts) == 3


def test_privacy_metrics_equal_the_local_ones(client, aids):  # noqa: F811
    df, types = aids
    result = ga.avatarize(df, k=20, seed=2, types=types, backend="cpu")
    options = dict(
        types=types,
        known_variables=["age", "wtkg", "gender"],
        target="cens",
        categorical_hidden_rate_variables=["gender", "race"],
    )
    local = ga.privacy_metrics(df, result.sensitive_unshuffled_avatars, **options)
    spread = ga.distributed.privacy_metrics(
        df, result.sensitive_unshuffled_avatars, client=client, region_rows=500, **options
    )
    assert_same_metrics(spread, local)
    assert spread.inference_categorical == local.inference_categorical is not None


def test_distance_ranks_with_ties_equal_the_reduction(client):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, size=(300, 2)).astype(float)  # many exact ties and duplicates
    y = np.vstack([x[:150], rng.integers(0, 3, size=(150, 2)).astype(float)])
    expected = distance_ranks(x, y, engine="brute", tile=64)
    got = ga.distributed.distance_ranks(x, y, client=client, region_rows=70)
    for name in ("own_distance", "local_cloaking", "hidden", "closest", "second_closest"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), name)


def test_regions_cut_through_ties_and_duplicates_and_equal_the_brute_reduction(client):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, size=(400, 2)).astype(float)  # 16 points, each ~25 times
    y = np.vstack([x[:100], x[rng.permutation(400)[:150]],  # own distance 0, duplicates
                   rng.integers(0, 4, size=(150, 2)).astype(float)])  # fmt: skip
    expected = distance_ranks(x, y, engine="brute", tile=64)
    for count in (2, 5, 13):
        for points in (x, y):  # a point lies on a border, its duplicates on both sides
            regions_of = {}
            for r, rows in enumerate(split_regions(points, count)):
                for point in map(tuple, points[rows]):
                    regions_of.setdefault(point, set()).add(r)
            assert max(len(regions) for regions in regions_of.values()) > 1
        got = ga.distributed.distance_ranks(x, y, client=client, region_rows=-(-400 // count))
        for name in ("own_distance", "local_cloaking", "hidden", "closest", "second_closest"):
            np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), name)
    few = x[:9], y[:9]  # regions of one row: every avatar's bound comes from another region
    got = ga.distributed.distance_ranks(*few, client=client, region_rows=1)
    np.testing.assert_array_equal(got.second_closest, distance_ranks(*few).second_closest)
    with pytest.raises(AvatarError, match="region_rows must be a positive number"):
        ga.distributed.distance_ranks(x, y, client=client, region_rows=0)


def noisy_copy(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Avatars without an avatarization (24 s at 5 x 10^4 rows on 2 cores): a sixth of the
    values taken from another row, the continuous ones moved by noise."""
    rng = np.random.default_rng(seed)
    n = len(df)
    avatars = df.copy()
    for name in df.columns.drop("id"):
        swap = rng.random(n) < 1 / 6
        avatars.loc[swap, name] = df[name].iloc[rng.integers(0, n, swap.sum())].to_numpy()
    avatars["x"] += rng.normal(scale=0.3, size=n)
    avatars["y"] *= np.exp(rng.normal(scale=0.3, size=n))
    return avatars


def test_privacy_metrics_at_50000_rows_equal_and_cost_like_the_local_ones(client):
    df = mixed_table(50_000, seed=3)
    avatars = noisy_copy(df, seed=4)
    warm = df.iloc[:3000], avatars.iloc[:3000]  # kernels loaded on the driver and workers
    ga.privacy_metrics(*warm, types=MIXED_TYPES)
    ga.distributed.privacy_metrics(*warm, client=client, types=MIXED_TYPES)
    seconds = {"local": [], "dask": []}
    for _ in range(2):  # the best of two: the 2 cores are shared
        start = time.perf_counter()
        local = ga.privacy_metrics(df, avatars, types=MIXED_TYPES)
        seconds["local"].append(time.perf_counter() - start)
        start = time.perf_counter()
        spread = ga.distributed.privacy_metrics(df, avatars, client=client, types=MIXED_TYPES)
        seconds["dask"].append(time.perf_counter() - start)
    assert_same_metrics(spread, local)
    assert min(seconds["dask"]) <= 3 * min(seconds["local"]), seconds


def test_client_none_starts_a_local_cluster(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # one worker per core: keep it small here
    df = mixed_table(150, seed=1)
    result = ga.avatarize(df, k=5, seed=0, types=MIXED_TYPES, backend="cpu")
    local = ga.privacy_metrics(df, result.sensitive_unshuffled_avatars, types=MIXED_TYPES)
    spread = ga.distributed.privacy_metrics(
        df, result.sensitive_unshuffled_avatars, types=MIXED_TYPES
    )
    assert spread.hidden_rate == local.hidden_rate
    assert spread.local_cloaking == local.local_cloaking


def test_missing_dask_names_the_extra(monkeypatch, source, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingExtraError, match=r"gpu_avatar\[dask\]"):
        ga.distributed.avatarize(source, tmp_path / "out", **SETTINGS)


# ----------------------------------------------------------- Dask-native (issue 28)
def _same_parts(ours, theirs, read) -> None:
    assert ours.parts == theirs.parts
    for part in theirs.parts:
        assert read(ours, part) == read(theirs, part), part


def _local_bytes(result, part):
    return (Path(result.destination) / part).read_bytes()


def test_a_dask_dataframe_into_memory_gives_the_avatars_of_avatarize_parquet(source, tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    fsspec = pytest.importorskip("fsspec")
    local = ga.avatarize_parquet(source, tmp_path / "local", **SETTINGS)
    frame = dd.read_parquet(str(source))  # the workers read it; the driver never holds it
    with (  # memory:// is one process's: workers as threads of this one
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                 dashboard_address=":0") as cluster,
        distributed.Client(cluster) as threads,
    ):
        result = ga.distributed.avatarize(frame, "memory://gpu-avatar-test/out",
                                          client=threads, **SETTINGS)
        memory = fsspec.filesystem("memory")
        names = sorted(p.rsplit("/", 1)[-1] for p in memory.ls("/gpu-avatar-test/out",
                                                                detail=False))
        assert names == sorted([*local.parts, "_manifest.json", "_SUCCESS", VERDICT])  # no _source
        back = result.to_dask().compute().reset_index(drop=True)
        expected = pd.read_parquet(tmp_path / "local")
        pd.testing.assert_frame_equal(back, expected, check_dtype=False)
        for part in local.parts:  # the same avatars part by part (the schema is Dask's)
            with memory.open(f"/gpu-avatar-test/out/{part}") as handle:
                ours = pd.read_parquet(handle)
            pd.testing.assert_frame_equal(ours, pd.read_parquet(tmp_path / "local" / part),
                                          check_dtype=False)
        memory.rm("/gpu-avatar-test", recursive=True)


def test_memory_urls_are_refused_with_workers_in_other_processes(client, source):
    with pytest.raises(AvatarError, match="memory:// store, which only this process sees"):
        ga.distributed.avatarize(source, "memory://elsewhere/out", client=client, **SETTINGS)


def test_file_urls_and_relative_paths_reach_workers_started_elsewhere(client, source, tmp_path,
                                                                      monkeypatch):
    local = ga.avatarize_parquet(source, tmp_path / "local", **SETTINGS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    client.run(os.chdir, str(elsewhere))  # the workers' working folder is not ours
    monkeypatch.chdir(source.parent)
    try:
        relative = ga.distributed.avatarize(source.name, "relative-out", client=client,
                                            **SETTINGS)
        url = ga.distributed.avatarize(f"file://{source}", f"file://{tmp_path}/url-out",
                                       client=client, **SETTINGS)
    finally:
        client.run(os.chdir, str(source.parent))
    assert not (elsewhere / "relative-out").exists() and not (tmp_path / "file:").exists()
    for result, folder in ((relative, source.parent / "relative-out"),
                           (url, tmp_path / "url-out")):
        for part in local.parts:
            assert (folder / part).read_bytes() == (tmp_path / "local" / part).read_bytes()
        assert all(b["threads"] == 1 for b in result.manifest["batches"].values())


def test_killing_every_worker_mid_run_still_completes_identically(source, tmp_path):
    local = ga.avatarize_parquet(source, tmp_path / "local", **SETTINGS)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                 dashboard_address=":0", host="127.0.0.1") as cluster,
        distributed.Client(cluster) as dask_client,
    ):
        killed = []

        def kill_every_worker(step, done, total):
            if step == "batch 0" and not killed:  # the model lives on the workers only
                killed.append(step)
                try:
                    dask_client.run(os._exit, 1)
                except Exception:  # the workers die before they answer
                    pass

        result = ga.distributed.avatarize(source, tmp_path / "dask", client=dask_client,
                                          progress=kill_every_worker, **SETTINGS)
    assert killed
    _same_parts(result, local, _local_bytes)


def test_gpu_tasks_need_workers_declaring_a_gpu(client, source, tmp_path):
    with pytest.raises(ga.BackendUnavailableError, match="workers declaring one GPU each"):
        ga.distributed.avatarize(source, tmp_path / "out", client=client,
                                 **{**SETTINGS, "backend": "gpu"})


def test_a_pandas_frame_is_refused_with_the_fix(client, tmp_path):
    with pytest.raises(AvatarError, match="dd.from_pandas"):
        ga.distributed.avatarize(mixed_table(50), tmp_path / "out", client=client, **SETTINGS)


def test_gpu_cluster_names_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_cuda", None)
    with pytest.raises(MissingExtraError, match=r"gpu_avatar\[dask-gpu\]"):
        ga.distributed.gpu_cluster()


def test_a_dask_dataframe_of_many_partitions_keeps_its_row_order(client, tmp_path):
    """12 partitions (file names that sort as text would scramble them): the avatars of the
    in-memory run of the same rows; the originals written into the destination leave with
    the run, and after a refused start none stay there."""
    dd = pytest.importorskip("dask.dataframe")
    df = mixed_table(1200, seed=8)
    frame = dd.from_pandas(df, npartitions=12)
    settings = {**SETTINGS, "seed": 4}
    with pytest.raises(ga.IdentifyingColumnsError):  # "id" undeclared: refused by its rows
        ga.distributed.avatarize(frame, tmp_path / "refused", client=client,
                                 **{**settings, "types": {"small": "categorical"}})
    assert not (tmp_path / "refused" / "_source").exists()
    result = ga.distributed.avatarize(frame, tmp_path / "out", client=client, **settings)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        [*result.parts, "_manifest.json", "_SUCCESS", VERDICT])
    memory = ga.avatarize(df, **settings)
    back = pd.read_parquet(tmp_path / "out")
    pd.testing.assert_frame_equal(sorted_rows(back, ["id"]), sorted_rows(memory.avatars, ["id"]),
                                  check_dtype=False)
    again = ga.distributed.avatarize(frame, tmp_path / "out", client=client, resume=True,
                                     **settings)  # a finished run: returned, not redone
    assert again.manifest == result.manifest and not (tmp_path / "out" / "_source").exists()
    with pytest.raises(AvatarError, match=r"differs in parameters \['k'\]"):
        ga.distributed.avatarize(frame, tmp_path / "out", client=client, resume=True,
                                 **{**settings, "k": 7})
    with pytest.raises(AvatarError, match="holds a finished run"):
        ga.distributed.avatarize(frame, tmp_path / "out", client=client, **settings)


def test_workers_need_no_pseudonym_key(client, source, tmp_path, monkeypatch):
    """The workers (started before the key was set) read the values; only the driver draws
    the keyed pseudonyms."""
    monkeypatch.setenv("GA_DASK_TEST_KEY", "k" * 40)
    types = {**MIXED_TYPES, "id": ga.Pseudonym("hmac", key_env="GA_DASK_TEST_KEY")}
    result = ga.distributed.avatarize(source, tmp_path / "out", client=client,
                                      **{**SETTINGS, "types": types})
    released = pd.read_parquet(tmp_path / "out")["id"]
    assert released.notna().all() and len(result.parts) == 3
    assert not released.astype(str).isin(pd.read_parquet(source)["id"].astype(str)).any()


def test_a_refusal_runs_once(client, tmp_path):
    """An ``AvatarError`` comes again on every run: Dask does not retry it (#37: three runs,
    three tracebacks), and the caller gets it as it was raised."""
    calls = tmp_path / "calls"

    def refuse(item):
        with open(calls, "a") as file:
            file.write("run\n")
        raise AvatarError("k must be below the batch's rows: lower k")

    with pytest.raises(AvatarError, match="^k must be below the batch's rows: lower k$"):
        DaskScheduler(client).map(refuse, [0])
    assert calls.read_text() == "run\n"


@pytest.mark.parametrize("distributed_run", [False, True])
def test_a_failing_fit_is_said_as_the_fit(client, source, tmp_path, distributed_run):
    destination = tmp_path / "out"

    def break_batch_0(step, done, total):
        if step == "route":  # reported once it is done
            for piece in destination.glob(f"{SPILL}/*/{spill_folder(0)}/*"):
                piece.write_bytes(b"broken")

    run = (lambda **kw: ga.distributed.avatarize(source, destination, client=client, **kw)
           ) if distributed_run else (lambda **kw: ga.avatarize_parquet(source, destination, **kw))
    with pytest.raises(AvatarError, match=r"fitting the model on batch 0 \(.* rows\) failed"):
        run(progress=break_batch_0, **SETTINGS)
    assert (destination / INCOMPLETE).is_file()


def test_the_gpu_path_on_a_cluster_declaring_gpus(gpu, source, tmp_path):
    """``backend="gpu"`` (the device, else the CuPy stand-in with the kernels in numba's CUDA
    simulator, in a worker thread of this process: the simulator swaps the kernels' module
    globals while a kernel runs, so one thread at a time): the fit and batch tasks on a
    worker with a GPU resource give the parts of the local streamed run, and the region tasks
    of the metrics the values of the in-memory reduction."""
    settings = {**SETTINGS, "backend": "gpu", "batch_size": 600, "metrics": False}
    local = ga.avatarize_parquet(source, tmp_path / "local", **settings)
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                 dashboard_address=":0", resources={"GPU": 1}) as cluster,
        distributed.Client(cluster) as threads,
    ):
        spread = ga.distributed.avatarize(source, tmp_path / "dask", client=threads,
                                          **settings)
        rng = np.random.default_rng(1)
        x = rng.normal(size=(300, 3))
        y = np.vstack([x[:200] + rng.normal(scale=0.1, size=(200, 3)), x[200:]])
        got = ga.distributed.distance_ranks(x, y, client=threads, region_rows=80,
                                            backend="gpu")
    assert spread.parts == local.parts
    for part in local.parts:
        assert (tmp_path / "dask" / part).read_bytes() == (tmp_path / "local" / part).read_bytes()
    expected = distance_ranks(x, y, engine="brute", tile=64)
    for name in ("own_distance", "local_cloaking", "hidden", "closest", "second_closest"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), name)
