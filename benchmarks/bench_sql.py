"""Databases in and out: a PostgreSQL database avatarized server to server, against the same
tables avatarized in memory from pandas, in one run.

The parent/child database of ``bench_multitable.py`` (default 10^5 parents, 10^6 children,
linear_sum_assignment), loaded once into a source database of the server (COPY, not timed). Two
jobs, each in a fresh interpreter (``_common.measure_isolated``, peak RSS of that process):

- ``pandas``: the tables built in memory, ``avatarize_database`` on them;
- ``sql``: ``Database.from_sql(source)``, ``avatarize_database``, ``result.to_sql(target)``.

Both give the same avatars (same seed, same rows in the same order): their hashes are compared.
The target's foreign keys are checked by the server, and its row counts against the source's.
Target: the SQL job within 1.5x the pandas job, under 4 GB peak.

    python benchmarks/bench_sql.py --url postgresql://postgres:pw@127.0.0.1:54329/postgres

``--url`` (default: ``$GA_TEST_POSTGRES_URL``, as ``.ci/postgres start DIR`` prints it) names a
server and a database to connect to; the script creates and drops ``ga_bench_source`` and
``ga_bench_target`` there.
"""

from __future__ import annotations

import argparse
import io
import os
import time
from typing import Any

import pandas as pd
from _common import environment_lines, markdown_table, measure_isolated, text_table
from bench_multitable import link_quality, make_database

SOURCE, TARGET = "ga_bench_source", "ga_bench_target"
DDL = """
CREATE TABLE parent (p_id BIGINT PRIMARY KEY, age DOUBLE PRECISION NOT NULL, sex TEXT NOT NULL,
                     income DOUBLE PRECISION NOT NULL, region TEXT NOT NULL);
CREATE TABLE child (c_id BIGINT PRIMARY KEY, p_id BIGINT NOT NULL REFERENCES parent (p_id),
                    amount DOUBLE PRECISION NOT NULL, kind TEXT NOT NULL, weekday TEXT NOT NULL,
                    duration DOUBLE PRECISION NOT NULL);
"""


def database_url(server: str, name: str) -> str:
    from gpu_avatar.sql.connection import parse_url

    return parse_url(server).set(database=name).render_as_string(hide_password=False)


