"""Rules the release keeps (issue #27): declared rules, held by a reversible transform or by
repairs of the avatars.

- ``values.py``: quantity columns as numbers and back at their precision; ``Neighbours``;
- ``base.py``: ``Rule`` and ``Encodable``;
- ``expressions.py``: the safe expressions of derived columns.
"""

from .base import Encodable, Rule
from .expressions import Expression
from .values import Neighbours

__all__ = ["Encodable", "Expression", "Neighbours", "Rule"]
