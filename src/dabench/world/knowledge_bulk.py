"""The everyday pages of the handbook: dashboards, incident reviews, meeting notes, runbooks,
projects and team pages.

A company's knowledge base is mostly this: hundreds of pages that mention the same tables and
words as the few pages that define the rules (revenue, invoices, customers, the fiscal
quarter, the collector), but define nothing. They are what makes the knowledge base too large
to read whole within one question, so that an agent depends on search to find the rule it
needs. None of them states or contradicts a company rule (``documentation-conventions``: team
pages, dashboards, notes and reviews describe their own work; the policy pages and the
glossary define metrics); the knowledge consistency check (:mod:`dabench.world.consistency`)
holds on them.

The pages are generated from fixed lists with a fixed random stream, so every world has the
same ones (they depend on no seed).
"""

from __future__ import annotations

import random
from datetime import date, timedelta

from dabench.world.model import KnowledgePage, knowledge_page

_RNG_SEED = "dabench-knowledge-bulk-1"

_TEAMS = [
    ("finance-ops", "Finance operations",
     ["finance.invoices", "finance.payments", "finance.fx_rates"],
     "month-end close, partner invoicing and collections"),
    ("revenue-analytics", "Revenue analytics", ["sales.orders", "analytics.monthly_revenue"],
     "the monthly revenue pack and the sales reviews"),
    ("growth-marketing", "Growth marketing", ["marketing.campaigns", "marketing.campaign_spend"],
     "paid campaigns, promotions and the e-mail programme"),
    ("web-analytics", "Web analytics", ["marketing.web_events"],
     "the clickstream, funnels and the site experiments"),
    ("crm", "Customer relationship management", ["customers.customers", "customers.segments"],
     "the customer master data, tiers and segments"),
    ("support-ops", "Support operations", ["support.tickets", "support.agents"],
     "ticket routing, staffing and service levels"),
    ("merchandising", "Merchandising", ["product.products", "product.categories"],
     "the assortment, list prices and promotions calendar"),
    ("supply-chain", "Supply chain", ["product.inventory_snapshots", "product.warehouses"],
     "stock levels, the three warehouses and supplier lead times"),
    ("retail-ops", "Retail operations", ["sales.stores", "sales.sales_reps"],
     "the stores, their tills and the field sales reps"),
    ("data-platform", "Data platform", ["staging.orders_raw", "staging.customers_raw"],
     "the nightly loads, the warehouse and its access rules"),
    ("partner-sales", "Partner sales", ["finance.partners", "sales.channels"],
     "wholesale partners and the partner channel"),
    ("customer-insights", "Customer insights", ["support.csat_responses", "marketing.email_sends"],
     "surveys, CSAT and the customer panel"),
]  # fmt: skip

_SUBJECTS = [
    ("Store sales", ["sales.orders", "sales.stores"], ["orders per store", "average basket",
     "units per order", "till sync lag"]),
    ("Web funnel", ["marketing.web_events"], ["sessions", "product views per session",
     "add-to-cart rate", "checkout starts"]),
    ("Campaign performance", ["marketing.campaigns", "marketing.campaign_spend"],
     ["spend by channel", "cost per click", "clicks by campaign", "budget burn"]),
    ("Partner pipeline", ["finance.partners", "finance.invoices"], ["invoices issued",
     "invoices overdue", "days to pay", "new partners"]),
    ("Collections", ["finance.invoices", "finance.payments"], ["open invoices",
     "payments received", "ageing buckets", "disputes"]),
    ("Support queue", ["support.tickets", "support.agents"], ["tickets opened",
     "tickets by priority", "backlog", "first response time"]),
    ("Customer satisfaction", ["support.csat_responses"], ["responses", "score distribution",
     "comments tagged", "response rate"]),
    ("Inventory health", ["product.inventory_snapshots", "product.warehouses"],
     ["stock on hand", "weeks of cover", "stock-outs", "slow movers"]),
    ("Assortment", ["product.products", "product.categories"], ["active products",
     "new listings", "list price changes", "products by supplier"]),
    ("Promotions", ["sales.promotions", "sales.order_lines"], ["promotion uptake",
     "discount depth", "orders with a code", "codes by campaign"]),
    ("E-mail programme", ["marketing.email_sends"], ["sends", "opens", "unsubscribes",
     "bounces"]),
    ("Refund activity", ["sales.refunds", "sales.orders"], ["refunds issued",
     "refund reasons", "days from order to refund", "refunds by channel"]),
]  # fmt: skip

