"""The parts of a report, as documents (``document.py``) in the report's language:

- a table part: ``parameters`` (run parameters, column kinds), ``timings`` (the run's steps,
  the metrics and the attacks), ``privacy`` (every metric with its target and verdict),
  ``signal``, ``plots`` (``projection``, ``distributions``, ``correlations``,
  ``local-cloaking``), then ``advice`` and ``attacks`` (headlined by the highest risk of an
  attack that beats a random guess) when they are given;
- a database part: ``parameters``, ``timings``, ``summary-matrix`` (green pass, red fail, and
  each scenario in a sentence),
  ``links`` (one ``children-per-parent`` plot per link), ``privacy-scenarios``,
  ``signal-scenarios``, ``time-series`` (with a time-series link: its signal per variable and
  one ``time-series`` plot per variable), ``advice`` when given, and ``tables`` (one table
  part per table).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..backend import to_pandas
from ..encoding import CATEGORICAL, CONTINUOUS, IDENTIFIER, TableEncoder
from ..encoding.kinds import DROPPED, EXCLUDED
from ..encoding.rare import protection_if_grouped
from ..metrics import AttackMetrics, PrivacyMetrics, SignalMetrics
from ..metrics.attacks.inference import INFERENCE_TOLERANCE
from ..metrics.catalogue import (
    ATTACK,
    CATALOGUE,
    PRIVACY_TARGETS,
    SCENARIOS,
    SUMMARY_METRICS,
    Target,
    family,
)
from ..metrics.verdict import release_verdict
from ..parameters import MetricOptions, column_kind, is_variable, metric_options
from ..planning.model import TREATED_WORDS
from ..progress import ProgressLike, Steps
from .data import (
    PRIVACY_SCENARIO_COLUMNS,
    SIGNAL_SCENARIO_COLUMNS,
    database_metrics,
    table_metrics,
)
from .document import Cell, Details, Part, Table, Text, slugify
from .language import Translator
from .plots import (
    _matplotlib,
    children_per_parent_plot,
    correlations_plot,
    distributions_plot,
    local_cloaking_plot,
    projection_plot,
    time_series_plot,
)
from .verdict import answer_text, verdict_blocks

if TYPE_CHECKING:
    from ..rules import RuleReport


def _verdict(passed: Any, tr: Translator, computed: bool = True) -> Cell:
    if not computed:
        return Cell(tr("not computed"), "none")
    if passed is True or passed is np.True_:
        return Cell(tr("pass"), "pass")
    if passed is False or passed is np.False_:
        return Cell(tr("fail"), "fail")
    return Cell(tr("report only"), "none")


def _target_text(target: Target, tr: Translator) -> str:
    """``Target.text()`` in the report's language."""
    return target.text(lambda value: tr.number(value, "g"), tr("report"))


def _parameter(name: str, value: Any, tr: Translator) -> list[Cell]:
    """A run parameter's row: its name and a text value as code (words of the API, the same
    in every language), a mapping as ``key: value`` pairs, None as a dash."""
    if isinstance(value, Mapping):
        text = ", ".join(f"{k}: {v}" for k, v in value.items()) or tr("none")
    else:
        text = tr.number(None) if value is None else str(value)
    return [Cell(name, "code"), Cell(text, "code" if isinstance(value, str) else "")]


def _metrics_table(frame: pd.DataFrame, tr: Translator):
    """The metrics of a frame, each with its target and meaning from the catalogue."""
    rows = []
    for metric, row in frame.iterrows():
        computed = bool(np.isfinite(row["value"]))
        declared = CATALOGUE[metric]
        rows.append([
            _metric_cell(metric, tr), Cell(tr.number(row["value"])),
            Cell(_target_text(declared.target, tr)),
            _verdict(row["passed"], tr, computed),
            Cell(tr.words(declared.meaning) + _baselines(row, tr)),
        ])
    headers = [tr("metric"), tr("value"), tr("target"), tr("result"), tr("definition")]
    return Table(headers, rows, numeric=frozenset({1}))


def _metric_cell(name: str, tr: Translator) -> Cell:
    """A metric's name: the API's (as code) in English, in words in French."""
    return Cell(tr.metric(name), "code" if tr.language == "en" else "")


def _baselines(row: pd.Series, tr: Translator) -> str:
    """The figure for the originals among themselves and for the holdout, where measured."""
    texts = {"baseline": " Originals among themselves: {baseline}.",
             "holdout baseline": " Holdout against the originals: {baseline}."}
    return "".join(tr(text, baseline=tr.number(row[column])) for column, text in texts.items()
                   if np.isfinite(row.get(column, np.nan)))


