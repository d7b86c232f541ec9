"""The commission plan keeps the promises its page makes: every order line of a partner order
has exactly one paying rule, and no rule is hidden behind another with the same conditions."""

from __future__ import annotations

import duckdb

from dabench.world import World
from dabench.world.datasets.commission import COLUMNS, commission_rules

CONDITIONS = COLUMNS[2:-1]


def test_every_plan_has_one_rule_without_conditions_and_no_twin_rules() -> None:
    rows = commission_rules()
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    by_year: dict[object, list[tuple[object, ...]]] = {}
    for row in rows:
        by_year.setdefault(row[1], []).append(row)
    assert set(by_year) == {2022, 2023, 2024, 2025}  # FY2022 holds January 2023's orders
    for year, plan in by_year.items():
        conditions = [row[2:-1] for row in plan]
        assert conditions.count((None,) * len(CONDITIONS)) == 1, year
        assert len(set(conditions)) == len(conditions), f"FY{year}: two rules set the same"


def test_every_partner_line_matches_a_rule_of_its_fiscal_year(world: World) -> None:
    """The page's matching, run on the world: every partner order line has a customer tier on
    its order date and, in each of the four fiscal years the orders span, matches at least
    one rule of its plan (the lower rule_id then leaves exactly one)."""
    con = duckdb.connect(str(world.warehouse_path), read_only=True)
    try:
        lines, untiered, matched, plans = con.execute("""
            WITH l AS (
              SELECT l.line_id, o.order_date, r.region, cat.department, th.tier,
                     o.promo_code IS NOT NULL AS promo,
                     year(o.order_date) - year(r.hired_on)
                       - CASE WHEN month(o.order_date) * 100 + day(o.order_date)
                                   < month(r.hired_on) * 100 + day(r.hired_on)
                              THEN 1 ELSE 0 END AS tenure,
                     year(o.order_date - INTERVAL 1 MONTH) AS fy
              FROM sales.orders o
              JOIN sales.order_lines l USING (order_id)
              JOIN sales.sales_reps r USING (sales_rep_id)
              JOIN product.products p USING (product_id)
              JOIN product.categories cat USING (category_id)
              LEFT JOIN customers.tier_history th ON th.customer_id = o.customer_id
               AND o.order_date >= th.valid_from
               AND (th.valid_to IS NULL OR o.order_date < th.valid_to)
            ), m AS (
              SELECT l.line_id
              FROM l JOIN sales.commission_rules k ON k.plan_year = l.fy
               AND (k.rep_region IS NULL OR k.rep_region = l.region)
               AND (k.department IS NULL OR k.department = l.department)
               AND (k.customer_tier IS NULL OR k.customer_tier = l.tier)
               AND (k.min_tenure_years IS NULL OR l.tenure >= k.min_tenure_years)
               AND (k.promo IS NULL OR k.promo = l.promo)
            )
            SELECT (SELECT count(*) FROM l),
                   (SELECT count(*) FROM l WHERE tier IS NULL),
                   (SELECT count(DISTINCT line_id) FROM m),
                   (SELECT count(DISTINCT fy) FROM l)
        """).fetchone() or (0, 0, 0, 0)
    finally:
        con.close()
    assert lines > 0 and plans == 4 and untiered == 0
    assert matched == lines  # the rule without conditions catches every line