_CADENCES = ["Daily", "Weekly", "Monthly"]

_SYSTEMS = [
    ("order sync", ["sales.orders", "staging.orders_raw"],
     "store tills stopped syncing for part of the day", "a certificate on the sync gateway expired",
     "orders were loaded the next night under their own order date"),
    ("payment gateway", ["finance.payments"], "payment confirmations arrived twice",
     "a retry policy on the gateway's webhook", "the duplicate confirmations were dropped at load"),
    ("CRM import", ["staging.customers_raw", "customers.customers"],
     "the nightly customer import stalled", "a schema change in the CRM export",
     "the import was re-run and the staging duplicates were ignored downstream"),
    ("event collector", ["marketing.web_events"], "events arrived hours late",
     "a full disk on one collector node",
     "the late events were loaded with their original event_id"),
    ("BI refresh", ["analytics.monthly_revenue", "analytics.product_sales_monthly"],
     "dashboards showed yesterday's figures until noon", "the refresh job ran out of memory",
     "the job was given more memory and re-run"),
    ("fx rate loader", ["finance.fx_rates"], "the month's rates loaded two days late",
     "the rate provider changed its file name", "the loader now matches the file by pattern"),
    ("ticketing", ["support.tickets"], "new tickets were not routed for an hour",
     "a routing rule referenced a deleted queue", "the rule was fixed and the tickets reassigned"),
    ("inventory snapshot", ["product.inventory_snapshots"], "one warehouse's snapshot was missing",
     "the warehouse scanner export timed out", "the snapshot was taken again the next morning"),
    ("e-mail service", ["marketing.email_sends"], "a campaign was sent twice to one list",
     "a scheduler retried after a timeout",
     "recipients got an apology; the duplicate sends stay in the table"),
    ("partner portal", ["finance.partners", "finance.invoices"],
     "partners could not download invoices",
     "an expired storage token", "the token is now rotated by the platform team"),
]  # fmt: skip

_SERIES = [
    ("weekly-business-review", "Weekly business review", ["revenue-analytics", "growth-marketing",
     "retail-ops"]),
    ("data-platform-sync", "Data platform sync", ["data-platform", "web-analytics"]),
    ("finance-close-retro", "Finance close retro", ["finance-ops", "revenue-analytics"]),
    ("support-ops-review", "Support ops review", ["support-ops", "customer-insights"]),
    ("merchandising-huddle", "Merchandising huddle", ["merchandising", "supply-chain"]),
    ("partner-sales-check-in", "Partner sales check-in", ["partner-sales", "finance-ops"]),
]  # fmt: skip

_TOPICS = [
    "the timing of the monthly revenue pack", "a request for a new dashboard filter",
    "the store tills that sync late", "the budget for next quarter's campaigns",
    "the backlog of data requests", "the migration of old reports off the deprecated schema",
    "a proposal to add a product-level margin estimate", "the survey response rate",
    "access requests for new joiners", "the holiday staffing plan",
    "an experiment on the checkout page", "partner payment reminders",
    "a supplier's delayed shipments", "the naming of campaign codes",
    "duplicate rows in a staging load", "which figures go into the board pack",
    "the rollout of the new ticket categories", "a question from audit about invoices",
    "slow queries on the events table", "the retirement of an unused dashboard",
]  # fmt: skip

_ACTIONS = [
    "write up the decision on the team page", "check the figures against the policy pages",
    "ask the data platform team for a backfill", "share the draft with finance before Friday",
    "add the question to the analytics backlog", "close the ticket once the load is re-run",
    "review the dashboard's source tables", "book a follow-up with the owners",
    "document the new field in the catalog", "confirm the numbers with the sales reps",
]  # fmt: skip

