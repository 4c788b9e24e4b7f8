"""Every metric declared once: name, family, direction, threshold, meaning (EN/FR) and the
database scenarios it is measured in.

Targets, the metric frames, the report, the verdict (``verdict.py``) and ``advise`` read this
catalogue and nothing else. ``Target(better="higher", threshold=90)`` reads "the metric must
exceed 90"; a target without a threshold is reported only, its direction still deciding which
of several values is the worst (over batches, over database scenarios). A frame of metrics
(``metrics_frame``) has one row per metric: value, target, passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

HIGHER, LOWER = "higher", "lower"
PRIVACY, SIGNAL, ATTACK = "privacy", "signal", "attack"


@dataclass(frozen=True)
class Target:
    """A metric's target: ``better`` ("higher" or "lower") and a ``threshold`` it must pass
    (None: reported without a target)."""

    better: str
    threshold: float | None = None

    def text(self, number=lambda value: f"{value:g}", report: str = "report") -> str:
        """``"> 90"``, ``"< 0.1"`` or ``report``; ``number`` writes the threshold."""
        if self.threshold is None:
            return report
        return f"{'>' if self.better == HIGHER else '<'} {number(self.threshold)}"

    def passed(self, value: Any) -> bool | None:
        """Whether ``value`` passes the target; None without a target or a value."""
        if self.threshold is None or not _is_number(value):
            return None
        return bool(value > self.threshold if self.better == HIGHER else value < self.threshold)

    def margin(self, value: Any) -> float | None:
        """How far ``value`` is on the good side of the threshold (negative: missed by that
        much); None without a target or a value."""
        if self.threshold is None or not _is_number(value):
            return None
        difference = float(value) - self.threshold
        return difference if self.better == HIGHER else -difference

    def worst(self, values: Iterable[Any]) -> float | None:
        """The worst of ``values`` (missing ones left out; None when none remains)."""
        numbers = [float(v) for v in values if _is_number(v)]
        if not numbers:
            return None
        return min(numbers) if self.better == HIGHER else max(numbers)

    def is_worse(self, value: Any, than: Any) -> bool:
        """Whether ``value`` is worse than ``than`` (a missing value is never worse)."""
        if not _is_number(value):
            return False
        if not _is_number(than):
            return True
        return value < than if self.better == HIGHER else value > than


def _is_number(value: Any) -> bool:
    return value is not None and bool(np.isfinite(value))


def words(en: str, fr: str) -> Mapping[str, str]:
    """A text in every language of the report (``Translator.words`` picks one)."""
    return MappingProxyType({"en": en, "fr": fr})


# ------------------------------------------------------------------ database scenarios
STANDALONE = "standalone"
TO_TOP_ENRICHED = "to_top_enriched"
TO_BOTTOM_ID_PROPAGATED = "to_bottom_id_propagated"
TO_BOTTOM_INFORMATION_PROPAGATED = "to_bottom_information_propagated"
TIME_SERIES_ENRICHED = "time_series_enriched"


@dataclass(frozen=True)
class Scenario:
    """A way of pairing a database's originals with their avatars (docs/spec/multitable.md,
    section 5)."""

    name: str
    label: Mapping[str, str]
    meaning: Mapping[str, str]


SCENARIOS = {s.name: s for s in (
    Scenario(STANDALONE, words("standalone", "table seule"), words(
        "The table alone: each original row against its own avatar.",
        "La table seule : chaque ligne d'origine face à son propre avatar.")),
    Scenario(TO_TOP_ENRICHED, words("to_top_enriched", "enrichie par les enfants"), words(
        "Each row with a summary of its children in the reference table (their count, the mean "
        "of each number, the share of each category), against its avatar with its avatar "
        "children.",
        "Chaque ligne avec un résumé de ses enfants dans la table de référence (leur nombre, la "
        "moyenne de chaque nombre, la part de chaque catégorie), face à son avatar avec ses "
        "enfants avatars.")),
    Scenario(TO_BOTTOM_ID_PROPAGATED, words("to_bottom_id_propagated", "enfants liés au parent"),
             words(
        "The rows of a child table with their parent's columns copied through the foreign key "
        "(a person's own rows, or their children's), against the avatar rows joined through "
        "the avatar links.",
        "Les lignes d'une table enfant avec les colonnes de leur parent recopiées par la clé "
        "étrangère (les lignes de la personne elle-même, ou celles de ses enfants), face aux "
        "lignes d'avatars jointes par les liens des avatars.")),
    Scenario(TO_BOTTOM_INFORMATION_PROPAGATED,
             words("to_bottom_information_propagated", "enfants enrichis par le parent"), words(
        "Each child row with its parent's columns copied through the foreign key: whether the "
        "avatars keep the correlations across the link.",
        "Chaque ligne enfant avec les colonnes de son parent recopiées par la clé étrangère : "
        "les avatars gardent-ils les corrélations à travers le lien ?")),
    Scenario(TIME_SERIES_ENRICHED, words("time_series_enriched", "enrichie par les séries"),
             words(
        "Each row with features of its time series in the reference table (length, start, "
        "span, curve shape, missing shares), against its avatar with its avatar series.",
        "Chaque ligne avec les caractéristiques de ses séries temporelles dans la table de "
        "référence (longueur, début, durée, forme des courbes, parts manquantes), face à son "
        "avatar avec ses séries avatars.")),
)}  # fmt: skip
PRIVACY_SCENARIOS = (STANDALONE, TO_TOP_ENRICHED, TO_BOTTOM_ID_PROPAGATED, TIME_SERIES_ENRICHED)
SIGNAL_SCENARIOS = (STANDALONE, TO_TOP_ENRICHED, TO_BOTTOM_INFORMATION_PROPAGATED)


# ---------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class Metric:
    """One metric: its ``family`` (privacy, signal or attack), ``target``, one-line
    ``meaning`` per language, the database ``scenarios`` it is reported in, whether it
    decides a cell of the database summary matrix and a release's verdict (``summary``:
    the method's own protection), and what measuring it ``needs`` besides the tables (a
    ``MetricOptions`` name, or "holdout")."""

    name: str
    family: str
    target: Target
    meaning: Mapping[str, str]
    scenarios: tuple[str, ...] = ()
    summary: bool = False
    needs: str | None = None


def _privacy(name, target, en, fr, scenarios=PRIVACY_SCENARIOS, summary=False,
             needs=None) -> Metric:
    return Metric(name, PRIVACY, target, words(en, fr), scenarios, summary, needs)


def _signal(name, target, en, fr) -> Metric:
    return Metric(name, SIGNAL, target, words(en, fr), SIGNAL_SCENARIOS)


def _attack(name, en, fr) -> Metric:
    """An attack's risk: lower is better; it is judged by its confidence interval and its
    holdout comparison (``attacks``), not by a threshold."""
    return Metric(name, ATTACK, Target(LOWER), words(en, fr))


CATALOGUE: dict[str, Metric] = {m.name: m for m in (
    _privacy("hidden_rate", Target(HIGHER, 90),
             "% of originals whose closest avatar is not their own",
             "% des individus d'origine dont l'avatar le plus proche n'est pas le leur",
             summary=True),
    _privacy("local_cloaking", Target(HIGHER, 5),
             "median number of avatars at least as close to an original as its own",
             "nombre médian d'avatars au moins aussi proches d'un individu d'origine que le "
             "sien", summary=True),
    # in the table's own scale: reported beside its baselines (privacy.py), not judged
    _privacy("distance_to_closest", Target(HIGHER),
             "median distance of an avatar to its closest original",
             "distance médiane d'un avatar à l'individu d'origine le plus proche"),
    _privacy("closest_distances_ratio", Target(HIGHER, 0.3),
             "median ratio closest / second-closest original, per avatar",
             "rapport médian, par avatar, entre l'individu d'origine le plus proche et le "
             "deuxième"),
    _privacy("closest_rate", Target(HIGHER, 90),
             "% of avatars not both very close to one original and far from the rest",
             "% des avatars qui ne sont pas à la fois très proches d'un individu d'origine et "
             "loin des autres"),
    _privacy("row_direct_match_protection", Target(HIGHER, 90),
             "% of originals with no identical avatar row",
             "% des individus d'origine sans avatar identique"),
    _privacy("exact_copies", Target(LOWER),
             "number of avatars identical to an original row",
             "nombre d'avatars identiques à une ligne d'origine"),
    _privacy("column_direct_match_protection", Target(HIGHER, 50),
             "worst variable: % of originals whose unique value is not copied into the avatars",
             "pire variable : % des individus d'origine dont la valeur unique n'est pas "
             "recopiée dans les avatars"),
    _privacy("categorical_hidden_rate", Target(HIGHER, 90),
             "% of originals not singled out on the chosen categorical variables (needs "
             "categorical_hidden_rate_variables)",
             "% des individus d'origine non isolés sur les variables catégorielles choisies "
             "(requiert categorical_hidden_rate_variables)", scenarios=(),
             needs="categorical_hidden_rate_variables"),
    _privacy("correlation_protection_rate", Target(HIGHER, 90),
             "% of originals protected from linkage on the known variables (needs "
             "known_variables)",
             "% des individus d'origine protégés du rapprochement sur les variables connues "
             "(requiert known_variables)", scenarios=(), needs="known_variables"),
    # given a holdout: % of avatars closer to an original than to any holdout row
    _privacy("closer_to_training_rate", Target(LOWER),
             "% of avatars closer to an original than to any holdout row (needs a holdout)",
             "% des avatars plus proches d'un individu d'origine que de tout individu témoin "
             "(requiert un témoin)", scenarios=(), needs="holdout"),
    # the attack's error relative to a marginal guess: the lower, the more the link teaches
    _privacy("inference_continuous", Target(HIGHER),
             "error of guessing the target through the closest avatar on the known variables "
             "/ error of a marginal guess (1: the link teaches nothing)",
             "erreur de l'inférence de la cible par l'avatar le plus proche sur les variables "
             "connues / erreur d'une inférence par la loi marginale (1 : le rapprochement "
             "n'apprend rien)", scenarios=(), needs="target"),
    # the attack's accuracy: the higher, the more the link teaches
    _privacy("inference_categorical", Target(LOWER),
             "accuracy of guessing the target through the closest avatar on the known "
             "variables (needs known_variables and a categorical target)",
             "exactitude de l'inférence de la cible par l'avatar le plus proche sur les "
             "variables connues (requiert known_variables et une cible catégorielle)",
             scenarios=(), needs="target"),
    _signal("hellinger_mean", Target(LOWER, 0.1),
            "mean over variables of the Hellinger distance between original and avatar "
            "distributions (0: identical, 1: disjoint)",
            "moyenne sur les variables de la distance de Hellinger entre les distributions "
            "d'origine et des avatars (0 : identiques, 1 : disjointes)"),
    _signal("hellinger_std", Target(LOWER),
            "standard deviation of the per-variable Hellinger distances",
            "écart-type des distances de Hellinger par variable"),
    _signal("correlation_difference_ratio", Target(LOWER, 10),
            "mean |Pearson correlation difference| over pairs of continuous variables, in %",
            "moyenne des |écarts de corrélation de Pearson| sur les paires de variables "
            "continues, en %"),
    _attack("singling_out_univariate",
            "queries on one column that match exactly one avatar (a value seen once, a "
            "minimum, a maximum); success: the query matches exactly one original",
            "requêtes sur une colonne qui désignent exactement un avatar (valeur unique, "
            "minimum, maximum) ; succès : la requête désigne exactement un individu d'origine"),
    _attack("singling_out_multivariate",
            "queries combining several columns of an avatar; success: the query matches "
            "exactly one original",
            "requêtes combinant plusieurs colonnes d'un avatar ; succès : la requête désigne "
            "exactement un individu d'origine"),
    _attack("linkability",
            "the attacker holds two sets of columns of the same people and links them through "
            "their nearest avatars; success: both halves lead to the same avatar",
            "l'attaquant détient deux ensembles de colonnes des mêmes personnes et les relie "
            "par leurs avatars les plus proches ; succès : les deux moitiés mènent au même "
            "avatar"),
    _attack("inference",
            "the attacker knows every other column and reads the secret off the nearest "
            "avatar; success: the right category, or a number within {tolerance} % of the "
            "guess",
            "l'attaquant connaît toutes les autres colonnes et lit le secret sur l'avatar le "
            "plus proche ; succès : la bonne catégorie, ou un nombre à {tolerance} % près de la "
            "valeur devinée"),
)}  # fmt: skip


def family(name: str) -> dict[str, Metric]:
    """The catalogue's metrics of one family, in catalogue order."""
    return {key: metric for key, metric in CATALOGUE.items() if metric.family == name}


