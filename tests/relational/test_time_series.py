"""Time-series links (``method="time_series"``, issue 17): curves avatarized with their
individual, on the shipped series (``tests/data``): Theoph (12 subjects, irregular times over
25 hours) and ChickWeight (50 chicks, series of 2 to 12 points, integer days and weights).

Checked on the released tables themselves: every avatar series within the originals' time span
and value range, lengths and mean curves kept, privacy targets met in the individual + curve
space, the same seed giving the same curves; the projection (interpolation, FPCA, its GPU path
on the CuPy stand-in) against exact values; bad declarations refused with their fix.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from realdata import read_dataset
from scipy.stats import ks_2samp

import gpu_avatar as ga
from gpu_avatar import AvatarError
from gpu_avatar.backend import CPU
from gpu_avatar.cli.commands import main as cli_main
from gpu_avatar.relational.config import load_database_config
from gpu_avatar.relational.scenarios import TIME_SERIES_ENRICHED, time_series_signal
from gpu_avatar.relational.time_series import CurveProjection, fit_series, grid_values, layout

CHICK_K = 20  # the k at which ChickWeight meets every privacy target


def theoph(samples: pd.DataFrame | None = None, **options) -> ga.Database:
    db = ga.Database()
    db.add_table("subject", read_dataset("theoph_subjects.csv"), primary_key="subject")
    samples = read_dataset("theoph_samples.csv") if samples is None else samples
    db.add_table("samples", samples, primary_key="sample_id", time="hours")
    db.add_link("subject", "subject", "samples", "subject", method="time_series", **options)
    return db


def chickweight(measures: pd.DataFrame | None = None, chicks=None) -> ga.Database:
    db = ga.Database()
    chicks = read_dataset("chickweight_chicks.csv") if chicks is None else chicks
    types = {"Diet": "categorical"} if "Diet" in chicks else None
    db.add_table("chick", chicks, primary_key="chick", types=types)
    measures = read_dataset("chickweight_measures.csv") if measures is None else measures
    db.add_table("measures", measures, primary_key="measure_id", time="day")
    db.add_link("chick", "chick", "measures", "chick", method="time_series")
    return db


_RUNS: dict = {}


def run(name: str, seed: int = 0):
    if (name, seed) not in _RUNS:
        db, k = (theoph(), 4) if name == "theoph" else (chickweight(), CHICK_K)
        _RUNS[(name, seed)] = ga.avatarize_database(db, k=k, ncp=5, seed=seed)
    return _RUNS[(name, seed)]


def assert_within_originals(original: pd.DataFrame, avatar: pd.DataFrame, time, key) -> None:
    """Avatar series: times within the originals' time span, every value within its range,
    no time twice in a series, the original dtypes."""
    assert avatar.dtypes.equals(original.dtypes)
    assert original[time].min() <= avatar[time].min() <= avatar[time].max() <= original[time].max()
    for column in original.columns.drop([time, key]):
        assert original[column].min() <= avatar[column].min()
        assert avatar[column].max() <= original[column].max()
    assert not avatar.duplicated([key, time]).any()


# ------------------------------------------------------------------------ the release
@pytest.mark.parametrize("name", ["theoph", "chickweight"])
def test_avatar_series_lie_within_the_originals_and_link_to_avatar_parents(name):
    result = run(name)
    child, parent, key, time = (
        ("samples", "subject", "subject", "hours") if name == "theoph"
        else ("measures", "chick", "chick", "day")
    )
    original, avatar = result.originals[child], result.tables[child]
    assert_within_originals(original.drop(columns=original.columns[0]),
                            avatar.drop(columns=avatar.columns[0]), time, key)
    assert avatar[key].isin(result.tables[parent][key]).all()
    assert not avatar[original.columns[0]].isin(original[original.columns[0]]).any()  # fresh
    assert avatar[original.columns[0]].is_unique
    # released grouped by series, each in time order
    assert (avatar.groupby(key, sort=False)[time].diff().dropna() > 0).all()
    assert result.links[0].referential_integrity == 100.0


def test_values_come_back_at_the_precision_of_the_originals():
    released = run("theoph").tables["samples"]["concentration"].dropna()  # 0.01 mg/L
    np.testing.assert_allclose(released, released.round(2), rtol=0, atol=1e-9)
    assert (released != released.round(1)).any()  # not rounded further


def test_lengths_and_mean_curves_are_kept():
    """ChickWeight: the lengths keep their distribution (KS <= 0.15) and the avatars' mean
    weight curve stays within the originals' point-wise band (mean +/- std) everywhere."""
    result = run("chickweight")
    lengths = [table.groupby("chick").size().reindex(parents["chick"], fill_value=0)
               for table, parents in ((result.originals["measures"], result.originals["chick"]),
                                      (result.tables["measures"], result.tables["chick"]))]
    assert ks_2samp(*lengths).statistic <= 0.15
    frame, shapes = time_series_signal(result)
    shape = shapes[("measures", "weight")]
    assert (np.abs(shape["avatar mean"] - shape["original mean"]) <= shape["original std"]).all()
    row = frame.set_index("variable").loc["weight"]
    assert row["mean_curve_distance"] < 0.3 and row["length_ks"] <= 0.15
    assert row["hellinger"] < 0.2 and row["autocorrelation_difference"] < 0.1
    assert result.time_series_metrics().equals(frame)


