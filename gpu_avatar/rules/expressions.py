"""Expressions of derived columns, such as ``bwt < 2500`` or ``weight / height ** 2``, parsed
with ``ast`` and evaluated column-wise on pandas Series: never ``eval`` of user text.

Allowed: column names (Python identifiers), numbers, text and booleans; ``+ - * / // % **``,
unary ``-`` and ``+``; comparisons (chained too); ``and``, ``or``, ``not`` (elementwise);
the functions ``abs``, ``sqrt``, ``log``, ``exp``, ``round(x, decimals)``, ``isna`` and
``notna``. A comparison with a missing value is missing (pandas' nullable booleans, so
``and``/``or`` follow three-valued logic); arithmetic propagates missing values.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError

_BINARY: dict[type, Callable] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type, Callable] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_UNARY: dict[type, Callable] = {ast.USub: operator.neg, ast.UAdd: operator.pos,
                                ast.Not: operator.invert}
_BOOLEAN: dict[type, Callable] = {ast.And: operator.and_, ast.Or: operator.or_}
_FUNCTIONS: dict[str, Callable] = {
    "abs": np.abs, "sqrt": np.sqrt, "log": np.log, "exp": np.exp,
    "round": lambda x, decimals=0: x.round(decimals),
    "isna": lambda x: x.isna(), "notna": lambda x: x.notna(),
}


class Expression:
    """A parsed expression: ``columns`` it reads, ``evaluate(table)`` its values."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise AvatarError(f"an expression must be text, got {text!r}")
        try:
            self._tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as error:
            raise AvatarError(f"expression {text!r} does not parse: {error.msg}") from None
        self.text = text
        names: list[str] = []
        self._check(self._tree, names)
        self.columns = tuple(dict.fromkeys(names))

    def _check(self, node: ast.AST, names: list[str]) -> None:
        """Refuse any node outside the whitelist; collect the column names."""
        allowed = {
            ast.BinOp: lambda n: type(n.op) in _BINARY,
            ast.UnaryOp: lambda n: type(n.op) in _UNARY,
            ast.Compare: lambda n: all(type(op) in _COMPARE for op in n.ops),
            ast.BoolOp: lambda n: type(n.op) in _BOOLEAN,
            ast.Constant: lambda n: isinstance(n.value, (int, float, str, bool)),
            ast.Name: lambda n: True,
            ast.Call: lambda n: (isinstance(n.func, ast.Name) and n.func.id in _FUNCTIONS
                                 and not n.keywords),
        }
        if type(node) not in allowed or not allowed[type(node)](node):
            raise AvatarError(
                f"expression {self.text!r}: {ast.unparse(node)!r} is not allowed; write "
                "arithmetic, comparisons, and/or/not on column names and constants, with "
                f"the functions {sorted(_FUNCTIONS)}")
        if isinstance(node, ast.Name):
            names.append(node.id)
        children = node.args if isinstance(node, ast.Call) else ast.iter_child_nodes(node)
        for child in children:
            if isinstance(child, ast.expr):  # not the operators and contexts checked above
                self._check(child, names)

    def evaluate(self, table: pd.DataFrame) -> pd.Series:
        """The expression's values on the rows of ``table`` (which holds ``columns``)."""
        value = self._evaluate(self._tree, table)
        if not isinstance(value, pd.Series):  # a constant expression
            value = pd.Series(value, index=table.index)
        return value

    def _evaluate(self, node: ast.AST, table: pd.DataFrame) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return table[node.id]
        if isinstance(node, ast.Call):
            return _FUNCTIONS[node.func.id](*(self._evaluate(a, table) for a in node.args))
        if isinstance(node, ast.UnaryOp):
            operand = self._evaluate(node.operand, table)
            if isinstance(node.op, ast.Not):
                return ~_boolean(operand) if isinstance(operand, pd.Series) else not operand
            return _UNARY[type(node.op)](operand)
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](self._evaluate(node.left, table),
                                          self._evaluate(node.right, table))
        if isinstance(node, ast.BoolOp):
            values = [_boolean(self._evaluate(v, table)) for v in node.values]
            result = values[0]
            for value in values[1:]:
                result = _BOOLEAN[type(node.op)](result, value)
            return result
        operands = [self._evaluate(o, table) for o in (node.left, *node.comparators)]
        result = True
        for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
            result = result & _compared(_COMPARE[type(op)], left, right)
        return result


def _boolean(value: Any) -> Any:
    """A Series as pandas' nullable boolean (missing stays missing); a constant as is."""
    return value.astype("boolean") if isinstance(value, pd.Series) else bool(value)


def _compared(op: Callable, left: Any, right: Any) -> Any:
    """``op(left, right)``, missing where an operand is missing."""
    result = op(left, right)
    if not isinstance(result, pd.Series):
        return result
    missing = np.zeros(len(result), dtype=bool)
    for side in (left, right):
        if isinstance(side, pd.Series):
            missing |= side.isna().to_numpy()
    return result.astype("boolean").mask(missing)