def targets_of(name: str) -> dict[str, Target]:
    return {key: metric.target for key, metric in family(name).items()}


PRIVACY_TARGETS = targets_of(PRIVACY)
SIGNAL_TARGETS = targets_of(SIGNAL)
TARGETS = {**PRIVACY_TARGETS, **SIGNAL_TARGETS}
# A cell of the database summary matrix passes when all of these pass.
SUMMARY_METRICS = tuple(name for name, metric in CATALOGUE.items() if metric.summary)


def scenario_metrics(name: str) -> list[str]:
    """The metrics of a family reported in the database scenarios."""
    return [key for key, metric in family(name).items() if metric.scenarios]


def metrics_frame(values: Mapping[str, Any], targets: Mapping[str, Target]) -> pd.DataFrame:
    """One row per metric: value, target, passed (None where the metric has no target)."""
    rows = []
    for name, target in targets.items():
        value = values.get(name)
        rows.append(
            {
                "metric": name,
                "value": np.nan if value is None else float(value),
                "target": target.text(),
                "passed": target.passed(value),
            }
        )
    return pd.DataFrame(rows).set_index("metric")


def mean_and_worst(per_part: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """For metrics measured on several parts (batches): each metric's mean and worst."""
    names = list(per_part[0]) if per_part else []
    mean, worst = {}, {}
    for name in names:
        values = [part.get(name) for part in per_part if _is_number(part.get(name))]
        mean[name] = float(np.mean(values)) if values else None
        worst[name] = TARGETS[name].worst(values)
    return {"mean": mean, "worst": worst}
