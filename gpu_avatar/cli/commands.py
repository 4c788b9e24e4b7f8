"""The ``gpu-avatar`` command (also ``python -m gpu_avatar``).

    gpu-avatar avatarize INPUT OUTPUT [--k 20|auto] [--ncp 5] [--seed S] [--types col=kind ...]
                         [--backend auto|cpu|gpu] [--report report.html|report.pdf]
                         [--language en|fr] [--holdout HOLDOUT]
    gpu-avatar avatarize INPUT.parquet OUTPUT_DIR --batch-size ROWS [--resume] (streamed:
                         ga.avatarize_parquet, one batch in memory; parts, _manifest.json,
                         _VERDICT.txt)
    gpu-avatar advise INPUT [--ncp 5] [--candidates 5 10 20] [--targets hidden_rate=95 ...]
                            [--holdout FILE]
                            (INPUT: a table, or a YAML database as for database, its
                            columns declared by --types TABLE.COLUMN=KIND;
                            avatarize --k auto [--candidates ...] [--targets ...]: advice first)
    gpu-avatar split INPUT TRAINING HOLDOUT [--fraction 0.2] [--seed S]
    gpu-avatar attacks ORIGINAL AVATARS --holdout HOLDOUT [--secrets col ...]
    gpu-avatar database SOURCE OUTPUT     (SOURCE: a database URL or a YAML file, see
                                          gpu_avatar.relational.config; OUTPUT: a URL or a folder;
                                          [--no-links]: release a database without foreign keys
                                          unlinked; [--types TABLE.COLUMN=KIND ...]: a column's
                                          kind, over the YAML's tables.TABLE.types)
    gpu-avatar metrics ORIGINAL UNSHUFFLED_AVATARS [--ncp 5] [--types col=kind ...]
    gpu-avatar report ORIGINAL UNSHUFFLED_AVATARS [--output report.html|report.pdf]
                      [--holdout HOLDOUT]
    gpu-avatar demo [OUTPUT_DIR]

``metrics`` and ``report`` refuse avatars that are not row-aligned with the originals (a
released, shuffled file: ``metrics/checks.py``) and, when the manifest that ``avatarize
--unshuffled-output FILE`` writes (``FILE.manifest.json``, ``manifest.py``) lies next to
them, originals other than those they were made from.

Tables are CSV or Parquet, by file name; databases are SQLAlchemy URLs (sqlite:///file.db,
postgresql://user:password@host/db), shown without their password. Progress bars go to stderr
when it is a terminal (``--quiet`` turns them off). Any bad input prints one line
``gpu-avatar: error: ...``, its fix in command-line words (in YAML words for a YAML source),
and exits with status 1 (2 for a bad command line); ``--debug`` shows the traceback instead.
Output paths are checked before any work; a command's outputs appear together when it
succeeds, or none (``gpu_avatar.outputs``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import re
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .. import __version__
from ..advice import COMMAND_LINE_NAMES, DATABASE_TARGETS, TABLE_TARGETS, check_targets
from ..encoding import IDENTIFIER
from ..encoding.identifying import knowingly_released_line
from ..encoding.kinds import is_number
from ..errors import (
    AvatarError,
    GpuAvatarError,
    among,
    foreign_words,
    import_extra,
    worded,
)
from ..metrics.attacks.singling_out import SINGLING_OUT_QUERIES
from ..metrics.catalogue import PRIVACY_TARGETS
from ..metrics.checks import check_same_table
from ..outputs import OutputPaths, atomic_path, check_output, staged_outputs
from ..parameters import (
    ADVICE_CANDIDATES,
    ADVICE_MARGIN,
    BACKENDS,
    CATEGORICAL_RULES,
    ENGINES,
    IMPUTATIONS,
    KIND_HEADS,
    METRIC_ENGINES,
    UNIQUE_COPIES_RULES,
    ZERO_DISTANCE_RULES,
    AvatarParameters,
    MetricOptions,
    check_declaration,
    check_rare_threshold,
    column_kind,
    kinds_listed,
)
from ..parsing import DECIMAL_MARKS
from ..planning.model import Plan
from ..report.language import LANGUAGES
from ..sql.write import IF_EXISTS
from .manifest import check_manifest, manifest_path, recorded_seed, write_manifest

DEFAULTS = AvatarParameters()
AUTO = "auto"  # --k auto: the advised k
# advice.next_steps in the words of a YAML database
YAML_NAMES = {**COMMAND_LINE_NAMES, "weights": "column_weights in the YAML file's tables"}
YAML_SUFFIXES = (".yaml", ".yml")  # advise INPUT: a database declared in YAML

PROG = "gpu-avatar"
EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


class UsageError(Exception):
    """A bad command line (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + message
        raise UsageError(f"{message} (see '{self.prog} --help')")


def one_line(message: Any) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


# ----------------------------------------------------------------------------- options
def _pairs(specs: Sequence[Sequence[str]] | None, option: str, value_name: str,
           key_name: str = "COLUMN"):
    """``KEY=VALUE`` items of a repeatable option, as (item, key, value) triples."""
    for spec in (item for group in specs or [] for item in group):
        column, sep, value = spec.rpartition("=")
        if not sep or not column:
            raise UsageError(f"{option} expects {key_name}={value_name}, got {spec!r}")
        yield spec, column, value


def _numbers(specs: Sequence[Sequence[str]] | None, option: str, value_name: str,
             key_name: str = "COLUMN") -> dict[str, float]:
    """``KEY=NUMBER`` items of a repeatable option, each number finite."""
    numbers: dict[str, float] = {}
    for spec, key, value in _pairs(specs, option, value_name, key_name):
        try:
            numbers[key] = float(value)
        except ValueError:
            numbers[key] = math.nan
        if not math.isfinite(numbers[key]):
            raise UsageError(f"{option} {spec}: {value!r} is not a number")
    return numbers


def _threshold(text: str, option: str) -> int | float | None:
    """A rare-modality threshold as written: a count, a share, or "none"."""
    if text.lower() == "none":
        return None
    try:
        value: int | float = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"{option}: expected a count, a share in (0, 1) or 'none', got "
                             f"{text!r}") from None
    try:
        return check_rare_threshold(option, value)
    except AvatarError as error:
        raise UsageError(str(error)) from None


def _parse_types(specs: Sequence[Sequence[str]] | None) -> dict[str, str]:
    """``--types COLUMN=KIND`` items; a KIND may hold ``=`` (``pseudonym:hmac:key_env=K``), so
    an item splits at the first ``=`` a kind follows. An error names the column only: the
    item could hold a key given by mistake."""
    types: dict[str, str] = {}
    for spec in (item for group in specs or [] for item in group):
        splits = [i for i, c in enumerate(spec) if c == "=" and i > 0]
        at = next((i for i in splits if spec[i + 1:].partition(":")[0] in KIND_HEADS), None)
        if at is None and len(splits) == 1 and ":" not in spec[splits[0]:]:
            at = splits[0]  # one word, a mistyped kind: said as it is
        if at is None:  # options after the "=" are not repeated: they could hold a key
            column = spec.partition("=")[0]
            raise UsageError(f"--types {column}=...: no kind after the '='; kinds: "
                             f"{kinds_listed()}")
        column, kind = spec[:at], spec[at + 1:]
        try:
            types[column] = check_declaration(kind, f"--types {column}")
        except AvatarError as error:
            raise UsageError(str(error)) from None
    return types


def _parse_targets(specs: Sequence[Sequence[str]] | None,
                   judged: Sequence[str]) -> dict[str, float] | None:
    """``--targets METRIC=THRESHOLD ...``, checked by the library's rule (``check_targets``)
    in the option's words; None when not given (the default targets)."""
    targets = _numbers(specs, "--targets", "THRESHOLD", "METRIC")
    try:
        return check_targets(targets, judged, "--targets") or None
    except AvatarError as error:
        raise UsageError(str(error)) from None


