"""Derived columns' expressions: a whitelist parsed by ast, never eval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpu_avatar.errors import AvatarError
from gpu_avatar.rules import Expression

TABLE = pd.DataFrame({
    "bwt": [2000.0, 2600.0, np.nan, 2500.0],
    "weight": [60.0, 80.0, 70.0, 90.0],
    "height": [1.5, 2.0, 1.75, 1.8],
    "status": ["dead", "alive", "dead", None],
})


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",  # a call of a function not listed
    "bwt.__class__",  # attributes
    "TABLE['bwt']",  # subscripts
    "lambda: 1",
    "(x := bwt)",
    "[bwt]",
    "bwt if bwt else 0",
    "round(bwt, decimals=1)",  # keywords
    "None",
    "bwt <",  # syntax
])
def test_anything_outside_the_whitelist_is_refused(text):
    with pytest.raises(AvatarError, match="expression"):
        Expression(text)


def test_arithmetic_and_functions_compute_per_row():
    bmi = Expression("round(weight / height ** 2, 1)")
    assert bmi.columns == ("weight", "height")
    expected = (TABLE["weight"] / TABLE["height"] ** 2).round(1)
    pd.testing.assert_series_equal(bmi.evaluate(TABLE), expected)
    assert Expression("sqrt(abs(-weight)) + log(exp(1))").evaluate(TABLE).tolist() == (
        pytest.approx(list(np.sqrt(TABLE["weight"]) + 1)))


def test_a_comparison_with_a_missing_value_is_missing():
    low = Expression("bwt < 2500").evaluate(TABLE)
    assert low.tolist()[:2] == [True, False] and low.isna().tolist() == [False, False, True,
                                                                          False]
    chained = Expression("2000 <= bwt < 2600").evaluate(TABLE)
    assert chained.tolist()[:2] == [True, False] and pd.isna(chained[2]) and chained[3]


def test_boolean_logic_is_three_valued_and_isna_sees_missing_values():
    either = Expression("bwt < 2500 or status == 'dead'").evaluate(TABLE)
    assert either.tolist()[:3] == [True, False, True]  # missing or True: True
    assert pd.isna(Expression("bwt < 2500 and weight > 0").evaluate(TABLE)[2])
    assert Expression("not notna(bwt)").evaluate(TABLE).tolist() == [False, False, True, False]
    assert Expression("isna(status)").evaluate(TABLE).tolist() == [False, False, False, True]


def test_a_constant_expression_is_a_column():
    assert Expression("2 * 3").evaluate(TABLE).tolist() == [6] * 4