def _targets_met(frame: pd.DataFrame) -> tuple[int, int]:
    judged = frame["passed"].dropna()
    return int(judged.astype(bool).sum()), int(len(judged))


def _text_table(headers: list[str], rows: list[list[Any]], numeric=()) -> Table:
    return Table(headers, [[c if isinstance(c, Cell) else Cell(str(c)) for c in row]
                           for row in rows], numeric=frozenset(numeric))


# --------------------------------------------------------------------------- table part
def _table_part(
    original: pd.DataFrame,
    unshuffled_avatars: pd.DataFrame,
    steps: Steps,
    tr: Translator,
    *,
    name: str,
    avatars: pd.DataFrame | None = None,
    types: Mapping[Any, str] | None = None,
    ncp: int | None = None,
    parameters: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    privacy: PrivacyMetrics | None = None,
    signal: SignalMetrics | None = None,
    individual_level: bool = True,
    privacy_options: MetricOptions | Mapping[str, Any] | None = None,
    backend: Any = "auto",
    advice: Any = None,
    attacks: AttackMetrics | None = None,
    slug: str | None = None,
    level: int = 2,
    knowingly_released: list = (),
    grouped_modalities: Mapping[Any, Mapping[Any, Any]] | None = None,
    with_verdict: bool = True,
    rules: Sequence[RuleReport] = (),
) -> Part:
    new_figure = _matplotlib()
    types = dict(types or {})
    avatars = unshuffled_avatars if avatars is None else avatars
    variables = [c for c in original.columns if is_variable(types.get(c))]
    variable_types = {c: kind for c, kind in types.items() if c in variables}
    privacy, signal = table_metrics(
        original, unshuffled_avatars, avatars, steps, name=name, types=types,
        backend=backend, privacy=privacy, signal=signal, individual_level=individual_level,
        options=metric_options(privacy_options, **({} if ncp is None else {"ncp": ncp})),
    )  # fmt: skip
    encoder = TableEncoder(variable_types, missing_indicators=False).fit(original[variables])
    part = Part(slug or slugify(name), name, "table", "", tr.language, level)
    verdict = None
    if privacy is not None and with_verdict:
        verdict = release_verdict(privacy, attacks)
        part.section("verdict", tr("Verdict"), *verdict_blocks(verdict, tr, every_finding=True))

    kinds = {kind: [c for c in variables if encoder.specs_[c].kind == kind]
             for kind in (CONTINUOUS, CATEGORICAL)}
    kinds.update({kind: [c for c in original.columns if column_kind(types.get(c)) == kind]
                  for kind in (IDENTIFIER, EXCLUDED, DROPPED)})
    rows = [[tr("rows x columns"), tr("{rows} x {columns} -> {avatars} avatars",
                                      rows=len(original), columns=original.shape[1],
                                      avatars=len(avatars))]]
    rows += [_parameter(key, value, tr) for key, value in (parameters or {}).items()]
    rows += [[tr(f"{kind} columns"), ", ".join(map(str, columns)) or tr("none")]
             for kind, columns in kinds.items()]
    part.section("parameters", tr("Run parameters"),
                 *_knowingly_released(knowingly_released, tr),
                 *_grouped(grouped_modalities or {}, tr),
                 _text_table([tr("parameter"), tr("value")], rows))

    if rules:
        part.section("rules", tr("Rules kept"), *_rules_blocks(rules, tr))

    all_timings = {tr("avatarization: {step}", step=tr(k)): v for k, v in (timings or {}).items()}
    all_timings.update((tr(label), metrics.seconds) for label, metrics in (
        ("privacy metrics", privacy), ("signal metrics", signal), ("attacks", attacks))
        if getattr(metrics, "seconds", None) is not None)
    rows = [[step, tr.number(seconds, ".3f")] for step, seconds in all_timings.items()]
    rows.append([Cell(tr("total"), "strong"),
                 Cell(tr.number(sum(all_timings.values()), ".3f"), "strong")])
    blocks = [] if timings else [Text(tr(
        "No avatarization timings: this report was built from the tables, not from the run "
        "that made them."), "note")]
    part.section("timings", tr("Timings (seconds)"),
                 *blocks, _text_table([tr("step"), tr("seconds")], rows, numeric=(1,)))

    lead = tr("{originals} originals, {variables} variables.", originals=len(original),
              variables=len(variables))
    if verdict is not None:
        lead = f"{answer_text(verdict, tr)} {lead}"
    if privacy is not None:
        frame = privacy.to_frame()
        met, judged = _targets_met(frame)
        lead += " " + tr(
            "Privacy: {met} of {judged} targets met (hidden rate {hidden} %, median local "
            "cloaking {cloaking}).", met=met, judged=judged,
            hidden=tr.number(privacy.hidden_rate, ".1f"),
            cloaking=tr.number(privacy.local_cloaking))
        part.section("privacy", tr("Privacy metrics"), Text(tr(
            "Originals against their own (unshuffled) avatars, distances on {ncp} axes of a "
            "projection fitted on the originals. {met} of {judged} targets met.",
            ncp=privacy.ncp, met=met, judged=judged)),
            _metrics_table(frame, tr),
            Text(tr("Column whose unique values the avatars repeat most: {column} ({value} % "
                    "protected).", column=privacy.worst_direct_match_column,
                    value=tr.number(privacy.column_direct_match_protection, ".1f")), "note"),
            *_grouping_lift(privacy, kinds[CATEGORICAL], tr),
            *_copies(privacy, parameters, tr))
    else:
        part.section("privacy", tr("Privacy metrics"), Text(tr(
            "Not an individual-level table: its rows are not people, so its privacy is "
            "measured through the scenarios of the individual-level tables."), "note"))

    frame = signal.to_frame()
    met, judged = _targets_met(frame)
    lead += " " + tr("Signal: {met} of {judged} targets met.", met=met, judged=judged)
    per_variable = _text_table(
        [tr("variable"), tr("Hellinger distance")],
        [[v, tr.number(h)] for v, h in signal.hellinger_per_variable.items()], numeric=(1,))
    part.section("signal", tr("Signal metrics"), _metrics_table(frame, tr),
                 *_shares_off(signal.shares_off, tr),
                 Details(tr("Hellinger distance per variable"), [per_variable]))

    figures = []
    with steps.step(f"{name}: projection plot"):
        figures.append(projection_plot(original[variables], avatars[variables], variable_types,
                                       new_figure, tr))
    with steps.step(f"{name}: distribution plots"):
        figures.append(distributions_plot(original, avatars, encoder, signal, new_figure, tr))
    with steps.step(f"{name}: correlation plots"):
        figure = correlations_plot(original, avatars, encoder, new_figure, tr)
    figures.append(figure or Text(tr(
        "Fewer than two continuous variables: no correlation matrix."), "note"))
    if privacy is not None:
        with steps.step(f"{name}: local cloaking plot"):
            figures.append(local_cloaking_plot(privacy, new_figure, tr))
    part.section("plots", tr("Plots"), *figures)
    if advice is not None:
        part.section("advice", tr("Parameter advice"), *advice_blocks(advice, tr))
    if attacks is not None:
        lead += " " + attacks_headline(attacks, tr)
        part.section("attacks", tr("Attack-based risks"), *attack_blocks(attacks, tr))
    part.lead = lead
    return part