_RUNBOOKS = [
    ("Request warehouse access", "data-platform"),
    ("Re-run a failed nightly load", "data-platform"),
    ("Add a column description to the catalog", "data-platform"),
    ("Publish a curated query", "revenue-analytics"),
    ("Prepare the monthly revenue pack", "revenue-analytics"),
    ("Close the month in finance", "finance-ops"),
    ("Issue a partner invoice", "finance-ops"),
    ("Chase an overdue invoice", "finance-ops"),
    ("Load the month's exchange rates", "finance-ops"),
    ("Launch a paid campaign", "growth-marketing"),
    ("Create a promotion code", "growth-marketing"),
    ("Send a customer e-mail", "growth-marketing"),
    ("Set up a site experiment", "web-analytics"),
    ("Tag a new page for the collector", "web-analytics"),
    ("Handle an erasure request", "crm"),
    ("Merge duplicate customer records", "crm"),
    ("Run the yearly tier reassessment", "crm"),
    ("Escalate an urgent ticket", "support-ops"),
    ("Run the CSAT survey", "customer-insights"),
    ("Add a product to the assortment", "merchandising"),
    ("Change a list price", "merchandising"),
    ("Count stock in a warehouse", "supply-chain"),
    ("Onboard a new supplier", "supply-chain"),
    ("Open a new store", "retail-ops"),
    ("Assign a sales rep to a region", "retail-ops"),
    ("Onboard a wholesale partner", "partner-sales"),
    ("Retire a dashboard", "data-platform"),
    ("Respond to an audit request", "finance-ops"),
    ("Rotate the service credentials", "data-platform"),
    ("Restore a table from backup", "data-platform"),
]  # fmt: skip

_STEPS = [
    "Open a ticket in the team's queue and link this page.",
    "Check the owner of each table in the catalog before you change anything.",
    "Write down what you did in the ticket, with the date.",
    "Ask a second person to review the change.",
    "Tell the affected teams in the data channel.",
    "Wait for the next nightly load before you check the result.",
    "Compare the result with last month's before you publish it.",
    "Update the team page if the process changed.",
    "Keep the request and its approval for audit.",
    "Close the ticket and note the time spent.",
]  # fmt: skip

_PROJECTS = [
    "Checkout redesign", "Loyalty relaunch", "Store till upgrade", "Partner portal v2",
    "Warehouse consolidation", "Event collector migration", "Support chat pilot",
    "Catalog clean-up", "Campaign attribution", "Returns automation", "Supplier scorecards",
    "Price testing", "E-mail preference centre", "Inventory forecasting", "Data access review",
    "Dashboard rationalisation", "Ticket categories", "Board pack automation",
    "Customer panel", "Store staffing model", "Invoice e-delivery", "Search tuning",
    "Mobile app analytics", "Promotion calendar",
]  # fmt: skip

_STATUSES = ["proposed", "in progress", "paused", "done"]


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _when(rng: random.Random) -> date:
    return date(2023, 1, 2) + timedelta(days=rng.randrange(0, 1050))


def _bulk_page(
    id: str, title: str, tags: list[str], related: list[str], reviewed: date, body: str
) -> KnowledgePage:
    return knowledge_page(id, title, tags, sorted(set(related)), reviewed, body)


def _team_pages(rng: random.Random) -> list[KnowledgePage]:
    pages = []
    for slug, name, tables, remit in _TEAMS:
        rituals = rng.sample([s[1] for s in _SERIES], 2)
        body = f"""
# {name} team

We look after {remit}. The tables we own: {", ".join(f"`{t}`" for t in tables)}.

- Questions: post in the team channel; requests go through the analytics backlog.
- Rituals: {rituals[0].lower()} and {rituals[1].lower()}.
- On call: one person a week, listed in the rota.

We describe our own work here. Company definitions of metrics are on the policy pages and in
the glossary; if one of our pages seems to disagree with them, the policy page wins.
"""
        pages.append(
            _bulk_page(f"team-{slug}", f"Team: {name}", ["team"], tables, _when(rng), body)
        )
    return pages


def _dashboard_pages(rng: random.Random) -> list[KnowledgePage]:
    pages = []
    for subject, tables, charts in _SUBJECTS:
        for cadence in _CADENCES:
            owner = rng.choice(_TEAMS)
            shown = rng.sample(charts, 3)
            title = f"{cadence} {subject.lower()} dashboard"
            body = f"""
# {title}

Owner: {owner[1]}. Refreshed {
                "every night"
                if cadence == "Daily"
                else "on Monday mornings"
                if cadence == "Weekly"
                else "after the monthly close"
            }.

Charts: {shown[0]}; {shown[1]}; {shown[2]}. Source tables: {", ".join(f"`{t}`" for t in tables)}.

The dashboard is for watching trends. Its figures are not checked against the company
definitions and must not be quoted in reports; compute reported figures from the source
tables as the policy pages say.
"""
            pages.append(
                _bulk_page(f"dashboard-{_slug(title)}", title, ["dashboard"], tables,
                      _when(rng), body)
            )  # fmt: skip
    return pages


