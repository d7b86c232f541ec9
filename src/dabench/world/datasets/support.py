"""Support domain: agents, tickets and satisfaction survey responses."""

from __future__ import annotations

from dabench.world.constants import (
    CUSTOMERS_PER_SCALE,
    END_DATE,
    SURVEY_INVERSION_FROM,
    SURVEY_INVERSION_TO,
    TICKETS_PER_SCALE,
)
from dabench.world.datasets.calendar import days_helper, quantile_days
from dabench.world.datasets.spec import Col, DatasetSpec, Helper
from dabench.world.sqlrand import Rand

OWNER = "support-ops@larkspur.example"
N_AGENTS = 25


def steps(rand: Rand, scale: int) -> list[DatasetSpec | Helper]:
    """The support datasets; tickets and responses scale linearly."""
    r = rand
    n_tickets = TICKETS_PER_SCALE * scale
    agents_select = f"""
SELECT (i + 1)::INTEGER AS agent_id,
       {
        r.pick(
            "ag_first",
            "i",
            [
                "Robin",
                "Sasha",
                "Toni",
                "Jesse",
                "Morgan",
                "Riley",
                "Avery",
                "Dana",
                "Charlie",
                "Reese",
            ],
        )
    } || ' '
       || {
        r.pick(
            "ag_last", "i", ["Novak", "Lind", "Okoro", "Park", "Reyes", "Stone", "Weber", "Yilmaz"]
        )
    } AS full_name,
       {r.pick("ag_team", "i", ["orders", "returns", "product", "b2b"])} AS team,
       DATE '2019-06-01' + {r.int("ag_hired", "i", 0, 2000)}::INTEGER AS hired_on
FROM range({N_AGENTS}) t(i)"""
    tickets_select = f"""
WITH q AS ({quantile_days("_ticket_days", str(n_tickets))}),
t AS (
  SELECT q.i, q.day + to_seconds({r.int("tk_sec", "q.i", 25200, 75600)}) AS opened_at,
         {
        r.weighted(
            "tk_prio", "q.i", [("low", 0.3), ("normal", 0.45), ("high", 0.2), ("urgent", 0.05)]
        )
    }
           AS priority
  FROM q
)
SELECT (i + 1)::BIGINT AS ticket_id,
       {r.int("tk_cust", "i", 1, CUSTOMERS_PER_SCALE * scale)} AS customer_id,
       opened_at,
       CASE WHEN opened_at + INTERVAL 5 DAY > TIMESTAMP '{END_DATE} 23:59:59'
                 AND {r.u("tk_open", "i")} < 0.5 THEN NULL
            ELSE opened_at + to_seconds(round(
              CASE priority WHEN 'urgent' THEN 1 WHEN 'high' THEN 4 WHEN 'normal' THEN 12
                   ELSE 30 END * 3600 * (0.2 + 2 * {r.u("tk_res", "i")}))::BIGINT)
       END AS closed_at,
       priority,
       {
        r.pick(
            "tk_cat",
            "i",
            ["delivery", "returns", "product question", "billing", "warranty", "account"],
        )
    } AS category,
       {r.weighted("tk_chan", "i", [("email", 0.45), ("chat", 0.4), ("phone", 0.15)])}
         AS contact_channel,
       {r.int("tk_agent", "i", 1, N_AGENTS)}::INTEGER AS agent_id
FROM t"""
    # The data incident of SURVEY_INVERSION_FROM..TO: the stored answer is 6 - the true one.
    csat_select = f"""
SELECT ticket_id, responded_on,
       (CASE WHEN responded_on BETWEEN DATE '{SURVEY_INVERSION_FROM}'
                                   AND DATE '{SURVEY_INVERSION_TO}'
             THEN 6 - score ELSE score END)::INTEGER AS score
FROM (
SELECT ticket_id,
       (closed_at + to_seconds({r.int("cs_lag", "ticket_id", 600, 172800)}))::DATE
         AS responded_on,
       {
        r.weighted(
            "cs_score",
            "ticket_id",
            [("5", 0.46), ("4", 0.27), ("3", 0.12), ("2", 0.07), ("1", 0.08)],
        )
    }
         ::INTEGER AS score
FROM support.tickets
WHERE closed_at IS NOT NULL AND {r.u("cs_resp", "ticket_id")} < 0.55
  AND closed_at < TIMESTAMP '{END_DATE} 00:00:00' - INTERVAL 2 DAY)"""
    return [
        DatasetSpec(
            id="support.agents",
            domain="support",
            kind="dimension",
            title="Support agents",
            description="Customer support agents and their team.",
            owner=OWNER,
            columns={
                "agent_id": Col("Agent identifier."),
                "full_name": Col("Agent name."),
                "team": Col("Team: orders, returns, product or b2b."),
                "hired_on": Col("Hire date."),
            },
            select=agents_select,
            order_by="agent_id",
            tags=("support-team",),
        ),
        days_helper("_ticket_days", r),
        DatasetSpec(
            id="support.tickets",
            domain="support",
            kind="fact",
            title="Support tickets",
            description="Customer support tickets from e-mail, chat and phone. A ticket is "
            "open while closed_at is empty.",
            owner=OWNER,
            columns={
                "ticket_id": Col("Ticket identifier."),
                "customer_id": Col("Customer (customers.customers)."),
                "opened_at": Col("When the ticket was opened."),
                "closed_at": Col("When it was resolved; empty while open."),
                "priority": Col("low, normal, high or urgent."),
                "category": Col("Topic chosen by the agent."),
                "contact_channel": Col("email, chat or phone."),
                "agent_id": Col("Assigned agent (support.agents)."),
            },
            select=tickets_select,
            order_by="ticket_id",
            tags=("support", "service-levels"),
            glossary=("resolution-time",),
            upstream=("support.agents",),
            transform="help desk export",
        ),
        DatasetSpec(
            id="support.csat_responses",
            domain="support",
            kind="fact",
            title="Satisfaction survey responses",
            description="Answers to the one-question survey sent when a ticket is closed.",
            owner=OWNER,
            columns={
                "ticket_id": Col("Ticket surveyed (support.tickets)."),
                "responded_on": Col("Day of the answer."),
                "score": Col("1 (very unhappy) to 5 (very happy).", "score 1-5"),
            },
            select=csat_select,
            order_by="ticket_id",
            tags=("support", "satisfaction"),
            glossary=("csat",),
            upstream=("support.tickets",),
            transform="survey tool export",
        ),
    ]
