"""A database declared in YAML, for ``gpu-avatar database CONFIG.yaml OUTPUT_DIR``.

```yaml
k: 20                # parameters for every table (AvatarParameters, but types: per table)
ncp: 5
seed: 0              # optional; also: backend, categorical, zero_distance, imputation,
                     # engine, column_weights, batch_size, assignment_block_size
tables:
  patient:
    path: patient.csv          # relative to this YAML file; CSV or Parquet
    primary_key: p_id
    sep: ";"                   # optional, how the file is read (detected otherwise): sep,
    decimal: ","               # decimal, encoding (cp1252...), date_format ('%d/%m/%Y', or
                               # per column: {birth: '%d/%m/%Y'}), na_values: text read as
                               # missing (['-99'], or per column: {exer: [None]}); empty cells
                               # are, and NA . - None... in columns of numbers or dates only
    individual_level: true     # optional (default: true for tables without a parent)
    types: {gender: categorical, birth: datetime, code: identifier}
    k: 5                       # a table may override k, ncp, column_weights, imputation,
                               # categorical, zero_distance, engine and batch_size
  visit:
    path: visit.csv
    primary_key: visit_id
  samples:                     # a table of time series: its time column
    path: samples.csv
    primary_key: sample_id
    time: hours
links:
  - {parent: patient, child: visit, foreign_key: patient_id, method: linear_sum_assignment}
  - {parent: patient, child: samples, foreign_key: patient_id, method: time_series,
     n_points: 12, n_components: 3, projection: fpca}    # the last three optional
entities:                      # one person in tables no link joins: one pseudonym per value
  patient: {columns: {patient: p_id, lab: patient_code},
            pseudonym: "pseudonym:hmac:key_env=GA_KEY"}  # default pseudonym:integer
```

Link keys: ``parent``, ``child``, ``foreign_key``, optional ``parent_key`` (the parent's primary
key by default), ``method``, ``drop_orphans`` and, for ``time_series``, ``n_points``,
``n_components`` and ``projection``. Unknown keys are refused (a typo would
otherwise be ignored); every problem is an ``AvatarError`` naming the file and the entry, its
fix in this file's words.

A database server instead of files (``Database.from_sql``): ``url`` names it (an SQLite path
relative to this YAML file), every table is read with its keys (``include: [...]``: only
those), ``tables`` entries then only set a table's ``primary_key``, ``types`` and overrides
(no ``path``, and no ``time``: time series are read from files), and ``links`` set a
foreign key's method or add one the schema lacks. A database of several tables with no link
at all is refused by ``gpu-avatar database`` (it shows the links ``suggest_links`` finds)
unless ``no_links: true`` says its tables are to be released unlinked:

```yaml
url: postgresql://analyst@db.example.org/hospital   # the password: in ~/.pgpass or the URL
schema: public
k: 10
tables:
  visit: {k: 5}
links:
  - {parent: doctor, child: visit, foreign_key: doctor_id, method: minimum_distance}
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AvatarError, GpuAvatarError, error_context, worded
from ..files import read_table_file
from ..parameters import (
    TABLE_OVERRIDES,
    AvatarParameters,
    check_flag,
    check_integer,
)
from ..planning.model import TABLE_PLAN_KEYS, Plan
from ..rules import RuleSet
from .schema import Database

RUN_PARAMETERS = [name for name in AvatarParameters.names() if name != "types"]
TOP_LEVEL = {"tables": False, "links": False, "entities": False,
             "assignment_block_size": False, "url": False,
             "schema": False, "include": False, "no_links": False, "plan": False,
             **dict.fromkeys(RUN_PARAMETERS, False)}
READ_KEYS = ("sep", "decimal", "encoding", "date_format", "na_values")  # how a file is read
TABLE_KEYS = {"path": True, "primary_key": True, "individual_level": False, "types": False,
              "time": False, "rules": False, **dict.fromkeys(READ_KEYS, False),
              **dict.fromkeys(TABLE_PLAN_KEYS, False),
              **dict.fromkeys(TABLE_OVERRIDES, False)}
SERIES_KEYS = ("n_points", "n_components", "projection")  # of a time_series link
ENTITY_KEYS = {"columns": True, "pseudonym": False}  # Database.add_entity's
LINK_KEYS = {"parent": True, "child": True, "foreign_key": True, "parent_key": False,
             "method": False, "drop_orphans": False, **dict.fromkeys(SERIES_KEYS, False)}


@dataclass
class DatabaseConfig:
    """The declared database (tables read) and the ``avatarize_database`` arguments; ``url``:
    the database read (None: files); ``no_links``: its tables may be released unlinked."""

    database: Database
    parameters: AvatarParameters = field(default_factory=AvatarParameters)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    assignment_block_size: int | None = None
    paths: dict[str, Path] = field(default_factory=dict)
    url: Any = None
    no_links: bool = False
    write_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # CSV, as read
    plan: Plan | Path | None = None  # the plan file (plan:, read when run), or this file's
    # own review lists and treatments


def _in_file(path: Path, error: GpuAvatarError) -> AvatarError:
    """An error of the YAML file at ``path``, its fix in YAML words."""
    return AvatarError(f"{path}: {worded(error, 'yaml')}")


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


def load_rules_file(path: str | Path) -> RuleSet | None:
    """The rules of one table from a YAML file holding their list (``RuleSet.from_config``),
    errors in YAML words; None for an empty list."""
    path = Path(path)
    try:
        return RuleSet.of(_parse_yaml(path) or [])
    except GpuAvatarError as error:
        raise _in_file(path, error) from error


def load_database_config(path: str | Path) -> DatabaseConfig:
    """Read the YAML file and every table it names (paths relative to the YAML file)."""
    path = Path(path)
    document = _parse_yaml(path)
    top = _check_keys(document, TOP_LEVEL, f"{path}")
    url = top.get("url")
    tables = top.get("tables")
    if url is None and (not isinstance(tables, Mapping) or not tables):
        raise AvatarError(
            f"{path}: 'tables' must map each table name to its settings (path, primary_key, "
            "...), or 'url' must name a database to read"
        )
    if not isinstance(tables or {}, Mapping):
        raise AvatarError(f"{path}: 'tables' must map table names to their settings")
    for key in ("schema", "include"):
        if key in top and url is None:
            raise AvatarError(f"{path}: {key!r} goes with 'url' (a database to read)")
    links = top.get("links") or []
    if not isinstance(links, list):
        raise AvatarError(f"{path}: 'links' must be a list of links (parent, child, foreign_key)")
    if top.get("k") == "auto":  # avatarize --k auto's advice is gpu-avatar advise's here
        raise AvatarError(f"{path}: k: auto is for a table (gpu-avatar avatarize --k auto); run "
                          f"gpu-avatar advise {path} for the advised k and seed, and set them here")
    try:
        no_links = check_flag("no_links", top.get("no_links", False))
        parameters = AvatarParameters(**{k: top[k] for k in RUN_PARAMETERS if k in top})
    except GpuAvatarError as error:
        raise _in_file(path, error) from error
    if no_links and links:
        raise AvatarError(f"{path}: no_links: true, yet 'links' are declared; drop one of them")
    allowed = dict(TABLE_KEYS, path=url is None, primary_key=url is None)
    if url is not None:
        for key in ("path", "time", *READ_KEYS):
            del allowed[key]
        for name, entry in (tables or {}).items():
            if isinstance(entry, Mapping) and "time" in entry:
                raise AvatarError(
                    f"{path}: tables.{name}: time series (time:) need tables read from files "
                    "(path), not from 'url'; export the table to a file and declare it there"
                )
    specs = {str(name): _check_keys(entry, allowed, f"{path}: tables.{name}")
             for name, entry in (tables or {}).items()}
    links = [_check_keys(entry, LINK_KEYS, f"{path}: links[{i}]") for i, entry in enumerate(links)]
    entities = top.get("entities") or {}
    if not isinstance(entities, Mapping):
        raise AvatarError(f"{path}: 'entities' must map entity names to their columns and "
                          "pseudonym, e.g. patient: {columns: {lab: patient_id, pharmacy: pid}}")
    entities = {str(name): _check_keys(entry, ENTITY_KEYS, f"{path}: entities.{name}")
                for name, entry in entities.items()}
    for name, spec in specs.items():
        if not isinstance(spec.get("types") or {}, Mapping):
            raise AvatarError(f"{path}: tables.{name}.types must map column names to kinds")
    try:
        if url is None:
            database, paths, write_options = _database_from_files(path, specs, links)
        else:
            database, url = _database_from_url(path, top, specs, links)
            paths, write_options = {}, {}
        for name, spec in specs.items():
            if "rules" in spec:
                database.add_rules(name, RuleSet.from_config(spec["rules"],
                                                             f"tables.{name}.rules"))
        for name, entity in entities.items():
            with error_context(f"entities.{name}"):
                database.add_entity(name, entity["columns"],
                                    entity.get("pseudonym", "pseudonym:integer"))
    except GpuAvatarError as error:
        raise _in_file(path, error) from error
    plan = _plan(path, top, specs)
    overrides = {name: {key: spec[key] for key in TABLE_OVERRIDES if key in spec}
                 for name, spec in specs.items()}
    block_size = top.get("assignment_block_size")
    try:
        for name, override in overrides.items():  # checked here, named as in this file
            with error_context(f"tables.{name}"):
                parameters.replace(**override)
        if block_size is not None:
            check_integer("assignment_block_size", block_size, 1)
    except GpuAvatarError as error:
        raise _in_file(path, error) from error
    return DatabaseConfig(database, parameters, {t: o for t, o in overrides.items() if o},
                          block_size, paths, url, no_links,
                          write_options, plan)


def _plan(path: Path, top: dict, specs: dict) -> Plan | Path | None:
    """The plan the run takes: the file ``plan:`` names (relative to this file; read when
    run, so that ``gpu-avatar plan`` can write it), or this file's own tables'
    ``review``/``treatment``, when they say anything."""
    own = any(key in spec for spec in specs.values()
              for key in ("review", "treatment", "treatment_review"))
    if "plan" in top:
        if own:
            raise AvatarError(f"{path}: plan: names a plan file, yet tables here hold review "
                              "or treatment; keep them in the plan file")
        return path.parent / str(top["plan"])
    if not own:
        return None
    try:
        decided = Plan.from_mapping({"tables": specs}, source=str(path),
                                    ignore=tuple(TABLE_KEYS))
    except GpuAvatarError as error:
        raise _in_file(path, error) from error
    decided.partial = True  # the types here are declarations, as ever: not a whole plan
    return decided


def _database_from_files(path: Path, specs: dict, links: list) -> tuple[Database, dict, dict]:
    """The tables read from their files, the links declared; each file's path and how it
    was written (the avatars are written alike)."""
    database = Database()
    paths, write_options = {}, {}
    for name, spec in specs.items():
        paths[name] = (path.parent / str(spec["path"])).resolve()
        with error_context(f"tables.{name}"):
            read = read_table_file(paths[name],
                                   **{key: spec[key] for key in READ_KEYS if key in spec})
        write_options[name] = read.write_options
        database.add_table(
            name, read.frame, primary_key=spec["primary_key"],
            individual_level=spec.get("individual_level"), types=dict(spec.get("types") or {}),
            time=spec.get("time"),
        )
    for index, spec in enumerate(links):
        parent, child = str(spec["parent"]), str(spec["child"])  # as the tables' names
        parent_key = spec.get("parent_key")
        if parent_key is None and parent in database.tables:
            parent_key = database.tables[parent].primary_key
        with error_context(f"links[{index}]"):
            database.add_link(
                parent, parent_key, child, spec["foreign_key"],
                method=spec.get("method", "linear_sum_assignment"),
                drop_orphans=spec.get("drop_orphans", False),
                **{key: spec[key] for key in SERIES_KEYS if key in spec},
            )
    return database, paths, write_options


def _database_from_url(path: Path, top: dict, specs: dict, links: list) -> tuple[Database, Any]:
    """The database read from its server, with the settings the YAML file adds; its URL."""
    from ..sql.connection import parse_url

    url = parse_url(top["url"])
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        url = url.set(database=str((path.parent / url.database).resolve()))  # as file paths
    include = top.get("include")
    unknown = [name for name in specs if include is not None and name not in include]
    if unknown:
        raise AvatarError(f"tables {unknown} have settings but are not in 'include'")
    database = Database.from_sql(
        url, schema=top.get("schema"), tables=include,
        primary_keys={n: s["primary_key"] for n, s in specs.items() if "primary_key" in s},
        links=links, types={n: dict(s["types"]) for n, s in specs.items() if s.get("types")},
    )
    for name, spec in specs.items():
        if name not in database.tables:
            raise AvatarError(f"tables.{name}: the database has no table {name!r}")
        if spec.get("individual_level") is not None:
            database.tables[name].individual_level = check_flag(
                f"tables.{name}.individual_level", spec["individual_level"]
            )
    return database, url
