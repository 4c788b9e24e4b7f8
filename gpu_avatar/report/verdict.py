"""The release verdict (``metrics/verdict.py``) in words: the report's first section and the
command line's last lines."""

from __future__ import annotations

from typing import Any

from ..metrics.catalogue import SCENARIOS, SUMMARY_METRICS
from ..metrics.privacy import copies_text
from ..metrics.verdict import ATTACK, COPIES, FAILS, MEETS, Finding, ReleaseVerdict
from .document import Cell, Table, Text
from .language import Translator


def finding_text(finding: Finding, tr: Translator) -> str:
    """One finding in a sentence, prefixed by where it was measured (a database)."""
    if finding.kind == COPIES:
        shared = copies_text(finding.detail["shared"], tr)
        if finding.passed:
            text = tr("no avatar is an exact copy of an original row")
        elif finding.value == 1:
            text = tr("1 avatar is an exact copy of an original row ({shared})", shared=shared)
        else:
            text = tr("{copies} avatars are exact copies of original rows ({shared})",
                      copies=int(finding.value), shared=shared)
    elif finding.kind == ATTACK:
        text = tr("{attack}: measurable risk {risk} [{low}, {high}], beyond a random guess and "
                  "the holdout", attack=tr.metric(finding.name),
                  risk=tr.number(finding.value, ".3f"),
                  low=tr.number(finding.detail["low"], ".3f"),
                  high=tr.number(finding.detail["high"], ".3f"))
    else:
        fields = dict(metric=tr.metric(finding.name), value=tr.number(finding.value),
                      target=finding.target.text(lambda v: tr.number(v, "g")),
                      margin=tr.number(abs(finding.margin), ".3g"))
        text = (tr("{metric} {value} meets its target {target} (margin {margin})", **fields)
                if finding.passed else
                tr("{metric} {value} misses its target {target} by {margin}", **fields))
        if "column" in finding.detail:
            text += tr(" (worst column: {column})", column=finding.detail["column"])
    if finding.where is None:
        return text
    table, scenario, reference = finding.where
    return tr("{table}, {scenario} against {reference}: ", table=table,
              scenario=tr.words(SCENARIOS[scenario].label), reference=reference) + text


def answer_text(verdict: ReleaseVerdict, tr: Translator) -> str:
    """The answer in a sentence; copies of unique rows, if any, named in it."""
    if verdict.answer == MEETS:
        return tr("The release meets every target.")
    text = (tr("The release does not meet its targets.") if verdict.answer == FAILS
            else tr("The release meets its targets with named exceptions."))
    copies = verdict.unique_copies
    if copies == 1:
        text += tr(" 1 avatar copies a row that one original alone holds.")
    elif copies:
        text += tr(" {copies} avatars copy rows that one original alone holds each.",
                   copies=copies)
    return text


def _attacks_note(verdict: ReleaseVerdict, tr: Translator) -> list[str]:
    if verdict.attacks_measured is not False:  # measured, or a database's (none)
        return []
    return [tr("Attack risks not measured: they need a holdout, rows of the table kept out of "
               "the avatarization.")]


def verdict_lines(verdict: ReleaseVerdict, tr: Translator) -> list[str]:
    """The answer, then each reason (the findings that fail, else the decisive ones)."""
    return [tr("verdict: {answer}", answer=answer_text(verdict, tr)),
            *(f"  - {finding_text(f, tr)}" for f in verdict.reasons),
            *_attacks_note(verdict, tr)]


def verdict_blocks(verdict: ReleaseVerdict, tr: Translator, every_finding: bool) -> list[Any]:
    """The report's verdict: the answer, how it is reached, and the findings (every one, or
    the reasons only: a database's scenarios are many)."""
    style = {MEETS: "cell-pass", FAILS: "cell-fail"}.get(verdict.answer, "cell-warn")
    findings = verdict.findings if every_finding else verdict.reasons
    rows = [[Cell(finding_text(f, tr)),
             Cell(tr("pass") if f.passed else tr("fail"), "pass" if f.passed else "fail"),
             Cell(tr("yes") if f.decisive else "")] for f in findings]
    return [
        Table([tr("answer")], [[Cell(answer_text(verdict, tr), style)]]),
        Text(tr("Decisive: {metrics}, the method's protection that no avatar can be traced to "
                "its original; missing one means the release does not meet its targets. Any "
                "other target missed, a measurable risk of an attack that learns from the "
                "release, or an exact copy of an original row is a named exception. Distances "
                "reported beside their baselines are not targets.",
                metrics=tr(" and ").join(map(tr.metric, SUMMARY_METRICS))), "note"),
        *(Text(line, "note") for line in _attacks_note(verdict, tr)),
        Table([tr("finding"), tr("result"), tr("decisive")], rows),
    ]
