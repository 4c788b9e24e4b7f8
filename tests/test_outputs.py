"""Outputs written whole or not at all (``gpu_avatar.outputs``), and output paths checked
before the work: on real files in ``tmp_path``."""

from __future__ import annotations

import gzip
import os
import stat

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.files import read_table, write_table
from gpu_avatar.outputs import OutputPaths, atomic_path, check_output, staged_outputs

FRAME = pd.DataFrame({"x": [1.5, 2.5, 3.5], "y": ["a", "b", "c"]})


def snapshot(folder) -> dict[str, bytes | None]:
    """Every file and folder under ``folder``, with the files' bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
            for p in sorted(folder.rglob("*"))}


class Failure(Exception):
    pass


def test_atomic_path_moves_the_file_into_place_only_when_complete(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("old")
    with pytest.raises(Failure):
        with atomic_path(target) as temporary:
            temporary.write_text("half")
            assert temporary.parent == tmp_path and temporary.name.startswith(".notes.txt.")
            raise Failure
    assert snapshot(tmp_path) == {"notes.txt": b"old"}
    with atomic_path(target) as temporary:
        temporary.write_text("new")
        assert target.read_text() == "old"  # not yet
    assert snapshot(tmp_path) == {"notes.txt": b"new"}


def test_missing_folders_are_made_and_removed_again_on_a_failure(tmp_path):
    with pytest.raises(Failure), atomic_path(tmp_path / "a" / "b" / "t.csv") as temporary:
        temporary.write_text("x")
        assert (tmp_path / "a" / "b").is_dir()
        raise Failure
    assert snapshot(tmp_path) == {}
    assert write_table(FRAME, tmp_path / "a" / "b" / "t.csv") == tmp_path / "a" / "b" / "t.csv"
    pd.testing.assert_frame_equal(read_table(tmp_path / "a" / "b" / "t.csv"), FRAME)


def test_staged_outputs_write_all_or_none(tmp_path):
    (tmp_path / "first.csv").write_text("old first\n")
    (tmp_path / "other.txt").write_text("not an output\n")
    before = snapshot(tmp_path)
    unconvertible = pd.DataFrame({"x": [1, "a"]})  # pyarrow refuses the mixed column
    with pytest.raises(Exception, match="Conversion failed for column x"):
        with staged_outputs():
            write_table(FRAME, tmp_path / "first.csv")
            write_table(FRAME, tmp_path / "new" / "second.csv")
            with staged_outputs():  # inside another: part of it
                write_table(FRAME, tmp_path / "third.csv")
            assert snapshot(tmp_path)["first.csv"] == b"old first\n"
            write_table(unconvertible, tmp_path / "last.parquet")
    assert snapshot(tmp_path) == before  # nothing moved, no temporary, no new folder

    with staged_outputs():
        write_table(FRAME, tmp_path / "first.csv")
        write_table(FRAME, tmp_path / "new" / "second.csv")
    assert sorted(snapshot(tmp_path)) == ["first.csv", "new", "new/second.csv", "other.txt"]
    pd.testing.assert_frame_equal(read_table(tmp_path / "first.csv"), FRAME)


def test_a_failed_write_caught_inside_the_block_is_not_moved(tmp_path):
    with staged_outputs():
        write_table(FRAME, tmp_path / "kept.csv")
        with pytest.raises(Failure), atomic_path(tmp_path / "failed.csv") as temporary:
            temporary.write_text("half")
            raise Failure
    assert sorted(snapshot(tmp_path)) == ["kept.csv"]


def test_a_file_written_alone_is_moved_at_once_inside_a_staged_block(tmp_path):
    with pytest.raises(Failure), staged_outputs():
        write_table(FRAME, tmp_path / "held.csv")
        with atomic_path(tmp_path / "_manifest.json", alone=True) as temporary:
            temporary.write_text("{}")
        assert (tmp_path / "_manifest.json").exists() and not (tmp_path / "held.csv").exists()
        raise Failure
    assert snapshot(tmp_path) == {"_manifest.json": b"{}"}


def test_nothing_is_moved_when_an_output_became_a_folder(tmp_path):
    (tmp_path / "first.csv").write_text("old")
    with pytest.raises(ga.AvatarError, match="second.csv is a folder"), staged_outputs():
        write_table(FRAME, tmp_path / "first.csv")
        write_table(FRAME, tmp_path / "second.csv")
        (tmp_path / "second.csv").mkdir()
    assert snapshot(tmp_path) == {"first.csv": b"old", "second.csv": None}


def test_a_replaced_file_keeps_its_permissions_and_a_link_its_target(tmp_path):
    private = tmp_path / "unshuffled.csv"
    private.write_text("old")
    private.chmod(0o600)
    write_table(FRAME, private)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    (tmp_path / "latest.csv").symlink_to(private)
    write_table(FRAME.head(1), tmp_path / "latest.csv")
    assert (tmp_path / "latest.csv").is_symlink() and len(read_table(private)) == 1


@pytest.mark.parametrize("name", ["t.csv.gz", "t.tsv", "t.parquet"])
def test_the_format_follows_the_name_not_the_temporary_one(tmp_path, name):
    write_table(FRAME, tmp_path / name)
    if name.endswith(".gz"):
        assert gzip.decompress((tmp_path / name).read_bytes()).startswith(b"x,y\n")
    if name.endswith(".tsv"):
        assert (tmp_path / name).read_text().startswith("x\ty\n")
    pd.testing.assert_frame_equal(read_table(tmp_path / name), FRAME)


# ------------------------------------------------------------------------- path checks
def test_output_paths_are_checked_with_the_option_the_path_and_the_fix(tmp_path):
    (tmp_path / "file").write_text("")
    (tmp_path / "folder.csv").mkdir()
    cases = {
        "cannot be created: .* is a file, not a folder": tmp_path / "file" / "t.csv",
        "is a folder, where a file is to be written": tmp_path / "folder.csv",
        "unsupported file type": tmp_path / "t.xlsx",
    }
    from gpu_avatar.files import table_format

    for message, path in cases.items():
        with pytest.raises(ga.AvatarError, match=f"^--out {path}.*{message}.*"):
            check_output("--out", path, table_format)
    with pytest.raises(ga.AvatarError, match="OUT .*file is a file, not a folder: choose"):
        check_output("OUT", tmp_path / "file", folder=True)
    assert check_output("OUT", tmp_path / "new" / "folder", folder=True).name == "folder"
    assert snapshot(tmp_path) == {"file": b"", "folder.csv": None}


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_outputs_and_folders_are_refused(tmp_path):
    (tmp_path / "release.csv").write_text("")
    (tmp_path / "release.csv").chmod(0o444)
    with pytest.raises(ga.AvatarError, match="release.csv is read-only"):
        check_output("OUT", tmp_path / "release.csv")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0o555)
    with pytest.raises(ga.AvatarError, match="no permission to write in"):
        check_output("OUT", tmp_path / "locked" / "new" / "t.csv")


def test_an_output_that_is_an_input_or_another_output_is_refused(tmp_path):
    paths = OutputPaths({"INPUT": tmp_path / "in.csv", "--holdout": None}, overwrite=False)
    paths.add("OUTPUT", tmp_path / "out.csv")
    with pytest.raises(ga.AvatarError, match="^SECOND .*out.csv is also OUTPUT"):
        paths.add("SECOND", tmp_path / "." / "out.csv")
    with pytest.raises(ga.AvatarError, match="^SECOND .*in.csv is also INPUT: choose another"):
        paths.add("SECOND", tmp_path / "sub" / ".." / "in.csv")
    with pytest.raises(ga.AvatarError, match="^TABLE .*out.csv is also OUTPUT"):
        paths.add_inputs({"TABLE": tmp_path / "out.csv"})
    assert paths.add("UNSET", None) is None


def test_write_report_checks_its_path_before_the_metrics(tmp_path):
    df = pd.DataFrame({"x": np.arange(40.0) + 0.5, "y": np.arange(40) % 3})
    result = ga.avatarize(df, k=5, seed=0)
    (tmp_path / "file").write_text("")
    with pytest.raises(ga.AvatarError, match=r"^path .*file/r.html cannot be created"):
        ga.write_report(result, tmp_path / "file" / "r.html")
    assert snapshot(tmp_path) == {"file": b""}
