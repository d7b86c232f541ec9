"""Marketing domain: campaigns, their spend, e-mail sends and the web event stream."""

from __future__ import annotations

from dabench.world.constants import (
    COLLECTOR_GAP,
    COLLECTOR_SWITCH,
    CUSTOMERS_PER_SCALE,
    EMAIL_SENDS_PER_SCALE,
    LOCAL_UTC_OFFSET_HOURS,
    WEB_EVENTS_PER_CHUNK,
    WEB_EVENTS_PER_SCALE,
)
from dabench.world.datasets.calendar import days_helper, local_hour, quantile_days
from dabench.world.datasets.spec import Col, DatasetSpec, Helper, chunk_bounds
from dabench.world.sqlrand import Rand

OWNER = "marketing-ops@larkspur.example"
N_CAMPAIGNS = 24
EVENT_TYPES = [
    ("page_view", 0.58),
    ("product_view", 0.2),
    ("search", 0.08),
    ("add_to_cart", 0.09),
    ("checkout", 0.05),
]


def steps(rand: Rand, scale: int) -> list[DatasetSpec | Helper]:
    """The marketing datasets; e-mail sends and web events scale linearly."""
    r = rand
    n_events = WEB_EVENTS_PER_SCALE * scale
    n_sends = EMAIL_SENDS_PER_SCALE * scale
    n_customers = CUSTOMERS_PER_SCALE * scale
    campaigns_select = f"""
SELECT (i + 1)::INTEGER AS campaign_id,
       {
        r.pick(
            "cmp_name",
            "i",
            [
                "Trailhead",
                "Peak Week",
                "Gear Up",
                "Into the Wild",
                "Base Layer",
                "Campfire",
                "Switchback",
                "Bluebird",
            ],
        )
    }
         || ' ' || (2023 + i // 8) AS name,
       {r.pick("cmp_channel", "i", ["email", "social", "search", "display"])} AS channel,
       DATE '2023-01-10' + (i * 45)::INTEGER AS starts_on,
       DATE '2023-01-10' + (i * 45 + {r.int("cmp_len", "i", 14, 40)})::INTEGER AS ends_on,
       ({r.int("cmp_budget", "i", 20, 160)} * 100000)::BIGINT AS budget
FROM range({N_CAMPAIGNS}) t(i)"""
    spend_select = f"""
WITH d AS (SELECT c.campaign_id, unnest(range(c.starts_on, c.ends_on + 1, INTERVAL 1 DAY))
             ::DATE AS spend_date, c.budget, c.ends_on - c.starts_on + 1 AS n_days
           FROM marketing.campaigns c)
SELECT campaign_id, spend_date,
       round(budget / n_days * (0.6 + 0.8 * {
        r.u("spend", "campaign_id * 100000 + (spend_date - DATE '2023-01-01')")
    }))::BIGINT
         AS spend
FROM d"""
    sends_select = f"""
WITH q AS ({quantile_days("_event_days", str(n_sends))})
SELECT (q.i + 1)::BIGINT AS send_id,
       {r.int("snd_cmp", "q.i", 1, N_CAMPAIGNS)}::INTEGER AS campaign_id,
       {r.int("snd_cust", "q.i", 1, n_customers)} AS customer_id,
       q.day + to_seconds({r.int("snd_sec", "q.i", 21600, 72000)}) AS sent_at,
       {r.u("snd_open", "q.i")} < 0.31 AS opened,
       {r.u("snd_open", "q.i")} < 0.31 AND {r.u("snd_click", "q.i")} < 0.18 AS clicked
FROM q"""

    def events_sql(keys: tuple[int, int] | None) -> str:
        return f"""
WITH q AS ({quantile_days("_event_days", str(n_events), "k", keys)}),
u AS (
  SELECT k,
    ({r.h("ev_id", "k")} >> 1)::BIGINT AS event_id,
    ({r.h("ev_sess", "k // 4")} >> 1)::BIGINT AS session_id,
    CASE WHEN {r.u("ev_known", "k // 4")} < 0.45
         THEN {r.int("ev_cust", "k // 4", 1, n_customers)} END AS customer_id,
    {r.weighted("ev_type", "k", EVENT_TYPES)} AS event_type,
    day + to_seconds({local_hour(r, "ev_hour", "k")} * 3600
                     + {r.int("ev_sec", "k", 0, 3599)}) AS local_ts,
    CASE WHEN {r.u("ev_cmp", "k // 4")} < 0.2
         THEN {r.int("ev_cmp_id", "k // 4", 1, N_CAMPAIGNS)}::INTEGER END AS campaign_id,
    {r.u("ev_dup", "k")} < 0.13 AS redelivered
  FROM q
),
v AS (
  SELECT u.*, unnest(CASE WHEN redelivered THEN [0, 1] ELSE [0] END) AS copy,
    -- Before the collector switch the collector wrote UTC: the same local-time behaviour,
    -- stored {-LOCAL_UTC_OFFSET_HOURS} hours later. The migration day ({COLLECTOR_GAP}) has no
    -- events, so every UTC timestamp lies before the switch day.
    CASE WHEN local_ts < TIMESTAMP '{COLLECTOR_SWITCH} 00:00:00'
         THEN local_ts + INTERVAL ({-LOCAL_UTC_OFFSET_HOURS}) HOUR
         ELSE local_ts END AS event_ts,
    CASE event_type
      WHEN 'product_view' THEN '/p/' || {r.int("ev_page", "k", 1, 120)}
      WHEN 'add_to_cart' THEN '/cart'
      WHEN 'checkout' THEN '/checkout'
      WHEN 'search' THEN '/search'
      ELSE {r.pick("ev_landing", "k", ["/", "/camp", "/hike", "/apparel", "/climb", "/sale"])}
    END AS page
  FROM u
)
SELECT event_id, session_id, customer_id, event_type, page, campaign_id, event_ts,
       event_ts + to_seconds(CASE WHEN copy = 0 THEN {r.int("ev_lag", "k", 1, 90)}
                                  ELSE {r.int("ev_relag", "k", 300, 7200)} END) AS received_at,
       k, copy
FROM v"""

    event_chunks = chunk_bounds(n_events, WEB_EVENTS_PER_CHUNK)
    events = [events_sql(None if len(event_chunks) == 1 else c) for c in event_chunks]
    return [
        DatasetSpec(
            id="marketing.campaigns",
            domain="marketing",
            kind="dimension",
            title="Marketing campaigns",
            description="Paid and owned marketing campaigns with their flight dates and "
            "approved budget.",
            owner=OWNER,
            columns={
                "campaign_id": Col("Campaign identifier."),
                "name": Col("Campaign name."),
                "channel": Col("email, social, search or display."),
                "starts_on": Col("First day of the flight."),
                "ends_on": Col("Last day of the flight."),
                "budget": Col(
                    "Approved budget in US cents (integer).",
                    "USD cents",
                    ("money",),
                    ("money-units",),
                ),
            },
            select=campaigns_select,
            order_by="campaign_id",
            tags=("campaigns",),
        ),
        DatasetSpec(
            id="marketing.campaign_spend",
            domain="marketing",
            kind="fact",
            title="Daily campaign spend",
            description="Media spend per campaign and day as invoiced by the ad platforms.",
            owner=OWNER,
            columns={
                "campaign_id": Col("Campaign (marketing.campaigns)."),
                "spend_date": Col("Day of the spend."),
                "spend": Col(
                    "Spend in US cents (integer).", "USD cents", ("money",), ("money-units",)
                ),
            },
            select=spend_select,
            order_by="campaign_id, spend_date",
            tags=("campaigns", "spend"),
            upstream=("marketing.campaigns",),
            transform="daily ad platform invoices",
        ),
        days_helper("_event_days", r, skip_gap=True),
        DatasetSpec(
            id="marketing.email_sends",
            domain="marketing",
            kind="fact",
            title="E-mail sends",
            description="Every marketing e-mail sent, with open and click flags.",
            owner=OWNER,
            columns={
                "send_id": Col("Send identifier."),
                "campaign_id": Col("Campaign (marketing.campaigns)."),
                "customer_id": Col("Recipient (customers.customers)."),
                "sent_at": Col("Send timestamp."),
                "opened": Col("The recipient opened the e-mail."),
                "clicked": Col("The recipient clicked a link."),
            },
            select=sends_select,
            order_by="send_id",
            tags=("email", "engagement"),
            upstream=("marketing.campaigns", "customers.customers"),
            transform="e-mail service provider export",
        ),
        DatasetSpec(
            id="marketing.web_events",
            domain="marketing",
            kind="fact",
            title="Web and app events",
            description="Clickstream events from the web shop and app (page views, product "
            "views, searches, add-to-cart, checkout). The collector delivers at least once: "
            "an event can appear more than once with the same event_id, so count distinct "
            "event_id. event_ts was written in UTC until 2024-06-30 and in company local "
            "time (UTC-08:00) from 2024-07-01; see the knowledge page event-data.",
            owner=OWNER,
            columns={
                "event_id": Col(
                    "Event identifier assigned by the client; identical on redelivered copies.",
                    glossary=("unique-event",),
                ),
                "session_id": Col("Browsing session."),
                "customer_id": Col("Logged-in customer, if any (customers.customers)."),
                "event_type": Col("page_view, product_view, search, add_to_cart or checkout."),
                "page": Col("Path of the page."),
                "campaign_id": Col("Campaign the session came from, if any."),
                "event_ts": Col(
                    "When the event happened. UTC for events before 2024-07-01; company local "
                    "time (UTC-08:00, no daylight saving) from 2024-07-01 on.",
                    glossary=("company-local-time",),
                ),
                "received_at": Col("When the collector stored this copy of the event."),
            },
            select=events[0],
            order_by="k, copy",
            more_chunks=tuple(events[1:]),
            tags=("clickstream", "web"),
            glossary=("unique-event", "company-local-time"),
            transform="streamed from the event collector",
        ),
    ]
