"""No half-written output from the ``gpu-avatar`` command: output paths checked before any
work, and a run that fails at its last write leaves every output as it was (``cli.main`` in
this process, on real files in ``tmp_path``)."""

from __future__ import annotations

import shutil
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from gpu_avatar.cli import main
from gpu_avatar.report import html

pytestmark = pytest.mark.slow  # end-to-end: deselect with -m 'not slow'

HOSPITAL = resources.files("gpu_avatar.data") / "hospital.yaml"


def snapshot(folder) -> dict[str, bytes | None]:
    """Every file and folder under ``folder``, with the files' bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "in.csv"
    pd.DataFrame({"x": rng.normal(size=120), "y": rng.normal(size=120),
                  "c": rng.choice(["a", "b", "c"], 120)}).to_csv(path, index=False)
    return path


def run(capsys, *arguments) -> tuple[int, str]:
    status = main([str(a) for a in arguments])
    return status, capsys.readouterr().err


BAD_PATHS = {
    "avatarize OUTPUT under a file": (["avatarize", "{in}", "{tmp}/file/a.csv"],
                                      "OUTPUT {tmp}/file/a.csv cannot be created: {tmp}/file "
                                      "is a file, not a folder"),
    "avatarize OUTPUT a folder": (["avatarize", "{in}", "{tmp}/folder.csv"],
                                  "OUTPUT {tmp}/folder.csv is a folder, where a file is to be "
                                  "written"),
    "avatarize --report under a file": (["avatarize", "{in}", "{tmp}/a.csv", "--report",
                                         "{tmp}/file/r.html"], "--report {tmp}/file/r.html "
                                        "cannot be created"),
    "avatarize --report suffix": (["avatarize", "{in}", "{tmp}/a.csv", "--report",
                                   "{tmp}/r.txt"], "--report {tmp}/r.txt: a report is .html or "
                                  ".pdf"),
    "avatarize --unshuffled-output is OUTPUT": (["avatarize", "{in}", "{tmp}/a.csv",
                                                 "--unshuffled-output", "{tmp}/a.csv"],
                                                "--unshuffled-output {tmp}/a.csv is also "
                                                "OUTPUT: choose another path"),
    "split HOLDOUT is INPUT": (["split", "{in}", "{tmp}/t.csv", "{in}"],
                               "HOLDOUT {in} is also INPUT"),
    "metrics --output suffix": (["metrics", "{in}", "{in}", "--output", "{tmp}/m.txt"],
                                "--output {tmp}/m.txt: a table of results is .csv or .json"),
    "advise --output a folder": (["advise", "{in}", "--output", "{tmp}/folder.csv"],
                                 "--output {tmp}/folder.csv is a folder"),
    "attacks --output under a file": (["attacks", "{in}", "{in}", "--holdout", "{in}",
                                       "--output", "{tmp}/file/r.csv"],
                                      "--output {tmp}/file/r.csv cannot be created"),
    "report --output under a file": (["report", "{in}", "{in}", "-o", "{tmp}/file/r.html"],
                                     "--output {tmp}/file/r.html cannot be created"),
    "database OUTPUT a file": (["database", HOSPITAL, "{tmp}/file"],
                               "OUTPUT {tmp}/file is a file, not a folder"),
    "database summary a folder": (["database", HOSPITAL, "{tmp}", "--report", "{tmp}/r.html"],
                                  "OUTPUT {tmp}/summary.txt is a folder"),
    "database --report under a file": (["database", HOSPITAL, "{tmp}/out", "--report",
                                        "{tmp}/file/r.html"], "--report {tmp}/file/r.html"),
    "database tables over their sources": (["database", "{tmp}/data/hospital.yaml",
                                            "{tmp}/data", "--no-report"],
                                           "OUTPUT {tmp}/data/patient.csv is also SOURCE's "
                                           "table patient: choose another path"),
    "demo OUTPUT_DIR a file": (["demo", "{tmp}/file"], "OUTPUT_DIR {tmp}/file is a file"),
}


@pytest.mark.parametrize("case", list(BAD_PATHS), ids=list(BAD_PATHS))
def test_output_paths_are_checked_before_any_work(case, table, tmp_path, capsys):
    arguments, message = BAD_PATHS[case]
    (tmp_path / "file").write_text("a file\n")
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "summary.txt").mkdir()
    shutil.copytree(HOSPITAL.parent, tmp_path / "data",
                    ignore=shutil.ignore_patterns("aids*", "__pycache__"))
    before = snapshot(tmp_path)
    names = {"tmp": tmp_path, "in": table}
    status, error = run(capsys, *(str(a).format(**names) for a in arguments))
    assert status == 1
    assert error.startswith("gpu-avatar: error: ") and len(error.splitlines()) == 1
    assert message.format(**names) in error
    assert snapshot(tmp_path) == before


def test_an_existing_output_is_replaced_only_with_overwrite(table, tmp_path, capsys):
    """#37: a second run replaced the first's avatars without a word."""
    output = tmp_path / "avatars.csv"
    output.write_text("first run\n")
    status, error = run(capsys, "avatarize", table, output, "--k", "5")
    assert status == 1 and error == (f"gpu-avatar: error: OUTPUT {output} already exists: "
                                     "pass --overwrite to replace it, or choose another path\n")
    assert output.read_text() == "first run\n"
    assert run(capsys, "--overwrite", "avatarize", table, output, "--k", "5")[0] == 0
    assert run(capsys, "avatarize", table, output, "--k", "5", "--overwrite")[0] == 0
    assert len(pd.read_csv(output)) == 120
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "summary.txt").write_text("first run\n")
    status, error = run(capsys, "demo", tmp_path / "demo")
    assert status == 1 and "OUTPUT_DIR" in error and "pass --overwrite" in error


