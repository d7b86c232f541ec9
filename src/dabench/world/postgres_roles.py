"""The SELECT-only login role ``platform serve --warehouse`` connects as (and the reader a
dbt export over PostgreSQL makes: :mod:`dabench.world.dbt_warehouse`).

``dabench platform pg-role`` runs :func:`create_read_only_role` as an administrator after
``dabench world export --postgres``: a ``LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE
NOINHERIT`` role with ``USAGE`` on the world's schemas and ``SELECT`` on the world's tables
and on ``dabench_knowledge.world`` (the world hash checked at start-up; absent from an
external world's database, whose data fingerprint stands for it), and nothing else.
The export drops and re-creates tables, so run it again after every export.
"""

from __future__ import annotations

from dabench.errors import UserInputError
from dabench.world.export_sql import KNOWLEDGE_SCHEMA


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_only_role_sql(
    role: str, tables: list[str], *, exists: bool, knowledge: bool = True
) -> list[str]:
    """The statements that create (or re-grant) ``role`` for ``tables`` (``schema.table``);
    ``knowledge=False`` for an external world's database (no ``dabench_knowledge`` schema)."""
    r = _ident(role)
    schemas = sorted(
        {t.split(".", 1)[0] for t in tables} | ({KNOWLEDGE_SCHEMA} if knowledge else set())
    )
    attrs = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS"
    out = [f"ALTER ROLE {r} {attrs}" if exists else f"CREATE ROLE {r} {attrs}"]
    out += [f"GRANT USAGE ON SCHEMA {_ident(s)} TO {r}" for s in schemas]
    qualified = [".".join(_ident(p) for p in t.split(".", 1)) for t in sorted(tables)]
    out += [f"GRANT SELECT ON {t} TO {r}" for t in qualified]
    if knowledge:
        out.append(f"GRANT SELECT ON {_ident(KNOWLEDGE_SCHEMA)}.world TO {r}")
    return out


def create_read_only_role(
    admin_dsn: str, role: str, tables: list[str], *, password: str | None = None
) -> None:
    """Create or update the read-only ``role`` (see the module docstring)."""
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(admin_dsn) as pg, pg.transaction():
            exists = pg.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            exported = pg.execute(
                "SELECT 1 FROM pg_namespace WHERE nspname = %s", (KNOWLEDGE_SCHEMA,)
            ).fetchone()
            for stmt in read_only_role_sql(
                role, tables, exists=exists is not None, knowledge=exported is not None
            ):
                pg.execute(stmt.encode())
            if password is not None:
                pg.execute(
                    sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                        sql.Identifier(role), sql.Literal(password)
                    )
                )
    except psycopg.Error as exc:
        raise UserInputError(f"--admin-dsn: PostgreSQL refused the role: {exc}") from exc
