"""Rules the release keeps (issue #27): an avatar is a weighted barycentre of its neighbours,
so it keeps statistics but not the rules every real record obeys (follow-up ending after
acceptance, a flag agreeing with the value it flags, one death per patient). Declared rules
hold on every released row:

    import gpu_avatar as ga
    rules = ga.rules.RuleSet([
        ga.rules.Inequality("accept_dt", "fu_dt", strict=True),
        ga.rules.Derived("low", "bwt < 2500"),
    ])                                   # or RuleSet.from_config(yaml_list)
    encoded = rules.encode(df)           # checked: a rule the originals break is refused
    result = ga.avatarize(encoded, k=20, seed=0)
    release = rules.apply(df, result.sensitive_unshuffled_avatars, encoded=True, seed=0)

A rule with a reversible transform is encoded before the projection and decoded after
(Inequality, Derived, FixedCombinations); every rule is then repaired where it is still
broken, by the smallest change, drawn from the avatar's neighbours where they are given
(Range, SumTo, Rounding, GroupMean; across a parent's children: CountPerParent, Increasing,
BoundedSteps). The report tells per rule the rows repaired and the Hellinger distance of
its columns before and after.

- ``values.py``: quantity columns as numbers and back at their precision; ``Neighbours``;
- ``base.py``: ``Rule`` and ``Encodable``;
- ``expressions.py``: the safe expressions of derived columns;
- ``table.py``: the rules within rows and over a table; ``children.py``: across children;
- ``ruleset.py``: ``RuleSet`` (contradictions, checks, encode, decode, apply) and its report.
"""

from .base import Encodable, Rule
from .children import BoundedSteps, CountPerParent, Increasing, across_children
from .expressions import Expression
from .ruleset import RULES, RuleReport, RuleSet, RulesResult, rules_frame
from .table import Derived, FixedCombinations, GroupMean, Inequality, Range, Rounding, SumTo
from .values import Neighbours

__all__ = [
    "RULES", "BoundedSteps", "CountPerParent", "Derived", "Encodable", "Expression",
    "FixedCombinations", "GroupMean", "Increasing", "Inequality", "Neighbours", "Range",
    "Rounding", "Rule", "RuleReport", "RuleSet", "RulesResult", "SumTo", "across_children",
    "rules_frame",
]  # fmt: skip