def _copies(privacy: PrivacyMetrics, parameters: Mapping[str, Any] | None,
            tr: Translator) -> list:
    """The line counting the avatars identical to an original row, by how many originals hold
    the row; when the paper's weights copied duplicated rows, the option that avoids it."""
    if not privacy.exact_copies:
        return []
    text = tr("Avatars identical to an original row: {copies} ({shared}).",
              copies=privacy.exact_copies, shared=privacy.exact_copies_text(tr))
    if (parameters or {}).get("zero_distance") == "paper" and max(privacy.exact_copies_shared) > 1:
        text += tr(" With zero_distance = 'bounded', a row's duplicates no longer take all the "
                   "weight of its avatar.")
    return [Text(text, "note")]


def _rules_blocks(rules: Sequence[RuleReport], tr: Translator) -> list:
    """The rules a table's release keeps: per rule and column it writes, how it is held,
    the rows repaired, the exceptions kept and Hellinger before and after the repairs."""
    from ..rules import rules_frame  # the rules word themselves with report.language

    rows = [[row.rule, tr(row.held_by), row.rows_repaired, row.exceptions_kept, row.column,
             tr.number(row.hellinger_before, ".4f"), tr.number(row.hellinger_after, ".4f")]
            for row in rules_frame(rules, tr.language).itertuples()]
    return [Text(tr("Every released row keeps these rules: held by an encoding (the avatars "
                    "keep it by construction) or by repairing the rows that break it, from "
                    "the originals the avatar was drawn from. Hellinger: the distance of the "
                    "column's avatars to its originals before and after the repairs."), "note"),
            _text_table([tr(h) for h in ("rule", "held by", "rows repaired", "exceptions kept",
                                         "column", "Hellinger before", "Hellinger after")],
                        rows, numeric=(2, 3, 5, 6))]


