"""The sales reps' commission plan: one rule table per fiscal year (``sales.commission_rules``).

The rules are the same in every world (a plan is a contract, not a draw); which rule pays
each order line depends on the seeded orders. The knowledge page ``rep-commission-plan``
states how a line is matched to a rule.
"""

from __future__ import annotations

from dabench.world.datasets.spec import Col, DatasetSpec, values_sql

COLUMNS = (
    "rule_id", "plan_year", "rep_region", "department", "customer_tier", "min_tenure_years",
    "promo", "rate_bp",
)  # fmt: skip

_KEPT_AT_RENEWAL: list[dict[str, object]] = [
    {"department": "Apparel", "bp": 240},
    {"rep_region": "West", "department": "Hike", "bp": 420},
    {"rep_region": "West", "bp": 360},
    {"rep_region": "West", "customer_tier": "gold", "bp": 330},
    {"customer_tier": "platinum", "bp": 210},
    {"customer_tier": "platinum", "department": "Climb", "bp": 390},
]
"""Rules of the FY2024 plan that FY2025 kept unchanged (each plan lists them in the same
place, so their ``rule_id`` order is the plan's)."""

_PLANS: dict[int, list[dict[str, object]]] = {
    2022: [{"bp": 300}],
    2023: [
        {"bp": 300},
        {"department": "Climb", "bp": 450},
        {"department": "Apparel", "bp": 250},
        {"rep_region": "West", "bp": 350},
        {"customer_tier": "platinum", "bp": 200},
        {"promo": True, "bp": 150},
        {"min_tenure_years": 5, "bp": 375},
        {"rep_region": "Northeast", "department": "Camp", "bp": 500},
    ],
    2024: [
        {"bp": 320},
        {"department": "Climb", "bp": 480},
        *_KEPT_AT_RENEWAL,
        {"promo": True, "bp": 160},
        {"promo": True, "department": "Climb", "bp": 310},
        {"min_tenure_years": 5, "bp": 380},
        {"rep_region": "South", "min_tenure_years": 8, "bp": 440},
        {"rep_region": "Northeast", "department": "Camp", "bp": 520},
        {"department": "Hike", "promo": False, "bp": 340},
    ],
    2025: [
        {"bp": 330},
        {"department": "Climb", "bp": 500},
        *_KEPT_AT_RENEWAL,
        {"promo": True, "bp": 170},
        {"min_tenure_years": 5, "bp": 400},
        {"rep_region": "South", "min_tenure_years": 8, "bp": 440},
        {"rep_region": "Midwest", "customer_tier": "silver", "bp": 370},
        {"rep_region": "Northeast", "department": "Camp", "bp": 520},
        {"department": "Camp", "promo": False, "bp": 360},
        {"department": "Hike", "promo": False, "bp": 340},
    ],
}


def commission_rules() -> list[tuple[object, ...]]:
    """Every rule as a row of :data:`COLUMNS`, numbered in plan-year order."""
    rows: list[tuple[object, ...]] = []
    for year, plan in _PLANS.items():
        for rule in plan:
            conditions = tuple(rule.get(c) for c in COLUMNS[2:-1])
            rows.append((len(rows) + 1, year, *conditions, rule["bp"]))
    return rows


def commission_rules_spec(owner: str) -> DatasetSpec:
    """The ``sales.commission_rules`` reference table."""
    select = f"""
SELECT rule_id::INTEGER AS rule_id, plan_year::INTEGER AS plan_year,
       rep_region::VARCHAR AS rep_region, department::VARCHAR AS department,
       customer_tier::VARCHAR AS customer_tier, min_tenure_years::INTEGER AS min_tenure_years,
       promo::BOOLEAN AS promo, rate_bp::INTEGER AS rate_bp
FROM ({values_sql(COLUMNS, commission_rules())})"""
    return DatasetSpec(
        id="sales.commission_rules",
        domain="sales",
        kind="reference",
        title="Sales commission rules",
        description="The reps' commission plan, one set of rules per fiscal year. An empty "
        "condition matches anything; which rule pays an order line is set out in the "
        "knowledge page rep-commission-plan.",
        owner=owner,
        columns={
            "rule_id": Col("Rule identifier."),
            "plan_year": Col("Fiscal year of the plan the rule belongs to."),
            "rep_region": Col("Condition: the rep's territory (sales.sales_reps.region)."),
            "department": Col("Condition: the product's department (product.categories)."),
            "customer_tier": Col("Condition: the customer's tier on the order date."),
            "min_tenure_years": Col(
                "Condition: the rep's completed years of service on the order date, at least "
                "this many."
            ),
            "promo": Col("Condition: whether the order used a promotion code."),
            "rate_bp": Col(
                "Commission rate in basis points of the line's commission base.", "basis points"
            ),
        },
        select=select,
        order_by="rule_id",
        tags=("sales-team", "compensation"),
    )