def test_privacy_targets_met_in_the_individual_and_curve_space():
    result = run("chickweight")
    privacy = result.privacy_metrics()
    scenarios = {(e.scenario, e.reference) for e in privacy}
    assert (TIME_SERIES_ENRICHED, "measures") in scenarios
    assert not any(e.table == "measures" or e.via == "chick" for e in privacy)  # no row pairs
    summary = result.metrics_summary(privacy)
    assert summary["passed"].all(), summary


def test_curves_under_a_non_individual_parent_are_measured_for_its_individuals():
    """chick -> visit -> measures (time series): the curves enrich the visits, and their
    privacy is reported for the chicks (via the visits), as the summary matrix shows."""
    chicks = read_dataset("chickweight_chicks.csv")
    visits = pd.DataFrame({"visit": chicks["chick"] + 100, "chick": chicks["chick"],
                           "room": np.arange(len(chicks)) % 3 * 1.5})
    measures = read_dataset("chickweight_measures.csv").assign(
        visit=lambda m: m["chick"] + 100).drop(columns="chick")
    db = ga.Database().add_table("chick", chicks, primary_key="chick",
                                 types={"Diet": "categorical"})
    db.add_table("visit", visits, primary_key="visit", individual_level=False)
    db.add_table("measures", measures, primary_key="measure_id", time="day")
    db.add_link("chick", "chick", "visit", "chick")
    db.add_link("visit", "visit", "measures", "visit", method="time_series")
    result = ga.avatarize_database(db, k=CHICK_K, ncp=5, seed=0)
    privacy = result.privacy_metrics()
    [entry] = [e for e in privacy if e.scenario == TIME_SERIES_ENRICHED]
    assert (entry.table, entry.reference, entry.via) == ("chick", "measures", "visit")
    summary = result.metrics_summary(privacy).set_index(["table", "reference"])
    assert summary.loc[("chick", "measures"), "scenario"] == TIME_SERIES_ENRICHED


def test_individuals_holding_only_their_key_and_series():
    """chickweight_chicks[["chick"]]: the chicks' only variables are their curves' features;
    avatarized, measured in the individual + curve space (no standalone: nothing to compare)."""
    chicks = read_dataset("chickweight_chicks.csv")[["chick"]]
    result = ga.avatarize_database(chickweight(chicks=chicks), k=CHICK_K, ncp=5, seed=0)
    assert len(result.tables["chick"]) == 50 and len(result.tables["measures"]) > 0
    assert [(e.table, e.scenario) for e in result.privacy_metrics()
            if e.scenario != "to_top_enriched"] == [("chick", TIME_SERIES_ENRICHED)]


def test_a_database_of_time_series_on_the_gpu_matches_the_cpu(gpu):
    on_gpu = ga.avatarize_database(theoph(), k=4, ncp=5, seed=0, backend="gpu")
    cpu = run("theoph")
    for name, table in cpu.tables.items():
        pd.testing.assert_frame_equal(on_gpu.tables[name], table, check_exact=False, rtol=1e-9)
    np.testing.assert_allclose(
        on_gpu.time_series_metrics().iloc[:, 2:].to_numpy(dtype=float),
        cpu.time_series_metrics().iloc[:, 2:].to_numpy(dtype=float), rtol=1e-9, atol=1e-12)


def test_same_seed_same_curves_and_another_seed_others():
    first, again = run("theoph"), ga.avatarize_database(theoph(), k=4, ncp=5, seed=0)
    pd.testing.assert_frame_equal(first.tables["samples"], again.tables["samples"])
    other = run("theoph", seed=1).tables["samples"]
    assert not np.array_equal(other["concentration"].to_numpy()[:20],
                              first.tables["samples"]["concentration"].to_numpy()[:20])


