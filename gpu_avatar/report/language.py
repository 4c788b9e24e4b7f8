"""The report's words in English (the default) and French, written once.

English text is the key: ``tr("Run parameters")`` returns it in the report's language, and
``tr("{met} of {judged} targets met", met=3, judged=4)`` fills the fields after translating.
Numbers are written with the language's decimal separator (``tr.number``). A text with no
French entry is an error, so that a French report never mixes in English silently.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import AvatarError

LANGUAGES = ("en", "fr")


class Translator:
    """The words and number format of one language."""

    def __init__(self, language: str = "en") -> None:
        if language not in LANGUAGES:
            raise AvatarError(f"language={language!r} is not one of {LANGUAGES}")
        self.language = language

    def __call__(self, text: str, **fields: Any) -> str:
        if self.language == "fr":
            if text not in FRENCH:
                raise LookupError(f"no French text for {text!r}: add it to report/language.py")
            text = FRENCH[text]
        return text.format(**fields) if fields else text

    def number(self, value: Any, spec: str = ".4g") -> str:
        """``value`` formatted by ``spec`` ("—" when missing), with a decimal comma in
        French."""
        if value is None:
            return "—"
        if isinstance(value, (bool, np.bool_)):
            return self("yes") if value else self("no")
        if isinstance(value, (int, np.integer)) and spec == ".4g":
            return str(int(value))
        value = float(value)
        if not np.isfinite(value):
            return "—"
        text = format(value, spec)
        return text.replace(".", ",") if self.language == "fr" else text


FRENCH: dict[str, str] = {
    "": "",
    # document
    "Avatarization report": "Rapport d'avatarisation",
    "Database avatarization report": "Rapport d'avatarisation de la base de données",
    "Contents": "Sommaire",
    "Table": "Table", "Database": "Base de données",
    "Column whose unique values the avatars repeat most: {column} ({value} % protected).":
        "Colonne dont les avatars répètent le plus les valeurs uniques : {column} ({value} % "
        "protégés).",
    "Avatars identical to an original row: {copies} ({shared}).":
        "Avatars identiques à une ligne d'origine : {copies} ({shared}).",
    "{avatars} of a unique row": "{avatars} d'une ligne unique",
    "{avatars} of a row held by {originals}": "{avatars} d'une ligne détenue par {originals}",
    " With zero_distance = 'bounded', a row's duplicates no longer take all the weight of its "
    "avatar.":
        " Avec zero_distance = 'bounded', les doublons d'une ligne ne prennent plus tout le poids "
        "de son avatar.",
    "Released as declared, although they could identify a person: {columns}.":
        "Publiées telles que déclarées, bien qu'elles puissent identifier une personne : "
        "{columns}.",
    "page {page}": "page {page}",
    "gpu_avatar {version}, {created}. Avatar method: every original individual gets one "
    "synthetic avatar; the metrics below compare them.":
    "gpu_avatar {version}, {created}. Méthode Avatar : chaque individu d'origine reçoit un "
    "avatar synthétique ; les métriques ci-dessous les comparent.",
    # verdicts and common words
    "pass": "conforme", "fail": "non conforme", "FAIL": "NON CONFORME",
    "report only": "pour information", "report": "pour information",
    "[{low}, {high}]": "[{low} ; {high}]", "not computed": "non calculé", "none": "aucune",
    "yes": "oui", "no": "non", " and ": " et ", "total": "total",
    "all targets": "tous les objectifs",
    # table part
    "Run parameters": "Paramètres de l'exécution",
    "parameter": "paramètre", "value": "valeur", "metric": "métrique", "target": "objectif",
    "result": "résultat", "definition": "définition", "step": "étape", "seconds": "secondes",
    "rows x columns": "lignes x colonnes",
    "{rows} x {columns} -> {avatars} avatars": "{rows} x {columns} -> {avatars} avatars",
    "continuous columns": "colonnes continues",
    "categorical columns": "colonnes catégorielles",
    "identifier columns": "colonnes identifiantes",
    "Timings (seconds)": "Durées (secondes)",
    "avatarization: {step}": "avatarisation : {step}",
    # the steps of a run (AvatarizationResult.timings)
    "batch plan": "plan des lots", "fit": "ajustement", "projection": "projection",
    "neighbours": "voisins", "synthesis": "synthèse", "decode": "décodage",
    "rebuild": "reconstruction",
    "privacy metrics": "métriques de confidentialité",
    "signal metrics": "métriques de signal",
    "No avatarization timings: this report was built from the tables, not from the run that "
    "made them.": "Pas de durées d'avatarisation : ce rapport a été établi à partir des tables, "
    "et non de l'exécution qui les a produites.",
    "{originals} originals, {variables} variables.":
    "{originals} individus d'origine, {variables} variables.",
    "Privacy: {met} of {judged} targets met (hidden rate {hidden} %, median local cloaking "
    "{cloaking}).": "Confidentialité : {met} objectifs atteints sur {judged} (taux de "
    "dissimulation {hidden} %, dissimulation locale médiane {cloaking}).",
    "Privacy metrics": "Métriques de confidentialité",
    "Originals against their own (unshuffled) avatars, distances on {ncp} axes of a projection "
    "fitted on the originals. {met} of {judged} targets met.":
    "Individus d'origine face à leurs propres avatars (non mélangés), distances sur {ncp} axes "
    "d'une projection ajustée sur les individus d'origine. {met} objectifs atteints sur "
    "{judged}.",
    "Not an individual-level table: its rows are not people, so its privacy is measured "
    "through the scenarios of the individual-level tables.":
    "Table qui n'est pas au niveau de l'individu : ses lignes ne sont pas des personnes, sa "
    "confidentialité est donc mesurée par les scénarios des tables d'individus.",
    "Signal: {met} of {judged} targets met.": "Signal : {met} objectifs atteints sur {judged}.",
    "Signal metrics": "Métriques de signal",
    "variable": "variable", "Hellinger distance": "distance de Hellinger",
    "Hellinger distance per variable": "Distance de Hellinger par variable",
    "Plots": "Graphiques",
    "Fewer than two continuous variables: no correlation matrix.":
    "Moins de deux variables continues : pas de matrice de corrélation.",
    # metric definitions (report/data.py)
    "% of originals whose closest avatar is not their own":
    "% des individus d'origine dont l'avatar le plus proche n'est pas le leur",
    "median number of avatars at least as close to an original as its own":
    "nombre médian d'avatars au moins aussi proches d'un individu d'origine que le sien",
    "median distance of an avatar to its closest original":
    "distance médiane d'un avatar à l'individu d'origine le plus proche",
    "median ratio closest / second-closest original, per avatar":
    "rapport médian, par avatar, entre l'individu d'origine le plus proche et le deuxième",
    "% of avatars closer to an original than to any holdout row (needs a holdout)":
    "% des avatars plus proches d'un individu d'origine que de tout individu témoin (demande "
    "un témoin)",
    " Originals among themselves: {baseline}.": " Individus d'origine entre eux : {baseline}.",
    " Holdout against the originals: {baseline}.":
    " Témoin face aux individus d'origine : {baseline}.",
    "% of avatars not both very close to one original and far from the rest":
    "% des avatars qui ne sont pas à la fois très proches d'un individu d'origine et loin des "
    "autres",
    "% of originals with no identical avatar row":
    "% des individus d'origine sans avatar identique",
    "number of avatars identical to an original row":
    "nombre d'avatars identiques à une ligne d'origine",
    "worst variable: % of originals whose unique value is not copied into the avatars":
    "pire variable : % des individus d'origine dont la valeur unique n'est pas recopiée dans "
    "les avatars",
    "% of originals not singled out on the chosen categorical variables (needs "
    "categorical_hidden_rate_variables)":
    "% des individus d'origine non isolés sur les variables catégorielles choisies (requiert "
    "categorical_hidden_rate_variables)",
    "% of originals protected from linkage on the known variables (needs known_variables)":
    "% des individus d'origine protégés du rapprochement sur les variables connues (requiert "
    "known_variables)",
    "error of guessing the target through the closest avatar on the known variables / error "
    "of a marginal guess (1: the link teaches nothing)":
    "erreur de l'inférence de la cible par l'avatar le plus proche sur les variables connues / "
    "erreur d'une inférence par la loi marginale (1 : le rapprochement n'apprend rien)",
    "accuracy of guessing the target through the closest avatar on the known variables (needs "
    "known_variables and a categorical target)":
    "exactitude de l'inférence de la cible par l'avatar le plus proche sur les variables "
    "connues (requiert known_variables et une cible catégorielle)",
    "mean over variables of the Hellinger distance between original and avatar distributions "
    "(0: identical, 1: disjoint)":
    "moyenne sur les variables de la distance de Hellinger entre les distributions d'origine "
    "et des avatars (0 : identiques, 1 : disjointes)",
    "standard deviation of the per-variable Hellinger distances":
    "écart-type des distances de Hellinger par variable",
    "mean |Pearson correlation difference| over pairs of continuous variables, in %":
    "moyenne des |écarts de corrélation de Pearson| sur les paires de variables continues, "
    "en %",
    # plots
    "originals": "individus d'origine", "avatars": "avatars",
    "avatars - originals": "avatars - individus d'origine",
    "Dim. {axis} ({share} % of inertia)": "Dim. {axis} ({share} % de l'inertie)",
    "projection of originals and avatars": "projection des individus d'origine et des avatars",
    "Originals and avatars on the first two axes of a {kind} fitted on the originals (avatars "
    "projected with the same model). Avatars should cover the same cloud without sitting on "
    "the originals.": "Individus d'origine et avatars sur les deux premiers axes d'une {kind} "
    "ajustée sur les individus d'origine (avatars projetés avec le même modèle). Les avatars "
    "doivent couvrir le même nuage sans se superposer aux individus d'origine.",
    "(missing)": "(manquant)",
    "per-variable distributions": "distributions par variable",
    "Distribution of every variable, originals and avatars overlaid (continuous: density "
    "histograms on shared bins; categorical: relative frequencies, the {modalities} most "
    "frequent modalities). H: Hellinger distance.":
    "Distribution de chaque variable, individus d'origine et avatars superposés (continues : "
    "histogrammes de densité sur des classes communes ; catégorielles : fréquences relatives "
    "des {modalities} modalités les plus fréquentes). H : distance de Hellinger.",
    "The last {count} variables are not drawn.":
    "Les {count} dernières variables ne sont pas tracées.",
    "correlation matrices": "matrices de corrélation",
    "Pearson correlations between continuous variables in the originals and in the avatars, "
    "and their difference (colour scale +/- {scale}).":
    "Corrélations de Pearson entre variables continues chez les individus d'origine et chez "
    "les avatars, et leur différence (échelle de couleur +/- {scale}).",
    "target: > {target}": "objectif : > {target}",
    "median: {median}": "médiane : {median}",
    "local cloaking (avatars at least as close as the own avatar)":
    "dissimulation locale (avatars au moins aussi proches que l'avatar propre)",
    "local cloaking distribution": "distribution de la dissimulation locale",
    "Local cloaking of each original (values above the 99th percentile, {upper}, drawn in the "
    "last bin); {share} % of originals have a local cloaking of {target} or less.":
    "Dissimulation locale de chaque individu d'origine (valeurs au-delà du 99e centile, "
    "{upper}, dans la dernière classe) ; {share} % des individus d'origine ont une "
    "dissimulation locale de {target} ou moins.",
    "children per parent": "enfants par parent",
    "share of parents": "part des parents",
    "children per parent {link}": "enfants par parent {link}",
    "Children per parent, {link}: originals (original links) and avatars.":
    "Enfants par parent, {link} : individus d'origine (liens d'origine) et avatars.",
    # advice
    "Parameter advice": "Conseil de paramètres",
    "k = {k} (recommended)": "k = {k} (recommandé)",
    "Recommended: k = {k} (ncp = {ncp}), the candidate that meets every privacy target with "
    "the least signal loss (lowest mean Hellinger distance).":
    "Recommandé : k = {k} (ncp = {ncp}), le candidat qui atteint tous les objectifs de "
    "confidentialité avec la moindre perte de signal (distance de Hellinger moyenne la plus "
    "faible).",
    "No candidate meets every privacy target. Try a larger k, more projection axes (ncp), "
    "column weights that lower identifying columns, or fewer modalities (group rare "
    "categories).": "Aucun candidat n'atteint tous les objectifs de confidentialité. Essayez "
    "un k plus grand, plus d'axes de projection (ncp), des poids de colonnes qui réduisent les "
    "colonnes identifiantes, ou moins de modalités (regroupez les catégories rares).",
    "Targets judged, with the advice's safety margin: {targets}. Green: the candidate meets "
    "the target; red: it misses it.": "Objectifs jugés, avec la marge de sécurité du conseil : "
    "{targets}. Vert : le candidat atteint l'objectif ; rouge : il le manque.",
    # attacks
    "Attack-based risks": "Risques mesurés par attaques",
    "Attacks by an adversary who holds the release and some of a person's values (Giomi et "
    "al., PETS 2023, as in anonymeter). Risk = (success on the originals - success on the "
    "holdout) / (1 - success on the holdout): only what the release teaches beyond people "
    "who are not in it counts; 0 is no risk, 1 the whole room for it. An attack that does no "
    "better than a random guess learns nothing, whatever its risk.":
    "Attaques d'un adversaire qui détient la publication et une partie des valeurs d'une "
    "personne (Giomi et al., PETS 2023, comme dans anonymeter). Risque = (succès sur les "
    "individus d'origine - succès sur l'échantillon témoin) / (1 - succès sur l'échantillon "
    "témoin) : seul compte ce que la publication apprend au-delà des personnes qui n'y "
    "figurent pas ; 0 signifie aucun risque, 1 le risque maximal. Une attaque qui ne fait pas "
    "mieux qu'un tirage au hasard n'apprend rien, quel que soit son risque.",
    "Attacks: none does better than a random guess or than on the holdout, so none learns "
    "anything from the release.":
    "Attaques : aucune ne fait mieux qu'un tirage au hasard ou que sur l'échantillon témoin, "
    "aucune n'apprend donc quoi que ce soit de la publication.",
    "Attacks: {measurable} of {total} with a measurable risk; the highest, {attack}, {risk} "
    "{interval}.": "Attaques : {measurable} sur {total} avec un risque mesurable ; le plus "
    "élevé, {attack}, {risk} {interval}.",
    "No better than a random guess or than on the holdout, so learning nothing whatever their "
    "risk: {attacks}.":
    "Pas mieux qu'un tirage au hasard ou que sur le témoin, donc rien appris quel que soit leur "
    "risque : {attacks}.",
    "learns nothing": "n'apprend rien",
    "attack": "attaque", "risk": "risque", "{level} % interval": "intervalle à {level} %",
    "attack success": "succès de l'attaque", "holdout success": "succès sur le témoin",
    "random guess": "tirage au hasard", "attacks": "attaques",
    "measurable risk": "risque mesurable", "no measurable risk": "aucun risque mesurable",
    "queries on one column that match exactly one avatar (a value seen once, a minimum, a "
    "maximum); success: the query matches exactly one original":
    "requêtes sur une colonne qui désignent exactement un avatar (valeur unique, minimum, "
    "maximum) ; succès : la requête désigne exactement un individu d'origine",
    "queries combining several columns of an avatar; success: the query matches exactly one "
    "original": "requêtes combinant plusieurs colonnes d'un avatar ; succès : la requête "
    "désigne exactement un individu d'origine",
    "the attacker holds two sets of columns of the same people and links them through their "
    "nearest avatars; success: both halves lead to the same avatar":
    "l'attaquant détient deux ensembles de colonnes des mêmes personnes et les relie par leurs "
    "avatars les plus proches ; succès : les deux moitiés mènent au même avatar",
    "the attacker knows every other column and reads the secret off the nearest avatar; "
    "success: the right category, or a number within {tolerance} % of the guess":
    "l'attaquant connaît toutes les autres colonnes et lit le secret sur l'avatar le plus "
    "proche ; succès : la bonne catégorie, ou un nombre à {tolerance} % près de la valeur "
    "devinée",
    # database part
    "{tables} tables, {links} links; privacy summary: {passed} of {cells} cells pass.":
    "{tables} tables, {links} liens ; synthèse de confidentialité : {passed} cellules "
    "conformes sur {cells}.",
    "table": "table", "rows": "lignes", "primary key": "clé primaire",
    "individual-level": "niveau individu", "parents": "parents",
    "metrics: {kind} scenarios": "métriques : scénarios de {kind}",
    "privacy": "confidentialité", "signal": "signal",
    "whole database run": "exécution complète de la base",
    "avatarization and linking": "avatarisation et liaison",
    "detail": "détail",
    "Privacy summary matrix": "Matrice de synthèse de confidentialité",
    "individual-level table": "table d'individus",
    "{scenario}: {hidden} % (LC {cloaking}) {verdict}":
    "{scenario} : {hidden} % (DL {cloaking}) {verdict}",
    "Rows: the people protected (individual-level tables); columns: the table they are "
    "measured against. Each cell is the worst scenario: hidden rate and median local cloaking "
    "(LC); pass means {rule}.": "Lignes : les personnes protégées (tables d'individus) ; "
    "colonnes : la table à laquelle elles sont comparées. Chaque cellule est le pire "
    "scénario : taux de dissimulation et dissimulation locale médiane (DL) ; conforme signifie "
    "{rule}.",
    # time series
    "Time series": "Séries temporelles",
    "Hellinger distance of the pooled values; mean-curve distance: mean over each series' "
    "normalised time of |avatar mean - original mean| / the originals' point-wise std; "
    "difference of the lag-1 autocorrelations; Kolmogorov-Smirnov statistic of the series "
    "lengths.":
        "Distance de Hellinger des valeurs regroupées ; distance des courbes moyennes : moyenne "
        "sur le temps normalisé de chaque série de |moyenne des avatars - moyenne d'origine| / "
        "l'écart-type ponctuel d'origine ; différence des autocorrélations d'ordre 1 ; "
        "statistique de Kolmogorov-Smirnov des longueurs de séries.",
    "time since the series' start": "temps depuis le début de la série",
    "time since the series' start ({unit})": "temps depuis le début de la série ({unit})",
    "hours": "heures", "days": "jours",
    "a sample of curves": "un échantillon de courbes",
    "originals: mean +/- std": "origine : moyenne +/- écart-type",
    "originals: mean": "origine : moyenne",
    "avatars: mean": "avatars : moyenne",
    "time within each series (0: start, 1: end)": "temps dans chaque série (0 : début, 1 : fin)",
    "mean curves": "courbes moyennes",
    "{link}, {variable}: a sample of original and avatar curves, and the mean curves on each "
    "series' own span with the originals' band of one standard deviation.":
        "{link}, {variable} : un échantillon de courbes d'origine et d'avatars, et les courbes "
        "moyennes sur la durée propre de chaque série avec la bande d'un écart-type des "
        "originaux.",
    "curves of {variable}": "courbes de {variable}",
    "Links": "Liens", "parent": "parent", "child.foreign key": "enfant.clé étrangère",
    "method": "méthode", "cardinality similarity": "similarité des cardinalités",
    "referential integrity (%)": "intégrité référentielle (%)",
    "assignment cost": "coût d'affectation", "blocks": "blocs",
    "Cardinality similarity: 1 - Kolmogorov-Smirnov statistic between the children-per-parent "
    "distributions (1: identical).": "Similarité des cardinalités : 1 - statistique de "
    "Kolmogorov-Smirnov entre les distributions du nombre d'enfants par parent (1 : "
    "identiques).",
    "Privacy scenarios": "Scénarios de confidentialité",
    "Signal scenarios": "Scénarios de signal",
    "scenario": "scénario", "reference": "référence", "via": "via",
    # the scenarios (report/data.py)
    "standalone": "table seule", "to_top_enriched": "enrichie par les enfants",
    "to_bottom_id_propagated": "enfants liés au parent",
    "to_bottom_information_propagated": "enfants enrichis par le parent",
    "time_series_enriched": "enrichie par les séries",
    "The table alone: each original row against its own avatar.":
    "La table seule : chaque ligne d'origine face à son propre avatar.",
    "Each row with a summary of its children in the reference table (their count, the mean of "
    "each number, the share of each category), against its avatar with its avatar children.":
    "Chaque ligne avec un résumé de ses enfants dans la table de référence (leur nombre, la "
    "moyenne de chaque nombre, la part de chaque catégorie), face à son avatar avec ses "
    "enfants avatars.",
    "The rows of a child table with their parent's columns copied through the foreign key (a "
    "person's own rows, or their children's), against the avatar rows joined through the "
    "avatar links.": "Les lignes d'une table enfant avec les colonnes de leur parent recopiées "
    "par la clé étrangère (les lignes de la personne elle-même, ou celles de ses enfants), "
    "face aux lignes d'avatars jointes par les liens des avatars.",
    "Each child row with its parent's columns copied through the foreign key: whether the "
    "avatars keep the correlations across the link.": "Chaque ligne enfant avec les colonnes "
    "de son parent recopiées par la clé étrangère : les avatars gardent-ils les corrélations "
    "à travers le lien ?",
    "Each row with features of its time series in the reference table (length, start, span, "
    "curve shape, missing shares), against its avatar with its avatar series.":
    "Chaque ligne avec les caractéristiques de ses séries temporelles dans la table de "
    "référence (longueur, début, durée, forme des courbes, parts manquantes), face à son "
    "avatar avec ses séries avatars.",
    "Tables": "Tables", "Table {name}": "Table {name}",
}
