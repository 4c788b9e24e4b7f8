"""The README's demo: avatarize the bundled AIDS table and the patient/doctor/visit database
(with the k that ``advise_database`` finds passing), write the avatar tables, a summary with
their metrics and the advice, and an HTML report of both.

gpu-avatar demo demo-output   (or: python -m gpu_avatar.demo demo-output)
"""

from __future__ import annotations

import sys
import time
from importlib import resources
from pathlib import Path

import pandas as pd

from .advice import Advice, advise_database
from .encoding.identifying import knowingly_released_line
from .errors import AvatarError
from .files import write_table
from .metrics.privacy import PrivacyMetrics
from .metrics.signal import SignalMetrics
from .outputs import atomic_path, staged_outputs
from .pipeline.avatarize import AvatarizationResult, avatarize
from .progress import ProgressLike, Steps
from .relational.linking import avatarize_database
from .relational.results import DatabaseAvatarizationResult
from .relational.scenarios import format_summary
from .relational.schema import Database

MAX_DISTINCT_FOR_CATEGORICAL = 10  # the paper's rule for AIDS
# What an attacker might know of a patient, for the attribute-based metrics.
DEMO_ATTACK = dict(
    known_variables=["age", "wtkg", "gender", "race"],
    target="cd40",
    categorical_hidden_rate_variables=["gender", "race", "homo", "drugs", "hemo"],
)


def _read_bundled(name: str, **options) -> pd.DataFrame:
    with resources.files("gpu_avatar.data").joinpath(name).open() as handle:
        return pd.read_csv(handle, **options)


def load_aids() -> tuple[pd.DataFrame, dict[str, str]]:
    """The bundled AIDS table and its column types (paper rule; ``pidnum`` an identifier)."""
    df = _read_bundled("aids.csv", sep=";")
    types = {
        c: "categorical" for c in df.columns if df[c].nunique() <= MAX_DISTINCT_FOR_CATEGORICAL
    }
    types["pidnum"] = "identifier"
    return df, types


def load_hospital_database() -> Database:
    """The bundled patient / doctor / visit database, visits relinked by assignment."""
    db = Database()
    db.add_table("patient", _read_bundled("patient.csv"), primary_key="p_id")
    db.add_table("doctor", _read_bundled("doctor.csv"), primary_key="d_id")
    db.add_table("visit", _read_bundled("visit.csv"), primary_key="visit_id")
    db.add_link("patient", "p_id", "visit", "patient_id", method="linear_sum_assignment")
    db.add_link("doctor", "d_id", "visit", "doctor_id", method="minimum_distance")
    return db


def database_summary(result: DatabaseAvatarizationResult, seconds: float, privacy=None) -> str:
    """Tables, links (cardinality, integrity) and the privacy summary matrix (from the
    scenario metrics ``privacy`` when given, computed otherwise)."""
    lines = [f"# Database: {len(result.tables)} tables avatarized in {seconds:.2f} s",
             *filter(None, [knowingly_released_line(result.knowingly_released),
                            result.treatments_line()])]
    for name, table in result.tables.items():
        lines.append(f"- {name}: {len(result.originals[name])} rows -> {len(table)} avatars")
    lines += ["", "## Links"]
    for link in result.links:
        lines.append(
            f"- {link.parent} -> {link.child}.{link.foreign_key} ({link.method}): cardinality "
            f"similarity {link.cardinality_similarity:.3f}, referential integrity "
            f"{link.referential_integrity:.1f} %"
        )
        if link.children_line() is not None:
            lines.append(f"  {link.children_line()}")
    lines += [
        "",
        "## Privacy summary (worst scenario per cell)",
        format_summary(result.metrics_summary(privacy), result).to_string(),
        "",
    ]
    return "\n".join(lines)


def advice_summary(advice: Advice, call: str) -> str:
    """The candidates an advice weighed and the reason for its choice."""
    shown = [c for c in advice.candidates.columns if not c.endswith(" passed")]
    return "\n".join([
        f"## Advice ({call})",
        advice.candidates[shown].to_string(float_format=lambda v: f"{v:.4g}"),
        "",
        advice.reason,
        "",
    ])