def test_short_series_missing_values_and_flatten():
    """Chicks with no series and with one point; missing weights inside series: their share
    kept, the avatars' missing values only in the weights of their series (no chick, key or
    time missing); ``flatten`` keeps the grid values as scores."""
    measures = read_dataset("chickweight_measures.csv").astype({"weight": float})
    first_points = measures.groupby("chick").head(1).index
    measures = measures[~measures["chick"].isin(range(1, 6))]  # chicks 1-5: no series
    measures = measures[~measures["chick"].isin(range(6, 11)) | measures.index.isin(first_points)]
    rng = np.random.default_rng(0)
    measures.loc[rng.random(len(measures)) < 0.1, "weight"] = np.nan
    given = measures.copy()
    result = ga.avatarize_database(chickweight(measures), k=10, ncp=5, seed=0)
    pd.testing.assert_frame_equal(measures, given)  # the input is not mutated
    avatar = result.tables["measures"]
    lengths = avatar.groupby("chick").size().reindex(result.tables["chick"]["chick"],
                                                     fill_value=0)
    assert (lengths == 0).any() and (lengths == 1).any()
    assert abs(avatar["weight"].isna().mean() - measures["weight"].isna().mean()) < 0.05
    assert avatar.drop(columns="weight").notna().all().all()
    assert result.tables["chick"].notna().all().all()
    flat = ga.avatarize_database(theoph(projection="flatten", n_points=8), k=4, seed=0)
    key = ("samples", "subject")
    model = flat.series_models[key]
    assert model.projections["concentration"].n_scores == 8
    _, curves = model.curves(flat.originals["samples"], flat.original_parent_rows[key], 12)
    features = model.features(flat.originals["samples"], flat.original_parent_rows[key], 12, CPU)
    np.testing.assert_array_equal(features.filter(like="concentration.t").to_numpy(),
                                  curves["concentration"])
    assert_within_originals(flat.originals["samples"].drop(columns="sample_id"),
                            flat.tables["samples"].drop(columns="sample_id"), "hours", "subject")


@pytest.mark.parametrize("kind", ["datetime", "timedelta"])
def test_datetime_and_timedelta_times_keep_their_dtype_and_range(kind):
    samples = read_dataset("theoph_samples.csv")
    hours = pd.to_timedelta(samples["hours"], unit="h")
    samples["hours"] = pd.Timestamp("2026-01-05 08:00", tz="Europe/Paris") + hours \
        if kind == "datetime" else hours
    result = ga.avatarize_database(theoph(samples), k=4, ncp=5, seed=0)
    assert_within_originals(samples.drop(columns="sample_id"),
                            result.tables["samples"].drop(columns="sample_id"), "hours", "subject")


def test_sub_microsecond_datetimes_stay_within_the_originals():
    """Nanosecond datetimes near 2026 (float seconds since the epoch would lose ~200 ns):
    every avatar time within the originals' first and last tick."""
    samples = read_dataset("theoph_samples.csv")
    samples["hours"] = (pd.Timestamp("2026-01-05 08:00:00.000000001")
                        + pd.to_timedelta(samples["hours"], unit="h")
                        + pd.to_timedelta(samples["sample_id"] % 7, unit="ns"))
    result = ga.avatarize_database(theoph(samples), k=4, ncp=5, seed=0)
    assert_within_originals(samples.drop(columns="sample_id"),
                            result.tables["samples"].drop(columns="sample_id"), "hours", "subject")


def test_second_ticks_hold_at_most_one_point_per_second():
    """Times in timedelta64[s]: an avatar of 5 points over 2.5 seconds gets 3 points, one per
    second, not 5 rounded onto 3 seconds."""
    seconds = np.concatenate([[0, 1], np.arange(11)])
    data = pd.DataFrame({"t": pd.to_timedelta(seconds, unit="s").astype("timedelta64[s]"),
                         "x": np.arange(13.0)})
    rows = np.repeat([0, 1], [2, 11])
    model, features = fit_series("c", data, "t", rows, 2, (None, None, "fpca"), CPU)
    features.loc[0, ["c.length", "c.span"]] = [5.0, 2.5]
    individual, times, _ = model.rebuild(features, np.random.default_rng(0), CPU)
    rebuilt = model.time_column(times, data["t"].dtype)
    assert rebuilt.dtype == data["t"].dtype
    assert not pd.DataFrame({"i": individual, "t": rebuilt}).duplicated().any()
    assert (individual == 0).sum() == 3


