"""A database declared in YAML, for ``gpu-avatar database CONFIG.yaml OUTPUT_DIR``.

```yaml
k: 20                # parameters for every table (AvatarParameters, but types: per table)
ncp: 5
seed: 0              # optional; also: backend, categorical, imputation, engine,
                     # column_weights, batch_size, assignment_block_size
tables:
  patient:
    path: patient.csv          # relative to this YAML file; CSV or Parquet
    primary_key: p_id
    individual_level: true     # optional (default: true for tables without a parent)
    types: {gender: categorical}
    k: 5                       # a table may override k, ncp, column_weights, imputation,
                               # categorical, engine and batch_size
  visit:
    path: visit.csv
    primary_key: visit_id
links:
  - {parent: patient, child: visit, foreign_key: patient_id, method: linear_sum_assignment}
```

Link keys: ``parent``, ``child``, ``foreign_key``, optional ``parent_key`` (the parent's primary
key by default), ``method`` and ``drop_orphans``. Unknown keys are refused (a typo would
otherwise be ignored); every problem is an ``AvatarError`` naming the file and the entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AvatarError, GpuAvatarError
from ..files import read_table
from ..parameters import TABLE_OVERRIDES, AvatarParameters, check_integer, table_parameters
from .schema import Database

RUN_PARAMETERS = [name for name in AvatarParameters.names() if name != "types"]
TOP_LEVEL = {"tables": True, "links": False, "assignment_block_size": False,
             **dict.fromkeys(RUN_PARAMETERS, False)}
TABLE_KEYS = {"path": True, "primary_key": True, "individual_level": False, "types": False,
              "sep": False, **dict.fromkeys(TABLE_OVERRIDES, False)}
LINK_KEYS = {"parent": True, "child": True, "foreign_key": True, "parent_key": False,
             "method": False, "drop_orphans": False}


@dataclass
class DatabaseConfig:
    """The declared database (tables read) and the ``avatarize_database`` arguments."""

    database: Database
    parameters: AvatarParameters = field(default_factory=AvatarParameters)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    assignment_block_size: int | None = None
    paths: dict[str, Path] = field(default_factory=dict)


def _check_keys(entry: Any, allowed: dict[str, bool], where: str) -> dict[str, Any]:
    if not isinstance(entry, Mapping):
        raise AvatarError(f"{where} must be a mapping of keys to values, got {entry!r}")
    unknown = [key for key in entry if key not in allowed]
    if unknown:
        raise AvatarError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    missing = [key for key, required in allowed.items() if required and key not in entry]
    if missing:
        raise AvatarError(f"{where}: missing required key(s) {missing}")
    return dict(entry)


def _parse_yaml(path: Path) -> Any:
    import yaml

    if not path.is_file():
        raise AvatarError(f"configuration file {path} does not exist")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise AvatarError(f"{path}: invalid YAML{where}: {problem}") from error
    except UnicodeDecodeError as error:
        raise AvatarError(f"{path}: not UTF-8 text") from error


def load_database_config(path: str | Path) -> DatabaseConfig:
    """Read the YAML file and every table it names (paths relative to the YAML file)."""
    path = Path(path)
    document = _parse_yaml(path)
    top = _check_keys(document, TOP_LEVEL, f"{path}")
    tables = top["tables"]
    if not isinstance(tables, Mapping) or not tables:
        raise AvatarError(
            f"{path}: 'tables' must map each table name to its settings (path, primary_key, ...)"
        )
    links = top.get("links") or []
    if not isinstance(links, list):
        raise AvatarError(f"{path}: 'links' must be a list of links (parent, child, foreign_key)")

    try:
        parameters = AvatarParameters(**{k: top[k] for k in RUN_PARAMETERS if k in top})
    except GpuAvatarError as error:
        raise AvatarError(f"{path}: {error}") from error
    database = Database()
    overrides, paths = {}, {}
    for name, entry in tables.items():
        name = str(name)
        where = f"{path}: tables.{name}"
        spec = _check_keys(entry, TABLE_KEYS, where)
        types = spec.get("types") or {}
        if not isinstance(types, Mapping):
            raise AvatarError(f"{where}.types must map column names to kinds")
        paths[name] = (path.parent / str(spec["path"])).resolve()
        try:
            data = read_table(paths[name], sep=spec.get("sep"))
        except AvatarError as error:
            raise AvatarError(f"{where}: {error}") from error
        try:
            database.add_table(
                name, data, primary_key=spec["primary_key"],
                individual_level=spec.get("individual_level"), types=dict(types),
            )
        except GpuAvatarError as error:
            raise AvatarError(f"{path}: {error}") from error
        overrides[name] = {key: spec[key] for key in TABLE_OVERRIDES if key in spec}
    for index, entry in enumerate(links):
        spec = _check_keys(entry, LINK_KEYS, f"{path}: links[{index}]")
        parent, child = str(spec["parent"]), str(spec["child"])  # as the tables' names
        parent_key = spec.get("parent_key")
        if parent_key is None and parent in database.tables:
            parent_key = database.tables[parent].primary_key
        try:
            database.add_link(
                parent, parent_key, child, spec["foreign_key"],
                method=spec.get("method", "linear_sum_assignment"),
                drop_orphans=spec.get("drop_orphans", False),
            )
        except GpuAvatarError as error:
            raise AvatarError(f"{path}: links[{index}]: {error}") from error
    block_size = top.get("assignment_block_size")
    if block_size is not None:
        try:
            check_integer("assignment_block_size", block_size, 1)
        except GpuAvatarError as error:
            raise AvatarError(f"{path}: {error}") from error
    try:
        table_parameters(parameters, overrides, list(database.tables))  # checked here
    except GpuAvatarError as error:
        raise AvatarError(f"{path}: {error}") from error
    return DatabaseConfig(
        database, parameters, {t: o for t, o in overrides.items() if o}, block_size, paths,
    )
