"""Runs anonymeter (the test-only oracle of the attacks) in its own interpreter.

anonymeter pins numpy < 1.27, so it lives in a virtual environment of its own (the Makefile's
``.venv-anonymeter``); tests/metrics/test_attacks.py calls this script with that interpreter:

    python anonymeter_oracle.py FOLDER

FOLDER holds original.csv, avatars.csv, holdout.csv and config.json (``categorical`` columns,
``secrets``, ``halves``, ``n_attacks``, ``singling_out_queries``, ``n_cols``, ``seed``); the
risks are written to FOLDER/anonymeter.json.
"""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from anonymeter.evaluators import (
    InferenceEvaluator,
    LinkabilityEvaluator,
    SinglingOutEvaluator,
)


def main(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    tables = []
    for name in ("original", "avatars", "holdout"):
        df = pd.read_csv(folder / f"{name}.csv")
        for column in config["categorical"]:  # categories as text: anonymeter's categories
            df[column] = df[column].astype(str)
        tables.append(df)
    original, avatars, holdout = tables
    np.random.seed(config["seed"])  # linkability and inference sample with numpy's global state
    warnings.simplefilter("ignore")
    out = {}

    def record(name, evaluator):
        results = evaluator.results(confidence_level=0.95)
        risk = evaluator.risk(confidence_level=0.95)
        out[name] = {
            "risk": risk.value, "low": risk.ci[0], "high": risk.ci[1],
            "attack_rate": results.attack_rate.value,
            "control_rate": results.control_rate.value,
            "baseline_rate": results.baseline_rate.value,
        }

    for mode in ("univariate", "multivariate"):
        evaluator = SinglingOutEvaluator(
            ori=original, syn=avatars, control=holdout, n_attacks=config["singling_out_queries"],
            n_cols=config["n_cols"], seed=config["seed"],
        )
        record(f"singling_out_{mode}", evaluator.evaluate(mode=mode))
    evaluator = LinkabilityEvaluator(
        ori=original, syn=avatars, control=holdout, n_attacks=config["n_attacks"],
        aux_cols=tuple(config["halves"]), n_neighbors=1,
    )
    record("linkability", evaluator.evaluate(n_jobs=1))
    for secret in config["secrets"]:
        evaluator = InferenceEvaluator(
            ori=original, syn=avatars, control=holdout, n_attacks=config["n_attacks"],
            aux_cols=[c for c in original.columns if c != secret], secret=secret,
            regression=secret not in config["categorical"],  # numbers: within 5 % of the guess
        )
        record(f"inference:{secret}", evaluator.evaluate(n_jobs=1))
    (folder / "anonymeter.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
