"""The HTML report: the demo's report (written by the real ``gpu-avatar demo``) has every
section and plot, references nothing outside itself, and renders in a real browser."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from cli_helpers import check_ok, parse_report, run_cli

import gpu_avatar as ga
from gpu_avatar.metrics.catalogue import PRIVACY_TARGETS, SIGNAL_TARGETS

pytestmark = pytest.mark.slow  # end-to-end: deselect with -m 'not slow'

# a report's own part opens on the verdict; a database's tables are judged by the database's
DATABASE_TABLE_SECTIONS = ["parameters", "timings", "privacy", "signal", "plots"]
TABLE_SECTIONS = ["verdict", *DATABASE_TABLE_SECTIONS]
TABLE_PLOTS = ["projection", "distributions", "correlations", "local-cloaking"]
DATABASE_SECTIONS = ["verdict", "parameters", "timings", "summary-matrix", "links",
                     "privacy-scenarios", "signal-scenarios", "tables"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EMBEDDED_IMAGE = re.compile(r'src="data:image/png;base64,[A-Za-z0-9+/=]+"')


@pytest.fixture(scope="module")
def demo_output(tmp_path_factory):
    output = tmp_path_factory.mktemp("demo") / "demo-output"
    done = check_ok(run_cli("demo", output))
    assert f"into {output}/" in done.stdout
    return output


def test_demo_writes_tables_summary_and_report(demo_output):
    rows = {"aids": 2139, "patient": 130, "doctor": 50, "visit": 300}
    for name, n in rows.items():
        assert len(pd.read_csv(demo_output / f"{name}_avatars.csv")) == n, name
    summary = (demo_output / "summary.txt").read_text()
    assert summary.startswith("# AIDS (ACTG 175): 2139 rows") and "Privacy summary" in summary
    assert "## Advice (advise_database(hospital, ncp=5, seed=0))" in summary
    assert "k = 20 meets every privacy target measured" in summary and "FAIL" not in \
        summary.split("## Privacy summary")[-1]
    assert (demo_output / "report.html").stat().st_size > 100_000
    assert (demo_output / "report.pdf").read_bytes().startswith(b"%PDF-")


def test_report_has_every_section_and_plot(demo_output):
    parsed = parse_report(demo_output / "report.html")
    text = (demo_output / "report.html").read_text()
    # the AIDS table, the database, then one part per database table
    assert [kind for kind, _ in parsed.parts] == ["table", "database", "table", "table", "table"]
    aids, database = parsed.parts[0][1], parsed.parts[1][1]
    assert [kind for kind, anchor in parsed.sections if anchor.startswith(aids + "-")] == \
        TABLE_SECTIONS
    top_level = [kind for kind, anchor in parsed.sections
                 if anchor in {f"{database}-{k}" for k in DATABASE_SECTIONS}]
    assert top_level == DATABASE_SECTIONS
    for table in ("patient", "doctor", "visit"):
        anchors = [kind for kind, anchor in parsed.sections
                   if anchor.startswith(f"{database}-table-{table}-")]
        assert anchors == DATABASE_TABLE_SECTIONS, table
    # AIDS: 4 plots; links: 2 histograms; patient, doctor: projection, distributions, (patient:
    # correlations), local cloaking; visit (not individual-level, no continuous pair): 2.
    assert parsed.plots[:4] == TABLE_PLOTS
    assert parsed.plots[4:6] == ["children-per-parent"] * 2
    assert parsed.plots[6:] == TABLE_PLOTS + ["projection", "distributions", "local-cloaking",
                                             "projection", "distributions"]
    assert len(parsed.sources) == len(parsed.plots)
    for source in parsed.sources:  # every image decodes to a PNG
        assert base64.b64decode(source.split(",", 1)[1]).startswith(PNG_SIGNATURE)
    # privacy and signal metrics with their targets and a verdict
    for metric, target in {**PRIVACY_TARGETS, **SIGNAL_TARGETS}.items():
        assert f"<code>{metric}</code>" in text
        assert f"<td>{target.text().replace('>', '&gt;').replace('<', '&lt;')}</td>" in text
    assert 'class="badge pass"' in text
    # the summary matrix is coloured: with the advised k the bundled database passes each cell
    assert set(parsed.cell_classes) >= {"pass", "empty"} and "fail" not in parsed.cell_classes
    assert "to_bottom_id_propagated" in text and "cardinality similarity" in text
    # the advice that set the database's k, with its candidates
    advice = [anchor for kind, anchor in parsed.sections if kind == "advice"]
    assert advice == [f"{database}-advice"] and "k = 20 (recommended)" in text


def test_report_references_nothing_outside_itself(demo_output):
    text = (demo_output / "report.html").read_text()
    parsed = parse_report(demo_output / "report.html")
    assert all(source.startswith("data:image/png;base64,") for source in parsed.sources)
    assert all(link.startswith("#") and link[1:] in parsed.ids for link in parsed.links)
    assert not parsed.tags & {"script", "link", "iframe", "object", "embed", "base", "video",
                              "audio", "source", "svg", "form"}
    # everything but the embedded images (whose base64 may hold '//' by chance)
    outside = EMBEDDED_IMAGE.sub("", text).lower()
    assert text.count("<img") == len(parsed.sources) == len(EMBEDDED_IMAGE.findall(text))
    for needle in ("http", "//", "url(", "@import", "src=", "file:"):
        assert needle not in outside, needle


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_report_renders_in_chromium(demo_output, tmp_path):
    """A headless screenshot (1280 x 4000) of the demo report is not blank: contrast, ink,
    and the plots' blue and orange (only the embedded PNGs are orange) are on it."""
    browser = _browser()
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs it in CI")
        pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1280,4000", (demo_output / "report.html").as_uri()],
        capture_output=True, timeout=120, check=False,
    )
    assert shot.is_file(), "chromium wrote no screenshot"
    from matplotlib.image import imread

    rgb = imread(shot)[..., :3].astype(float)  # PNG -> floats in [0, 1]
    assert rgb.shape[:2] == (4000, 1280)
    grey = rgb.mean(axis=2)
    red, green, blue = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    assert grey.std() > 0.08  # not a flat page
    assert (grey < 0.95).mean() > 0.05  # text, tables and plots cover the page
    assert ((red - blue > 0.3) & (red > green)).mean() > 0.005  # orange: avatars in the plots
    assert ((blue - red > 0.2) & (blue > green)).mean() > 0.005  # blue: originals, header
    assert ((green - red > 0.25) & (green > blue)).mean() > 0.0002  # green "pass" badges