def create_databases(server: str) -> None:
    import sqlalchemy as sa

    from gpu_avatar.sql.connection import parse_url

    admin = sa.create_engine(parse_url(server), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        for name in (SOURCE, TARGET):
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()


def load_source(server: str, tables: dict[str, pd.DataFrame]) -> float:
    """The tables COPied into the source database; seconds."""
    import psycopg

    start = time.perf_counter()
    url = database_url(server, SOURCE).replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as connection:
        connection.execute(DDL)
        for name in ("parent", "child"):
            frame = tables[name]
            buffer = io.StringIO()
            frame.to_csv(buffer, header=False, index=False)
            with connection.cursor().copy(
                f"COPY {name} ({', '.join(frame.columns)}) FROM STDIN WITH (FORMAT csv)"
            ) as copy:
                copy.write(buffer.getvalue())
    return time.perf_counter() - start


def _digest(tables: dict[str, pd.DataFrame]) -> dict[str, int]:
    """An order-sensitive hash of each avatar table, text and categories compared as text."""
    out = {}
    for name, frame in tables.items():
        as_text = frame.astype({c: str for c in frame.columns if not
                                pd.api.types.is_numeric_dtype(frame[c].dtype)})
        out[name] = int(pd.util.hash_pandas_object(as_text, index=False).sum())
    return out


def _database(tables: dict[str, pd.DataFrame]):
    import gpu_avatar as ga

    db = ga.Database()
    db.add_table("parent", tables["parent"], primary_key="p_id")
    db.add_table("child", tables["child"], primary_key="c_id")
    db.add_link("parent", "p_id", "child", "p_id", method="linear_sum_assignment")
    return db


def no_input() -> None:
    return None


def make_tables(n_parents: int, n_children: int, seed: int) -> dict[str, pd.DataFrame]:
    """The tables as a user holds them in pandas, their text as a database returns it (the
    bench_multitable categories as text), so that both jobs avatarize the same values."""
    tables = make_database(n_parents, n_children, seed)
    return {name: frame.astype({c: str for c in frame.columns
                                if isinstance(frame[c].dtype, pd.CategoricalDtype)})
            for name, frame in tables.items()}


def run_pandas(tables: dict[str, pd.DataFrame], k: int, ncp: int, seed: int) -> dict[str, Any]:
    import gpu_avatar as ga

    start = time.perf_counter()
    result = ga.avatarize_database(_database(tables), k=k, ncp=ncp, seed=seed)
    return {"avatarize": time.perf_counter() - start, "digest": _digest(result.tables),
            **link_quality(tables, result.tables)}


def run_sql(_: None, server: str, k: int, ncp: int, seed: int) -> dict[str, Any]:
    import gpu_avatar as ga

    times = {}
    start = time.perf_counter()
    db = ga.Database.from_sql(database_url(server, SOURCE))
    times["read"] = time.perf_counter() - start
    result = ga.avatarize_database(db, k=k, ncp=ncp, seed=seed)
    times["avatarize"] = time.perf_counter() - start - times["read"]
    written = result.to_sql(database_url(server, TARGET))
    times["write"] = time.perf_counter() - start - times["read"] - times["avatarize"]
    originals = {name: table.data for name, table in db.tables.items()}
    return {**times, "digest": _digest(result.tables), "written": written,
            **link_quality(originals, result.tables)}


def check_target(server: str) -> dict[str, int]:
    """Row counts and foreign keys without a parent, as the target server counts them."""
    import sqlalchemy as sa

    from gpu_avatar.sql.connection import parse_url

    engine = sa.create_engine(parse_url(database_url(server, TARGET)))
    with engine.connect() as connection:
        counts = {name: connection.exec_driver_sql(f"SELECT count(*) FROM {name}").scalar()
                  for name in ("parent", "child")}
        counts["orphans"] = connection.exec_driver_sql(
            "SELECT count(*) FROM child c LEFT JOIN parent p ON c.p_id = p.p_id "
            "WHERE p.p_id IS NULL").scalar()
        counts["constraints"] = connection.exec_driver_sql(
            "SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = "
            "'public' AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')").scalar()
    engine.dispose()
    return counts


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("GA_TEST_POSTGRES_URL"),
                        help="PostgreSQL server URL (default: $GA_TEST_POSTGRES_URL)")
    parser.add_argument("--parents", type=int, default=100_000, help="default: 100000")
    parser.add_argument("--children", type=int, default=1_000_000, help="default: 1000000")
    parser.add_argument("--k", type=int, default=20, help="neighbours (default: 20)")
    parser.add_argument("--ncp", type=int, default=5, help="projection axes (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="data and avatar seed (default: 0)")
    parser.add_argument("--markdown", action="store_true", help="also print Markdown tables")
    args = parser.parse_args(argv)
    if not args.url:
        parser.error("--url is required (or set GA_TEST_POSTGRES_URL)")
    return args


def main(argv: list[str] | None = None) -> None:
    from gpu_avatar.sql.connection import shown

    args = parse_args(argv)
    tables = make_database(args.parents, args.children, args.seed)
    create_databases(args.url)
    load_seconds = load_source(args.url, tables)
    print(f"loaded {args.parents:,} parents and {args.children:,} children into {SOURCE} in "
          f"{load_seconds:.1f} s ({shown(args.url)})", flush=True)
    del tables
    pandas = measure_isolated(make_tables, run_pandas,
                              input_args=(args.parents, args.children, args.seed),
                              work_kwargs=dict(k=args.k, ncp=args.ncp, seed=args.seed))
    print(f"pandas: {pandas.seconds:.1f} s, peak {pandas.peak_mb:.0f} MB", flush=True)
    sql = measure_isolated(no_input, run_sql,
                           work_kwargs=dict(server=args.url, k=args.k, ncp=args.ncp,
                                            seed=args.seed))
    print(f"sql: {sql.seconds:.1f} s, peak {sql.peak_mb:.0f} MB", flush=True)
    target = check_target(args.url)

    headers = ["job", "read s", "avatarize s", "write s", "job s", "peak MB",
               "cardinality sim.", "ref. integrity %"]
    rows = [
        ["pandas (in memory)", "-", f"{pandas.details['avatarize']:.1f}", "-",
         f"{pandas.seconds:.1f}", f"{pandas.peak_mb:,.0f}",
         f"{pandas.details['cardinality_similarity']:.3f}",
         f"{pandas.details['referential_integrity']:.1f}"],
        ["PostgreSQL -> PostgreSQL", f"{sql.details['read']:.1f}",
         f"{sql.details['avatarize']:.1f}", f"{sql.details['write']:.1f}", f"{sql.seconds:.1f}",
         f"{sql.peak_mb:,.0f}", f"{sql.details['cardinality_similarity']:.3f}",
         f"{sql.details['referential_integrity']:.1f}"],
    ]
    print()
    print(f"Parent/child database, {args.parents:,} parents, {args.children:,} children, "
          f"k = {args.k}, ncp = {args.ncp}, seed = {args.seed}, linear_sum_assignment")
    print()
    print(text_table(headers, rows))
    ratio = sum(sql.details[step] for step in ("read", "avatarize", "write")) / \
        pandas.details["avatarize"]
    same = sql.details["digest"] == pandas.details["digest"]
    print()
    print(f"sql (read + avatarize + write) / pandas (avatarize) time: {ratio:.2f}x (target "
          f"<= 1.5x; 'job s' adds the avatar hashes and link checks to both); sql peak "
          f"{sql.peak_mb:,.0f} MB (target < 4,000 MB); identical avatars: {same}")
    print(f"target database: {target['parent']:,} parents, {target['child']:,} children "
          f"(written {sql.details['written']}), {target['orphans']} foreign keys without a "
          f"parent, {target['constraints']} primary/foreign key constraints")
    if args.markdown:
        print()
        print(markdown_table(headers, rows))
        print()
        print("\n".join(environment_lines(["gpu_avatar", "sqlalchemy", "psycopg", "pandas"])))


if __name__ == "__main__":
    main()
