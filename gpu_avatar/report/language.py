"""The report's words in English (the default) and French, written once.

English text is the key: ``tr("Run parameters")`` returns it in the report's language, and
``tr("{met} of {judged} targets met", met=3, judged=4)`` fills the fields after translating.
Numbers are written with the language's decimal separator (``tr.number``). A text with no
French entry is an error, so that a French report never mixes in English silently.
"""

from __future__ import annotations

from collections.abc import Mapping
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

    def count(self, n: int, one: str, many: str) -> str:
        """``n`` and the word for that many, ``one`` or ``many`` (English texts): singular for
        1, and for 0 in French ("1 lien", "0 lien", "2 liens")."""
        return f"{n} {self(one if n == 1 or (n == 0 and self.language == 'fr') else many)}"

    def metric(self, name: str) -> str:
        """A metric's name (``metrics.catalogue``; an attack's label, its secret after it): the
        API's in English, its French name in French."""
        head, _, secret = name.partition(" (")
        return name if self.language == "en" else FRENCH_METRICS[head] + (
            f" ({secret}" if secret else "")

    def words(self, texts: Mapping[str, str], **fields: Any) -> str:
        """A text given in every language (``metrics.catalogue.words``), in this one."""
        text = texts[self.language]
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


# The metrics' names in a French report (#37: the API's names were left in its tables).
FRENCH_METRICS: dict[str, str] = {
    "hidden_rate": "taux de masquage",
    "local_cloaking": "camouflage local",
    "distance_to_closest": "distance au plus proche",
    "closest_distances_ratio": "rapport des distances les plus proches",
    "closest_rate": "taux hors proximité isolée",
    "row_direct_match_protection": "protection contre la copie de ligne",
    "exact_copies": "copies exactes",
    "column_direct_match_protection": "protection contre la copie de valeur unique",
    "categorical_hidden_rate": "taux de masquage catégoriel",
    "correlation_protection_rate": "taux de protection par corrélation",
    "closer_to_training_rate": "taux de proximité aux données d'entraînement",
    "inference_continuous": "inférence continue",
    "inference_categorical": "inférence catégorielle",
    "hellinger_mean": "distance de Hellinger moyenne",
    "hellinger_std": "écart-type de la distance de Hellinger",
    "correlation_difference_ratio": "écart des corrélations",
    "singling_out_univariate": "isolement univarié",
    "singling_out_multivariate": "isolement multivarié",
    "linkability": "liaison",
    "inference": "inférence",
}

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
    "{avatars} of rows held by {originals} or more":
        "{avatars} de lignes détenues par {originals} ou plus",
    "unique copies": "copies de lignes uniques",
    " With zero_distance = 'bounded', a row's duplicates no longer take all the weight of its "
    "avatar.":
        " Avec zero_distance = 'bounded', les doublons d'une ligne ne prennent plus tout le poids "
        "de son avatar.",
    "Rare modalities grouped before the projection (how many, and the value they are released "
    "as): {groups}.":
        "Modalités rares regroupées avant la projection (leur nombre, et la valeur sous "
        "laquelle elles sont publiées) : {groups}.",
    "Grouping the rare modalities of the categorical columns (rare_modalities) would release "
    "none of their unique values: {metric} would rise to {value} %.":
        "Regrouper les modalités rares des colonnes catégorielles (rare_modalities) ne "
        "publierait aucune de leurs valeurs uniques : {metric} monterait à {value} %.",
    "Shares not kept within one point, or a fifth of the share if that is larger (original "
    "-> avatars): {shares}.":
        "Proportions non conservées à un point près, ou à un cinquième de la proportion si "
        "c'est plus (origine -> avatars) : {shares}.",
    "{column} = {value}: {original} % -> {avatars} %":
        "{column} = {value} : {original} % -> {avatars} %",
    "missing": "manquante",
    "Released as declared, although they could identify a person: {columns}.":
        "Publiées telles que déclarées, bien qu'elles puissent identifier une personne : "
        "{columns}.",
    "Not anonymized, as the plan says: {tables}.":
        "Non anonymisées, comme le dit le plan : {tables}.",
    "copied as it is": "copiée telle quelle",
    "pseudonymized (keys replaced, other values as they are)":
        "pseudonymisée (clés remplacées, autres valeurs telles quelles)",
    "purged (no rows)": "vidée (aucune ligne)",
    "left out": "écartée",
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
    "excluded columns": "colonnes exclues (réattachées)",
    "dropped columns": "colonnes retirées",
    "Timings (seconds)": "Durées (secondes)",
    "avatarization: {step}": "avatarisation : {step}",
    # the steps of a run (AvatarizationResult.timings)
    "batch plan": "plan des lots", "fit": "ajustement", "projection": "projection",
    "neighbours": "voisins", "synthesis": "synthèse", "decode": "décodage", "rules": "règles",
    "Rules kept": "Règles respectées", "rule": "règle", "held by": "tenue par",
    "rows repaired": "lignes réparées", "exceptions kept": "exceptions gardées",
    "column": "colonne", "Hellinger before": "Hellinger avant",
    "Hellinger after": "Hellinger après", "encoding": "encodage", "repair": "réparation",
    "Every released row keeps these rules: held by an encoding (the avatars keep it by "
    "construction) or by repairing the rows that break it, from the originals the avatar was "
    "drawn from. Hellinger: the distance of the column's avatars to its originals before and "
    "after the repairs.":
        "Chaque ligne publiée respecte ces règles : tenues par un encodage (les avatars la "
        "respectent par construction) ou en réparant les lignes qui l'enfreignent, à partir des "
        "originaux dont l'avatar est tiré. Hellinger : la distance des avatars de la colonne à "
        "ses originaux avant et après les réparations.",
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
    " Originals among themselves: {baseline}.": " Individus d'origine entre eux : {baseline}.",
    " Holdout against the originals: {baseline}.":
    " Témoin face aux individus d'origine : {baseline}.",
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
    "column weights that lower identifying columns, or fewer modalities (group rare ones: "
    "rare_modalities).": "Aucun candidat n'atteint tous les objectifs de confidentialité. "
    "Essayez un k plus grand, plus d'axes de projection (ncp), des poids de colonnes qui "
    "réduisent les colonnes identifiantes, ou moins de modalités (regroupez les rares : "
    "rare_modalities).",
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
    # database part
    "{tables}, {links}; privacy summary: {passed} of {cells} cells pass.":
    "{tables}, {links} ; synthèse de confidentialité : {passed} cellules conformes sur "
    "{cells}.",
    "tables": "tables", "link": "lien", "links": "liens",
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
    "Tables": "Tables", "Table {name}": "Table {name}",
    # the verdict (report/verdict.py)
    "Verdict": "Verdict", "answer": "réponse", "finding": "constat", "decisive": "décisif",
    "The release meets every target.": "La publication atteint tous les objectifs.",
    "The release does not meet its targets.": "La publication n'atteint pas ses objectifs.",
    "The release meets its targets with named exceptions.":
    "La publication atteint ses objectifs, avec des exceptions nommées.",
    " 1 avatar copies a row that one original alone holds.":
    " 1 avatar copie une ligne qu'une seule personne d'origine détient.",
    " {copies} avatars copy rows that one original alone holds each.":
    " {copies} avatars copient chacun une ligne qu'une seule personne d'origine détient.",
    "verdict: {answer}": "verdict : {answer}",
    "no avatar is an exact copy of an original row":
    "aucun avatar n'est la copie exacte d'une ligne d'origine",
    "1 avatar is an exact copy of an original row ({shared})":
    "1 avatar est la copie exacte d'une ligne d'origine ({shared})",
    "{copies} avatars are exact copies of original rows ({shared})":
    "{copies} avatars sont des copies exactes de lignes d'origine ({shared})",
    "{attack}: measurable risk {risk} [{low}, {high}], beyond a random guess and the holdout":
    "{attack} : risque mesurable {risk} [{low}, {high}], au-delà d'un tirage au hasard et du "
    "témoin",
    "{metric} {value} meets its target {target} (margin {margin})":
    "{metric} {value} atteint son objectif {target} (marge {margin})",
    "{metric} {value} misses its target {target} by {margin}":
    "{metric} {value} manque son objectif {target} de {margin}",
    " (worst column: {column})": " (pire colonne : {column})",
    "{table}, {scenario} against {reference}: ": "{table}, {scenario} face à {reference} : ",
    "Attack risks not measured: they need a holdout, rows of the table kept out of the "
    "avatarization.": "Risques d'attaque non mesurés : ils demandent un témoin, des lignes de "
    "la table tenues à l'écart de l'avatarisation.",
    "Decisive: {metrics}, the method's protection that no avatar can be traced to its "
    "original; missing one means the release does not meet its targets. Any other target "
    "missed, a measurable risk of an attack that learns from the release, or an exact copy of "
    "an original row is a named exception. Distances reported beside their baselines are not "
    "targets.": "Décisifs : {metrics}, la protection propre à la méthode, qu'aucun avatar ne "
    "puisse être rattaché à son original ; en manquer un signifie que la publication n'atteint "
    "pas ses objectifs. Tout autre objectif manqué, un risque mesurable d'une attaque qui "
    "apprend de la publication, ou une copie exacte d'une ligne d'origine est une exception "
    "nommée. Les distances données à côté de leurs références ne sont pas des objectifs.",
}