def _incident_pages(rng: random.Random) -> list[KnowledgePage]:
    pages = []
    for n in range(40):
        system, tables, symptom, cause, fix = _SYSTEMS[n % len(_SYSTEMS)]
        day = _when(rng)
        hours = rng.randrange(1, 30)
        follow = rng.sample(_ACTIONS, 2)
        body = f"""
# Incident review: {system}, {day.isoformat()}

**What happened.** On {day.isoformat()} {symptom} ({hours} hours until it was fixed).

**Why.** {_sentence(cause)}.

**What we did.** {_sentence(fix)}. Tables affected: {", ".join(f"`{t}`" for t in tables)}.

**Follow-ups.** {_sentence(follow[0])}; {follow[1]}.
"""
        pages.append(
            _bulk_page(f"incident-{day.isoformat()}-{_slug(system)}",
                  f"Incident review: {system} ({day.isoformat()})", ["incident"], tables,
                  day + timedelta(days=rng.randrange(2, 10)), body)
        )  # fmt: skip
    return pages


def _meeting_pages(rng: random.Random) -> list[KnowledgePage]:
    pages = []
    for slug, name, teams in _SERIES:
        for offset in sorted(rng.sample(range(0, 1050), 9)):
            day = date(2023, 1, 2) + timedelta(days=offset)
            topics = rng.sample(_TOPICS, 3)
            actions = rng.sample(_ACTIONS, 2)
            names = [t[1] for t in _TEAMS if t[0] in teams]
            body = f"""
# {name}, {day.isoformat()}

Present: {", ".join(names)}.

Discussed:
- {_sentence(topics[0])}.
- {_sentence(topics[1])}.
- {_sentence(topics[2])}.

Actions: {actions[0]}; {actions[1]}.
"""
            tables = [t for team in _TEAMS if team[0] in teams for t in team[2]]
            pages.append(
                _bulk_page(f"notes-{slug}-{day.isoformat()}", f"{name} notes ({day.isoformat()})",
                      ["meeting-notes"], tables, day, body)
            )  # fmt: skip
    return pages


def _runbook_pages(rng: random.Random) -> list[KnowledgePage]:
    pages = []
    teams = {t[0]: t for t in _TEAMS}
    for title, owner in _RUNBOOKS:
        steps = rng.sample(_STEPS, 4)
        team = teams[owner]
        body = f"""
# How to: {title.lower()}

Owner: {team[1]}. Ask in the team channel if a step does not work.

1. {steps[0]}
2. {steps[1]}
3. {steps[2]}
4. {steps[3]}
"""
        pages.append(
            _bulk_page(f"howto-{_slug(title)}", f"How to: {title.lower()}", ["runbook"], team[2],
                  _when(rng), body)
        )  # fmt: skip
    return pages


def _project_pages(rng: random.Random) -> list[KnowledgePage]:
    pages = []
    for name in _PROJECTS:
        team = rng.choice(_TEAMS)
        start = _when(rng)
        body = f"""
# Project: {name}

Owner: {team[1]}. Started {start.isoformat()}; status: {rng.choice(_STATUSES)}.

Goal: {rng.choice(_TOPICS)}, and {rng.choice(_TOPICS)}. The project reads
{", ".join(f"`{t}`" for t in team[2])}.

Open questions: {rng.choice(_ACTIONS)}.
"""
        pages.append(
            _bulk_page(f"project-{_slug(name)}", f"Project: {name}", ["project"], team[2],
                  start + timedelta(days=rng.randrange(0, 60)), body)
        )  # fmt: skip
    return pages


def bulk_pages() -> list[KnowledgePage]:
    """The handbook's everyday pages (about 190), sorted by id."""
    rng = random.Random(_RNG_SEED)
    pages = [
        *_team_pages(rng),
        *_dashboard_pages(rng),
        *_incident_pages(rng),
        *_meeting_pages(rng),
        *_runbook_pages(rng),
        *_project_pages(rng),
    ]
    ids = [p.id for p in pages]
    if len(set(ids)) != len(ids):
        raise AssertionError("knowledge_bulk: duplicate page ids")
    return sorted(pages, key=lambda p: p.id)