def _grouped(groups: Mapping[Any, Mapping[Any, Any]], tr: Translator) -> list:
    """The line counting the rare modalities grouped before the projection, per column and
    group; the values themselves are not shown (each is held by few people: the report may
    travel with the release), ``result.grouped_modalities`` holds them."""
    if not groups:
        return []
    counts = {}  # column -> label -> how many values it groups
    for column, group in groups.items():
        for label in group.values():
            counts.setdefault(column, {}).setdefault(label, 0)
            counts[column][label] += 1
    text = "; ".join(f"{column}: " + ", ".join(
        f"{count} -> {label}" for label, count in by_label.items())
        for column, by_label in counts.items())
    return [Text(tr("Rare modalities grouped before the projection (how many, and the value "
                    "they are released as): {groups}.", groups=text), "note")]


def _grouping_lift(privacy: PrivacyMetrics, categorical: list, tr: Translator) -> list:
    """When column_direct_match_protection fails on a categorical column: the line saying how
    far grouping rare modalities would lift it."""
    name = "column_direct_match_protection"
    value = privacy.column_direct_match_protection
    lifted = protection_if_grouped(privacy.column_direct_match_protection_per_variable,
                                   categorical)
    if PRIVACY_TARGETS[name].passed(value) is not False or lifted <= value:
        return []
    return [Text(tr("Grouping the rare modalities of the categorical columns (rare_modalities) "
                    "would release none of their unique values: {metric} would rise to "
                    "{value} %.", metric=name, value=tr.number(lifted, ".1f")), "note")]


def _shares_off(shares_off: pd.DataFrame, tr: Translator) -> list:
    """The line naming the shares the avatars do not keep within their tolerance."""
    if shares_off.empty:
        return []
    shares = "; ".join(
        tr("{column} = {value}: {original} % -> {avatars} %", column=row.column,
           value=tr("missing") if row.value is None else row.value,
           original=tr.number(100 * row.original, ".1f"),
           avatars=tr.number(100 * row.avatars, ".1f"))
        for row in shares_off.itertuples())
    return [Text(tr("Shares not kept within one point, or a fifth of the share if that is "
                    "larger (original -> avatars): {shares}.", shares=shares), "note")]


def _knowingly_released(columns: list, tr: Translator) -> list:
    """The one line saying which columns were released although they could identify a
    person (``encoding.identifying``), because their kind was declared."""
    if not columns:
        return []
    return [Text(tr("Released as declared, although they could identify a person: "
                    "{columns}.", columns=", ".join(c.name for c in columns)), "note")]


def table_part(
    original: pd.DataFrame,
    unshuffled_avatars: pd.DataFrame,
    name: str = "Table",
    progress: ProgressLike = None,
    language: str = "en",
    **options: Any,
) -> Part:
    """A report part for ``original`` and its ``unshuffled_avatars`` (row i = avatar of row i).

    ``options``: ``avatars`` (the released table, for the signal and plots; default the
    unshuffled ones), ``types``, ``ncp`` (of the privacy metrics' projection, else
    ``privacy_options``'), ``parameters`` and ``timings`` (shown as given),
    ``privacy`` / ``signal`` (computed when not given), ``individual_level``,
    ``privacy_options`` (a ``MetricOptions`` or a mapping of its names: ``known_variables``,
    ``target``, ...), ``with_verdict`` (the release verdict first; default True), ``backend``,
    ``advice`` (an
    ``Advice``) and ``attacks`` (``AttackMetrics``) for their sections, ``slug``, ``level``.
    """
    return _table_part(original, unshuffled_avatars, Steps(progress, "report"),
                       Translator(language), name=name, **options)


def _result_options(result: Any) -> dict[str, Any]:
    run = result.parameters
    parameters = {key: value for key, value in run.as_dict().items() if key != "types"}
    parameters["seed"] = result.seed
    parameters["projection"] = result.projection_kind.upper()
    return dict(
        avatars=to_pandas(result.avatars), types=dict(run.types),
        parameters=parameters, timings=result.timings, backend=run.backend,
        knowingly_released=result.knowingly_released,
        grouped_modalities=result.grouped_modalities, rules=result.rules,
    )