def test_how_the_input_was_read_comes_before_the_results(table, tmp_path, capsys):
    """#37: piped, the read summary came after the results."""
    assert main(["avatarize", str(table), str(tmp_path / "a.csv"), "--k", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("read in.csv: 120 rows, 3 columns") and out.index("wrote 120") > 0


def test_a_header_only_file_is_refused_naming_it(tmp_path, capsys):
    (tmp_path / "header.csv").write_text("x,y,c\n")
    status, error = run(capsys, "avatarize", tmp_path / "header.csv", tmp_path / "a.csv")
    assert status == 1 and error == (f"gpu-avatar: error: {tmp_path / 'header.csv'} holds no "
                                     "row, its header only: give a file with rows\n")


def _fail_writing_the_report(monkeypatch):
    """The report's HTML holds a character UTF-8 cannot encode: writing it, the last write of
    the run, fails once its file is open."""
    render = html.render_html
    monkeypatch.setattr(html, "render_html", lambda *args: render(*args) + "\ud800")


def test_avatarize_failing_at_the_report_leaves_every_output_as_it_was(table, tmp_path,
                                                                      capsys, monkeypatch):
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    for name in ("avatars.csv", "unshuffled.csv", "report.html"):
        (outputs / name).write_text(f"old {name}\n")
    arguments = ["avatarize", table, outputs / "avatars.csv", "--k", "5", "--seed", "0",
                 "--unshuffled-output", outputs / "unshuffled.csv",
                 "--report", outputs / "report.html", "--overwrite"]
    before = snapshot(tmp_path)
    _fail_writing_the_report(monkeypatch)
    status, error = run(capsys, *arguments)
    assert status == 1 and "UnicodeEncodeError" in error
    assert snapshot(tmp_path) == before  # old bytes, no new file, no temporary

    status, error = run(capsys, *arguments[:-5], "--report", tmp_path / "new" / "r.html",
                        "--overwrite")
    assert status == 1 and "UnicodeEncodeError" in error
    assert snapshot(tmp_path) == before  # the folder made for the report removed too

    monkeypatch.undo()
    status, error = run(capsys, *arguments)
    assert status == 0, error
    assert sorted(snapshot(outputs)) == ["avatars.csv", "report.html", "unshuffled.csv",
                                         "unshuffled.csv.manifest.json"]
    assert len(pd.read_csv(outputs / "avatars.csv")) == 120


def test_database_failing_at_the_report_leaves_the_folder_as_it_was(tmp_path, capsys,
                                                                   monkeypatch):
    output = tmp_path / "avatars"
    output.mkdir()
    (output / "patient.csv").write_text("old avatars\n")
    (output / "summary.txt").write_text("old summary\n")
    (output / "notes.md").write_text("not an output\n")
    before = snapshot(tmp_path)
    _fail_writing_the_report(monkeypatch)
    status, error = run(capsys, "database", HOSPITAL, output, "--overwrite")
    assert status == 1 and "UnicodeEncodeError" in error
    assert snapshot(tmp_path) == before  # no table, summary or report written, no temporary
    status, error = run(capsys, "database", HOSPITAL, tmp_path / "new" / "avatars")
    assert status == 1 and "UnicodeEncodeError" in error
    assert snapshot(tmp_path) == before  # the folders it would have made: not there
