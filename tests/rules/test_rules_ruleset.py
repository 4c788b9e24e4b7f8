"""A table's rules together: contradictions refused before any work, the originals checked
(a rule they break refused unless its exceptions are kept), YAML, and the report."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pytest
import yaml
from rule_helpers import broken_count

from gpu_avatar.errors import AvatarError, FixableError
from gpu_avatar.metrics.signal import categorical_hellinger
from gpu_avatar.rules import (
    CountPerParent,
    Derived,
    Inequality,
    Range,
    Rounding,
    RuleSet,
    SumTo,
)


@pytest.mark.parametrize("rules, message", [
    ([Range("age", 0, 1), Inequality(5, "age")], "no value of 'age'"),
    ([Inequality("age", 18, strict=True), Inequality(18, "age")], "no value of 'age'"),
    ([Range("entry", "2001-01-01"), Inequality("entry", pd.Timestamp("2000-01-01"))],
     "no value of 'entry'"),
    ([Inequality("entry", "mid"), Inequality("mid", "end"), Inequality("end", "entry")],
     "cycle"),
    ([Inequality("mid", "end"), Inequality("entry", "end"), Inequality("end", "mid")], "cycle"),
    ([Derived("a", "b + 1"), Derived("b", "a - 1")], "cycle"),
    ([Derived("treat", "arms != 0"), Derived("treat", "arms > 0")], "derived twice"),
    ([Derived("treat", "arms != 0"), Range("treat", 0, 1)], "which rule 'treat = arms != 0'"),
])
def test_contradictory_rules_are_refused_together(rules, message):
    with pytest.raises(AvatarError, match=message):
        RuleSet(rules)


def test_bounds_that_leave_values_are_accepted():
    RuleSet([Range("age", 12, 70), Inequality(12, "age"), Inequality("age", 70)])


def test_an_unknown_column_is_named_with_its_rule(table):
    with pytest.raises(FixableError, match=r"'entry < stop'.*unknown column\(s\) \['stop'\]"):
        RuleSet([Inequality("entry", "stop", strict=True)]).check(table)


@pytest.mark.parametrize("rule, message", [
    (Inequality("entry", "days"), "not the same kind"),
    (Inequality("entry", 5), "not a value of column 'entry'"),
    (SumTo(["entry", "end"], total=1), "not numbers"),
    (Derived("treat", "arms + 'x'"), "does not compute"),
    (Derived("end", "days * 2"), "computes int64 for a column of datetime64"),
])
def test_columns_of_the_wrong_kind_are_refused(table, rule, message):
    with pytest.raises(FixableError, match=message):
        RuleSet([rule]).check(table)


def test_a_rule_the_originals_break_is_refused_unless_its_exceptions_are_kept(table, avatars):
    rule = Derived("str2", "preanti > 0")  # 13 patients with prior therapy have str2 = 0
    with pytest.raises(FixableError, match=r"13 of the 2139 original rows break it \(rows "
                                           r"\d+, \d+, \d+ and 10 more, by position\)") as error:
        RuleSet([rule]).check(table)
    assert "keep_exceptions=True" in str(error.value)
    assert "keep_exceptions: true" in error.value.worded("yaml")

    kept = Derived("str2", "preanti > 0", keep_exceptions=True)
    result = RuleSet([kept]).apply(table, avatars, seed=0)
    exempt = kept.broken(table, table, np.zeros(len(table), dtype=bool))
    assert result.reports[0].exceptions_kept == 13 == exempt.sum()
    still = kept.broken(result.avatars, table, np.zeros(len(table), dtype=bool))
    assert still.any() and not (still & ~exempt).any()  # only the originals' exceptions


def test_the_report_counts_the_repairs_and_their_cost(table, avatars):
    rules = RuleSet([Derived("treat", "arms != 0"), Range("karnof", 80, 100,
                                                           keep_exceptions=True)])
    result = rules.apply(table, avatars, seed=0)
    treat, karnof = result.reports
    changed = result.avatars["treat"] != avatars["treat"]
    assert treat.rows_repaired == changed.sum() == broken_count(rules.rules[0], avatars, table)
    assert treat.held_by == "repair" and treat.exceptions_kept == 0
    assert treat.hellinger_before["treat"] == categorical_hellinger(table["treat"],
                                                                    avatars["treat"])
    assert treat.hellinger_after["treat"] == categorical_hellinger(table["treat"],
                                                                   result.avatars["treat"])
    assert karnof.exceptions_kept == (table["karnof"] < 80).sum()
    frame = result.to_frame(language="fr")
    assert frame["column"].tolist() == ["treat", "karnof"]
    assert frame["rows_repaired"].tolist() == [treat.rows_repaired, karnof.rows_repaired]
    assert frame["rule"][1] == "80 <= karnof <= 100"


def test_a_derived_column_follows_the_repairs_of_its_inputs(table, avatars):
    rules = RuleSet([Derived("cdsum", "cd40 + cd80"), Range("cd40")])
    fixed = rules.apply(table, avatars.assign(cd40=avatars["cd40"] + 1000)).avatars
    assert fixed["cd40"].max() == table["cd40"].max()
    assert (fixed["cdsum"] == fixed["cd40"] + fixed["cd80"]).all()


def test_repairs_that_keep_undoing_each_other_are_refused():
    originals = pd.DataFrame({"a": [0.1, 0.2, 0.4, 0.5], "b": [0.9, 0.8, 0.6, 0.5]})
    avatars = pd.DataFrame({"a": [0.9, 0.2, 0.3, 0.5], "b": [0.1, 0.8, 0.7, 0.5]})
    rules = RuleSet([Range("a", 0, 0.5), SumTo(["a", "b"], total=1)])
    with pytest.raises(AvatarError, match=r"rules '0 <= a <= 0.5', 'a \+ b = 1' undo each "
                                          r"other's repairs: after 5 rounds, still broken"):
        rules.apply(originals, avatars)


def test_avatars_must_be_those_of_the_table(table, avatars):
    rules = RuleSet([Derived("treat", "arms != 0")])
    with pytest.raises(AvatarError, match=r"missing \['treat'\].*encoded=True"):
        rules.apply(table, avatars.drop(columns="treat"))
    with pytest.raises(AvatarError, match=r"extra \['treat'\]"):
        rules.apply(table, avatars, encoded=True)
    with pytest.raises(AvatarError, match="unshuffled avatars"):
        rules.apply(table, avatars.iloc[:-1])


CONFIG = """
- {rule: inequality, low: entry, high: end, strict: true}
- {rule: inequality, low: 1989-06-01, high: entry}
- {rule: derived, column: treat, expression: arms != 0}
- {rule: range, column: karnof, low: 70}
- {rule: sum, parts: [s1, s2, s3]}
- {rule: rounding, column: age5, step: 5}
- {rule: count_per_parent, column: etype, value: death, by: patient, keep_exceptions: true}
"""


def test_rules_read_from_yaml_are_those_written_in_python():
    rules = RuleSet.from_config(yaml.safe_load(CONFIG))
    assert rules.rules == (
        Inequality("entry", "end", strict=True),
        Inequality(datetime.date(1989, 6, 1), "entry"),  # an unquoted date is a constant
        Derived("treat", "arms != 0"),
        Range("karnof", low=70),
        SumTo(["s1", "s2", "s3"], total=1),
        Rounding("age5", step=5),
        CountPerParent("etype", "death", by="patient", keep_exceptions=True),
    )


@pytest.mark.parametrize("entry, message", [
    ({"rule": "between", "column": "age"}, "names no rule"),
    ({"rule": "range", "column": "age", "maximum": 3}, r"unknown key\(s\) \['maximum'\]"),
    ({"rule": "inequality", "low": "a"}, r"missing key\(s\) \['high'\]"),
    ({"rule": "derived", "column": "x", "expression": "open('f')"}, r"rules\[0\]: expression"),
])
def test_a_wrong_yaml_entry_is_named(entry, message):
    with pytest.raises(AvatarError, match=message):
        RuleSet.from_config([entry])