def result_part(
    result: Any,
    name: str = "Table",
    privacy: PrivacyMetrics | None = None,
    signal: SignalMetrics | None = None,
    progress: ProgressLike = None,
    language: str = "en",
    advice: Any = None,
    attacks: AttackMetrics | None = None,
    options: MetricOptions | None = None,
    **privacy_options: Any,
) -> Part:
    """A report part for an ``AvatarizationResult``, its privacy measured with
    ``result.metric_options(options, **privacy_options)`` (``known_variables``, ``target``,
    ...; the run's ncp, and no alignment test: its unshuffled avatars are aligned by
    construction)."""
    return _table_part(
        to_pandas(result.original), to_pandas(result.sensitive_unshuffled_avatars),
        Steps(progress, "report"), Translator(language),
        name=name, privacy=privacy, signal=signal,
        privacy_options=result.metric_options(options, **privacy_options),
        advice=advice, attacks=attacks, **_result_options(result),
    )


# ------------------------------------------------------------------- advice and attacks
def advice_blocks(advice: Any, tr: Translator) -> list:
    """The advice's verdict and its candidates, one column per candidate k: every measured
    metric (green: meets its target, red: misses it) and the overall verdict."""
    table = advice.candidates
    shown = [c for c in table.columns if not c.endswith(" passed") and c != "passed"
             and table[c].notna().any()]
    rows = []
    for column in shown:
        cells = [_metric_cell(column, tr) if column in CATALOGUE else Cell(column, "code")]
        for _, row in table.iterrows():
            value, verdict = row[column], row.get(f"{column} passed")
            text = value if isinstance(value, str) else tr.number(value)
            style = "" if verdict is None or pd.isna(verdict) else (
                "cell-pass" if verdict else "cell-fail")
            cells.append(Cell(text, style))
        rows.append(cells)
    rows.append([Cell(tr("all targets"), "strong")]
                + [_verdict(bool(passed), tr) for passed in table["passed"]])
    headers = [tr("metric")] + [
        tr("k = {k} (recommended)", k=k) if k == advice.k else f"k = {k}" for k in table.index]
    if advice.k is not None:
        verdict = tr("Recommended: k = {k} (ncp = {ncp}), the candidate that meets every privacy "
                     "target with the least signal loss (lowest mean Hellinger distance).",
                     k=advice.k, ncp=advice.ncp)
    else:
        verdict = tr("No candidate meets every privacy target. Try a larger k, more projection "
                     "axes (ncp), column weights that lower identifying columns, or fewer "
                     "modalities (group rare ones: rare_modalities).")
    targets = ", ".join(f"{tr.metric(name)} {_target_text(target, tr)}"
                        for name, target in advice.targets.items()
                        if target.threshold is not None)
    return [
        Text(verdict, "lead"),
        Table(headers, rows, numeric=frozenset(range(1, len(table) + 1))),
        Text(tr("Targets judged, with the advice's safety margin: {targets}. Green: the "
                "candidate meets the target; red: it misses it.", targets=targets), "note"),
    ]


def _interval(result: Any, tr: Translator) -> str:
    return tr("[{low}, {high}]", low=tr.number(result.risk_low, ".3f"),
              high=tr.number(result.risk_high, ".3f"))


def attacks_headline(attacks: AttackMetrics, tr: Translator) -> str:
    """The attacks in a sentence or two: the highest risk of an attack that beats a random
    guess; those that do not learn nothing, whatever their risk, and are never the
    headline."""
    highest = attacks.highest()
    if highest is None:
        return tr("Attacks: none does better than a random guess or than on the holdout, so none "
                  "learns anything from the release.")
    text = tr("Attacks: {measurable} of {total} with a measurable risk; the highest, {attack}, "
              "{risk} {interval}.", measurable=len(attacks.measurable_risks),
              total=len(attacks.results), attack=tr.metric(highest.label),
              risk=tr.number(highest.risk, ".3f"), interval=_interval(highest, tr))
    if attacks.learning_nothing:
        text += " " + tr("No better than a random guess or than on the holdout, so learning "
                         "nothing whatever their risk: {attacks}.",
                         attacks=", ".join(tr.metric(r.label) for r in attacks.learning_nothing))
    return text


def _attack_verdict(result: Any, tr: Translator) -> Cell:
    if not result.learns_from_release:
        return Cell(tr("learns nothing"), "none")
    if result.measurable:
        return Cell(tr("measurable risk"), "fail")
    return Cell(tr("no measurable risk"), "pass")