def test_report_api_for_a_table(datasets_path, tmp_path):
    df = pd.read_csv(datasets_path / "wbcd.csv").iloc[:300]
    types = {"Sample_code_number": "identifier", "Class": "categorical"}
    result = ga.avatarize(df, k=10, ncp=2, seed=0, types=types)
    path = ga.write_report(result, tmp_path / "sub" / "report.html", name="WBCD")
    assert path == tmp_path / "sub" / "report.html"
    parsed = parse_report(path)
    assert [kind for kind, _ in parsed.sections] == TABLE_SECTIONS
    assert parsed.plots == TABLE_PLOTS
    assert "Sample_code_number" in path.read_text()  # listed as an identifier column


# ------------------------------------------------------------------ PDF, French, evidence
def _poppler(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is not installed: .ci/run installs poppler-utils in CI")
        pytest.skip(f"{tool} is not installed (apt-get install poppler-utils); CI runs this test")
    return path


@pytest.fixture(scope="module")
def evidence():
    """AIDS: training rows and a holdout, the advice, the avatars with the advised k, the
    attack-based risks."""
    from gpu_avatar.demo import load_aids

    df, types = load_aids()
    training, holdout = ga.split_holdout(df, 0.2, seed=0)
    advice = ga.advise(training, types=types, candidates=[10, 20], seed=1)
    result = ga.avatarize(training, **advice.parameters.replace(types=types).as_dict())
    attacks = ga.attack_metrics(training, result.avatars, holdout, types=types,
                                secrets=["cd40", "arms"], seed=0, singling_out_queries=200)
    return result, advice, attacks


def test_pdf_report_in_french_has_pages_words_and_a_first_page(evidence, tmp_path):
    from gpu_avatar.report.language import FRENCH_METRICS

    result, advice, attacks = evidence
    path = ga.write_report(result, tmp_path / "rapport.pdf", name="AIDS", language="fr",
                           advice=advice, attacks=attacks)
    assert path.read_bytes().startswith(b"%PDF-")
    info = subprocess.run([_poppler("pdfinfo"), path], capture_output=True, text=True,
                          check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    assert pages >= 4 and "Rapport d'avatarisation" in info
    text = subprocess.run([_poppler("pdftotext"), "-layout", path, "-"], capture_output=True,
                          text=True, check=True).stdout
    assert text.count("\f") >= pages - 1  # one form feed between pages
    for metric in [*PRIVACY_TARGETS, *SIGNAL_TARGETS]:  # in French words, not the API's
        assert not re.search(rf"(?<![\w-]){metric}(?![\w-])", text), metric
    for metric in ("hidden_rate", "local_cloaking", "hellinger_mean"):
        assert FRENCH_METRICS[metric] in text, metric
    for words in ("Paramètres de l'exécution", "Métriques de confidentialité",
                  "Métriques de signal", "Conseil de paramètres", "Risques mesurés par attaques",
                  "conforme", "k = 20 (recommandé)", "isolement multivarié",
                  "liaison", "inférence (cd40)", "intervalle", "page 2"):
        assert words in text, words
    for english in ("Privacy metrics", "Run parameters", "Attack-based risks", "originals"):
        assert english not in text, english

    # screenshots of the first two pages (poppler's renderer): real pages, the first with the
    # title's blue, the green "conforme" cells on one of them (the run's parameters and
    # timings may fill the first page, the privacy metrics then open the second)
    _poppler("pdftoppm")
    subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "2", path,
                    tmp_path / "page"], check=True, timeout=120)
    from matplotlib.image import imread

    first, second = (imread(page)[..., :3].astype(float)
                     for page in sorted(tmp_path.glob("page-*.png")))  # fmt: skip
    assert first.shape[0] > first.shape[1] > 400  # A4, portrait
    assert (first.mean(axis=2) < 0.9).mean() > 0.03  # text and tables cover the page
    red, green, blue = first[..., 0], first[..., 1], first[..., 2]
    assert ((blue - red > 0.15) & (blue > green)).mean() > 0.001  # blue headings
    both = np.concatenate([first, second])
    red, green, blue = both[..., 0], both[..., 1], both[..., 2]
    assert ((green - red > 0.05) & (green > blue)).mean() > 0.0005  # green verdict cells