def column_types(df: pd.DataFrame, args: argparse.Namespace) -> dict[str, str]:
    """``--plan``'s kinds (reviewed), ``--categorical-max-distinct`` applied to the numeric
    columns it does not declare, then ``--types``."""
    types: dict[str, str] = {}
    if getattr(args, "plan", None) is not None:
        types = Plan.read(args.plan).types_for(df.columns, where=args.plan)
    if args.categorical_max_distinct is not None:
        for column in df.columns:
            series = df[column]
            if is_number(series.dtype) and column not in types:
                if series.nunique() <= args.categorical_max_distinct:
                    types[column] = "categorical"
    declared = _parse_types(args.types)
    unknown = [c for c in declared if c not in df.columns]
    if unknown:
        raise UsageError(f"--types names unknown column(s) {unknown}; columns: "
                         f"{among(df.columns, unknown)}")
    types.update(declared)
    return types


def database_types(specs: Sequence[Sequence[str]] | None, database: Any) -> None:
    """``--types TABLE.COLUMN=KIND`` items declared on ``database``'s tables, over what its
    YAML file or URL declared (the command line wins). A column name may hold dots: an item's
    table is the longest table name it starts with, then a dot. A table or column the
    database lacks is a usage error naming those it has."""
    for item, kind in _parse_types(specs).items():
        named = [t for t in database.tables if str(item).startswith(f"{t}.")]
        if not named:
            raise UsageError(f"--types {item}: name a table of the database, "
                             f"TABLE.COLUMN=KIND; tables: "
                             f"{among(database.tables, [str(item).partition('.')[0]])}")
        table = database.tables[max(named, key=len)]
        column = str(item)[len(table.name) + 1:]
        if column not in table.data.columns:
            raise UsageError(f"--types {item}: table {table.name} has no column {column!r}; "
                             f"columns: {among(table.data.columns, [column])}")
        table.types[column] = kind


