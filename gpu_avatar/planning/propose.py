"""``ga.plan``: the plan proposed for a table, a file, a folder, a database or its YAML.

Each column gets the kind its rule proposes (``encoding.identifying``: identifiers, person
keys, names, free text, each to be reviewed) or the kind its values have (a variable, no
review). Each table of a database gets ``anonymize``, or ``copy`` to review where it reads as a
reference table that describes no one: a parent with no parent of its own, at most
``REFERENCE_ROWS`` rows, each referenced by ``REFERENCE_CHILDREN`` child rows or more on
average, its columns text labels (no number, date or flag), most distinct on every row and
none flagged otherwise (no name, person key, free text or contact). Person keys of tables that no
link joins, holding the same values, are proposed as an entity. See docs: "The plan".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..encoding.identifying import identifying_columns, text_reading
from ..encoding.kinds import CATEGORICAL, detect_kind, is_datetime, is_text
from ..errors import AvatarError, AvatarTypeError
from ..files import read_table_file
from ..parameters import column_kind
from ..relational.schema import Database, key_kind
from ..sql.connection import looks_like_url, shown
from .model import ANONYMIZE, Plan, Proposal, TablePlan

REFERENCE_ROWS = 1000  # a reference table lists few things: wards, airlines, drugs
REFERENCE_CHILDREN = 20  # rows referring to each of its rows, on average
# what the identifying rule says of a reference table's labels, one per thing listed
LABEL_FLAGS = ("distinct on every row", "values held by one row")
ENTITY_CONTAINMENT = 0.8  # share of the smaller key's values the other key holds
ENTITY_MIN_VALUES = 20  # fewer shared values say little
TABLE_SUFFIXES = (".csv", ".parquet", ".tsv", ".txt")
YAML_SUFFIXES = (".yaml", ".yml")


def plan(data: Any, *, types: Mapping[Any, str] | None = None, **read_options: Any) -> Plan:
    """Propose the plan for ``data``: a DataFrame, a CSV or Parquet file (read by
    ``ga.read_table``, ``read_options`` passed on), a folder of such files (a table each), a
    database URL (``Database.from_sql``), a database YAML file, or a ``Database``.

    Parameters
    ----------
    data : DataFrame, str, Path or Database
        What to propose a plan for.
    types : mapping, optional
        Kinds already declared (one table): proposed as declared, with no review.
    **read_options
        ``sep``, ``decimal``, ``encoding``, ``date_format`` for a file.

    Returns
    -------
    Plan
        Its ``to_yaml()`` is the file a person reviews; ``plan=`` takes it back.

    Examples
    --------
    >>> import pandas as pd, gpu_avatar as ga
    >>> df = pd.DataFrame({"code": range(1, 41), "age": [30 + i % 7 for i in range(40)]})
    >>> proposal = ga.plan(df)
    >>> proposal.table().columns["code"].kind, proposal.table().columns["code"].review
    ('identifier', True)
    """
    if isinstance(data, pd.DataFrame):
        return Plan({None: propose_table(data, types or {})})
    if isinstance(data, Database):
        return propose_database(data)
    if not isinstance(data, (str, Path)):
        raise AvatarTypeError(f"data must be a DataFrame, a Database or a path, got "
                              f"{type(data).__name__}")
    if looks_like_url(data):
        return propose_database(Database.from_sql(data), source=shown(data))
    path = Path(data)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in TABLE_SUFFIXES)
        if not files:
            raise AvatarError(f"folder {path} holds no CSV or Parquet file to plan for")
        tables = {p.stem: propose_table(read_table_file(p, **read_options).frame, {})
                  for p in files}
        return Plan(tables, source=str(path))
    if path.suffix.lower() in YAML_SUFFIXES:
        from ..relational.config import load_database_config

        config = load_database_config(path)
        proposed = propose_database(config.database, source=str(path))
        own = config.plan if isinstance(config.plan, Plan) else None  # not a plan file's
        for name, table in (own.tables if own else {}).items():
            if name not in proposed.tables:
                continue
            if table.treatment != ANONYMIZE:
                proposed.tables[name].treatment = table.treatment
                proposed.tables[name].treatment_evidence = "declared"
                proposed.tables[name].treatment_review = table.treatment_review
            columns = proposed.tables[name].columns
            for column in [c for c, p in table.columns.items() if p.review and c in columns]:
                columns[column] = replace(columns[column], review=True)  # still to review
        return proposed
    frame = read_table_file(path, **read_options).frame
    return Plan({None: propose_table(frame, types or {})}, source=str(path))


def propose_table(frame: pd.DataFrame, declared: Mapping[Any, str],
                  table: str | None = None, keys: Mapping[Any, str] | None = None) -> TablePlan:
    """Each column's proposal: as ``declared``, as its rule flags it (to review), or the kind
    of its values; ``keys`` (column -> what it is) are no variables, said apart."""
    keys = dict(keys or {})
    columns = [c for c in frame.columns if c not in keys]
    flagged = {c.column: c for c in identifying_columns(frame[columns], {}, table)}
    proposals = {}
    for column in columns:
        series = frame[column]
        if column in declared:
            reason = flagged[column].reason if column in flagged else None
            evidence = "declared" + (f" (the rule would flag it: {reason})" if reason else "")
            proposals[column] = Proposal(declared[column], evidence)
        elif column in flagged:
            found = flagged[column]
            proposals[column] = Proposal(found.proposal, found.reason, found.confidence,
                                         review=True, label=found.label)
        else:
            proposals[column] = Proposal(*_variable(series))
    return TablePlan(proposals, keys=keys,
                     shape=f"{len(frame):,} rows, {frame.shape[1]} columns")


def _variable(series: pd.Series) -> tuple[str, str]:
    """The kind of a column that no rule flags, and its shape in words (no value)."""
    n, distinct = int(series.notna().sum()), int(series.nunique())
    missing = len(series) - n
    gaps = f", {missing:,} missing" if missing else ""
    if is_datetime(series.dtype):
        return "datetime", f"dates, {distinct:,} distinct in {n:,} rows{gaps}"
    kind = detect_kind(series)
    if kind == CATEGORICAL:
        if pd.api.types.is_bool_dtype(series.dtype):
            return kind, f"true/false{gaps}"
        reading = text_reading(series) if is_text(series.dtype) else None
        reads = (f"; text that reads as {'numbers' if reading == 'continuous' else 'dates'} "
                 "but for missing markers: ga.read_table reads such a file's column so"
                 if reading else "")
        return kind, f"{distinct:,} modalities in {n:,} rows{gaps}{reads}"
    return kind, f"numbers, {distinct:,} distinct in {n:,} rows{gaps}"


def propose_database(db: Database, source: str | None = None) -> Plan:
    """Every table's proposals and treatment, and the entities proposed."""
    tables = {}
    references = {name: _reference_evidence(db, name) for name in db.tables}
    for name, table in db.tables.items():
        reference = references[name]
        keys = {table.primary_key: "primary key: " + (
            "as it is, if the table is copied" if reference else "fresh values in the release")}
        keys.update({link.foreign_key: f"foreign key to {link.parent}: " + (
            "its keys, as a variable, if it is copied" if references[link.parent]
            else "relinked to its avatars") for link in db.parents_of(name)})
        tables[name] = propose_table(table.data, table.types, name, keys)
        if reference is not None:
            columns = tables[name].columns
            for column, proposal in columns.items():
                if proposal.review:  # its labels, released as they are with the copy
                    columns[column] = Proposal(
                        "categorical", f"a label of the things listed ({proposal.evidence}): "
                        "released as it is if the table is copied", "medium", True, "a label")
            tables[name].treatment = "copy"
            tables[name].treatment_evidence = f"medium: {reference}"
            tables[name].treatment_review = True
    return Plan(tables, _entities(db, tables), source=source)


