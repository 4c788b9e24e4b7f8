"""The plan: each column's kind and each table's treatment, proposed with evidence
(``propose``), reviewed in one file and taken by every entry point (``model``)."""