def _metric_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The metric options given on the command line: the attacker's knowledge and, for
    ``metrics`` and ``report``, the projection axes, the reduction engine and the alignment
    test."""
    settings = {name: getattr(args, name) for name in ATTACKER_KNOWLEDGE}
    if args.command in ("metrics", "report"):
        settings.update(ncp=args.ncp, engine=args.engine,
                        check_alignment=not args.no_alignment_check)
    return {key: value for key, value in settings.items() if value is not None}


ATTACKER_KNOWLEDGE = ("known_variables", "target", "categorical_hidden_rate_variables")


def _add_common(parser: argparse.ArgumentParser, suppress: bool) -> None:
    default = argparse.SUPPRESS if suppress else False
    parser.add_argument("-q", "--quiet", action="store_true", default=default,
                        help="no progress bars")
    parser.add_argument("--debug", action="store_true", default=default,
                        help="show tracebacks and log each step")
    parser.add_argument("--overwrite", action="store_true", default=default,
                        help="replace outputs that already exist (refused otherwise)")


def _add_language(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--language", choices=LANGUAGES, default="en",
                        help="the report's language (default en)")


def _add_types(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--types", "--column", nargs="+", action="append", dest="types",
                        metavar="COLUMN=KIND",
                        help="the column plan: continuous, categorical, datetime or "
                        "datetime:FORMAT (variables); identifier (fresh values) or "
                        "pseudonym:STRATEGY[:OPTIONS] (e.g. pseudonym:hmac:key_env=GA_KEY; the "
                        "key itself is never an option); excluded:row_order or "
                        "excluded:coordinate_similarity; dropped")
    parser.add_argument("--categorical-max-distinct", type=int, metavar="N",
                        help="numeric columns with at most N distinct values are categorical "
                        "(the Avatar paper uses 10); --types wins")
    _add_plan(parser)
    _add_sep(parser)


def _add_plan(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plan", metavar="PLAN.yaml",
                        help="the reviewed plan (gpu-avatar plan SOURCE -o PLAN.yaml): every "
                        "column's kind, every table's treatment; --types wins over it")


def _add_database_types(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--types", "--column", nargs="+", action="append", dest="types",
                        metavar="TABLE.COLUMN=KIND",
                        help="a column's kind in one table, e.g. visit.comment=dropped "
                        "patient.code=identifier (the kinds of --types of avatarize), over the "
                        "YAML file's tables.TABLE.types")


def _add_sep(parser: argparse.ArgumentParser) -> None:
    """How CSV inputs are read (detected unless given) and outputs written (as the input)."""
    parser.add_argument("--sep", help="CSV separator (default: detected among , ; tab |)")
    parser.add_argument("--decimal", choices=DECIMAL_MARKS,
                        help="decimal mark of the CSV numbers (default: detected)")
    parser.add_argument("--encoding", help="text encoding of the CSV files (default: detected: "
                        "UTF-8, UTF-8 or UTF-16 with a BOM, Windows-1252, Latin-1)")
    parser.add_argument("--date-format", nargs="+", action="append",
                        metavar="[COLUMN=]FORMAT",
                        help="strptime format of dates, for every column or one (e.g. "
                        "birth=%%d/%%m/%%Y); default: detected")
    parser.add_argument("--na-values", nargs="+", action="append", metavar="[COLUMN=]MARKER",
                        help="text read as missing in every column or one (e.g. exer=None); "
                        "default: empty cells, and NA . - None... in columns of numbers or "
                        "dates only (a text column keeps them as values)")
    parser.add_argument("--output-sep", help="separator of the CSV outputs (default: the "
                        "input's)")
    parser.add_argument("--output-decimal", choices=DECIMAL_MARKS,
                        help="decimal mark of the CSV outputs (default: the input's)")
    parser.add_argument("--output-encoding", help="text encoding of the CSV outputs (e.g. "
                        "utf-8; default: the input's)")


def _date_format(args: argparse.Namespace) -> str | dict[str, str] | None:
    """``--date-format``: one format for every column, or COLUMN=FORMAT items."""
    items = [item for group in args.date_format or [] for item in group]
    if not items:
        return None
    if len(items) == 1 and "=" not in items[0]:
        return items[0]
    return {column: value for _, column, value in _pairs([items], "--date-format", "FORMAT")}


def _na_values(args: argparse.Namespace) -> list[str] | dict[str, list[str]] | None:
    """``--na-values``: markers for every column, or COLUMN=MARKER items."""
    items = [item for group in args.na_values or [] for item in group]
    if not items or not any("=" in item for item in items):
        return items or None
    markers: dict[str, list[str]] = {}
    for _, column, marker in _pairs([items], "--na-values", "MARKER"):
        markers.setdefault(column, []).append(marker)
    return markers


def read_input(path: str | Path, args: argparse.Namespace):
    """A table file read as the options say (``files.read_table_file``); how it was read is
    printed once the command succeeds, before its results (a failure prints its one error
    line alone)."""
    from ..files import check_encoding, read_table_file

    if args.output_encoding:  # refused before the work, not after it
        check_encoding(args.output_encoding, "--output-encoding")
    table = read_table_file(path, sep=args.sep, decimal=args.decimal, encoding=args.encoding,
                            date_format=_date_format(args), na_values=_na_values(args))
    if table.frame.empty:
        raise AvatarError(f"{path} holds no row, its header only: give a file with rows")
    args.tables_read.append(table)
    return table


def write_options(table: Any, args: argparse.Namespace) -> dict[str, Any]:
    """How CSV outputs are written: as the input ``table`` was, unless the options say."""
    options = table.write_options
    if args.output_sep:
        options["sep"] = args.output_sep
    if args.output_decimal:
        options["decimal"] = args.output_decimal
    if args.output_encoding:
        options["encoding"] = args.output_encoding
    return options


def _add_metric_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--known-variables", nargs="+", metavar="COLUMN",
                        help="what an attacker knows, for the attribute-based metrics")
    parser.add_argument("--target", metavar="COLUMN", help="the attribute an attacker infers")
    parser.add_argument("--categorical-hidden-rate-variables", nargs="+", metavar="COLUMN",
                        help="variables for the categorical hidden rate")


def _add_parameters(parser: argparse.ArgumentParser, defaults: AvatarParameters | None,
                    advised: bool = False) -> None:
    """The avatarization parameters (``AvatarParameters``); ``defaults`` None: unset unless
    given (a database run takes its YAML file's values, overridden by the options given);
    ``advised``: advise's, k swept (no --k) and the others unset unless given, ``defaults``
    only shown (a table's defaults, or a YAML database's values)."""

    def default(name: str) -> Any:
        return None if defaults is None or advised else getattr(defaults, name)

    def shown(name: str) -> str:
        if defaults is None:
            return ""
        return f" (default {getattr(defaults, name)}" + (", or the YAML file's)" if advised
                                                         else ")")

    if not advised:
        parser.add_argument("--k", type=_k_option, default=default("k"),
                            help="neighbours per avatar, or 'auto' (avatarize: the advised k)"
                            + shown("k"))
    parser.add_argument("--ncp", type=int, default=default("ncp"),
                        help="projection axes" + shown("ncp"))
    parser.add_argument("--seed", type=int, help="seed for a reproducible run")
    parser.add_argument("--backend", choices=BACKENDS, default=default("backend"))
    parser.add_argument("--imputation", choices=IMPUTATIONS, default=default("imputation"),
                        help="temporary filling of missing values" + shown("imputation"))
    parser.add_argument("--categorical", choices=CATEGORICAL_RULES,
                        default=default("categorical"),
                        help="how avatar modalities are chosen" + shown("categorical"))
    parser.add_argument("--zero-distance", choices=ZERO_DISTANCE_RULES,
                        default=default("zero_distance"),
                        help="weight of a neighbour at distance 0 (an exact duplicate): all "
                        "of it (paper: a duplicated row comes out as its own avatar), or as the "
                        "nearest distinct neighbour's (bounded)"
                        + shown("zero_distance"))
    parser.add_argument("--engine", choices=ENGINES, default=default("engine"),
                        help="the exact neighbour search" + shown("engine"))
    parser.add_argument("--batch-size", type=int, metavar="ROWS",
                        help="avatarize in batches of this many rows (large tables)")
    parser.add_argument("--rare-modalities", metavar="COUNT|SHARE",
                        help="group the modalities held by fewer rows than COUNT, or by a "
                        "smaller share of the rows than SHARE, before the projection: text "
                        "ones into --rare-modality-name, ordered ones with their neighbours")
    parser.add_argument("--rare-modality-name", metavar="NAME",
                        help="the modality rare text modalities are grouped into"
                        + shown("rare_modality_name"))
    parser.add_argument("--no-calibrate-shares", dest="calibrate_shares", action="store_const",
                        const=False, help="keep the drawn modalities as they come, without "
                        "bringing each share of a modality or of missing cells back to the "
                        "original's")
    parser.add_argument("--unique-copies", choices=UNIQUE_COPIES_RULES,
                        help="an avatar identical to a row one original alone holds: keep it, "
                        "or redraw it until it is not" + shown("unique_copies"))
    if defaults is not None:
        parser.add_argument("--column-weights", nargs="+", action="append",
                            metavar="COLUMN=WEIGHT", help="weight of a column in the projection")
        parser.add_argument("--column-rare-modalities", nargs="+", action="append",
                            metavar="COLUMN=COUNT|SHARE|none",
                            help="a column's own --rare-modalities threshold (none: never "
                            "grouped)")


def _add_advice_options(parser: argparse.ArgumentParser) -> None:
    """What advice tries and must meet (advise, avatarize --k auto)."""
    parser.add_argument("--candidates", nargs="+", type=int, metavar="K",
                        help="values of k that advice tries (advise, avatarize --k auto; "
                        f"default: {' '.join(map(str, ADVICE_CANDIDATES))})")
    defaults = " ".join(f"{name}={target.threshold:g}" for name, target in
                        PRIVACY_TARGETS.items() if target.threshold is not None)
    parser.add_argument("--targets", nargs="+", action="append", metavar="METRIC=THRESHOLD",
                        help="privacy targets that advice must meet, in place of the defaults "
                        f"they name ({defaults}; a YAML database's advice judges hidden_rate "
                        f"and local_cloaking), each with advice's {100 * ADVICE_MARGIN:g} %% "
                        "margin")


def _advice_options(args: argparse.Namespace, judged: Sequence[str] = TABLE_TARGETS):
    """``--candidates`` and ``--targets`` as ``advise`` keywords; for avatarize, with
    ``--k auto`` only."""
    given = [option for option, value in (("--candidates", args.candidates),
                                          ("--targets", args.targets)) if value]
    if given and args.command == "avatarize" and args.k != AUTO:
        raise UsageError(f"{' and '.join(given)} set the advice that --k auto takes: add --k "
                         "auto")
    return {"candidates": args.candidates, "targets": _parse_targets(args.targets, judged)}


def _k_option(text: str) -> int | str:
    if text == AUTO:
        return AUTO
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', got {text!r}") from None


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The avatarization parameters given on the command line (``--k auto`` left out; advise
    has no --k)."""
    k = getattr(args, "k", None)
    if k == AUTO and args.command != "avatarize":  # database
        from ..sql.connection import looks_like_url

        how = ("name the database in a YAML file (url: ...) and run 'gpu-avatar advise "
               "db.yaml'" if looks_like_url(args.source) else
               f"run 'gpu-avatar advise {args.source}'")
        raise UsageError(f"--k auto is for avatarize; for a database, {how} for the advised k")
    names = ("k", "ncp", "seed", "backend", "imputation", "categorical", "zero_distance",
             "engine")
    names = names[1:] if k in (AUTO, None) else names
    settings = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    if args.batch_size is not None:
        settings["batch_size"] = args.batch_size
    if getattr(args, "column_weights", None):
        settings["column_weights"] = _numbers(args.column_weights, "--column-weights", "WEIGHT")
    if args.rare_modalities is not None:
        settings["rare_modalities"] = _threshold(args.rare_modalities, "--rare-modalities")
    if getattr(args, "column_rare_modalities", None):
        settings["column_rare_modalities"] = {
            column: _threshold(value, f"--column-rare-modalities {spec}")
            for spec, column, value in _pairs(args.column_rare_modalities,
                                              "--column-rare-modalities", "COUNT|SHARE|none")}
    for name in ("rare_modality_name", "calibrate_shares", "unique_copies"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    return settings


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Anonymise tables and databases with the Avatar "
                     "method; measure privacy and signal; write HTML reports.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_common(parser, suppress=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                     parser_class=_Parser)

    command = commands.add_parser(
        "avatarize", help="avatarize one table (CSV or Parquet)",
        epilog="A Parquet INPUT (a file or a folder) with --batch-size ROWS and an OUTPUT folder "
        "(no .csv or .parquet suffix) is streamed (ga.avatarize_parquet): one batch in memory "
        "at a time, then the whole release's privacy metrics (the originals and the avatars "
        "in memory for that step) and verdict; OUTPUT gets "
        "part-NNNNN.parquet, _manifest.json, _VERDICT.txt and _SUCCESS.")
    command.add_argument("input", help="the original table")
    command.add_argument("output", help="where to write the avatars (.csv or .parquet; a folder "
                         "for a streamed run)")
    _add_parameters(command, DEFAULTS)
    command.add_argument("--report", metavar="PATH",
                         help="also write a report (.html or .pdf)")
    command.add_argument("--holdout", metavar="FILE",
                         help="rows of the same table kept out of INPUT (gpu-avatar split): the "
                         "attack-based risks are measured against them, for the verdict, the "
                         "report and --k auto")
    _add_advice_options(command)
    _add_language(command)
    command.add_argument("--unshuffled-output", metavar="FILE",
                         help="also write the unshuffled avatars (row i = avatar of row i; "
                         "SENSITIVE, for `gpu-avatar metrics` only, never release it) and "
                         "FILE.manifest.json (the originals' hash, parameters, seed)")
    _add_types(command)
    command.add_argument("--rules", metavar="FILE.yaml",
                         help="rules every released row keeps: a YAML list of rules, e.g. "
                         "- {rule: inequality, low: entry, high: end, strict: true} (see "
                         "gpu_avatar.rules)")
    _add_metric_options(command)
    command.add_argument("--resume", action="store_true",
                         help="a streamed run: finish the interrupted run in OUTPUT")
    _add_common(command, suppress=True)
    command.set_defaults(handler=cmd_avatarize)

    command = commands.add_parser(
        "advise", help="the k that meets every privacy target with the least signal loss")
    command.add_argument("input", help="the original table, or a YAML file declaring a "
                         "database (as for database): the k whose privacy summary passes; "
                         "--types TABLE.COLUMN=KIND declares its columns")
    _add_parameters(command, DEFAULTS, advised=True)
    _add_advice_options(command)
    command.add_argument("--holdout", metavar="FILE",
                         help="rows of the same table kept out of INPUT (gpu-avatar split): the "
                         "candidates that meet the targets are attacked too (a table INPUT)")
    command.add_argument("--output", metavar="FILE",
                         help="also write the candidates table (.csv or .json)")
    _add_types(command)
    _add_common(command, suppress=True)
    command.set_defaults(handler=cmd_advise)

    command = commands.add_parser(
        "database", help="avatarize a database: a server (URL) or tables declared in YAML")
    command.add_argument("source", help="database URL (sqlite:///file.db, postgresql://...) "
                         "or YAML file (tables, links, parameters)")
    command.add_argument("output", help="database URL for the avatar tables, or a folder for "
                         "them (CSV or Parquet), the summary and the report")
    _add_parameters(command, None)
    command.add_argument("--schema", help="the source database's schema (a URL source)")
    command.add_argument("--tables", nargs="+", metavar="TABLE",
                         help="read only these tables (a URL source)")
    command.add_argument("--primary-key", nargs="+", action="append", metavar="TABLE=COLUMN",
                         help="the key of a table that declares none (a URL source)")
    command.add_argument("--output-schema", help="the target database's schema (a URL output)")
    command.add_argument("--if-exists", choices=IF_EXISTS, default="fail",
                         help="when the target already holds the tables (default fail)")
    command.add_argument("--format", choices=("csv", "parquet"), default="csv",
                         help="format of the avatar tables in a folder (default csv)")
    command.add_argument("--report", metavar="PATH",
                         help="report path, .html or .pdf (default OUTPUT/report.html for a "
                         "folder)")
    _add_language(command)
    command.add_argument("--no-report", action="store_true", help="write no report")
    command.add_argument("--no-links", action="store_true",
                         help="release a database of several tables that declares no foreign "
                         "key with its tables unlinked (refused otherwise, showing the links "
                         "suggested from key names and values)")
    _add_plan(command)
    _add_database_types(command)
    _add_common(command, suppress=True)
    command.set_defaults(handler=cmd_database)

    command = commands.add_parser(
        "plan", help="propose every column's kind and every table's treatment, for review")
    command.add_argument("source", help="a table (CSV or Parquet), a folder of tables, a "
                         "database URL or a database YAML file")
    command.add_argument("-o", "--output", metavar="PLAN.yaml",
                         help="write the plan there (default: print it)")
    _add_sep(command)
    _add_common(command, suppress=True)
    command.set_defaults(handler=cmd_plan)

    for name, handler, text in (
        ("metrics", cmd_metrics, "privacy and signal metrics of avatars against originals"),
        ("report", cmd_report, "HTML report of avatars against originals"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("original", help="the original table")
        command.add_argument("avatars", metavar="unshuffled_avatars",
                             help="the avatars, row i = avatar of original row i")
        command.add_argument("--ncp", type=int, default=5,
                             help="axes of the metric projection (default 5)")
        command.add_argument("--backend", choices=BACKENDS, default=DEFAULTS.backend)
        command.add_argument("--engine", choices=METRIC_ENGINES, default="auto",
                             help="the exact distance-rank reduction (default auto)")
        command.add_argument("--no-alignment-check", action="store_true",
                             help="skip the test that refuses avatars not row-aligned with the "
                             "originals (a shuffled file), for unshuffled avatars it cannot "
                             "tell: fewer than 40 rows, k close to the row count")
        if name == "metrics":
            command.add_argument("--output", metavar="FILE",
                                 help="also write the metrics (.csv or .json)")
        else:
            command.add_argument("-o", "--output", default="report.html", metavar="PATH",
                                 help="report path, .html or .pdf (default report.html)")
            command.add_argument("--title", help="the report's title")
            command.add_argument("--holdout", metavar="FILE",
                                 help="rows of the same table kept out of the avatarization "
                                 "(gpu-avatar split): the attack-based risks are measured "
                                 "against them, for the verdict and the report, as by "
                                 "avatarize --holdout")
            _add_language(command)
        _add_types(command)
        _add_metric_options(command)
        _add_common(command, suppress=True)
        command.set_defaults(handler=handler)

    command = commands.add_parser(
        "split", help="draw a random holdout from a table, before avatarizing the rest")
    command.add_argument("input", help="the table")
    command.add_argument("training", help="where to write the rows to avatarize")
    command.add_argument("holdout", help="where to write the holdout (never released)")
    command.add_argument("--fraction", type=float, default=0.2,
                         help="share of the rows held out (default 0.2)")
    command.add_argument("--seed", type=int, help="seed for a reproducible split")
    _add_sep(command)
    _add_common(command, suppress=True)
    command.set_defaults(handler=cmd_split)

    command = commands.add_parser(
        "attacks", help="singling-out, linkability and inference risks against a holdout")
    command.add_argument("original", help="the rows that were avatarized")
    command.add_argument("avatars", help="their avatars (the release, any row order)")
    command.add_argument("--holdout", required=True, metavar="FILE",
                         help="rows of the same table kept out of the avatarization")
    command.add_argument("--secrets", nargs="+", metavar="COLUMN",
                         help="columns an inference attack guesses (default: every variable)")
    command.add_argument("--linkability-columns", nargs="+", action="append", metavar="COLUMN",
                         help="one of the attacker's two sets of columns (give it twice; "
                         "default: the variables split in two halves)")
    command.add_argument("--neighbours", type=int, default=1,
                         help="avatars per half a link may go through (default 1)")
    command.add_argument("--queries", type=int, default=SINGLING_OUT_QUERIES,
                         help=f"singling-out queries (default {SINGLING_OUT_QUERIES})")
    command.add_argument("--seed", type=int, help="seed for the queries and the baselines")
    command.add_argument("--backend", choices=BACKENDS, default=DEFAULTS.backend)
    command.add_argument("--output", metavar="FILE", help="also write the risks (.csv or .json)")
    _add_types(command)
    _add_common(command, suppress=True)
    command.set_defaults(handler=cmd_attacks)

    command = commands.add_parser("demo", help="the README demo: AIDS table and a database")
    command.add_argument("output_dir", nargs="?", default="demo-output",
                         help="output folder (default demo-output)")
    _add_common(command, suppress=True)
    command.set_defaults(handler=cmd_demo)
    return parser


# ----------------------------------------------------------------------------- commands
def _say(*parts: Any) -> None:
    print(*parts, flush=True)


def _outputs(args: argparse.Namespace, inputs: dict[str, Any]) -> OutputPaths:
    """The command's outputs, none of its ``inputs``; existing ones replaced if
    ``--overwrite``."""
    return OutputPaths(inputs, overwrite=args.overwrite)


def _table_file(path: Path) -> None:
    """An output table's format, from its name (pyarrow installed for Parquet)."""
    from ..files import table_format

    if table_format(path) == "parquet":
        import_extra("pyarrow", "parquet", "writing Parquet files")


def _frame_format(path: Path) -> str:
    """``"csv"`` or ``"json"``, the format of an ``--output`` table of results."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise AvatarError(f"{path}: a table of results is .csv or .json")
    return suffix[1:]


def _privacy_line(privacy: Any) -> str:
    """The privacy headline: the main figures, the targets met, each target missed (the
    column-wise direct match naming its worst column)."""
    frame = privacy.to_frame()
    judged = frame["passed"].dropna()
    missed = []
    for metric in judged.index[~judged.astype(bool)]:
        worst = (f" (column {privacy.worst_direct_match_column!r})"
                 if metric == "column_direct_match_protection" else "")
        missed.append(f"{metric} {frame.loc[metric, 'value']:.4g}{worst}")
    copies = (f"; exact copies {privacy.exact_copies} ({privacy.exact_copies_text()})"
              if privacy.exact_copies else "")
    return (f"privacy: hidden rate {privacy.hidden_rate:.1f} %, median local cloaking "
            f"{privacy.local_cloaking:g}; {int(judged.astype(bool).sum())} of {len(judged)} "
            "targets met" + (f"; not met: {', '.join(missed)}" if missed else "") + copies)


def cmd_avatarize(args: argparse.Namespace, progress: bool) -> int:
    import gpu_avatar as ga

    if _streamed(args):
        return _avatarize_stream(args, progress)
    if args.resume:
        raise UsageError("--resume finishes a streamed run: give a Parquet INPUT, an OUTPUT "
                         "folder and --batch-size")
    from ..files import write_table
    from ..progress import Steps
    from ..relational.config import load_rules_file

    if any(getattr(args, name) is not None for name in ATTACKER_KNOWLEDGE) and not (
            args.report or args.holdout):
        raise UsageError(
            "--known-variables, --target and --categorical-hidden-rate-variables set the "
            "privacy metrics of the evidence: add --report PATH or --holdout FILE"
        )
    advice_options = _advice_options(args)
    paths = _outputs(args, {"INPUT": args.input, "--holdout": args.holdout})
    output = paths.add("OUTPUT", args.output, _table_file)
    unshuffled = paths.add("--unshuffled-output", args.unshuffled_output, _table_file)
    manifest = unshuffled and paths.add("--unshuffled-output", manifest_path(unshuffled))
    if args.report:
        from ..report import report_format

        paths.add("--report", args.report, report_format)
    rules = args.rules and load_rules_file(args.rules)  # before the work
    steps = Steps(progress, "gpu-avatar avatarize")
    with steps.step("read"):
        table = read_input(args.input, args)
        df = table.frame
        holdout = None
        if args.holdout:  # read and checked before the work
            holdout = _cast_like(df, read_input(args.holdout, args).frame)
            check_same_table(df, holdout, f"--holdout {args.holdout}", same_rows=False)
    settings = _settings(args)
    settings.pop("k", None)  # given as k= below, "auto" included
    with staged_outputs():  # the avatars, the unshuffled avatars and the report, or none
        release = ga.prepare_release(
            df, k=args.k, holdout=holdout, types=column_types(df, args), **advice_options,
            options=_metric_settings(args), report=args.report,
            measure=bool(args.report or args.holdout), language=args.language,
            name=Path(args.input).name, rules=rules, progress=progress, **settings)
        result = release.result
        with steps.step("write"):
            written = write_options(table, args)
            write_table(result.avatars, output, **written)
            if unshuffled:
                write_table(result.sensitive_unshuffled_avatars, unshuffled, **written)
                with atomic_path(manifest) as temporary:
                    write_manifest(temporary, df, args.input, result)
    steps.close()
    if release.advice is not None:
        _say(f"advice: {release.advice.reason}")
    copies = result.unique_copies_text()
    _say(f"wrote {len(result.avatars)} avatars of {args.input} to {output} in "
         f"{sum(result.timings.values()):.2f} s (k {result.parameters.k}, ncp "
         f"{result.parameters.ncp}, seed {result.seed}" + (f"; {copies})" if copies else ")"))
    if unshuffled:
        _say(f"wrote the unshuffled avatars to {unshuffled} (sensitive: do not release) and "
             f"what they were made from to {manifest}")
    knowingly = knowingly_released_line(result.knowingly_released)
    if knowingly:
        _say(knowingly)
    if release.attacks is not None:
        _say(_attacks_line(release.attacks))
        _say(f"attack seed {release.attack_seed}: gpu-avatar attacks {args.input} {output} "
             f"--holdout {args.holdout} --seed {release.attack_seed}, with this command's "
             "--types and reading options, measures the same risks")
    if args.report:
        _say(f"wrote the report to {args.report}")
    if release.verdict is None:
        _say("no evidence measured: add --report PATH or --holdout FILE (which also measures "
             "the attacks) for the privacy metrics and the release verdict")
    else:
        _say(_privacy_line(release.privacy))
        _conclude(args, release.verdict)
    return 0


def _streamed(args: argparse.Namespace) -> bool:
    """Whether ``avatarize`` streams: ``--batch-size`` with a Parquet INPUT (a file or a
    folder) and an OUTPUT folder (no table suffix)."""
    from ..files import CSV_SUFFIXES, PARQUET_SUFFIXES

    output = Path(args.output)
    if args.batch_size is None or output.suffix.lower() in (*CSV_SUFFIXES, *PARQUET_SUFFIXES,
                                                            ".gz"):
        return False
    source = Path(args.input)
    if not (source.is_dir() or source.suffix.lower() in PARQUET_SUFFIXES):
        raise UsageError(f"OUTPUT {args.output} is a folder, for a streamed run, which reads a "
                         "Parquet INPUT (a file or a folder); give OUTPUT.csv or "
                         "OUTPUT.parquet to avatarize INPUT in memory")
    return True


def _avatarize_stream(args: argparse.Namespace, progress: bool) -> int:
    """``avatarize INPUT.parquet OUTPUT_DIR --batch-size ROWS``: ``ga.avatarize_parquet``,
    then the whole release's privacy metrics and verdict, printed and written beside the
    parts."""
    import gpu_avatar as ga

    from ..relational.config import load_rules_file

    refused = [option for option, given in (
        ("--k auto", args.k == AUTO), ("--report", args.report), ("--holdout", args.holdout),
        ("--unshuffled-output", args.unshuffled_output),
        ("--categorical-max-distinct", args.categorical_max_distinct is not None),
        *((f"--{n.replace('_', '-')}", getattr(args, n) is not None)
          for n in ATTACKER_KNOWLEDGE)) if given]
    if refused:
        raise UsageError(f"{', '.join(refused)} not with a streamed run (--batch-size and an "
                         "OUTPUT folder): declare kinds with --types or --plan, measure "
                         "evidence on a sample in memory")
    rules = args.rules and load_rules_file(args.rules)
    result = ga.avatarize_parquet(
        args.input, args.output, types=_parse_types(args.types), plan=args.plan, rules=rules,
        resume=args.resume, progress=_bar(progress, "gpu-avatar avatarize"), **_settings(args))
    parameters = result.manifest["parameters"]
    _say(f"wrote {result.n_rows} avatars of {args.input} to {args.output} in "
         f"{result.n_batches} parts of at most {parameters['batch_size']} rows (k "
         f"{parameters['k']}, ncp {parameters['ncp']}, seed {result.seed})")
    knowingly = result.manifest.get("knowingly_released")
    if knowingly:
        _say(f"released as declared: {'; '.join(knowingly)}")
    worst = result.batch_privacy_metrics().loc["worst"]
    _say(f"worst batch: hidden rate {worst['hidden_rate']:.1f} %, median local cloaking "
         f"{worst['local_cloaking']:g} (each batch's avatars against its own originals)")
    _say("whole release " + _privacy_line(result.privacy_metrics()))
    _say(f"wrote the verdict to {Path(args.output) / '_VERDICT.txt'}")
    _conclude(args, result.verdict())
    return 0


def _bar(progress: bool, description: str) -> Any:
    """A progress callback drawing this command's bar, or None: the library's own bar
    (``progress=True``) would also print the verdict, which the command prints last."""
    if not progress:
        return None
    from ..progress import Steps

    steps = Steps(True, description)

    def advance(step: str, done: int, total: int | None) -> None:
        steps.total = total
        steps.start(step)
        steps.advance()

    return advance


def _conclude(args: argparse.Namespace, verdict: Any) -> None:
    """The release verdict, to be printed as the command's last lines (after how the files
    were read)."""
    args.verdict = verdict


def cmd_advise(args: argparse.Namespace, progress: bool) -> int:
    import gpu_avatar as ga

    if Path(args.input).suffix.lower() in YAML_SUFFIXES:
        return _advise_database(args, progress)
    options, settings = _advice_options(args), _settings(args)
    output = _outputs(args, {"INPUT": args.input, "--holdout": args.holdout}).add(
        "--output", args.output, _frame_format)
    df = read_input(args.input, args).frame
    holdout = None
    if args.holdout is not None:
        holdout = _cast_like(df, read_input(args.holdout, args).frame)
        check_same_table(df, holdout, f"--holdout {args.holdout}", same_rows=False)
    advice = ga.advise(df, types=column_types(df, args), holdout=holdout, progress=progress,
                       **options, **settings)
    _say_advice(advice, COMMAND_LINE_NAMES)
    if advice.k is not None:
        _say(f"reproduce: gpu-avatar avatarize {args.input} AVATARS --k {advice.k} "
             f"--ncp {advice.ncp} --seed {advice.parameters.seed}")
    if output:
        _write_frame(advice.candidates.reset_index(), output, "candidates")
    return 0


TABLE_OPTIONS = ("types", "categorical_max_distinct", "column_weights", "sep", "decimal",
                 "encoding", "date_format", "na_values")  # a YAML database: per table


def _advise_database(args: argparse.Namespace, progress: bool) -> int:
    """``advise`` on a database declared in YAML: ``advise_database`` with the file's
    parameters and overrides, the options given replacing its parameters."""
    import gpu_avatar as ga

    from ..relational.config import load_database_config

    if args.holdout is not None:
        raise UsageError("--holdout: the attacks are measured on one table; advise on a YAML "
                         "database judges its privacy summary matrix")
    given = [f"--{name.replace('_', '-')}" for name in TABLE_OPTIONS
             if getattr(args, name) is not None and name != "types"]  # TABLE.COLUMN=KIND
    if given:
        raise UsageError(f"{', '.join(given)}: for a table INPUT; a YAML database declares "
                         "these per table (tables: {TABLE: {types: ..., column_weights: ..., "
                         "sep: ...}})")
    options, settings = _advice_options(args, DATABASE_TARGETS), _settings(args)
    output = _outputs(args, {"INPUT": args.input}).add("--output", args.output, _frame_format)
    config = load_database_config(args.input)
    database_types(args.types, config.database)
    advice = ga.advise_database(
        config.database, parameters=config.parameters.replace(**settings),
        overrides=config.overrides, assignment_block_size=config.assignment_block_size,
        progress=progress, plan=_database_plan(args, config), **options,
    )
    _say_advice(advice, YAML_NAMES)
    if advice.k is not None:
        series = {link.child: link.parent for link in config.database.links
                  if link.method == "time_series"}
        capped = []
        for name, table in config.database.tables.items():
            if name in series:
                _say(f"  {name}: a time series, avatarized with {series[name]}")
                continue
            own = config.overrides.get(name, {})
            run = advice.overrides.get(name, {})
            k, ncp = run.get("k", advice.k), run.get("ncp", advice.ncp)
            note = ""
            if "k" in own:
                note = f" (its own, in {args.input})"
            elif "k" in run:
                note = f" (below its {len(table.data)} rows)"
                capped.append(f"tables.{_yaml_name(name)}.k: {k}")
            _say(f"  {name}: k = {k}, ncp = {ncp}{note}")
        _say(f"reproduce: gpu-avatar database {args.input} OUTPUT --k {advice.k} "
             f"--ncp {advice.ncp} --seed {advice.parameters.seed}"
             + (f", with {', '.join(capped)} set in {args.input}" if capped else ""))
    if output:
        _write_frame(advice.candidates.reset_index(), output, "candidates")
    return 0


def _say_advice(advice: Any, names: dict[str, str]) -> None:
    """The candidates an advice measured, and its recommendation or what to try next in the
    command's ``names`` of the options."""
    from ..advice import next_steps

    shown = [c for c in advice.candidates.columns  # the measured metrics, not each flag
             if not c.endswith(" passed") and advice.candidates[c].notna().any()]
    with pd.option_context("display.max_rows", None, "display.max_columns", None,
                           "display.width", 200):
        _say(advice.candidates[shown].to_string(float_format=lambda v: f"{v:.4g}"))
    _say(f"advice: {advice.shortfall}; {next_steps(names)}" if advice.k is None
         else f"advice: {advice.reason}")


def _write_frame(frame: pd.DataFrame, path: Path, what: str) -> None:
    """``frame`` to a .csv or .json file (checked by ``_frame_format``)."""
    with atomic_path(path) as temporary:
        if _frame_format(path) == "json":
            frame.to_json(temporary, orient="records", indent=2)
        else:
            frame.to_csv(temporary, index=False)
    _say(f"wrote the {what} to {path}")


def _read_pair(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str],
                                                  pd.DataFrame | None]:
    """Original, avatars and ``--holdout`` (None without one), identifier columns dropped,
    avatar and holdout dtypes cast to the original's where CSV inference differs (e.g.
    integers read back as floats); the avatars' manifest, if any, must name these originals,
    and its run's column kinds are used unless ``--types`` or ``--categorical-max-distinct``
    is given."""
    original = read_input(args.original, args).frame
    recorded = check_manifest(args.avatars, original, args.original)
    avatars = read_input(args.avatars, args).frame
    holdout = (None if getattr(args, "holdout", None) is None
               else read_input(args.holdout, args).frame)
    given = args.types or args.categorical_max_distinct is not None
    types = column_types(original, args) if given or recorded is None else recorded
    identifiers = [c for c, kind in types.items() if column_kind(kind) == IDENTIFIER]
    original = original.drop(columns=[c for c in identifiers if c in original])
    avatars = avatars.drop(columns=[c for c in identifiers if c in avatars])
    types = {c: kind for c, kind in types.items() if c not in identifiers}
    if holdout is not None:
        holdout = check_same_table(
            original, _cast_like(original, holdout.drop(
                columns=[c for c in identifiers if c in holdout])),
            f"--holdout {args.holdout}", same_rows=False)
    return original, _cast_like(original, avatars), types, holdout


def _cast_like(original: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    """``other`` with the original's dtypes where CSV inference differs (integers read back as
    floats, say); what cannot be cast is left for the metrics to name."""
    for column in original.columns.intersection(other.columns):
        if other[column].dtype != original[column].dtype:
            try:
                other[column] = other[column].astype(original[column].dtype)
            except (TypeError, ValueError):
                pass
    return other


def cmd_metrics(args: argparse.Namespace, progress: bool) -> int:
    import gpu_avatar as ga

    from ..progress import Steps

    output = _outputs(args, {"ORIGINAL": args.original, "UNSHUFFLED_AVATARS": args.avatars}).add(
        "--output", args.output, _frame_format)
    steps = Steps(progress, "gpu-avatar metrics", total=3)
    with steps.step("read"):
        original, avatars, types, _ = _read_pair(args)
    with steps.step("privacy metrics"):
        privacy = ga.privacy_metrics(original, avatars, MetricOptions(**_metric_settings(args)),
                                     types=types, backend=args.backend)
    with steps.step("signal metrics"):
        signal = ga.signal_metrics(original, avatars, types=types, backend=args.backend)
    frame = pd.concat({"privacy": privacy.to_frame(), "signal": signal.to_frame()},
                      names=["kind", "metric"])
    with pd.option_context("display.max_rows", None, "display.width", 120):
        _say(frame.to_string(float_format=lambda v: f"{v:.4g}"))
    _say(_privacy_line(privacy))
    if output:
        _write_frame(frame.reset_index(), output, "metrics")
    _conclude(args, ga.release_verdict(privacy))
    return 0


def cmd_report(args: argparse.Namespace, progress: bool) -> int:
    import gpu_avatar as ga

    from ..progress import Steps
    from ..report import report_format, table_part, write_document
    from ..report.language import Translator

    _outputs(args, {"ORIGINAL": args.original, "UNSHUFFLED_AVATARS": args.avatars,
                    "--holdout": args.holdout}).add("--output", args.output, report_format)
    steps = Steps(progress, "gpu-avatar report", total=2 + bool(args.holdout))
    with steps.step("read"):
        original, avatars, types, holdout = _read_pair(args)
    with steps.step("privacy metrics"):
        privacy = ga.privacy_metrics(original, avatars, MetricOptions(**_metric_settings(args)),
                                     types=types, backend=args.backend, holdout=holdout)
    attacks = None
    if holdout is not None:
        with steps.step("attacks"):
            attacks = _release_attacks(args, original, avatars, holdout, types)
    part = table_part(
        original, avatars, name=Path(args.original).name, types=types, backend=args.backend,
        privacy=privacy, attacks=attacks, progress=progress,
        parameters={"original": args.original, "avatars": args.avatars, "ncp": args.ncp,
                    **({"holdout": args.holdout} if args.holdout else {})},
        language=args.language,
    )
    title = args.title or Translator(args.language)("Avatarization report")
    write_document(args.output, title, [part])
    _say(f"wrote the report to {args.output}")
    if attacks is not None:
        _say(_attacks_line(attacks))
    _conclude(args, ga.release_verdict(privacy, attacks))
    return 0


def _release_attacks(args: argparse.Namespace, original: pd.DataFrame, avatars: pd.DataFrame,
                     holdout: pd.DataFrame, types: dict[str, str]) -> Any:
    """The attacks of ``avatarize --holdout`` on the release of these unshuffled avatars: in
    its row order and with its attack seed, from the run's seed that their manifest records,
    so that both commands give one verdict (without a manifest: as given, a fresh seed)."""
    import gpu_avatar as ga

    from ..metrics.holdout import attack_seed
    from ..parameters import seed_sequence
    from ..synthesis import shuffle_order

    seed = recorded_seed(args.avatars)
    if seed is not None:
        order = shuffle_order(len(avatars), seed_sequence(seed))
        avatars, seed = avatars.iloc[order].reset_index(drop=True), attack_seed(seed)
    return ga.attack_metrics(original, avatars, holdout, types=types, seed=seed,
                             backend=args.backend)


def cmd_plan(args: argparse.Namespace, progress: bool) -> int:
    """Propose the plan of SOURCE: printed, or written to --output (atomically)."""
    import gpu_avatar as ga

    from ..sql.connection import looks_like_url

    source = Path(args.source)
    output = None if args.output is None else _outputs(
        args, {} if looks_like_url(args.source) else {"SOURCE": args.source}).add(
        "--output", args.output)
    read = {name: value for name, value in (
        ("sep", args.sep), ("decimal", args.decimal), ("encoding", args.encoding),
        ("date_format", _date_format(args)), ("na_values", _na_values(args)))
        if value is not None}
    if looks_like_url(args.source) or source.suffix.lower() in YAML_SUFFIXES:
        if read:
            raise UsageError(f"--{next(iter(read)).replace('_', '-')}: for a table or a folder "
                             "of tables; a database YAML says how each table is read")
        proposed = ga.plan(args.source)
    elif source.is_dir():
        proposed = ga.plan(args.source, **read)
    else:
        proposed = ga.plan(read_input(source, args).frame)
        proposed.source = str(source)
    text = proposed.to_yaml()
    if output is None:
        print(text, end="", flush=True)
        return 0
    with staged_outputs(), atomic_path(output) as temporary:
        temporary.write_text(text, encoding="utf-8")
    pending = [name for table in proposed.tables.values() for name, _ in table.awaiting()]
    _say(f"wrote {output}: {sum(len(t.columns) for t in proposed.tables.values())} columns, "
         f"{len(pending)} proposal(s) to review; edit it, then pass --plan {output}")
    return 0


def _database_plan(args: argparse.Namespace, config: Any) -> Any:
    """The plan of a database run: --plan, or the YAML's own (``plan:``, or its tables'
    ``review``/``treatment``); both is refused, as one would hide the other's decisions."""
    if args.plan is not None and config.plan is not None:
        raise UsageError("--plan is given, yet the YAML file has a plan of its own (plan:, or "
                         "tables' review or treatment): keep one of them")
    return args.plan if args.plan is not None else config.plan


def _read_database(args: argparse.Namespace, progress: bool):
    """The database and its run settings, from a URL or a YAML file."""
    import gpu_avatar as ga

    from ..relational.config import DatabaseConfig, load_database_config
    from ..sql.connection import looks_like_url

    if not looks_like_url(args.source):
        given = [f"--{n.replace('_', '-')}" for n in ("schema", "tables", "primary_key")
                 if getattr(args, n)]
        if given:
            raise UsageError(f"{', '.join(given)} go with a database URL source, not a YAML "
                             "file (which declares its tables)")
        return load_database_config(args.source)
    db = ga.Database.from_sql(args.source, schema=args.schema, tables=args.tables,
                              primary_keys=_primary_keys(args), progress=progress)
    return DatabaseConfig(db, url=args.source)


def _primary_keys(args: argparse.Namespace) -> dict[str, str]:
    keys = {}
    for item in (i for group in args.primary_key or [] for i in group):
        table, sep, column = item.partition("=")
        if not sep or not table or not column:
            raise UsageError(f"--primary-key expects TABLE=COLUMN, got {item!r}")
        keys[table] = column
    return keys


def _yaml_name(name: Any) -> str:
    """A table or column name as a YAML scalar (quoted where YAML would read it otherwise)."""
    import yaml

    text = str(name)
    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) and yaml.safe_load(text) == text
    return text if plain else json.dumps(text)


def _url_yaml(args: argparse.Namespace) -> list[str]:
    """The YAML lines that read the database as the command line does."""
    from ..sql.connection import identity, parse_url

    secret = "  # your password in place of ***" if parse_url(args.source).password else ""
    lines = [f"url: {identity(args.source)}{secret}"]
    lines += [f"schema: {_yaml_name(args.schema)}"] if args.schema else []
    lines += [f"include: [{', '.join(map(_yaml_name, args.tables))}]"] if args.tables else []
    keys = _primary_keys(args)
    lines += ["tables:"] if keys else []
    return lines + [f"  {_yaml_name(t)}: {{primary_key: {_yaml_name(c)}}}" for t, c in keys.items()]


def _refuse_unlinked(args: argparse.Namespace, config: Any) -> None:
    """A database read from a URL whose tables no foreign key links is not released unlinked
    unawares: the links ``suggest_links`` finds are printed as YAML lines, and the run refused
    unless ``--no-links`` (YAML: ``no_links: true``)."""
    from ..sql.connection import looks_like_url, shown

    db = config.database
    if config.url is None or len(db.tables) < 2 or db.links or args.no_links or config.no_links:
        return
    entries = [
        f"  - {{parent: {_yaml_name(row.parent)}, child: {_yaml_name(row.child)}, "
        f"foreign_key: {_yaml_name(row.foreign_key)}}}  # {row.containment:.0%} of "
        f"{row.values} values among {row.parent}.{row.parent_key}; {row.name_evidence}"
        for row in db.suggest_links().itertuples()
    ] or ["  - {parent: PARENT, child: CHILD, foreign_key: COLUMN}  # none found from key "
          "names and values: name yours"]
    if looks_like_url(args.source):
        where = "in a YAML file (db.yaml, say), then run gpu-avatar database db.yaml OUTPUT"
        head = _url_yaml(args)
        fix = "declare its links in a YAML file (suggested above), or pass --no-links"
    else:
        where, head = f"in {args.source}", []
        fix = f"add its links to {args.source} (suggested above), or no_links: true"
    print(f"{shown(config.url)} declares no foreign key between its {len(db.tables)} tables "
          f"({', '.join(db.tables)}): each would be avatarized alone and released unlinked.\n"
          f"Links suggested from key names and values, to keep or edit {where}:\n\n"
          + "\n".join([*head, "links:", *entries]) + "\n", file=sys.stderr, flush=True)
    raise AvatarError(f"{shown(config.url)} has {len(db.tables)} tables and no link between "
                      f"them; {fix} to release the tables unlinked")


def cmd_database(args: argparse.Namespace, progress: bool) -> int:
    import gpu_avatar as ga

    from ..demo import database_summary
    from ..files import write_table
    from ..progress import Steps
    from ..sql.connection import identity, looks_like_url, parse_url, shown

    settings = _settings(args)
    to_database = looks_like_url(args.output)
    if to_database and looks_like_url(args.source) and args.schema == args.output_schema \
            and identity(args.source) == identity(args.output):
        raise UsageError("the output is the source database: write the avatars to another "
                         "database or schema (--output-schema)")
    if to_database:
        parse_url(args.output)  # a malformed URL is refused before any work
    elif args.output_schema:
        raise UsageError("--output-schema goes with a database URL output, not a folder")
    paths = _outputs(args, {} if looks_like_url(args.source) else {"SOURCE": args.source})
    output = None if to_database else paths.add("OUTPUT", args.output, folder=True)
    report = None
    if not args.no_report and (args.report or output is not None):
        from ..report import report_format, write_report

        report = paths.add("--report" if args.report else "OUTPUT",
                           args.report or output / "report.html", report_format)
    if output is not None:
        summary = paths.add("OUTPUT", output / "summary.txt")
    steps = Steps(progress, "gpu-avatar database")
    with steps.step("read"):
        config = _read_database(args, progress)
        database_types(args.types, config.database)
    _refuse_unlinked(args, config)
    if output is not None:  # the tables' files, now that their names are known
        paths.add_inputs({f"SOURCE's table {name}": path for name, path in config.paths.items()})
        files = {name: paths.add("OUTPUT", output / f"{name}.{args.format}", _table_file)
                 for name in config.database.tables}  # a table left out is not written
    if to_database and args.if_exists == "fail":  # refused before the work, not after
        from ..sql.write import refuse_existing

        refuse_existing(args.output, args.output_schema, list(config.database.tables))
    start = time.perf_counter()
    result = ga.avatarize_database(
        config.database, parameters=config.parameters.replace(**settings),
        overrides=config.overrides, assignment_block_size=config.assignment_block_size,
        progress=progress, plan=_database_plan(args, config),
    )
    seconds = time.perf_counter() - start
    with staged_outputs():  # every output or none: a database last (in one transaction)
        with steps.step("privacy scenarios"):
            privacy = result.privacy_metrics()
        text = database_summary(result, seconds, privacy=privacy)
        if output is not None:
            with steps.step("write"):
                released = {**result.tables, **result.treated}
                for name, path in files.items():
                    if name in released:
                        write_table(released[name], path,
                                    **config.write_options.get(name, {}))
                with atomic_path(summary) as temporary:
                    temporary.write_text(text)
        if report is not None:
            name = (Path(parse_url(args.source).database or "database").stem
                    if looks_like_url(args.source) else Path(args.source).stem)
            write_report(result, report, privacy=privacy, seconds=seconds, progress=progress,
                         name=name, language=args.language)
        if to_database:
            with steps.step("write"):
                result.to_sql(args.output, schema=args.output_schema,
                              if_exists=args.if_exists, progress=progress)
    where = shown(args.output) if to_database else f"{output}/"
    _say(f"wrote {len(result.tables)} avatar tables to {where} in {seconds:.2f} s "
         f"(seed {result.parameters.seed})")
    _say(text)
    if report is not None:
        _say(f"wrote the report to {report}")
    steps.close()
    _conclude(args, ga.release_verdict(privacy))
    return 0


def cmd_split(args: argparse.Namespace, progress: bool) -> int:
    import gpu_avatar as ga

    from ..files import write_table

    paths = _outputs(args, {"INPUT": args.input})
    training_path = paths.add("TRAINING", args.training, _table_file)
    holdout_path = paths.add("HOLDOUT", args.holdout, _table_file)
    table = read_input(args.input, args)
    training, holdout = ga.split_holdout(table.frame, args.fraction, seed=args.seed)
    with staged_outputs():
        write_table(training, training_path, **write_options(table, args))
        write_table(holdout, holdout_path, **write_options(table, args))
    _say(f"wrote {len(training)} training rows to {training_path} and {len(holdout)} holdout "
         f"rows to {holdout_path} (avatarize the first; keep the second private, for "
         "gpu-avatar attacks)")
    return 0


def _attacks_line(attacks: Any) -> str:
    """The attacks' headline: the highest risk of an attack that beats a random guess; an
    attack that does not learns nothing, whatever its risk."""
    highest = attacks.highest()
    if highest is None:
        return ("attacks: none does better than a random guess or than on the holdout, so none "
                "learns anything from the release")
    line = (f"attacks: {len(attacks.measurable_risks)} of {len(attacks.results)} with a "
            f"measurable risk; highest {highest.label} {highest.risk:.3f} "
            f"[{highest.risk_low:.3f}, {highest.risk_high:.3f}]")
    if attacks.learning_nothing:
        line += ("; no better than a random guess or than on the holdout, so learning nothing: "
                 + ", ".join(r.label for r in attacks.learning_nothing))
    return line


def cmd_attacks(args: argparse.Namespace, progress: bool) -> int:
    import gpu_avatar as ga

    from ..progress import Steps

    output = _outputs(args, {"ORIGINAL": args.original, "AVATARS": args.avatars,
                          "--holdout": args.holdout}).add("--output", args.output, _frame_format)
    with Steps(progress, "gpu-avatar attacks", total=1).step("read"):
        original = read_input(args.original, args).frame
        avatars = _cast_like(original, read_input(args.avatars, args).frame)
        holdout = _cast_like(original, read_input(args.holdout, args).frame)
    halves = args.linkability_columns
    if halves is not None and len(halves) != 2:
        raise UsageError(f"--linkability-columns goes twice (the attacker's two sources), got "
                         f"{len(halves)}")
    attacks = ga.attack_metrics(
        original, avatars, holdout, secrets=args.secrets, linkability_columns=halves,
        n_neighbours=args.neighbours, singling_out_queries=args.queries,
        types=column_types(original, args), seed=args.seed, backend=args.backend,
        progress=progress,
    )
    frame = attacks.to_frame()
    shown = ["attack", "secret", "risk", "risk_low", "risk_high", "attack_rate",
             "control_rate", "baseline_rate", "n_attacks", "measurable_risk",
             "better_than_baseline"]
    with pd.option_context("display.max_rows", None, "display.width", 200):
        _say(frame[shown].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    _say(_attacks_line(attacks))
    if output:
        _write_frame(frame, output, "risks")
    return 0


def cmd_demo(args: argparse.Namespace, progress: bool) -> int:
    from ..demo import run_demo

    output = check_output("OUTPUT_DIR", args.output_dir, folder=True)
    if not args.overwrite and output.is_dir() and any(output.iterdir()):
        raise AvatarError(f"OUTPUT_DIR {output} is not empty: pass --overwrite to replace the "
                          "demo's files there, or choose another folder")
    run_demo(output, progress=progress)
    return 0


# ----------------------------------------------------------------------------- main
def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    from ..sql.connection import masked

    print(f"{PROG}: warning: {masked(one_line(message))}", file=sys.stderr, flush=True)


def _progress_wanted(args: argparse.Namespace) -> bool:
    if args.quiet or not sys.stderr.isatty():
        return False
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (0 ok, 1 bad input, 2 bad command line)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as error:
        print(f"{PROG}: error: {one_line(error)}", file=sys.stderr)
        return EXIT_USAGE
    if args.debug:
        logging.basicConfig(level=logging.INFO, format=f"{PROG}: %(message)s")
    from ..progress import close_all

    with warnings.catch_warnings():
        if not args.debug:
            warnings.showwarning = _show_warning
        try:
            args.tables_read, args.verdict = [], None
            results = io.StringIO()  # said after how the inputs were read, once they succeed
            with contextlib.redirect_stdout(results):  # a failure says its one line alone
                status = args.handler(args, _progress_wanted(args))
            for table in args.tables_read:
                _say(table.summary())
            print(results.getvalue(), end="", flush=True)
            for line in args.verdict.lines() if args.verdict is not None else ():
                _say(line)
            return status
        except KeyboardInterrupt:
            close_all()
            print(f"{PROG}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except Exception as error:
            close_all()
            if args.debug:
                raise
            print(f"{PROG}: error: {describe(error, _entry(args))}", file=sys.stderr)
            return EXIT_USAGE if isinstance(error, UsageError) else EXIT_ERROR


def _entry(args: argparse.Namespace) -> str:
    """Whose words a fix is given in: the command line's, or a YAML source's."""
    from ..sql.connection import looks_like_url

    source = getattr(args, "source", None)  # gpu-avatar database's
    if args.command == "advise":
        source = args.input if Path(args.input).suffix.lower() in YAML_SUFFIXES else None
    return "yaml" if source is not None and not looks_like_url(source) else "cli"


def describe(error: BaseException, entry: str = "cli") -> str:
    """One line for the user, no password in it: the message of an expected error (its fix in
    the words of ``entry``, "cli" or "yaml"), the type of another."""
    from ..sql.connection import masked

    if isinstance(error, (GpuAvatarError, UsageError)):
        text = worded(error, entry)
    elif isinstance(error, OSError) and error.strerror:
        text = error.strerror + (f": {error.filename}" if error.filename else "")
    else:
        text = f"unexpected {foreign_words(error)} (rerun with --debug for the traceback)"
    return masked(one_line(text))


if __name__ == "__main__":
    raise SystemExit(main())
