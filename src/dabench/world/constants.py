"""Fixed facts of the fictional company that the generator and the traps share.

Larkspur Supply Co. sells outdoor gear through its web shop, its stores and wholesale
partners. The world covers calendar years 2023-2025. Bump :data:`GENERATOR_VERSION` whenever
the generator changes what it writes (and update the golden hash in tests/world/test_golden.py).
"""

from __future__ import annotations

from datetime import date

GENERATOR_VERSION = "1.3.0"
"""Version of the world generator; part of the cache key and of ``world.json``."""

COMPANY = "Larkspur Supply Co."

START_DATE = date(2023, 1, 1)
"""First day with facts."""
END_DATE = date(2025, 12, 31)
"""Last day with facts (the world's "today" is the day after)."""

FISCAL_YEAR_START_MONTH = 2
"""Fiscal years start on February 1; FY2024 = 2024-02-01 .. 2025-01-31 (named after the
calendar year in which it starts)."""

DAILY_SALES_CUTOFF = date(2025, 11, 14)
"""``analytics.daily_sales`` stopped refreshing after this day."""

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

TEST_EMAIL_DOMAIN = "lsq-automation.example"
"""Customers with this e-mail domain are internal test accounts."""

ERASED_ROW_STATE = "X"
"""``customers.customers.row_state`` value of a soft-deleted (erased) customer."""

KEY_ACCOUNT_TIERS = ("gold", "platinum")
"""Tiers that make a customer a "key account"."""

NORDIC_ENTITY = "LSQ-NORDIC"
"""Billing entity whose invoices are in Swedish kronor (SEK)."""

ORDERS_PER_SCALE = 1000
CUSTOMERS_PER_SCALE = 250
WEB_EVENTS_PER_SCALE = 15000
TICKETS_PER_SCALE = 400
INVOICES_PER_SCALE = 200
EMAIL_SENDS_PER_SCALE = 3000

MAX_SCALE = 1000
TRAP_MARGIN_REL = 0.05
"""Build-time invariant: every trap's naive answer differs from the correct one by more than
this fraction of the correct answer."""
