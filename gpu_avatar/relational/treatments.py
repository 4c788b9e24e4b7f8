"""A database's tables treated otherwise than by avatars, as its plan says
(``planning.model.TREATMENTS``): ``copy`` (released as it is), ``pseudonymize`` (keys and
identifiers replaced, other values kept), ``purge`` (no rows) and ``ignore`` (left out).

Only a table with no parent is copied or pseudonymized: its rows then describe no one, and
its children's foreign keys become a categorical variable of theirs (the copied keys, or the
pseudonymized keys' pseudonyms), avatarized with their other variables. A purged or ignored
table may be a child; a table that refers to one must be purged or ignored too.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..encoding.identifiers import IdentifierValues
from ..errors import AvatarError, FixableError
from ..parameters import column_kind
from ..planning.model import ANONYMIZE, Plan
from .schema import Database

RELEASED_AS_IS = ("copy", "pseudonymize")
_DONE = {"copy": "copied", "pseudonymize": "pseudonymized", "purge": "purged",
         "ignore": "left out"}


def planned_database(db: Database, plan: Any) -> Database:
    """``db`` with the plan's kinds (the tables' own declarations over them) and treatments;
    a plan reviewed for these tables and columns, or refused."""
    plan = Plan.of(plan)
    where = plan.source or "the plan"
    plan.check_reviewed(where)
    if not plan.is_database:
        raise FixableError(f"{where} is a one-table plan; a database needs one proposed for it",
                           {"python": "pass plan=ga.plan(db), reviewed",
                            "cli": "write it with gpu-avatar plan SOURCE -o plan.yaml",
                            "yaml": "write it with gpu-avatar plan CONFIG.yaml -o plan.yaml"})
    if not plan.partial and set(plan.tables) != set(db.tables):
        raise AvatarError(f"{where} was proposed for tables {sorted(plan.tables)}, not this "
                          f"database's {sorted(db.tables)}; propose one for this database "
                          "(ga.plan, gpu-avatar plan) and review it")
    planned = copy.copy(db)
    planned.tables = dict(db.tables)
    for name, table in db.tables.items():
        if name not in plan.tables:  # a partial plan: the table's own types alone
            continue
        keys = {table.primary_key, *db.foreign_keys(name)}
        types = plan.types_for(table.data.columns, table.types, name, where, keys)
        treatment = plan.tables[name].treatment
        declared = table.treatment if table.treatment != ANONYMIZE else treatment
        planned.tables[name] = dataclasses.replace(table, types=types, treatment=declared)
    return planned


def released_as_they_are(db: Database, treatments: Mapping[str, str],
                         treated: Mapping[str, pd.DataFrame]) -> dict[str, tuple]:
    """The values that tables set apart release as they are (their keys and fresh values
    aside), with their kinds: what the identifying rule checks, as for the avatarized ones."""
    checked = {}
    for name, frame in treated.items():
        table = db.tables[name]
        fresh = {table.primary_key, *(c for c, kind in table.types.items()
                                      if column_kind(kind) == "identifier")}
        checked[name] = (frame[[c for c in frame.columns if c not in fresh]], table.types)
    return {name: checked[name] for name in treatments if name in checked}


def set_apart(db: Database) -> tuple[Database, dict[str, str], dict[str, pd.DataFrame]]:
    """The database of the tables to avatarize (links to the others removed, their
    children's foreign keys made variables), the others' treatments, and what is released of
    those not left out."""
    treatments = {name: table.treatment for name, table in db.tables.items()
                  if table.treatment != ANONYMIZE}
    if not treatments:
        return db, {}, {}
    _check(db, treatments)
    kept = copy.copy(db)
    kept.tables = {name: table for name, table in db.tables.items() if name not in treatments}
    kept.links = [link for link in db.links
                  if link.parent not in treatments and link.child not in treatments]
    released = {name: _released(db.tables[name], treatment)
                for name, treatment in treatments.items() if treatment != "ignore"}
    for link in db.links:
        if link.parent in treatments and link.child not in treatments:
            child = kept.tables[link.child]
            values = child.data[link.foreign_key]
            if treatments[link.parent] == "pseudonymize":
                values = _pseudonyms_of(db.tables[link.parent].data[link.parent_key], values)
            kept.tables[link.child] = dataclasses.replace(
                child, data=child.data.assign(**{link.foreign_key: values}),
                types={link.foreign_key: "categorical", **child.types})
    return kept, treatments, released


def _check(db: Database, treatments: Mapping[str, str]) -> None:
    """Refuse treatments the links or the columns do not allow, naming the tables and the
    fix: a copied table releases every value as it is, so it holds no identifier, pseudonym
    or excluded column; a pseudonymized one gets fresh values, so it holds no entity's or
    pseudonym's column (whose values must join other tables)."""
    for name, treatment in treatments.items():
        types = db.tables[name].types
        if treatment == "copy":
            apart = [str(c) for c, kind in types.items()
                     if column_kind(kind) in ("identifier", "excluded")]
        elif treatment == "pseudonymize":
            apart = [str(c) for c, kind in types.items()
                     if column_kind(kind) == "identifier" and kind != "identifier"]
        else:
            continue
        if apart:
            raise FixableError(
                f"table {name!r} is to be {_DONE[treatment]} but declares {', '.join(apart)} "
                f"{'identifiers or excluded' if treatment == 'copy' else 'pseudonyms'}: "
                f"{'pseudonymize' if treatment == 'copy' else 'anonymize'} it, or drop them",
                _fixes(name))
    for link in db.links:
        parent, child = treatments.get(link.parent), treatments.get(link.child)
        if child in RELEASED_AS_IS:
            raise FixableError(
                f"table {link.child!r} is to be {_DONE[child]} but refers to {link.parent!r}: only "
                "a table with no parent is released as it is", _fixes(link.child))
        if parent in ("purge", "ignore") and child not in ("purge", "ignore"):
            raise FixableError(
                f"table {link.child!r} refers to {link.parent!r}, which is to be {_DONE[parent]}: "
                f"{parent} {link.child!r} too, or anonymize {link.parent!r}",
                _fixes(link.parent))
    if len(treatments) == len(db.tables):
        raise FixableError("no table is to be anonymized: there is nothing to avatarize",
                           _fixes("TABLE"))


def _fixes(table: str) -> dict[str, str]:
    return {"python": f"set its treatment with plan.treat({table!r}, ...)",
            "cli": f"edit tables.{table}.treatment in the plan file",
            "yaml": f"edit tables.{table}.treatment"}


def _released(table: Any, treatment: str) -> pd.DataFrame:
    """What a table set apart releases: its rows as they are (``copy``), with its primary
    key and identifier columns replaced by fresh values, one per original value
    (``pseudonymize``), or no rows (``purge``); never a dropped column."""
    frame = table.data[[c for c in table.data.columns
                        if column_kind(table.types.get(c)) != "dropped"]].copy()
    if treatment == "purge":
        return frame.iloc[0:0]
    if treatment == "pseudonymize":
        replaced = {c for c, kind in table.types.items() if column_kind(kind) == "identifier"}
        for column in [c for c in frame.columns if c in replaced | {table.primary_key}]:
            frame[column] = _pseudonyms_of(frame[column], frame[column])
    return frame


def _pseudonyms_of(key: pd.Series, values: pd.Series) -> pd.Series:
    """``values`` (of ``key``'s kind) mapped to fresh values, one per distinct value of
    ``key``, none equal to an original; missing stays missing."""
    uniques = pd.unique(key.dropna())
    fresh = IdentifierValues(key.name).add(key).fresh(0, len(uniques))
    mapping = pd.Series(fresh, index=uniques)
    return values.map(mapping)
