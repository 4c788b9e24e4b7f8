"""Links a database does not declare (exports rarely keep foreign keys), proposed, never applied.

A column of one table is proposed as a foreign key to another table's primary key when both
say so: its name points at the parent (the key's own name, or the parent table's name, singular
or plural, as a word of the column's name: ``patient_id``, ``attending_doctor``), and at least
``min_containment`` of its values are among the parent's keys. Each proposal carries that
evidence; the user adds the ones they accept with ``Database.add_link``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError
from ..parameters import check_number
from .schema import key_kind

COLUMNS = ["parent", "parent_key", "child", "foreign_key", "containment", "values",
           "name_evidence"]


def _words(name: Any) -> list[str]:
    return [word for word in re.split(r"[^0-9a-z]+", str(name).lower()) if word]


def _name_evidence(column: Any, parent: str, parent_key: Any) -> str | None:
    """Why ``column``'s name points at ``parent`` (None: it does not)."""
    if str(column).lower() == str(parent_key).lower():
        return f"named as {parent}'s key {parent_key!r}"
    words = _words(column)
    table = str(parent).lower()
    forms = {table, table.removesuffix("s"), table + "s"} - {""}
    if forms & set(words) or "".join(words) in {form + "id" for form in forms}:
        return f"names the table {parent!r}"
    return None


def _comparable(child: pd.Series, key: pd.Series) -> bool:
    """Keys and candidate values of one kind (``schema.key_kind``), numbers whole."""
    kind = key_kind(child)
    if kind is None or kind == "booleans" or kind != key_kind(key):
        return False
    if kind != "numbers":
        return True
    numbers = np.asarray(child, dtype=np.float64)
    return bool((numbers == np.round(numbers)).all())


def suggest_links(db: Any, min_containment: float = 0.95) -> pd.DataFrame:
    """One row per proposed link (``COLUMNS``), the best evidence first."""
    min_containment = check_number("min_containment", min_containment, 0.0, 1.0)
    if not db.tables:
        raise AvatarError("the database has no table; call add_table first")
    declared = {(link.child, link.foreign_key) for link in db.links}
    rows = []
    for child_name, child in db.tables.items():
        for column in child.data.columns:
            if column == child.primary_key or (child_name, column) in declared:
                continue
            values = child.data[column].dropna()
            if values.empty:
                continue
            for parent_name, parent in db.tables.items():
                if parent_name == child_name:
                    continue
                evidence = _name_evidence(column, parent_name, parent.primary_key)
                key = parent.data[parent.primary_key]
                if evidence is None or not _comparable(values, key):
                    continue
                containment = float(values.isin(key).mean())
                if containment >= min_containment:
                    rows.append([parent_name, parent.primary_key, child_name, column,
                                 containment, len(values), evidence])
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["containment", "values"], ascending=False, ignore_index=True)
