"""Errors whose fix is worded per entry point (Python, the command line, a YAML file)."""

from __future__ import annotations

import pickle

import gpu_avatar as ga
from gpu_avatar.errors import in_context, worded

FIXES = {"python": "pass drop_orphans=True", "cli": "declare the link in a YAML file",
         "yaml": "add drop_orphans: true to its links entry"}


def test_a_fixable_error_is_worded_for_each_entry_point():
    error = ga.FixableError("3 orphans", FIXES)
    assert isinstance(error, ga.AvatarError) and isinstance(error, ValueError)
    assert str(error) == "3 orphans; pass drop_orphans=True"
    assert error.worded("cli") == "3 orphans; declare the link in a YAML file"
    assert error.worded("yaml") == "3 orphans; add drop_orphans: true to its links entry"
    assert ga.FixableError("p", {"python": "fix"}).worded("yaml") == "p; fix"  # the default
    assert worded(error, "yaml") == error.worded("yaml")
    assert worded(ga.AvatarError("plain"), "cli") == "plain"


def test_context_is_prefixed_and_the_fixes_kept():
    error = in_context(ga.FixableError("3 orphans", FIXES), "table 'visit'")
    assert type(error) is ga.FixableError
    assert error.worded("cli") == "table 'visit': 3 orphans; declare the link in a YAML file"
    assert str(error) == "table 'visit': 3 orphans; pass drop_orphans=True"
    plain = in_context(ga.AvatarTypeError("k must be an integer"), "table 'visit'")
    assert type(plain) is ga.AvatarTypeError and str(plain) == "table 'visit': k must be an integer"
    again = pickle.loads(pickle.dumps(error))  # from a worker process
    assert type(again) is ga.FixableError and again.fixes == FIXES
    assert again.worded("yaml") == error.worded("yaml")
