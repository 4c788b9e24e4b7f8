"""Rules the release keeps (issue #27): declared rules, held by a reversible transform or by
repairs of the avatars.

- ``values.py``: quantity columns as numbers and back at their precision; ``Neighbours``;
- ``base.py``: ``Rule`` and ``Encodable``;
- ``expressions.py``: the safe expressions of derived columns;
- ``table.py``: the rules within rows and over a table;
- ``ruleset.py``: ``RuleSet`` (contradictions, checks, encode, decode, apply) and its report.
"""

from .base import Encodable, Rule
from .expressions import Expression
from .ruleset import RULES, RuleReport, RuleSet, RulesResult
from .table import Derived, FixedCombinations, GroupMean, Inequality, Range, Rounding, SumTo
from .values import Neighbours

__all__ = [
    "RULES", "Derived", "Encodable", "Expression", "FixedCombinations", "GroupMean",
    "Inequality", "Neighbours", "Range", "Rounding", "Rule", "RuleReport", "RuleSet",
    "RulesResult", "SumTo",
]  # fmt: skip