def summary(
    name: str,
    result: AvatarizationResult,
    seconds: float,
    privacy: PrivacyMetrics | None = None,
    signal: SignalMetrics | None = None,
) -> str:
    """A short text report: parameters, timings, privacy and signal metrics (computed when
    not given; privacy with the demo's attacker knowledge)."""
    privacy = privacy if privacy is not None else result.privacy_metrics(**DEMO_ATTACK)
    signal = signal if signal is not None else result.signal_metrics()
    original, avatars = result.original, result.avatars
    continuous = [
        c
        for c in original.columns
        if c not in result.parameters.types and pd.api.types.is_numeric_dtype(original[c])
    ]
    std_ratio = (avatars[continuous].std() / original[continuous].std()).round(2)
    lines = [
        f"# {name}: {len(original)} rows x {original.shape[1]} columns -> "
        f"{len(avatars)} avatars in {seconds:.2f} s",
        "parameters: "
        + ", ".join(f"{key} {value}" for key, value in result.parameters.as_dict().items()
                    if key != "types")
        + f", seed {result.seed}, projection {result.projection_kind.upper()}",
        "timings (s): " + ", ".join(f"{k} {v:.3f}" for k, v in result.timings.items()),
        *filter(None, [knowingly_released_line(result.knowingly_released)]),
        "",
        "## Privacy (originals vs unshuffled avatars)",
        privacy.to_frame().to_string(float_format=lambda v: f"{v:.3f}"),
        "",
        "## Signal (originals vs released avatars)",
        signal.to_frame().to_string(float_format=lambda v: f"{v:.3f}"),
        "",
        "## Standard deviation ratio avatar / original (continuous columns)",
        std_ratio.to_string(),
        "",
    ]
    return "\n".join(lines)


def run_demo(output: Path, progress: ProgressLike = None) -> str:
    """Write into ``output`` the avatar CSVs, ``summary.txt`` and the report as
    ``report.html`` and ``report.pdf`` (the AIDS table and the hospital database, with the
    advice that set the database's k), all or none (``outputs.staged_outputs``); print and
    return the summary."""
    from .report import database_part, result_part, write_document

    steps = Steps(progress, "demo")
    df, types = load_aids()
    start = time.perf_counter()
    result = avatarize(df, k=20, ncp=5, seed=0, types=types, progress=progress)
    seconds = time.perf_counter() - start
    with steps.step("AIDS metrics"):
        privacy = result.privacy_metrics(**DEMO_ATTACK)
        signal = result.signal_metrics()
    text = summary("AIDS (ACTG 175)", result, seconds, privacy, signal)
    parts = [result_part(result, "AIDS (ACTG 175)", privacy, signal, progress)]

    hospital = load_hospital_database()
    with steps.step("database advice"):
        advice = advise_database(hospital, ncp=5, seed=0)
    if advice.parameters is None:
        raise AvatarError(f"the demo database has no passing k: {advice.reason}")
    start = time.perf_counter()
    database = avatarize_database(hospital, parameters=advice.parameters,
                                  overrides=advice.overrides, progress=progress)
    seconds = time.perf_counter() - start
    with steps.step("database metrics"):
        database_privacy = database.privacy_metrics()
    text += "\n" + database_summary(database, seconds, database_privacy)
    text += "\n" + advice_summary(advice, "advise_database(hospital, ncp=5, seed=0)")
    parts.append(database_part(database, "Hospital database (patient, doctor, visit)", progress,
                               privacy=database_privacy, seconds=seconds, advice=advice))
    title = "gpu_avatar demo: AIDS table and hospital database"
    with steps.step("write"), staged_outputs():
        write_table(result.avatars, output / "aids_avatars.csv")
        for name, table in database.tables.items():
            write_table(table, output / f"{name}_avatars.csv")
        with atomic_path(output / "summary.txt") as temporary:
            temporary.write_text(text)
        for report in ("report.html", "report.pdf"):
            write_document(output / report, title, parts)
    steps.close()
    print(text)
    print(f"wrote the avatar tables, summary.txt, report.html and report.pdf into {output}/")
    return text


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    run_demo(Path(args[0] if args else "demo-output"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