def attack_blocks(attacks: AttackMetrics, tr: Translator) -> list:
    """The headline, then each attack's risk with its confidence interval, the rates behind
    it and a verdict (an attack no better than a random guess learns nothing)."""
    rows = [[
        _metric_cell(result.label, tr), Cell(tr.number(result.risk, ".3f")),
        Cell(_interval(result, tr)), Cell(tr.number(result.attack_rate, ".3f")),
        Cell(tr.number(result.control_rate, ".3f")), Cell(tr.number(result.baseline_rate, ".3f")),
        Cell(str(result.n_attacks)), _attack_verdict(result, tr),
    ] for result in attacks.results]
    confidence = attacks.results[0].confidence_level if attacks.results else 0.95
    tolerance = tr.number(100 * INFERENCE_TOLERANCE, "g")
    level = tr.number(100 * confidence, "g")
    headers = [tr("attack"), tr("risk"), tr("{level} % interval", level=level),
               tr("attack success"), tr("holdout success"), tr("random guess"), tr("attacks"),
               tr("result")]
    definitions = _text_table([tr("attack"), tr("definition")],
                               [[_metric_cell(name, tr), tr.words(metric.meaning,
                                                              tolerance=tolerance)]
                                for name, metric in family(ATTACK).items()])
    return [
        Text(attacks_headline(attacks, tr), "lead"),
        Text(tr("Attacks by an adversary who holds the release and some of a person's values "
                "(Giomi et al., PETS 2023, as in anonymeter). Risk = (success on the originals - "
                "success on the holdout) / (1 - success on the holdout): only what the release "
                "teaches beyond people who are not in it counts; 0 is no risk, 1 the whole "
                "room for it. An attack that does no better than a random guess learns nothing, "
                "whatever its risk.")),
        Table(headers, rows, numeric=frozenset({1, 3, 4, 5, 6})),
        definitions,
    ]


# --------------------------------------------------------------------------- database part
def _scenario(name: str, tr: Translator) -> str:
    return tr.words(SCENARIOS[name].label)


def _scenario_table(frame: pd.DataFrame, columns: list[str], tr: Translator) -> Table:
    rows = []
    for _, row in frame.iterrows():
        cells = [Cell(str(row["table"])), Cell(_scenario(row["scenario"], tr)),
                 Cell(str(row["reference"])),
                 Cell(row["via"] if isinstance(row.get("via"), str) else "")]
        cells += [Cell(tr.number(row.get(c))) for c in columns]
        passed = row["all_passed"]
        cells.append(_verdict(None if pd.isna(passed) else bool(passed), tr))
        rows.append(cells)
    headers = [tr("table"), tr("scenario"), tr("reference"), tr("via"),
               *map(tr.metric, columns), tr("all targets")]
    return Table(headers, rows, numeric=frozenset(range(4, 4 + len(columns))), key_columns=4)


def _summary_matrix(summary: pd.DataFrame, result: Any, scenarios: set[str],
                    tr: Translator) -> list:
    """The summary matrix (``relational.scenarios.metrics_summary``), each cell coloured by its
    pass flag, and a sentence on each of the ``scenarios`` measured."""
    db = result.database
    tables = db.topological_order()
    cells = {(row["table"], row["reference"]): row for _, row in summary.iterrows()}
    rows = []
    for table in (t for t in tables if db.is_individual_level(t)):
        row_cells = [Cell(table)]
        for reference in tables:
            cell = cells.get((table, reference))
            if cell is None:
                row_cells.append(Cell("—", "cell-empty"))
                continue
            text = tr("{scenario}: {hidden} % (LC {cloaking}) {verdict}",
                      scenario=_scenario(cell["scenario"], tr),
                      hidden=tr.number(cell["hidden_rate"], ".1f"),
                      cloaking=tr.number(cell["local_cloaking"]),
                      verdict=tr("pass") if cell["passed"] else tr("FAIL"))
            row_cells.append(Cell(text, "cell-pass" if cell["passed"] else "cell-fail"))
        rows.append(row_cells)
    rule = tr(" and ").join(
        f"{tr.metric(name)} {_target_text(PRIVACY_TARGETS[name], tr)}" for name in SUMMARY_METRICS
    )
    return [
        Table([tr("individual-level table"), *tables], rows, row_headers=True),
        Text(tr("Rows: the people protected (individual-level tables); columns: the table they "
                "are measured against. Each cell is the worst scenario: hidden rate and median "
                "local cloaking (LC); pass means {rule}.", rule=rule), "note"),
        _text_table([tr("scenario"), tr("definition")],
                    [[tr.words(s.label), tr.words(s.meaning)] for name, s in SCENARIOS.items()
                     if name in scenarios]),
    ]