def test_individuals_without_a_series_get_neutral_features():
    """Chicks 1-5 without a series: length 0, the typical start and span, the mean curve's
    scores, no missing share; nothing missing that the encoder would flag per feature."""
    measures = read_dataset("chickweight_measures.csv").astype({"weight": float})
    measures = measures[~measures["chick"].isin(range(1, 6))]
    measures.loc[measures.index[::9], "weight"] = np.nan
    rows = measures["chick"].to_numpy() - 1
    model, features = fit_series("measures", measures[["day", "weight"]], "day", rows, 50,
                                 (None, None, "fpca"), CPU)
    empty = features.iloc[:5]
    assert not features.isna().any().any()
    assert (empty["measures.length"] == 0).all() and (empty["measures.weight.missing"] == 0).all()
    assert (empty["measures.start"] == model.typical_start).all()
    assert (empty["measures.span"] == model.typical_span).all()
    scores = empty.filter(like=".fpca")
    assert scores.shape[1] >= 1 and (scores == 0).all().all()


# -------------------------------------------------------------------- the projection
def test_interpolation_on_each_series_own_span():
    """Irregular times, a missing value inside a series (interpolated over), a missing first
    value (the curve constant up to the first observed one), one point, no point."""
    rows = np.array([0, 0, 0, 0, 1, 3, 3, 3])
    times = np.array([0.0, 1.0, 3.0, 4.0, 7.0, 10.0, 12.0, 20.0])
    values = np.array([0.0, np.nan, 3.0, 8.0, 5.0, np.nan, 2.0, 6.0])
    series = layout(rows, times, 4)
    np.testing.assert_array_equal(series.lengths, [4, 1, 0, 3])
    grid = grid_values(series, values[series.order], 5)  # 0, 1/4, ..., 1 of each span
    expected = [[0.0, 1.0, 2.0, 3.0, 8.0], [5.0] * 5, [np.nan] * 5,
                [2.0, 2.25, 3.5, 4.75, 6.0]]  # 10 -> 20: at 12 (2.0) and 20 (6.0) only
    np.testing.assert_allclose(grid, expected, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def theoph_curves():
    samples = read_dataset("theoph_samples.csv")
    rows = pd.factorize(samples["subject"])[0]
    series = layout(rows, samples["hours"].to_numpy(float), rows.max() + 1)
    return grid_values(series, samples["concentration"].to_numpy(float)[series.order], 11)


def test_fpca_with_every_component_reconstructs_the_interpolated_curves(theoph_curves):
    projection = CurveProjection.fit(theoph_curves, "fpca", 11, CPU)
    scores = projection.transform(theoph_curves, CPU)
    rebuilt = projection.inverse_transform(scores, CPU)
    np.testing.assert_allclose(rebuilt, theoph_curves, rtol=0, atol=1e-9)
    assert projection.n_scores <= 11  # the null axes dropped
    np.testing.assert_allclose(projection.components_ @ projection.components_.T,
                               np.eye(projection.n_scores), atol=1e-12)
    default = CurveProjection.fit(theoph_curves, "fpca", None, CPU)
    assert 1 <= default.n_scores <= 10
    three = CurveProjection.fit(theoph_curves, "fpca", 3, CPU)
    assert three.inverse_transform(np.zeros((0, 3)), CPU).shape == (0, 11)  # grid points
    assert three.transform(np.zeros((0, 11)), CPU).shape == (0, 3)


def test_identical_curves_get_one_null_component_not_ten():
    projection = CurveProjection.fit(np.full((30, 12), 5.0), "fpca", None, CPU)
    assert projection.n_scores == 1
    np.testing.assert_allclose(projection.mean_, 5.0)


def test_fpca_on_the_gpu_matches_the_cpu(gpu, theoph_curves):
    cpu = CurveProjection.fit(theoph_curves, "fpca", None, CPU)
    device = CurveProjection.fit(theoph_curves, "fpca", None, gpu)
    np.testing.assert_allclose(device.components_, cpu.components_, rtol=1e-9, atol=1e-12)
    scores = device.transform(theoph_curves, gpu)
    np.testing.assert_allclose(scores, cpu.transform(theoph_curves, CPU), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(device.inverse_transform(scores, gpu),
                               cpu.inverse_transform(scores, CPU), rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------------ bad inputs
def test_bad_declarations_are_refused_with_their_fix():
    samples = read_dataset("theoph_samples.csv")
    subjects = read_dataset("theoph_subjects.csv")

    def declare(data, time="hours", types=None, **options):
        db = ga.Database().add_table("subject", subjects, primary_key="subject")
        db.add_table("samples", data, primary_key="sample_id", time=time, types=types)
        return db.add_link("subject", "subject", "samples", "subject",
                           method=options.pop("method", "time_series"), **options)

    with pytest.raises(AvatarError, match=r"needs its time column; add_table\(\.\.\., time="):
        declare(samples, time=None)
    with pytest.raises(AvatarError, match="time='nope' must name a column"):
        declare(samples, time="nope")
    with pytest.raises(AvatarError, match="'concentration' .categorical. is not a continuous "
                                          "measurement.*ordinary child table"):
        declare(samples, types={"concentration": "categorical"})
    with pytest.raises(AvatarError, match="'ward' .* is not a continuous.*ordinary"):
        declare(samples.assign(ward="A"))
    repeated = samples.assign(hours=samples["hours"].where(samples["sample_id"] != 1, 0.0))
    with pytest.raises(AvatarError, match="1 row.s. repeat a time within their series"):
        declare(repeated)
    with pytest.raises(AvatarError, match="n_points = 1 is out of range"):
        declare(samples, n_points=1)
    with pytest.raises(AvatarError, match="projection='pca' is not one of"):
        declare(samples, projection="pca")
    with pytest.raises(AvatarError, match="go with time series; method='time_series'"):
        declare(samples, method="minimum_distance", n_points=5)
    with pytest.raises(AvatarError, match="n_components = 20 exceeds the grid of n_points = 11"):
        ga.avatarize_database(theoph(n_components=20), k=4)
    with pytest.raises(AvatarError, match="n_components = 3 does not apply to "
                                          "projection='flatten'.*drop n_components"):
        declare(samples, projection="flatten", n_components=3)
    flat = ga.avatarize_database(theoph(projection="flatten", n_points=4), k=4, ncp=3, seed=0)
    assert flat.series_models[("samples", "subject")].projections["concentration"].n_scores == 4
    with pytest.raises(AvatarError, match="time='subject' is the foreign key of the link"):
        declare(samples, time="subject")
    with pytest.raises(AvatarError, match=r"the time-series table 'samples', which is not "
                       r"avatarized on its own.*overrides\['subject'\] instead of "
                       r"overrides\['samples'\]"):
        ga.avatarize_database(theoph(), k=4, overrides={"samples": {"k": 3}})
    orphan = ga.Database().add_table("samples", samples, primary_key="sample_id", time="hours")
    with pytest.raises(AvatarError, match="declares time='hours' but no parent links it"):
        ga.avatarize_database(orphan, k=4)


# ------------------------------------------------------ YAML, command line, report
YAML = """
k: 4
seed: 0
tables:
  subject: {path: DATA/theoph_subjects.csv, primary_key: subject}
  samples: {path: DATA/theoph_samples.csv, primary_key: sample_id, time: hours}
links:
  - {parent: subject, child: samples, foreign_key: subject, method: time_series,
     n_points: 9, n_components: 3EXTRA}
"""


def test_yaml_and_the_command_line_declare_time_series(tmp_path):
    data = read_dataset("theoph_samples.csv")  # skips the test without the data
    folder = (tmp_path / "data")
    folder.mkdir()
    data.to_csv(folder / "theoph_samples.csv", index=False)
    read_dataset("theoph_subjects.csv").to_csv(folder / "theoph_subjects.csv", index=False)
    path = tmp_path / "db.yaml"
    path.write_text(YAML.replace("DATA", "data").replace("EXTRA", ""))
    config = load_database_config(path)
    assert config.database.tables["samples"].time == "hours"
    assert config.database.links[0].series_options == (9, 3, "fpca")
    output = tmp_path / "out"
    assert cli_main(["database", str(path), str(output), "--quiet"]) == 0
    avatar = pd.read_csv(output / "samples.csv")
    assert_within_originals(data.drop(columns="sample_id"), avatar.drop(columns="sample_id"),
                            "hours", "subject")
    assert 'data-plot="time-series"' in (output / "report.html").read_text()
    path.write_text(YAML.replace("DATA", "data").replace("EXTRA", ", grid: 3"))
    with pytest.raises(AvatarError, match=r"links\[0\]: unknown key\(s\) \['grid'\]"):
        load_database_config(path)
    path.write_text("url: sqlite:///db.sqlite\ntables:\n  samples: {time: hours}\n")
    with pytest.raises(AvatarError, match=r"tables.samples: time series \(time:\) need tables "
                                          "read from files"):
        load_database_config(path)


def test_french_report_draws_the_curves(tmp_path):
    path = ga.write_report(run("theoph"), tmp_path / "rapport.html", language="fr")
    text = path.read_text()
    assert text.count('data-plot="time-series"') == 1 and "Séries temporelles" in text
