"""Fixed facts of the fictional company that the generator and the traps share.

Larkspur Supply Co. sells outdoor gear through its web shop, its stores and wholesale
partners. The world covers calendar years 2023-2025. Bump :data:`GENERATOR_VERSION` whenever
the generator changes what it writes (and update the golden hash in tests/world/test_golden.py).
"""

from __future__ import annotations

from datetime import date

GENERATOR_VERSION = "2.7.0"
"""Version of the world generator; part of the cache key and of ``world.json``."""

DEFAULT_SEED = 930
MAX_SEED = 2**63 - 1
"""The largest world seed (a signed 64-bit integer)."""
"""The seed of the default world: the one the suites are authored, locked and validated on
(scale 1). ``dabench run --world-seed`` builds others."""

COMPANY = "Larkspur Supply Co."

START_DATE = date(2023, 1, 1)
"""First day with facts."""
END_DATE = date(2025, 12, 31)
"""Last day with facts (the world's "today" is the day after)."""

FISCAL_YEAR_START_MONTH = 2
"""Fiscal years start on February 1; FY2024 = 2024-02-01 .. 2025-01-31 (named after the
calendar year in which it starts)."""

LATE_ORDER_SHARE = 0.25
"""Share of orders that reach the warehouse after the nightly load of their day (store tills,
partner orders keyed in by reps, web orders held by fraud review). ``analytics.daily_sales`` is
never backfilled, so it leaves them out; nothing in the data marks them."""

CORE_ORDERS_CUTOFF = date(2025, 3, 31)
"""The deprecated ``core.orders`` table was last loaded on this day."""
CORE_CUSTOMERS_SNAPSHOT = date(2024, 6, 30)
"""The deprecated ``core.customers`` table is a snapshot as of this day."""

COLLECTOR_SWITCH = date(2024, 7, 1)
"""Web event timestamps before this day are UTC; from this day on they are company local time."""
COLLECTOR_GAP = date(2024, 6, 30)
"""No web events were collected on this (local) day: the collector migration window."""
LOCAL_UTC_OFFSET_HOURS = -8
"""Company local time is Pacific Standard Time, UTC-08:00, all year (no daylight saving)."""

TEST_SIGNUP_SOURCE = "crm"
"""``customers.customers.signup_source`` of internal QA test accounts: every account created by
hand in the CRM is a test account (real customers sign up on the web, in a store or through a
partner). Test accounts otherwise look like real ones."""

ERASED_ROW_STATE = 4
"""``customers.customers.row_state`` code of a soft-deleted (erased) customer (1 active,
2 inactive, 3 on credit hold: those three are customers)."""

KEY_ACCOUNT_TIERS = ("gold", "platinum")
"""Tiers that can make a customer a "key account"."""
KEY_ACCOUNT_SEGMENTS = ("smb", "enterprise")
"""Segments that can make a customer a "key account" (consumers never are)."""

FOREIGN_ENTITY = "LSQ-01"  # not the last code: blind a0 agents guessed "the second one is foreign"
"""Billing entity (Larkspur Supply Canada Ltd.) whose invoices are in Canadian dollars (CAD);
``LSQ-02`` bills in US dollars."""
FOREIGN_CURRENCY = "CAD"

ORDERS_PER_SCALE = 1000
CUSTOMERS_PER_SCALE = 250
WEB_EVENTS_PER_SCALE = 15000
TICKETS_PER_SCALE = 400
INVOICES_PER_SCALE = 200
EMAIL_SENDS_PER_SCALE = 3000

LINES_PER_ORDER = (6, 15)
"""Inclusive range of the number of lines on one order at scales up to
:data:`LINES_WIDEN_FROM_SCALE` (every suite and test world)."""
LINES_WIDEN_FROM_SCALE = 10
LINES_WIDEN_TO_SCALE = 100
MAX_LINES_PER_ORDER = 55
"""Above scale 10 the largest basket widens linearly in scale from 15 lines to 55 lines at
scale 100 and stays there: worlds from scale 100 on are linear in scale again and hold about
30.5 order lines per order (30 M order lines at scale 1000, the size the scale benchmarks
need), while the worlds up to scale 10 keep their bytes."""

ORDERS_PER_CHUNK = 100_000
WEB_EVENTS_PER_CHUNK = 1_500_000
"""Build mechanics, not content: above these many orders (scale 100) or web events the order
lines and web events are generated and written a key range at a time, so memory and time
stay linear in scale. Worlds up to scale 100 are written in one statement per table."""

MAX_SCALE = 1000
TRAP_MARGIN_REL = 0.05
"""Build-time invariant: every trap's naive answer differs from the correct one by more than
this fraction of the correct answer."""

STORAGE_VERSIONS = ("v1.0.0", "v1.1.0", "v1.2.0", "v1.3.0", "v1.4.0", "v1.5.0")
"""DuckDB storage formats ``world export --duckdb`` can write."""


SURVEY_INVERSION_FROM = date(2023, 9, 11)
"""Data incident (issue 32): from this day the survey tool showed the CSAT scale reversed
(1 = very happy); the stored answers were never rewritten."""
SURVEY_INVERSION_TO = date(2023, 11, 19)
"""The last day of the reversed survey scale (the fix shipped the day after)."""
CASE_COUNT_WAREHOUSE = 1
"""Data incident: the warehouse (Reno DC) whose snapshot of :data:`CASE_COUNT_SNAPSHOT`
counted full cases instead of units."""
CASE_COUNT_SNAPSHOT = date(2024, 7, 31)
"""The month-end inventory snapshot taken in cases (see :data:`CASE_COUNT_WAREHOUSE`)."""
CASE_SIZE = 12
"""Units per case in that snapshot: the true units are the stored figure times this."""