def _database_part(
    result: Any,
    steps: Steps,
    tr: Translator,
    name: str = "Database",
    privacy: Any = None,
    signal: Any = None,
    seconds: float | None = None,
    advice: Any = None,
    slug: str | None = None,
    level: int = 2,
) -> Part:
    from ..relational.scenarios import STANDALONE, table_types, table_variables

    new_figure = _matplotlib()
    db = result.database
    order = db.topological_order()
    privacy, signal = database_metrics(result, steps, name, privacy, signal)
    summary = result.metrics_summary(privacy)
    part = Part(slug or slugify(name), name, "database", "", tr.language, level)
    verdict = release_verdict(privacy)
    part.section("verdict", tr("Verdict"), *verdict_blocks(verdict, tr, every_finding=False))

    rows = [_parameter(key, getattr(result.parameters, key), tr) for key in ("seed", "backend")]
    table_rows = []
    for table in order:
        parents = ", ".join(f"{link.parent} ({link.foreign_key})" for link in db.parents_of(table))
        run = result.table_results[table].parameters
        table_rows.append([
            table, len(result.originals[table]), len(result.tables[table]),
            db.tables[table].primary_key, tr("yes") if db.is_individual_level(table) else tr("no"),
            parents or tr("none"), run.k, run.ncp,
        ])
    treated = [Text(tr("Not anonymized, as the plan says: {tables}.", tables=", ".join(
        f"{name} ({tr(TREATED_WORDS[treatment])})"
        for name, treatment in result.treatments.items())), "note")] if result.treatments else []
    part.section("parameters", tr("Run parameters"),
                 *_knowingly_released(result.knowingly_released, tr), *treated,
                 _text_table([tr("parameter"), tr("value")], rows),
                 _text_table([tr("table"), tr("rows"), tr("avatars"), tr("primary key"),
                               tr("individual-level"), tr("parents"), "k", "ncp"],
                              table_rows, numeric=(1, 2, 6, 7)))

    rows = []
    for table in order:
        timings = result.table_results[table].timings
        detail = ", ".join(f"{tr(k)} {tr.number(v, '.2f')}" for k, v in timings.items())
        rows.append([tr("avatarization: {step}", step=table),
                     tr.number(sum(timings.values()), ".3f"), detail])
    rows += [[tr("metrics: {kind} scenarios", kind=tr(kind)), tr.number(metrics.seconds, ".3f"), ""]
             for kind, metrics in (("privacy", privacy), ("signal", signal))
             if getattr(metrics, "seconds", None) is not None]
    if seconds is not None:
        rows.append([Cell(tr("whole database run"), "strong"),
                     Cell(tr.number(seconds, ".3f"), "strong"), tr("avatarization and linking")])
    part.section("timings", tr("Timings (seconds)"),
                 _text_table([tr("step"), tr("seconds"), tr("detail")], rows, numeric=(1,)))

    scenarios = {entry.scenario for entry in (*privacy, *signal)}
    part.section("summary-matrix", tr("Privacy summary matrix"),
                 *_summary_matrix(summary, result, scenarios, tr))

    link_rows, figures = [], []
    for link in result.links:
        link_rows.append([
            link.parent, f"{link.child}.{link.foreign_key}", Cell(link.method, "code"),
            tr.number(link.cardinality_similarity), tr.number(link.referential_integrity),
            tr.number(link.total_cost), tr.number(link.n_blocks),
        ])
        key = (link.child, link.foreign_key)
        with steps.step(f"{name}: children per parent {link.parent} -> {link.child}"):
            figures.append(children_per_parent_plot(
                f"{link.parent} -> {link.child}.{link.foreign_key} ({link.method})",
                result.original_parent_rows[key], len(result.originals[link.parent]),
                result.avatar_parent_rows[key], len(result.tables[link.parent]), new_figure, tr,
            ))
    part.section(
        "links", tr("Links"),
        _text_table([tr("parent"), tr("child.foreign key"), tr("method"),
                      tr("cardinality similarity"), tr("referential integrity (%)"),
                      tr("assignment cost"), tr("blocks")], link_rows, numeric=(3, 4, 5, 6)),
        Text(tr("Cardinality similarity: 1 - Kolmogorov-Smirnov statistic between the "
                "children-per-parent distributions (1: identical)."), "note"),
        *figures,
    )
    part.section("privacy-scenarios", tr("Privacy scenarios"),
                 _scenario_table(privacy.to_frame(), PRIVACY_SCENARIO_COLUMNS, tr))
    part.section("signal-scenarios", tr("Signal scenarios"),
                 _scenario_table(signal.to_frame(), SIGNAL_SCENARIO_COLUMNS, tr))
    if any(link.method == "time_series" for link in db.links):
        with steps.step(f"{name}: time series"):
            part.section("time-series", tr("Time series"),
                         *_time_series_blocks(result, new_figure, tr))
    if advice is not None:
        part.section("advice", tr("Parameter advice"), *advice_blocks(advice, tr))

    def standalone(entries, table):
        return next((e.metrics for e in entries
                     if e.table == table and e.scenario == STANDALONE), None)

    parts = []
    for table in (t for t in order if db.variables(t)):  # keys (and time series) alone: none
        run = result.table_results[table]
        parameters = {key: run.parameters.as_dict()[key]
                      for key in ("k", "ncp", "categorical", "zero_distance", "imputation",
                                  "backend")}  # fmt: skip
        parts.append(_table_part(
            table_variables(result, table, False), table_variables(result, table, True), steps,
            tr, name=tr("Table {name}", name=table), types=table_types(result, table),
            ncp=run.parameters.ncp, parameters=parameters, timings=run.timings,
            grouped_modalities=run.grouped_modalities, rules=run.rules,
            privacy=standalone(privacy, table), signal=standalone(signal, table),
            individual_level=db.is_individual_level(table), backend=result.parameters.backend,
            slug=f"{part.slug}-table-{slugify(table)}", level=level + 2,
            with_verdict=False,  # the database's verdict judges its tables
        ))
    part.section("tables", tr("Tables"), *parts)
    part.lead = answer_text(verdict, tr) + " " + tr(
        "{tables}, {links}; privacy summary: {passed} of {cells} cells pass.",
        tables=tr.count(len(order), "table", "tables"),
        links=tr.count(len(result.links), "link", "links"), passed=int(summary["passed"].sum()),
        cells=len(summary))
    return part


