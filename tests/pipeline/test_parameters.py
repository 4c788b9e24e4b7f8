"""One validated parameter set: every entry point takes the same names with the same defaults
and checks them with the same messages; each check is defined once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar import parameters as P
from gpu_avatar.cli.commands import build_parser
from gpu_avatar.metrics.catalogue import PRIVACY_TARGETS, mean_and_worst

PACKAGE = Path(ga.__file__).parent


def test_frozen_checked_once_and_replaced_with_checks():
    params = ga.AvatarParameters(k=7, column_weights={"a": 2}, types={"g": "categorical"})
    with pytest.raises(AttributeError):
        params.k = 3  # frozen
    with pytest.raises(TypeError):
        params.types["h"] = "categorical"  # the mappings are read-only too
    assert params.column_weights == {"a": 2.0} and params.replace(k=9).k == 9
    with pytest.raises(ga.AvatarError, match=r"smaller than 2k \+ 1"):
        params.replace(batch_size=10)
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) \['neighbour_engine'\]"):
        params.replace(neighbour_engine="brute")
    with pytest.raises(ga.AvatarError, match="k = 7 is out of range: need 2 <= k <= 4"):
        params.for_rows(5)


def test_every_entry_point_takes_the_same_names_and_defaults(tmp_path):
    """The same k reaches every entry point, and the same bad value gets the same message."""
    df = pd.DataFrame({"x": np.arange(30.0) + 0.5, "g": ["a", "b", "c"] * 10})
    defaults = ga.AvatarParameters()
    assert ga.avatarize(df, k=4, seed=0).parameters.replace(seed=None, backend="auto") == \
        defaults.replace(k=4, ncp=3)  # ncp capped to the axes  # fmt: skip
    db = ga.Database().add_table("t", df.assign(id=np.arange(30)), "id")
    assert ga.avatarize_database(db, k=4, seed=0).parameters.k == 4
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(__import__("pyarrow").Table.from_pandas(df), tmp_path / "in.parquet")
    streamed = ga.avatarize_parquet(tmp_path / "in.parquet", tmp_path / "out", k=4,
                                    batch_size=30, seed=0, metrics=False)  # fmt: skip
    assert streamed.manifest["parameters"]["k"] == 4
    calls = [
        lambda **kw: ga.avatarize(df, **kw),
        lambda **kw: ga.avatarize_database(db, **kw),
        lambda **kw: ga.avatarize_parquet(tmp_path / "in.parquet", tmp_path / "o2",
                                          batch_size=30, **kw),  # fmt: skip
        lambda **kw: ga.distributed.avatarize(tmp_path / "in.parquet", tmp_path / "o3",
                                              batch_size=30, **kw),  # fmt: skip
    ]
    for call in calls:
        for bad, message in ((dict(k=1), "k = 1 is out of range: need 2 <= k"),
                             (dict(imputation="zero"), "imputation='zero' is not one of"),
                             (dict(engine="annoy"), "engine='annoy' is not one of"),
                             (dict(categorical="mode"), "categorical='mode' is not one of"),
                             (dict(zero_distance="none"), "zero_distance='none' is not one of")):
            with pytest.raises(ga.AvatarError, match=re.escape(message)):
                call(**bad)


def test_the_command_line_offers_the_parameter_set():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    options = {a.dest: a for a in commands["avatarize"]._actions}
    defaults = ga.AvatarParameters()
    for name, choices in (("imputation", P.IMPUTATIONS), ("categorical", P.CATEGORICAL_RULES),
                          ("zero_distance", P.ZERO_DISTANCE_RULES), ("engine", P.ENGINES),
                          ("backend", P.BACKENDS)):  # fmt: skip
        assert tuple(options[name].choices) == choices, name
        assert options[name].default == getattr(defaults, name), name
    for name in ("k", "ncp"):
        assert options[name].default == getattr(defaults, name), name
    assert tuple({a.dest: a for a in commands["metrics"]._actions}["engine"].choices) == \
        P.METRIC_ENGINES  # fmt: skip


def test_each_check_is_defined_once():
    """The allowed values and the checks of the parameters live in parameters.py only."""
    patterns = {
        r"def (_)?check_(int|k|ncp|seed|batch_size|types|column_weights)\b": "a check",
        r"= \((\"median\"|\"draw\"|\"paper\"|\"auto\", \"brute\"|\"auto\", \"cpu\")":
            "a choice list",
        r"not in (IMPUTATIONS|CATEGORICAL_RULES|ZERO_DISTANCE_RULES|ENGINES|KINDS)\b":
            "a choice test",
    }
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "parameters.py":
            continue
        text = path.read_text()
        for pattern, what in patterns.items():
            if re.search(pattern, text):
                offenders.append(f"{path.relative_to(PACKAGE)}: {what}")
    assert offenders == []


def test_privacy_metrics_checks_ncp():
    df = pd.DataFrame({"x": np.arange(20.0), "y": np.arange(20.0) % 3})
    for ncp, kind in ((0, ga.AvatarError), (-1, ga.AvatarError), (1.5, TypeError)):
        with pytest.raises(kind, match="ncp"):
            ga.privacy_metrics(df, df, ncp=ncp)


def test_worst_follows_each_metrics_direction():
    per_batch = [
        {"hidden_rate": 95.0, "inference_categorical": 0.2, "inference_continuous": 1.2},
        {"hidden_rate": 91.0, "inference_categorical": 0.6, "inference_continuous": 0.9},
        {"hidden_rate": None, "inference_categorical": 0.4, "inference_continuous": None},
    ]
    summary = mean_and_worst(per_batch)
    assert summary["worst"] == {"hidden_rate": 91.0, "inference_categorical": 0.6,
                                "inference_continuous": 0.9}  # fmt: skip
    assert summary["mean"]["hidden_rate"] == 93.0
    assert PRIVACY_TARGETS["inference_categorical"].better == "lower"


def test_batch_privacy_metrics_worst_row_follows_the_directions():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=600), "y": rng.normal(size=600),
                       "g": rng.choice(["a", "b"], 600)})  # fmt: skip
    result = ga.avatarize(df, k=5, seed=0, batch_size=200)
    table = result.batch_privacy_metrics(known_variables=["x"], target="g")
    batches = table.drop(index=["mean", "worst"])
    assert len(batches) == 3
    for name, target in PRIVACY_TARGETS.items():
        values = batches[name].dropna()
        if values.empty:
            continue
        expected = values.min() if target.better == "higher" else values.max()
        assert table.loc["worst", name] == expected, name


def test_importing_gpu_avatar_imports_no_optional_extra():
    code = ("import sys, numpy, pandas\nbefore = set(sys.modules)\nimport gpu_avatar\n"
            "print(sorted({m.split('.')[0] for m in set(sys.modules) - before}))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout  # fmt: skip
    for extra in ("numba", "cupy", "cupyx", "cudf", "cuml", "faiss", "dask", "distributed",
                  "matplotlib", "yaml", "tqdm", "sqlalchemy", "psycopg", "faker"):  # fmt: skip
        assert f"'{extra}'" not in loaded, (extra, loaded)


@pytest.mark.parametrize("k", [2, 5])
def test_the_smallest_accepted_batch_size_leaves_every_batch_its_neighbours(k):
    """Batches are cut to equal sizes: with n = batch_size + 1 each holds half the rows, so
    batch_size = 2k + 1 is the smallest that leaves every batch k + 1 rows."""
    batch_size = 2 * k + 1
    for n in (batch_size + 1, batch_size + 2, 2 * batch_size + 1, 3 * batch_size - 1):
        rng = np.random.default_rng(n)
        df = pd.DataFrame({"x": rng.normal(size=n), "y": rng.normal(size=n)})
        result = ga.avatarize(df, k=k, batch_size=batch_size, seed=0)
        assert len(result.avatars) == n and result.avatars.notna().all().all()
        assert min(len(batch) for batch in result.batches) >= k + 1
    with pytest.raises(ga.AvatarError, match=rf"batch_size = {2 * k} is smaller than 2k \+ 1"):
        ga.avatarize(df, k=k, batch_size=2 * k)


def test_parameters_pickle_and_copy_as_their_values():
    """Dask ships them to workers; copy.deepcopy and pickle give equal, checked parameters."""
    import copy
    import pickle

    parameters = ga.AvatarParameters(k=7, types={"a": "categorical"}, column_weights={"b": 2.0},
                                     seed=3, batch_size=100)  # fmt: skip
    for clone in (pickle.loads(pickle.dumps(parameters)), copy.deepcopy(parameters)):
        assert clone == parameters
        with pytest.raises(TypeError):
            clone.types["a"] = "continuous"  # still read-only