def test_html_report_gets_the_advice_and_attack_sections_in_both_languages(evidence, tmp_path):
    result, advice, attacks = evidence
    english = ga.write_report(result, tmp_path / "report.html", advice=advice, attacks=attacks)
    french = ga.write_report(result, tmp_path / "rapport.html", advice=advice, attacks=attacks,
                             language="fr")
    for path in (english, french):
        assert [kind for kind, _ in parse_report(path).sections] == \
            TABLE_SECTIONS + ["advice", "attacks"]
    assert '<html lang="fr">' in french.read_text()
    text = english.read_text()
    assert "k = 20 (recommended)" in text and "Attack-based risks" in text
    assert "<code>inference (arms)</code>" in text
    risky, nothing = len(attacks.measurable_risks), len(attacks.learning_nothing)
    assert text.count('<span class="badge fail">measurable risk</span>') == risky
    assert text.count('<span class="badge none">learns nothing</span>') == nothing
    assert text.count('<span class="badge pass">no measurable risk</span>') == \
        len(attacks.results) - risky - nothing
    highest = attacks.highest()
    assert f"the highest, {highest.label}, {highest.risk:.3f}" in text  # in the lead too
    # the timings: the avatarization's steps, the metrics and the attacks
    for step in ("avatarization: fit", "avatarization: neighbours", "privacy metrics",
                 "signal metrics", "attacks"):
        assert f"<td>{step}</td>" in text, step