def _time_series_blocks(result: Any, new_figure, tr: Translator) -> list:
    """The signal of every time-series variable and its curves (originals, avatars)."""
    from ..relational.scenarios import time_series_signal

    frame, shapes = time_series_signal(result)
    columns = ["hellinger", "mean_curve_distance", "autocorrelation_difference", "length_ks"]
    blocks: list = [_text_table(
        [tr("table"), tr("variable"), *columns],
        [[row["table"], row["variable"], *(tr.number(row[c]) for c in columns)]
         for _, row in frame.iterrows()], numeric=range(2, 2 + len(columns))),
        Text(tr("Hellinger distance of the pooled values; mean-curve distance: mean over each "
                "series' normalised time of |avatar mean - original mean| / the originals' "
                "point-wise std; difference of the lag-1 autocorrelations; Kolmogorov-Smirnov "
                "statistic of the series lengths."), "note")]
    for link in result.database.links:
        if link.method != "time_series":
            continue
        title = f"{link.parent} -> {link.child}"
        model = result.series_models[(link.child, link.foreign_key)]
        dtype = result.originals[link.child][model.time].dtype
        for variable in model.variables:
            shape = shapes[(link.child, variable)]
            layouts = [series for series, _ in shape["series"]]
            elapsed, label = _elapsed(layouts, None if model.ticks is None else dtype, tr)
            samples = [(times, values, series.lengths)
                       for times, (series, values) in zip(elapsed, shape["series"], strict=True)]
            blocks.append(time_series_plot(title, str(variable), samples, shape, label,
                                           new_figure, tr))
    return blocks


def _elapsed(layouts: list, dtype: Any, tr: Translator) -> tuple[list[np.ndarray], str]:
    """Each layout's times since its series' start, and their axis label: numbers (``dtype``
    None) as they are, datetimes and timedeltas (ticks of ``dtype``) in seconds, hours or
    days (by the longest series)."""
    from ..encoding.encoder import seconds_per_tick

    elapsed = [series.times - series.starts()[np.repeat(np.arange(len(series.lengths)),
                                                          series.lengths)]
               for series in layouts]
    if dtype is not None:
        unit = getattr(dtype, "unit", None) or np.datetime_data(dtype)[0]
        elapsed = [times * seconds_per_tick(unit) for times in elapsed]
        longest = max((float(times.max()) for times in elapsed if times.size), default=0.0)
        name, seconds = next(((n, s) for n, s in (("days", 86400.0), ("hours", 3600.0))
                              if longest >= 2 * s), ("seconds", 1.0))
        return [times / seconds for times in elapsed], tr(
            "time since the series' start ({unit})", unit=tr(name))
    return elapsed, tr("time since the series' start")


def database_part(
    result: Any, name: str = "Database", progress: ProgressLike = None, language: str = "en",
    **options: Any,
) -> Part:
    """A report part for a ``DatabaseAvatarizationResult``; ``options``: ``privacy`` and
    ``signal`` (its scenario metrics, computed when not given), ``seconds`` (run time),
    ``advice`` (an ``advise_database`` Advice, for its section)."""
    return _database_part(result, Steps(progress, "report"), Translator(language), name=name,
                          **options)
