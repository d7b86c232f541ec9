"""The warehouse a dbt export reads: the world's DuckDB file, or a PostgreSQL database that
``dabench world export --postgres DSN`` loaded (``world export --dbt DIR --warehouse
FILE|DSN``).

Each kind writes its own ``profiles.yml`` (two targets: ``build`` writes the marts, and the
default ``readonly`` is what servers and MetricFlow use) and the SQL fragments that differ
between the two dialects.

- DuckDB: the marts go to the project's own file (``semantic.duckdb``), the warehouse is
  attached read-only; ``readonly`` opens the mart file with ``access_mode: READ_ONLY``.
- PostgreSQL: the marts go to the schema ``marts`` of the same database, built with the DSN's
  role (it needs ``CREATE`` on the database). ``readonly`` connects as a SELECT-only login
  role, so the engine refuses any write whatever SQL a server sends. That role is ``--reader
  DSN`` when given, else ``dabench_dbt_reader``, created (or re-granted) with the warehouse
  DSN (which then needs ``CREATEROLE``) with a random password. dbt grants it ``SELECT`` on
  every mart at every build (``+grants``) and ``USAGE`` on the schema (an ``on-run-end`` hook of
  the ``build`` target only).

The profile holds the passwords, so ``profiles.yml`` is written with mode 0600.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dabench.errors import UserInputError
from dabench.world.constants import (
    COLLECTOR_SWITCH,
    FISCAL_YEAR_START_MONTH,
    LOCAL_UTC_OFFSET_HOURS,
)
from dabench.world.load import World

Dialect = Literal["duckdb", "postgres"]
MART_FILE = "semantic.duckdb"
"""The DuckDB kind's own file (marts and time spine), beside ``dbt_project.yml``."""
WAREHOUSE_ALIAS = "warehouse"
"""The name the DuckDB warehouse is attached under (sources' ``database``)."""
MART_SCHEMA = "marts"
"""The schema the marts and the time spine are built in (both kinds)."""
READER_ROLE = "dabench_dbt_reader"
"""The SELECT-only role a PostgreSQL export creates when no ``--reader`` is given."""
SPINE_FIRST, SPINE_END = "2020-01-01", "2030-01-01"
"""The time spine's days: from the first, up to (not including) the end."""


def is_dsn(value: str | Path) -> bool:
    """True for a ``postgres://`` or ``postgresql://`` DSN."""
    return str(value).startswith(("postgres://", "postgresql://"))


def local_ts_sql(column: str, dialect: Dialect) -> str:
    """``column`` (an event time) in company local time: shifted by the local offset before
    the collector switch (those events were stored in UTC)."""
    hours = (
        f"interval ({LOCAL_UTC_OFFSET_HOURS}) hour"
        if dialect == "duckdb"
        else f"interval '{LOCAL_UTC_OFFSET_HOURS} hours'"
    )
    return (
        f"case when {column} < timestamp '{COLLECTOR_SWITCH} 00:00:00' "
        f"then {column} + {hours} else {column} end"
    )


def hour_sql(column: str, dialect: Dialect) -> str:
    """The hour of day (0-23) of a timestamp, as an integer."""
    return f"hour({column})" if dialect == "duckdb" else f"cast(extract(hour from {column}) as int)"


def time_spine_sql(dialect: Dialect) -> str:
    """One row per day with the fiscal calendar (years start in month
    :data:`FISCAL_YEAR_START_MONTH` and are named after the calendar year they start in)."""
    start = FISCAL_YEAR_START_MONTH
    if dialect == "duckdb":
        return f"""
select cast(d as date) as date_day,
       concat('FY', fy, '-Q', ((month(d) + 12 - {start}) % 12) // 3 + 1)
         as fiscal_quarter,
       concat('FY', fy) as fiscal_year
from (select d, case when month(d) >= {start} then year(d) else year(d) - 1
                    end as fy
      from range(date '{SPINE_FIRST}', date '{SPINE_END}', interval 1 day) t(d))"""
    return f"""
select d as date_day,
       concat('FY', fy, '-Q', ((m + 12 - {start}) % 12) / 3 + 1) as fiscal_quarter,
       concat('FY', fy) as fiscal_year
from (select cast(g as date) as d, cast(extract(month from g) as int) as m,
             case when extract(month from g) >= {start} then cast(extract(year from g) as int)
                  else cast(extract(year from g) as int) - 1 end as fy
      from generate_series(date '{SPINE_FIRST}', date '{SPINE_END}' - 1, interval '1 day') g)
     spine"""


@dataclass(frozen=True)
class DuckDBWarehouse:
    """The world's DuckDB file (or an export of it), attached read-only."""

    path: Path
    dialect: Dialect = "duckdb"

    def describe(self) -> str:
        """Where the project reads from (for messages)."""
        return str(self.path)

    def source_database(self) -> str | None:
        """The ``database`` of every source."""
        return WAREHOUSE_ALIAS

    def project_config(self) -> dict[str, Any]:
        """What the kind adds to ``dbt_project.yml``."""
        return {}

    def profiles(self, project: str, out: Path, schemas: list[str]) -> dict[str, Any]:
        """``profiles.yml``: the ``build`` and (default) ``readonly`` targets."""
        attach = [{"path": str(self.path), "alias": WAREHOUSE_ALIAS, "read_only": True}]
        common = {
            "type": "duckdb", "path": str(out / MART_FILE), "schema": MART_SCHEMA,
            "threads": 1, "attach": attach,
        }  # fmt: skip
        # SQL run on the read-only target (dbt show) names marts and warehouse tables as the
        # warehouse does (fct_orders, sales.orders): DuckDB looks a schema up along the path.
        path = ",".join(
            [f"{Path(MART_FILE).stem}.{MART_SCHEMA}", *(f"{WAREHOUSE_ALIAS}.{s}" for s in schemas)]
        )
        readonly = {
            **common,
            "config_options": {"access_mode": "READ_ONLY"},
            "settings": {"search_path": path},
        }
        return {project: {"target": "readonly", "outputs": {"build": common, "readonly": readonly}}}