def _pdf_text(path) -> str:
    return subprocess.run([_poppler("pdftotext"), path, "-"], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def french_pdfs(evidence, tmp_path_factory):
    """The French PDFs of the AIDS table with its advice and attacks, and of the bundled
    database."""
    from gpu_avatar.demo import load_hospital_database

    result, advice, attacks = evidence
    folder = tmp_path_factory.mktemp("french")
    database = ga.avatarize_database(load_hospital_database(), k=10, seed=0)
    return [ga.write_report(result, folder / "table.pdf", name="AIDS", language="fr",
                            advice=advice, attacks=attacks),
            ga.write_report(database, folder / "database.pdf", language="fr")]


def _english_texts() -> list[str]:
    """What a French report must not show: every English text of the report whose French
    differs, as the phrases of two words or more between its fields, and the words of the
    API that a French report translates (steps of a run, scenarios, None)."""
    from gpu_avatar.metrics.catalogue import CATALOGUE, SCENARIOS
    from gpu_avatar.report import language

    phrases = {"None", "batch plan", "neighbours", "synthesis", "decode", "rebuild", *SCENARIOS}
    texts = {**language.FRENCH}
    for declared in (*CATALOGUE.values(), *SCENARIOS.values()):
        texts[declared.meaning["en"]] = declared.meaning["fr"]
    for english, french in texts.items():
        if french != english:
            for phrase in re.split(r"\{\w*\}", english):
                if len(re.findall(r"[^\W\d][\w'-]*", phrase)) >= 2:
                    phrases.add(" ".join(phrase.split()))
    return sorted(phrases)


def test_a_french_pdf_has_no_english(french_pdfs):
    for path in french_pdfs:
        text = " ".join(_pdf_text(path).replace("\u00a0", " ").split())
        left = [english for english in _english_texts()
                if re.search(rf"(?<![\w-]){re.escape(english)}(?![\w-])", text)]
        assert not left, (path.name, left)
    tables = " ".join(_pdf_text(french_pdfs[1]).split())
    for scenario in ("table seule", "enrichie par les enfants", "enfants liés au parent",
                     "enfants enrichis par le parent"):
        assert tables.count(scenario) >= 2, scenario  # in the tables, and explained


def test_pdf_tables_break_no_word_and_pages_are_filled(french_pdfs, tmp_path):
    """No word is cut across two lines (a line ending with the start of a word the report
    holds whole and the next starting with its end), and no page but the last is left
    two-thirds blank."""
    from matplotlib.image import imread

    word = re.compile(r"[^\W\d][\w'’-]*")
    for path in french_pdfs:
        lines = [line.strip() for line in _pdf_text(path).splitlines()]
        words = {w for line in lines for w in word.findall(line)}
        cut = []
        for line, following in zip(lines, lines[1:], strict=False):
            ends, starts = word.findall(line), word.findall(following)
            if ends and starts and line.endswith(ends[-1]) and following.startswith(starts[0]) \
                    and ends[-1] + starts[0] in words:
                cut.append((ends[-1], starts[0]))
        assert not cut, (path.name, cut)
        _poppler("pdftoppm")
        subprocess.run(["pdftoppm", "-png", "-r", "30", path, tmp_path / path.stem], check=True,
                       timeout=120)
        pages = sorted(tmp_path.glob(f"{path.stem}-*.png"))
        for page in pages[:-1]:
            grey = imread(page)[..., :3].mean(axis=2)
            ink = np.nonzero((grey < 0.95).any(axis=1))[0]
            body = ink[ink < 0.93 * len(grey)]  # the footer left out
            assert body.max() > len(grey) / 3, page.name


def test_french_counts_numbers_and_metric_names(tmp_path):
    """#37: "1 liens", "arrondi à 0.1" and the API's metric names in a French report."""
    from gpu_avatar.metrics.catalogue import CATALOGUE
    from gpu_avatar.report.language import FRENCH_METRICS, Translator

    french, english = Translator("fr"), Translator("en")
    assert [french.count(n, "link", "links") for n in (0, 1, 2)] == ["0 lien", "1 lien",
                                                                     "2 liens"]
    assert [english.count(n, "link", "links") for n in (0, 1)] == ["0 links", "1 link"]
    assert ga.rules.Rounding("x", 0.1).describe("fr") == "x arrondi à 0,1"
    assert ga.rules.Range("x", 0.5, 2).describe("fr") == "0,5 <= x <= 2"
    assert set(FRENCH_METRICS) == set(CATALOGUE)
    assert french.metric("inference (age)") == "inférence (age)"
    df = pd.DataFrame({"x": np.arange(60.0) % 7, "y": np.arange(60) % 3})
    path = ga.write_report(ga.avatarize(df, k=5, seed=0), tmp_path / "r.html", language="fr")
    raw = [name for name in CATALOGUE
           if re.search(rf"(?<![\w-]){name}(?![\w-])", path.read_text())]
    assert not raw


def test_every_report_text_has_its_french(evidence):
    """Every literal the report passes to the translator, every metric, attack and scenario
    of the catalogue, has a French text (a French report never falls back to English)."""
    import ast
    from pathlib import Path

    from gpu_avatar.metrics.catalogue import CATALOGUE, SCENARIOS
    from gpu_avatar.report import language

    for declared in (*CATALOGUE.values(), *SCENARIOS.values()):
        assert declared.meaning["fr"] and declared.meaning["fr"] != declared.meaning["en"]
    texts = []
    for source in Path(language.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "tr" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                texts.append(node.args[0].value)
    missing = sorted({t for t in texts if t not in language.FRENCH})
    assert not missing
    with pytest.raises(LookupError, match="no French text"):
        language.Translator("fr")("a text nobody translated")
    with pytest.raises(ga.AvatarError, match="language='de'"):
        ga.write_report(evidence[0], "x.pdf", language="de")