def _reference_evidence(db: Database, name: str) -> str | None:
    """Why table ``name`` reads as a reference table describing no one, or None."""
    table = db.tables[name]
    children = db.children_of(name)
    rows = len(table.data)
    if db.parents_of(name) or not children or not 0 < rows <= REFERENCE_ROWS:
        return None
    referring = sum(len(db.tables[link.child].data) for link in children)
    if referring < REFERENCE_CHILDREN * rows:
        return None
    labels = [c for c in table.data.columns if c != table.primary_key]
    if not labels or not all(is_text(table.data[c].dtype) for c in labels):
        return None  # numbers, dates, flags: what a table about people holds
    flagged = identifying_columns(table.data[labels], {}, name)
    if any(c.label not in LABEL_FLAGS for c in flagged):
        return None  # names, person keys, free text, contacts: people, not things
    distinct = [c for c in labels if table.data[c].nunique() >= 0.95 * rows]
    if len(distinct) * 2 < len(labels):
        return None
    return (f"{rows:,} rows, each referenced by {referring / rows:,.0f} rows of "
            f"{', '.join(link.child for link in children)} on average, its columns labels: "
            "a reference table that describes no one; check it before copying it as it is")


def _entities(db: Database, tables: dict[str, TablePlan]) -> dict[str, dict[str, Any]]:
    """Person keys (primary keys or columns proposed identifiers) of tables no link joins,
    holding the same values: one proposed entity per pair of such columns, one of them no
    primary key (two tables' row numbers share values by chance)."""
    joined = {frozenset((link.parent, link.child)) for link in db.links}
    candidates = []
    for name, table in db.tables.items():
        if db.parents_of(name):
            continue  # a child's person is its parent's: the link joins them
        plan = tables[name]
        keys = [table.primary_key] + [c for c, p in plan.columns.items()
                                      if column_kind(p.kind) == "identifier"]
        for column in keys:
            values = table.data[column].dropna().unique()
            if len(values) >= ENTITY_MIN_VALUES:
                candidates.append((name, column, set(values.tolist()),
                                   key_kind(table.data[column]), column == table.primary_key))
    entities: dict[str, dict[str, Any]] = {}
    used: set[tuple[str, Any]] = set()
    for i, (table_a, column_a, values_a, kind_a, key_a) in enumerate(candidates):
        for table_b, column_b, values_b, kind_b, key_b in candidates[i + 1:]:
            if (table_a == table_b or kind_a != kind_b or (key_a and key_b)  # two row numbers
                    or frozenset((table_a, table_b)) in joined
                    or {(table_a, column_a), (table_b, column_b)} & used):
                continue
            shared = len(values_a & values_b)
            if shared >= ENTITY_MIN_VALUES and shared >= ENTITY_CONTAINMENT * min(
                    len(values_a), len(values_b)):
                entities[f"{table_a}.{column_a}"] = {
                    "columns": {table_a: column_a, table_b: column_b},
                    "evidence": f"{shared:,} values held by both columns, no link between "
                                "the tables"}
                used |= {(table_a, column_a), (table_b, column_b)}
    return entities
