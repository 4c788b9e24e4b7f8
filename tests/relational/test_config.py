"""The YAML description of a database (``load_database_config``): every error names the file
and the table or link at fault; what YAML reads as other types (numbers as table names,
"no" as text) is taken as written or refused, never reinterpreted."""

from __future__ import annotations

import os

import pytest

from gpu_avatar import AvatarError
from gpu_avatar.relational.config import load_database_config


@pytest.fixture
def write(tmp_path, datasets_path):
    relative = os.path.relpath(datasets_path, tmp_path)

    def write(body: str):
        path = tmp_path / "db.yaml"
        path.write_text(body.replace("DATA", relative))
        return path

    return write


TABLES = """
tables:
  patient: {path: DATA/patient.csv, primary_key: p_id PATIENT}
  visit: {path: DATA/visit.csv, primary_key: visit_id VISIT}
links:
  - {parent: patient, child: visit, foreign_key: patient_id LINK}
TOP
"""


def body(patient: str = "", visit: str = "", link: str = "", top: str = "") -> str:
    return (TABLES.replace(" PATIENT", patient).replace(" VISIT", visit)
            .replace(" LINK", link).replace("TOP", top))  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (dict(visit=", k: 0"), r"db.yaml: tables.visit: k = 0 is out of range"),
        (dict(patient=", individual_level: 'no'"),
         r"db.yaml: table 'patient': individual_level must be True or False, got 'no'"),
        (dict(patient=", types: {nope: categorical}"),
         r"db.yaml: table 'patient': types names unknown column 'nope'"),
        (dict(link=", drop_orphans: 'yes'"),
         r"db.yaml: links\[0\]: link patient->visit: drop_orphans must be True or False"),
        (dict(link=", parent_key: visit_id"),
         r"db.yaml: links\[0\]: link patient->visit: 'visit_id' is not the primary key"),
        (dict(link=", method: time_series"),  # fixes in YAML words, not Python's
         r"db.yaml: links\[0\]: link patient->visit: table 'visit': a time-series table needs "
         r"its time column; give its tables entry time: COLUMN$"),
        (dict(link=", n_points: 5"), r"db.yaml: links\[0\]: link patient->visit: n_points, "
         r"n_components and projection go with time series; method: time_series$"),
        (dict(top="no_links: 'yes'"), r"db.yaml: no_links must be True or False, got 'yes'"),
        (dict(top="k: auto"), r"db.yaml: k: auto is for a table \(gpu-avatar avatarize --k "
         r"auto\); run gpu-avatar advise \S*db.yaml for the advised k and seed, and set them "
         r"here$"),
        (dict(top="assignment_block_size: abc"),
         r"db.yaml: assignment_block_size must be an integer, got 'abc'"),
        (dict(top="assignment_block_size: 0"),
         r"db.yaml: assignment_block_size = 0 is out of range"),
    ],
)
def test_errors_name_the_file_and_the_table_or_link(write, settings, message):
    with pytest.raises(AvatarError, match=message):
        load_database_config(write(body(**settings)))


def test_tables_named_by_numbers_are_linked_by_the_same_names(write):
    """YAML reads ``1:`` and ``parent: 1`` as integers; both name the table "1"."""
    path = write(body().replace("  patient:", "  1:").replace("parent: patient", "parent: 1"))
    config = load_database_config(path)
    assert list(config.database.tables) == ["1", "visit"]
    assert [(link.parent, link.child) for link in config.database.links] == [("1", "visit")]


def test_zero_distance_is_read_for_the_run_and_per_table(write):
    config = load_database_config(write(body(visit=", zero_distance: bounded",
                                             top="zero_distance: paper")))
    assert config.parameters.zero_distance == "paper"
    assert config.overrides == {"visit": {"zero_distance": "bounded"}}
    with pytest.raises(AvatarError, match=r"db.yaml: tables.visit: zero_distance='bound' is "
                       r"not one of \('paper', 'bounded'\)"):
        load_database_config(write(body(visit=", zero_distance: bound")))
