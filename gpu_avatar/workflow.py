"""``prepare_release``: the single-table workflow in one call, the one the command line runs:
advise a k (``k="auto"``), avatarize, measure the privacy and, given a holdout, the attacks,
judge the release (``release_verdict``) and write the report. Every number it gives is what
the separate calls give with the same inputs and seeds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .advice import COMMAND_LINE_NAMES, PYTHON_NAMES, Advice, advise, next_steps
from .backend import to_pandas
from .errors import AvatarError, FixableError
from .metrics import AttackMetrics, PrivacyMetrics, attack_metrics
from .metrics.checks import check_same_table
from .metrics.holdout import attack_seed
from .metrics.privacy import check_metric_columns
from .metrics.verdict import ReleaseVerdict, release_verdict
from .outputs import check_output
from .parameters import (
    AvatarParameters,
    MetricOptions,
    avatar_parameters,
    check_flag,
    check_types,
    metric_options,
)
from .pipeline import AvatarizationResult, avatarize
from .planning.model import Plan
from .progress import ProgressLike, Steps
from .rules import RuleSet

AUTO = "auto"  # k="auto": the advised k


@dataclass
class Release:
    """What ``prepare_release`` made: the run (``result``; ``avatars`` is the release), its
    ``privacy`` metrics and ``verdict`` (None with ``measure=False``), and, when asked for,
    the ``advice``, the ``attacks`` (with their ``attack_seed``) and the ``report``'s path."""

    result: AvatarizationResult
    privacy: PrivacyMetrics | None = None
    verdict: ReleaseVerdict | None = None
    advice: Advice | None = None
    attacks: AttackMetrics | None = None
    attack_seed: int | None = None
    report: Path | None = None

    @property
    def avatars(self) -> pd.DataFrame:
        return self.result.avatars


def prepare_release(
    original: pd.DataFrame,
    *,
    k: int | str | None = None,
    holdout: pd.DataFrame | None = None,
    candidates: Sequence[int] | None = None,
    targets: Mapping[str, float] | None = None,
    options: MetricOptions | Mapping[str, Any] | None = None,
    report: str | Path | None = None,
    measure: bool = True,
    language: str = "en",
    name: str | None = None,
    parameters: AvatarParameters | None = None,
    rules: Any = None,
    progress: ProgressLike = None,
    plan: Any = None,
    **settings: Any,
) -> Release:
    """Avatarize ``original`` and give the evidence for its release.

    ``k``: an integer, or ``"auto"`` for the k ``advise`` recommends among ``candidates``
    against ``targets`` (and, given a ``holdout``, with no measurable attack risk); the
    avatarization then uses the advice's seed, so it is the candidate measured. ``holdout``:
    rows of the same table kept out of ``original`` (``split_holdout``), for the attacks
    (seeded by ``attack_seed`` of the run's seed) and the holdout distances. ``options``: the
    privacy metrics' ``MetricOptions`` (a mapping of its names applies to the run's ncp).
    ``report``: a path (.html or .pdf) to write the report to, in ``language``, the table
    called ``name``. ``measure=False`` (without a holdout or a report) skips the evidence: the
    avatars only. ``rules`` as ``avatarize`` takes them (k='auto' is advised
    without them). ``plan``: as ``avatarize`` takes it. The other parameters are
    ``avatarize``'s.
    """
    if k is not None:
        settings["k"] = k
    auto = settings.get("k") == AUTO
    if (candidates is not None or targets is not None) and not auto:
        raise AvatarError("candidates and targets are what k='auto' weighs: give k='auto'")
    measure = check_flag("measure", measure)
    if not measure and (holdout is not None or report is not None):
        raise AvatarError("a holdout and a report are evidence: leave measure=True")
    if report is not None:
        from .report import report_format

        check_output("report", report, report_format)  # before the work
    frame = to_pandas(original)
    options = metric_options(options)
    types = settings["types"] if "types" in settings else getattr(parameters, "types", None)
    if plan is not None:
        plan = Plan.of(plan)
        types = settings["types"] = plan.types_for(frame.columns, check_types(types),
                                                   where=plan.source or "the plan")
    check_metric_columns(frame, options, check_types(types))  # before the work
    rules = RuleSet.of(rules)
    if rules is not None:
        rules.check(frame)
    if holdout is not None:
        holdout = check_same_table(frame, to_pandas(holdout), "holdout", same_rows=False)
    steps = Steps(progress, "prepare release")
    advice = None
    if auto:
        settings.pop("k")
        with steps.step("advise"):
            advice = advise(frame, targets=targets, candidates=candidates, holdout=holdout,
                            options=options, parameters=parameters, progress=progress,
                            **settings)
        if advice.k is None:
            raise FixableError(f"no k advised: {advice.shortfall}",
                               {"python": next_steps(PYTHON_NAMES),
                                "cli": next_steps(COMMAND_LINE_NAMES)})
        parameters, settings = advice.parameters, {}  # the candidate measured, its seed
    parameters = avatar_parameters(parameters, **settings)
    result = avatarize(frame, parameters=parameters, rules=rules, progress=progress)
    if not measure:
        steps.close()
        return Release(result, advice=advice)
    with steps.step("privacy metrics"):
        privacy = result.privacy_metrics(options, holdout=holdout)
    attacks = seed = None
    if holdout is not None:
        seed = attack_seed(result.seed)
        with steps.step("attacks"):
            attacks = attack_metrics(frame, result.avatars, holdout,
                                     types=dict(result.parameters.types), seed=seed,
                                     backend=result.parameters.backend)
    verdict = release_verdict(privacy, attacks)
    written = None
    if report is not None:
        from .report import write_report

        written = write_report(result, report, name=name, privacy=privacy, advice=advice,
                               attacks=attacks, language=language, progress=progress)
    steps.close()
    return Release(result, privacy, verdict, advice, attacks, seed, written)