def _conninfo(dsn: str, what: str) -> dict[str, Any]:
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(dsn)
    except Exception as exc:  # psycopg.ProgrammingError: a malformed DSN
        raise UserInputError(f"{what}: not a PostgreSQL DSN: {exc}") from exc
    if not info.get("user") or not info.get("dbname"):
        raise UserInputError(
            f"{what}: the DSN must name a user and a database (postgresql://USER@HOST:PORT/DB)"
        )
    return info


def _target(info: dict[str, Any], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "postgres",
        "host": info.get("host") or "localhost",
        "port": int(info.get("port") or 5432),
        "user": info["user"],
        "password": info.get("password") or "",
        "dbname": info["dbname"],
        "schema": MART_SCHEMA,
        "threads": 1,
    }
    if info.get("sslmode"):
        out["sslmode"] = info["sslmode"]
    return {**out, **extra}


@dataclass(frozen=True)
class PostgresWarehouse:
    """A PostgreSQL database holding the world (``world export --postgres``)."""

    build: dict[str, Any]
    reader: dict[str, Any]
    redacted: str
    dialect: Dialect = "postgres"

    def describe(self) -> str:
        """Where the project reads from (for messages; no password)."""
        return self.redacted

    def source_database(self) -> str | None:
        """Sources live in the target's own database."""
        return None

    def project_config(self) -> dict[str, Any]:
        """Grants to the reader at every build, and USAGE on the marts schema (build target
        only: the reader may not grant)."""
        reader = self.reader["user"]
        usage = (
            "{% if target.name == 'build' %}grant usage on schema {{ target.schema }} to "
            f'"{reader}"' + "{% endif %}"
        )
        return {"grants": {"select": [reader]}, "on-run-end": [usage]}

    def profiles(self, project: str, out: Path, schemas: list[str]) -> dict[str, Any]:
        """``profiles.yml``: ``build`` as the warehouse DSN's role, ``readonly`` (the default)
        as the SELECT-only reader, with the marts and the world's schemas on its search path."""
        path = ",".join([MART_SCHEMA, *schemas])
        return {
            project: {
                "target": "readonly",
                "outputs": {
                    "build": _target(self.build),
                    "readonly": _target(self.reader, search_path=path),
                },
            }
        }


DbtWarehouse = DuckDBWarehouse | PostgresWarehouse


def _check_world(pg: Any, world: World, shown: str) -> None:
    try:
        row = pg.execute("SELECT world_hash FROM dabench_knowledge.world").fetchone()
    except Exception as exc:
        raise UserInputError(
            f"--warehouse {shown}: no world in this database ({exc}); load it first with "
            "`dabench world export --postgres DSN`"
        ) from exc
    if row is None or row[0] != world.world_hash:
        found = row[0][:16] if row else "none"
        raise UserInputError(
            f"--warehouse {shown}: holds world {found}, not {world.world_hash[:16]}; export this "
            "world there first (`dabench world export --postgres DSN`)"
        )


def postgres_warehouse(world: World, dsn: str, reader: str | None = None) -> PostgresWarehouse:
    """Check that ``dsn`` holds ``world`` and settle the reader: ``reader`` (a DSN), or the
    role :data:`READER_ROLE`, created or re-granted with ``dsn`` (module docstring)."""
    import psycopg

    from dabench.world.export_sql import redact_dsn
    from dabench.world.postgres_roles import create_read_only_role

    shown = redact_dsn(dsn)
    build = _conninfo(dsn, f"--warehouse {shown}")
    tables = [ds.id for ds in world.catalog.datasets]
    try:
        with psycopg.connect(dsn) as pg:
            _check_world(pg, world, shown)
    except psycopg.Error as exc:
        raise UserInputError(f"--warehouse {shown}: cannot connect: {exc}") from exc
    if reader is not None:
        info = _conninfo(reader, f"--reader {redact_dsn(reader)}")
        if info.get("dbname") != build["dbname"]:
            raise UserInputError(
                f"--reader {redact_dsn(reader)}: must name the warehouse's database "
                f"({build['dbname']})"
            )
        return PostgresWarehouse(build=build, reader=info, redacted=shown)
    password = secrets.token_urlsafe(24)
    try:
        create_read_only_role(dsn, READER_ROLE, tables, password=password)
    except UserInputError as exc:
        raise UserInputError(
            f"--warehouse {shown}: could not create the read-only role {READER_ROLE} ({exc}); "
            "pass --reader DSN, a SELECT-only login on the world's tables (`dabench platform "
            "pg-role`)"
        ) from exc
    info = {**build, "user": READER_ROLE, "password": password}
    return PostgresWarehouse(build=build, reader=info, redacted=shown)


def resolve_warehouse(
    world: World, warehouse: str | Path | None, reader: str | None = None
) -> DbtWarehouse:
    """The warehouse of ``--warehouse FILE|DSN`` (default: the world's own DuckDB file)."""
    if warehouse is not None and is_dsn(warehouse):
        return postgres_warehouse(world, str(warehouse), reader)
    if reader is not None:
        raise UserInputError("--reader goes with --warehouse DSN (a PostgreSQL warehouse)")
    wh = Path(warehouse or world.warehouse_path).resolve()
    if not wh.is_file():
        raise UserInputError(f"--warehouse {wh}: no such DuckDB file")
    return DuckDBWarehouse(wh)
