"""A database declared in YAML, for ``gpu-avatar database CONFIG.yaml OUTPUT_DIR``.

```yaml
k: 20                # defaults for every table (each table may override k and ncp)
ncp: 5
seed: 0              # optional; also: backend, categorical, imputation, assignment_block_size
tables:
  patient:
    path: patient.csv          # relative to this YAML file; CSV or Parquet
    primary_key: p_id
    individual_level: true     # optional (default: true for tables without a parent)
    types: {gender: categorical}
    k: 5
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

from ..errors import AvatarError, import_extra
from ..files import read_table
from .schema import Database

TOP_LEVEL = {"tables": True, "links": False, "k": False, "ncp": False, "seed": False,
             "backend": False, "categorical": False, "imputation": False,
             "assignment_block_size": False}
TABLE_KEYS = {"path": True, "primary_key": True, "individual_level": False, "types": False,
              "k": False, "ncp": False, "sep": False}
LINK_KEYS = {"parent": True, "child": True, "foreign_key": True, "parent_key": False,
             "method": False, "drop_orphans": False}
DEFAULT_K, DEFAULT_NCP = 20, 5


@dataclass
class DatabaseConfig:
    """The declared database (tables read) and the ``avatarize_database`` options."""

    database: Database
    options: dict[str, Any] = field(default_factory=dict)
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
    yaml = import_extra("yaml", "cli", "reading a YAML database configuration")
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

    database = Database()
    ks, ncps, paths = {}, {}, {}
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
        database.add_table(
            name, data, primary_key=spec["primary_key"],
            individual_level=spec.get("individual_level"), types=dict(types),
        )
        ks[name] = spec.get("k", top.get("k", DEFAULT_K))
        ncps[name] = spec.get("ncp", top.get("ncp", DEFAULT_NCP))
    for index, entry in enumerate(links):
        spec = _check_keys(entry, LINK_KEYS, f"{path}: links[{index}]")
        parent = spec["parent"]
        parent_key = spec.get("parent_key")
        if parent_key is None and parent in database.tables:
            parent_key = database.tables[parent].primary_key
        database.add_link(
            parent, parent_key, spec["child"], spec["foreign_key"],
            method=spec.get("method", "linear_sum_assignment"),
            drop_orphans=bool(spec.get("drop_orphans", False)),
        )
    options = {key: top[key] for key in TOP_LEVEL if key in top and key not in
               ("tables", "links", "k", "ncp")}
    options.update(k=ks, ncp=ncps)
    return DatabaseConfig(database, options, paths)
