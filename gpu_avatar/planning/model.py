"""The plan: every column's kind and every table's treatment, proposed with its evidence,
reviewed by a person in one file, and read by every entry point (``avatarize``, ``advise``,
``avatarize_database``, ``avatarize_parquet``, ``distributed.avatarize``, the command line's
``--plan`` and the database YAML's ``plan:``). See docs: "The plan".

A plan file is the database YAML's own ``types:``/``tables:`` format, plus what awaits review:

```yaml
types:                          # one table (a DataFrame, a CSV or Parquet file)
  patient_code: identifier      # high: whole numbers 1..400, distinct on every row
  age: continuous               # high: numbers, 62 distinct in 400 rows
review: [patient_code]          # proposals a person must still check; a run refuses while
                                # this lists anything
```

```yaml
tables:                         # a database: one entry per table
  patient:
    types: {...}
    review: [...]
  airline:
    treatment: copy             # released as it is: a reference table describing no one
    treatment_review: true      # the treatment awaits review too
```

The proposals' evidence and confidence are comments: the file holds decisions only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..encoding.identifying import MESSAGE_CHARACTERS
from ..errors import AvatarError, AvatarTypeError, FixableError
from ..parameters import check_choice, check_types

# What a table of a database becomes in the release, and why a plan would choose it.
TREATMENTS = {
    "anonymize": "avatars, the default",
    "copy": "released as it is: a reference table that describes no one (wards, airlines)",
    "pseudonymize": "keys and identifiers replaced, other values kept: a table declared "
                    "non-personal",
    "purge": "the structure with no rows",
    "ignore": "left out of the release",
}
ANONYMIZE = "anonymize"
TREATED_WORDS = {"copy": "copied as it is", "pseudonymize": "pseudonymized (keys replaced, "
                 "other values as they are)", "purge": "purged (no rows)", "ignore": "left out"}
TABLE_PLAN_KEYS = ("types", "review", "treatment", "treatment_review")


@dataclass(frozen=True)
class Proposal:
    """One column's proposed kind (a checked declaration), the evidence in words (no value
    of the data), a confidence, and whether a person must review it before a run."""

    kind: str
    evidence: str = ""
    confidence: str = "high"
    review: bool = False
    label: str = ""  # a short clause for one-line messages ("free text", "person key")


@dataclass
class TablePlan:
    """One table's treatment (``TREATMENTS``) and its columns' proposals; ``keys``: its key
    columns (primary and foreign keys: not variables, said in comments only)."""

    columns: dict[Any, Proposal] = field(default_factory=dict)
    treatment: str = ANONYMIZE
    treatment_evidence: str = ""
    treatment_review: bool = False
    keys: dict[Any, str] = field(default_factory=dict)
    shape: str = ""  # "400 rows, 9 columns": the header comment

    def types(self) -> dict[Any, str]:
        return {column: proposal.kind for column, proposal in self.columns.items()}

    def awaiting(self) -> list[tuple[str, str]]:
        """What awaits review: (the column's or the treatment's name, its short label)."""
        pending = [("treatment", f"treatment {self.treatment}")] if self.treatment_review else []
        return pending + [(str(column), proposal.label or proposal.kind)
                          for column, proposal in self.columns.items() if proposal.review]


class PlanReviewError(FixableError):
    """A run was given a plan whose proposals a person has not reviewed yet."""


@dataclass
class Plan:
    """Column kinds and table treatments for one table (``tables`` keyed by None) or a
    database (keyed by table name); ``entities``: person keys shared by tables that no link
    joins, proposed (``Database.add_entity``'s arguments), applied only once written into the
    database's YAML; ``source``: what it was proposed for (the file's header); ``partial``:
    decisions for some tables and columns only (a database YAML's own ``review`` and
    ``treatment``), not a plan proposed for the whole data."""

    tables: dict[str | None, TablePlan]
    entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str | None = None
    partial: bool = False  # a database YAML's own decisions: only the tables and columns named

    @classmethod
    def of(cls, plan: Any) -> Plan:
        """A ``Plan``, or one read from a file path (``Plan.read``)."""
        if isinstance(plan, Plan):
            return plan
        if isinstance(plan, (str, Path)):
            return cls.read(plan)
        raise AvatarTypeError(f"plan must be a gpu_avatar.Plan or a plan file's path, got "
                              f"{type(plan).__name__}")

    @property
    def is_database(self) -> bool:
        return None not in self.tables

    def table(self, name: str | None = None) -> TablePlan:
        """The plan of table ``name``; None: the only table of a one-table plan."""
        if name in self.tables:
            return self.tables[name]
        if name is None and len(self.tables) == 1:
            return next(iter(self.tables.values()))
        held = ", ".join(str(t) for t in self.tables)
        raise AvatarError(f"the plan holds no table {name!r} (it holds {held}); give the plan "
                          "proposed for this data")

    # ------------------------------------------------------------------ decisions
    def confirm(self, *columns: Any, table: str | None = None) -> Plan:
        """Mark proposals reviewed, as they are ("treatment" names the table's treatment)."""
        plan = self.table(table)
        for column in columns:
            if column == "treatment" and column not in plan.columns:
                plan.treatment_review = False
                continue
            if column not in plan.columns:
                raise AvatarError(f"confirm: the plan has no column {column!r}")
            plan.columns[column] = replace(plan.columns[column], review=False)
        return self

    def declare(self, column: Any, kind: str, table: str | None = None) -> Plan:
        """Decide ``column``'s kind (reviewed, by the one who declares it)."""
        declared = check_types({column: kind}, "declare")[column]
        plan = self.table(table)
        plan.columns[column] = Proposal(declared, "declared", "high", False)
        return self

    def treat(self, table: str, treatment: str) -> Plan:
        """Decide a table's treatment (reviewed)."""
        plan = self.table(table)
        plan.treatment = check_choice(f"treatment of table {table!r}", treatment,
                                      tuple(TREATMENTS))
        plan.treatment_evidence, plan.treatment_review = "declared", False
        return self

    def check_reviewed(self, where: str = "the plan") -> None:
        """Raise ``PlanReviewError`` while any proposal awaits review."""
        pending = [(table, name, label) for table, plan in self.tables.items()
                   for name, label in plan.awaiting()]
        if not pending:
            return
        fixes = {
            "python": "check each, then plan.confirm(...) or plan.declare(column, kind)",
            "cli": "check each in the plan file, then remove it from its review: list",
            "yaml": "check each, then remove it from its review: list (tables.TABLE.review, "
                    "treatment_review)",
        }
        head = f"{where}: {len(pending)} proposal(s) await review: "
        tail = "; nothing was released"
        room = MESSAGE_CHARACTERS - len(head) - len(tail) - 2 - max(map(len, fixes.values()))
        clauses = [f"{name if table is None else f'{table}.{name}'} ({label})"
                   for table, name, label in pending]
        raise PlanReviewError(head + _listed(clauses, room) + tail, fixes)

    # ------------------------------------------------------------------ applying
    def types_for(self, columns: Any, declared: Mapping[Any, str] | None = None,
                  table: str | None = None, where: str = "the plan",
                  keys: Any = ()) -> dict[Any, str]:
        """The kinds a run of table ``table`` uses: the plan's, checked reviewed and made for
        these ``columns`` (each one in it, ``keys`` and those ``declared`` aside, and no
        other), with ``declared`` (the run's own ``types``) over them."""
        self.check_reviewed(where)
        plan = self.table(table)
        declared = declared or {}
        present = set(columns)
        unknown = [str(c) for c in plan.columns if c not in present]
        unplanned = [] if self.partial else [str(c) for c in columns if not (
            c in plan.columns or c in declared or c in keys)]
        if unknown or unplanned:
            lacks = f"names column(s) the data lacks ({_listed(unknown, 80)})" if unknown \
                else f"has no kind for column(s) {_listed(unplanned, 80)}"
            raise AvatarError(f"{where} {lacks}: it was proposed for other data; propose one "
                              "for this data (ga.plan, gpu-avatar plan) and review it")
        return {**plan.types(), **declared}

    # ------------------------------------------------------------------ the file
    def to_yaml(self, path: str | Path | None = None) -> str:
        """The plan file's text (written to ``path`` too, when given)."""
        lines = [
            f"# gpu_avatar plan{f' for {self.source}' if self.source else ''}.",
            "# Kinds: continuous, categorical, datetime[:FORMAT], identifier (fresh values),",
            "# pseudonym:STRATEGY, excluded:row_order|coordinate_similarity, dropped. The",
            "# comment after each line gives the confidence and the evidence behind it.",
            "# Check every proposal listed under review:, change its kind if it is wrong, then",
            "# remove it from review:. Runs given this plan refuse while a review: lists one.",
        ]
        if self.is_database:
            lines.append("tables:")
            for name, plan in self.tables.items():
                lines.append(f"  {_scalar(name)}:" + (f"  # {plan.shape}" if plan.shape else ""))
                lines += _table_lines(plan, "    ", database=True)
        else:
            plan = self.table()
            if plan.shape:
                lines.append(f"# {plan.shape}")
            lines += _table_lines(plan, "", database=False)
        if self.entities:
            lines += ["# Entities proposed: person keys shared by tables that no link joins.",
                      "# Each gets one pseudonym per value, the same in every table, so the",
                      "# released tables still join. Copy one into the database YAML's",
                      "# entities: to apply it.", "# entities:"]
            for name, entity in self.entities.items():
                columns = ", ".join(f"{_scalar(t)}: {_scalar(c)}"
                                    for t, c in entity["columns"].items())
                lines.append(f"#   {_scalar(name)}: {{columns: {{{columns}}}}}"
                             + (f"  # {entity['evidence']}" if entity.get("evidence") else ""))
        text = "\n".join(lines) + "\n"
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    @classmethod
    def read(cls, path: str | Path) -> Plan:
        """A plan file (``to_yaml``); a database YAML names its own with ``plan:``."""
        import yaml

        path = Path(path)
        if not path.is_file():
            raise AvatarError(f"plan file {path} does not exist; write one with gpu-avatar "
                              "plan SOURCE -o FILE (Python: ga.plan(data).to_yaml(FILE))")
        try:
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as error:
            raise AvatarError(f"plan file {path}: not a readable YAML file ({type(error).__name__})"
                              ) from error
        try:
            return cls.from_mapping(document, source=str(path))
        except AvatarError as error:
            raise type(error)(f"plan file {path}: {error}") from None

    @classmethod
    def from_mapping(cls, document: Any, source: str | None = None,
                     ignore: tuple[str, ...] = ()) -> Plan:
        """The plan in a parsed YAML document; keys in ``ignore`` (a database YAML's others)
        are let through."""
        if not isinstance(document, Mapping):
            raise AvatarError("a plan maps 'types' (one table) or 'tables' (a database) to "
                              "the decisions")
        unknown = [str(k) for k in document if k not in ("types", "review", "tables", *ignore)]
        if unknown:
            raise AvatarError(f"unknown key(s) {unknown}; a plan holds types and review (one "
                              "table) or tables (a database)")
        if "tables" in document:
            tables = document["tables"] or {}
            if not isinstance(tables, Mapping):
                raise AvatarError("'tables' must map each table to its types and review")
            return cls({str(name): _table_plan(entry, f"tables.{name}", ignore)
                        for name, entry in tables.items()}, source=source)
        return cls({None: _table_plan(document, "", ())}, source=source)


def _table_plan(entry: Any, where: str, ignore: tuple[str, ...]) -> TablePlan:
    if entry is None:
        entry = {}
    if not isinstance(entry, Mapping):
        raise AvatarError(f"{where or 'the plan'} must map types, review and treatment")
    if ignore:  # a database YAML: its table entries hold more keys (path, primary_key...)
        entry = {key: value for key, value in entry.items() if key in TABLE_PLAN_KEYS}
    else:
        allowed = TABLE_PLAN_KEYS if where else ("types", "review")
        unknown = [str(k) for k in entry if k not in allowed]
        if unknown:
            raise AvatarError(f"{where or 'the plan'}: unknown key(s) {unknown}; allowed: "
                              f"{list(allowed)}")
    prefix = f"{where}." if where else ""
    if not isinstance(entry.get("types") or {}, Mapping):
        raise AvatarError(f"{prefix}types must map column names to kinds")
    types = check_types(entry.get("types") or {}, f"{prefix}types")
    review = entry.get("review") or []
    if not isinstance(review, list):
        raise AvatarError(f"{prefix}review must be a list of column names")
    unknown = [str(c) for c in review if c not in types]
    if unknown:
        raise AvatarError(f"{prefix}review lists column(s) with no kind in types: "
                          f"{_listed(unknown, 120)}; give each a kind")
    treatment = check_choice(f"{prefix}treatment", entry.get("treatment", ANONYMIZE),
                             tuple(TREATMENTS))
    treatment_review = entry.get("treatment_review", False)
    if not isinstance(treatment_review, bool):
        raise AvatarTypeError(f"{prefix}treatment_review must be true or false")
    return TablePlan(
        {column: Proposal(kind, review=column in review) for column, kind in types.items()},
        treatment, treatment_review=treatment_review,
    )


def _table_lines(plan: TablePlan, indent: str, database: bool) -> list[str]:
    """One table's decisions as YAML lines, the evidence in comments."""
    lines = []
    if database:
        comment = (f"  # {plan.treatment_evidence}" if plan.treatment_evidence
                   else f"  # {TREATMENTS[plan.treatment]}")
        lines.append(f"{indent}treatment: {plan.treatment}{comment}")
        if plan.treatment_review:
            lines.append(f"{indent}treatment_review: true  # remove once checked")
    for column, what in plan.keys.items():
        lines.append(f"{indent}# {_scalar(column)}: {what}")
    if plan.columns:
        lines.append(f"{indent}types:")
        width = max(len(_scalar(c)) + len(_scalar(p.kind)) for c, p in plan.columns.items())
        for column, proposal in plan.columns.items():
            entry = f"{indent}  {_scalar(column)}: {_scalar(proposal.kind)}"
            why = "; ".join(part for part in (proposal.confidence, proposal.evidence) if part)
            pad = " " * (width + len(indent) + 4 - len(entry))
            lines.append(f"{entry}{pad}  # {why}" if why else entry)
    pending = [c for c, p in plan.columns.items() if p.review]
    if pending:
        lines.append(f"{indent}review:  # a person checks each, then removes it from this list")
        lines += [f"{indent}  - {_scalar(c)}" for c in pending]
    return lines


def _scalar(value: Any) -> str:
    """``value`` as a one-line YAML scalar (quoted where YAML would read it otherwise)."""
    import yaml

    value = str(value) if isinstance(value, str) else getattr(value, "item", lambda: value)()
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return text.removesuffix("\n...").removesuffix(" ...")


def _listed(items: list[str], room: int) -> str:
    """``items`` joined by commas within ``room`` characters, the rest counted."""
    shown: list[str] = []
    for index, item in enumerate(items):
        rest = len(items) - index - 1
        more = f" and {rest} more" if rest else ""
        if shown and len(", ".join([*shown, item])) + len(more) > room:
            return ", ".join(shown) + f" and {len(items) - len(shown)} more"
        shown.append(item)
    return ", ".join(shown)


def planned_parameters(parameters: Any, plan: Any, columns: Any) -> Any:
    """``parameters`` (``AvatarParameters``) with the kinds of ``plan`` (a ``Plan`` or its
    file; None: unchanged) for a table of ``columns``, its own ``types`` over them."""
    if plan is None:
        return parameters
    plan = Plan.of(plan)
    return parameters.replace(types=plan.types_for(columns, parameters.types,
                                                   where=plan.source or "the plan"))
