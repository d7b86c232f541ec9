"""Sales domain: channels, stores, reps, their commission rules, promotions, orders, order
lines and refunds."""

from __future__ import annotations

from dabench.world.constants import (
    END_DATE,
    LINES_PER_ORDER,
    LINES_WIDEN_FROM_SCALE,
    LINES_WIDEN_TO_SCALE,
    MAX_LINES_PER_ORDER,
    ORDERS_PER_CHUNK,
    ORDERS_PER_SCALE,
    START_DATE,
)
from dabench.world.datasets.calendar import days_helper, quantile_days
from dabench.world.datasets.commission import commission_rules_spec
from dabench.world.datasets.spec import Col, DatasetSpec, Helper, chunk_bounds, values_sql
from dabench.world.sqlrand import Rand

OWNER = "sales-analytics@larkspur.example"
CHANNELS = [
    ("web", "Web shop", "Orders placed on larkspur.example and the mobile app."),
    ("store", "Retail stores", "Orders rung up at a Larkspur store till."),
    ("partner", "Wholesale partners", "Orders placed by sales reps for outfitter partners."),
]
STORES = [
    (1, "Seattle Pike", "Seattle", "West", "2015-04-01"),
    (2, "Portland Pearl", "Portland", "West", "2016-09-15"),
    (3, "Denver LoDo", "Denver", "West", "2017-03-01"),
    (4, "Austin Congress", "Austin", "South", "2018-05-20"),
    (5, "Atlanta Midtown", "Atlanta", "South", "2019-02-11"),
    (6, "Chicago Loop", "Chicago", "Midwest", "2016-06-01"),
    (7, "Minneapolis North", "Minneapolis", "Midwest", "2020-10-01"),
    (8, "Boston Back Bay", "Boston", "Northeast", "2017-11-04"),
    (9, "Burlington Church St", "Burlington", "Northeast", "2021-04-17"),
    (10, "Salt Lake Sugar House", "Salt Lake City", "West", "2022-08-08"),
    (11, "Asheville Downtown", "Asheville", "South", "2023-06-01"),
    (12, "Vancouver Gastown", "Vancouver", "Canada", "2024-03-15"),
]
MONTH_THEMES = [
    "New Year Reset", "Winter Clearance", "Spring Thaw", "Trail Opener", "Camp Season",
    "Summer Peaks", "Fourth of July", "Back to Trail", "Fall Layers", "Harvest Hike",
    "Black Friday", "Holiday Gifts",
]  # fmt: skip
N_REPS = 20


def steps(rand: Rand, scale: int) -> list[DatasetSpec | Helper]:
    """The sales datasets; orders, lines and refunds scale linearly."""
    r = rand
    n_orders = ORDERS_PER_SCALE * scale
    n_months = (END_DATE.year - START_DATE.year) * 12 + END_DATE.month
    promotions_select = f"""
WITH m AS (SELECT m, (DATE '{START_DATE}' + to_months(m::INTEGER))::DATE AS starts_on
           FROM range({n_months}) t(m))
SELECT printf('LSQ-%s', strftime(starts_on, '%y%m')) AS promo_code,
       {months_list()}[month(starts_on)] || ' ' || year(starts_on) AS name,
       starts_on, last_day(starts_on) AS ends_on,
       ([10, 15, 20, 25][1 + ({r.h("promo_pct", "m")} % 4)::BIGINT])::INTEGER AS discount_pct
FROM m"""
    reps_select = f"""
SELECT (i + 1)::INTEGER AS sales_rep_id,
       {
        r.pick(
            "rep_first",
            "i",
            [
                "Alex",
                "Blair",
                "Casey",
                "Devon",
                "Emery",
                "Finley",
                "Harper",
                "Jordan",
                "Kai",
                "Logan",
            ],
        )
    } || ' '
       || {
        r.pick(
            "rep_last",
            "i",
            ["Brooks", "Carter", "Diaz", "Ellis", "Foster", "Grant", "Hayes", "Irwin"],
        )
    } AS full_name,
       {r.pick("rep_region", "i", ["West", "South", "Midwest", "Northeast"])} AS region,
       DATE '2016-01-01' + {r.int("rep_hired", "i", 0, 2500)}::INTEGER AS hired_on
FROM range({N_REPS}) t(i)"""
    last_day = f"DATE '{END_DATE}'"
    orders_base = f"""
WITH q AS ({quantile_days("_order_days", str(n_orders))}),
cnt AS (SELECT count(*) FILTER (WHERE is_test) AS n_test,
               count(*) FILTER (WHERE NOT is_test) AS n_real FROM _customer_base),
o AS (
  SELECT q.i, q.day, {r.u("o_test", "q.i")} < 0.14 AS test_pick,
         {r.weighted("o_channel", "q.i", [("web", 0.55), ("store", 0.30), ("partner", 0.15)])}
           AS channel
  FROM q
)
SELECT o.i + 1 AS order_id, o.day AS order_date, c.customer_id, o.channel,
  CASE WHEN o.channel = 'store'
       THEN {r.int("o_store", "o.i", 1, len(STORES))}::INTEGER END AS store_id,
  CASE WHEN o.channel = 'partner'
       THEN {r.int("o_rep", "o.i", 1, N_REPS)}::INTEGER END AS sales_rep_id,
  CASE WHEN {r.u("o_promo", "o.i")} < 0.3
       THEN printf('LSQ-%s', strftime(o.day, '%y%m')) END AS promo_code,
  CASE WHEN o.day > {last_day} - 14 AND {r.u("o_pending", "o.i")} < 0.5 THEN 'pending'
       ELSE {
        r.weighted(
            "o_status", "o.i", [("completed", 0.84), ("cancelled", 0.09), ("returned", 0.07)]
        )
    }
  END AS status,
  {r.int("o_lines", "o.i", *lines_per_order(scale))} AS n_lines
FROM o CROSS JOIN cnt
JOIN _customer_base c
  ON c.is_test = o.test_pick
 AND c.grp_rank = floor({r.u("o_cust", "o.i")} * sqrt({r.u("o_cust", "o.i")})
                        * CASE WHEN o.test_pick THEN cnt.n_test ELSE cnt.n_real END)::BIGINT"""

    def lines_sql(keys: tuple[int, int] | None) -> str:
        """The lines of every order, or (keys = (lo, hi)) of orders lo+1..hi, numbered on
        after the lines of the orders before them."""
        orders, line_id = "_orders", "row_number() OVER (ORDER BY l.order_id, l.line_number)"
        if keys is not None:
            lo, hi = keys
            orders = f"_orders WHERE order_id > {lo} AND order_id <= {hi}"
            before = f"(SELECT coalesce(sum(n_lines), 0) FROM _orders WHERE order_id <= {lo})"
            line_id = f"{before} + {line_id}"
        return f"""
WITH j AS (SELECT order_id, unnest(range(n_lines)) AS j FROM {orders}),
l AS (SELECT order_id, j + 1 AS line_number, order_id * 100 + j AS k FROM j)
SELECT ({line_id})::BIGINT AS line_id,
       l.order_id, l.line_number::INTEGER AS line_number, p.product_id,
       {r.weighted("l_qty", "l.k", [("1", 0.55), ("2", 0.25), ("3", 0.12), ("4", 0.08)])}
         ::INTEGER AS quantity,
       p.list_price AS unit_price
FROM l JOIN product.products p ON p.product_id = {r.int("l_product", "l.k", 1, 120)}"""

    order_chunks = chunk_bounds(n_orders, ORDERS_PER_CHUNK)
    lines = [lines_sql(None if len(order_chunks) == 1 else c) for c in order_chunks]
    orders_select = """
WITH t AS (SELECT order_id, sum(quantity * unit_price)::BIGINT AS amount
           FROM sales.order_lines GROUP BY order_id)
SELECT o.order_id, o.customer_id, o.order_date, o.channel, o.store_id, o.sales_rep_id,
       o.promo_code, o.status, t.amount,
       CASE WHEN o.promo_code IS NULL THEN 0
            ELSE round(t.amount * p.discount_pct / 100.0)::BIGINT END AS discount,
       (CASE WHEN o.channel = 'web' AND t.amount < 7500 THEN 695
             WHEN o.channel = 'partner' THEN 2500 ELSE 0 END)::BIGINT AS shipping
FROM _orders o JOIN t USING (order_id)
LEFT JOIN sales.promotions p USING (promo_code)"""
    refunds_select = f"""
WITH c AS (
  SELECT order_id, order_date, status, amount - discount AS paid,
         {r.u("rf_draw", "order_id")} AS draw
  FROM sales.orders
), rf AS (
  SELECT order_id,
    least(order_date + {r.int("rf_day", "order_id", 5, 40)}::INTEGER, {last_day}) AS refunded_on,
    CASE WHEN status = 'returned' THEN 'return'
         ELSE {
        r.pick("rf_reason", "order_id", ["damaged", "late delivery", "price match", "missing item"])
    } END AS reason,
    CASE WHEN status = 'returned' THEN paid
         ELSE round(paid * (0.3 + 0.5 * {r.u("rf_share", "order_id")}))::BIGINT
    END AS amount
  FROM c WHERE status = 'returned' OR (status = 'completed' AND draw < 0.3)
)
SELECT (row_number() OVER (ORDER BY order_id))::BIGINT AS refund_id, order_id,
       refunded_on, reason, amount
FROM rf"""
    money = ("money",)
    return [
        DatasetSpec(
            id="sales.channels",
            domain="sales",
            kind="reference",
            title="Sales channels",
            description="The three channels through which Larkspur sells.",
            owner=OWNER,
            columns={
                "channel": Col("Channel code used in sales.orders.channel."),
                "name": Col("Display name."),
                "description": Col("What the channel covers."),
            },
            select=values_sql(["channel", "name", "description"], CHANNELS),
            order_by="channel",
            tags=("reference",),
        ),
        DatasetSpec(
            id="sales.stores",
            domain="sales",
            kind="dimension",
            title="Retail stores",
            description="Larkspur's retail stores with their region and opening date.",
            owner=OWNER,
            columns={
                "store_id": Col("Store identifier."),
                "name": Col("Store name."),
                "city": Col("City."),
                "region": Col("Sales region."),
                "opened_on": Col("Opening date."),
            },
            select="SELECT store_id::INTEGER AS store_id, name, city, region, "
            "opened_on::DATE AS opened_on FROM ("
            + values_sql(["store_id", "name", "city", "region", "opened_on"], STORES)
            + ")",
            order_by="store_id",
            tags=("retail",),
        ),
        DatasetSpec(
            id="sales.sales_reps",
            domain="sales",
            kind="dimension",
            title="Sales representatives",
            description="Field sales reps who place orders on behalf of wholesale partners.",
            owner=OWNER,
            columns={
                "sales_rep_id": Col("Rep identifier."),
                "full_name": Col("Rep name."),
                "region": Col("Territory."),
                "hired_on": Col("Hire date."),
            },
            select=reps_select,
            order_by="sales_rep_id",
            tags=("sales-team",),
        ),
        commission_rules_spec(OWNER),
        DatasetSpec(
            id="sales.promotions",
            domain="marketing",
            kind="reference",
            title="Monthly promotions",
            description="One promotion code per calendar month; orders using it get the "
            "percentage discount on the order amount.",
            owner="marketing-ops@larkspur.example",
            columns={
                "promo_code": Col("Code entered at checkout."),
                "name": Col("Campaign name."),
                "starts_on": Col("First valid day."),
                "ends_on": Col("Last valid day."),
                "discount_pct": Col("Discount on the order amount.", "percent"),
            },
            select=promotions_select,
            order_by="promo_code",
            tags=("promotions",),
        ),
        days_helper("_order_days", r),
        Helper("_orders", orders_base),
        DatasetSpec(
            id="sales.order_lines",
            domain="sales",
            kind="fact",
            title="Order lines",
            description="One row per product on an order, at the list price of the day.",
            owner=OWNER,
            columns={
                "line_id": Col("Line identifier."),
                "order_id": Col("Order (sales.orders)."),
                "line_number": Col("Position of the line on the order."),
                "product_id": Col("Product (product.products)."),
                "quantity": Col("Units ordered.", "units"),
                "unit_price": Col(
                    "Price of one unit in US cents (integer), before order-level discounts.",
                    "USD cents",
                    money,
                    ("money-units",),
                ),
            },
            select=lines[0],
            order_by="line_id",
            more_chunks=tuple(lines[1:]),
            tags=("orders", "core-metrics"),
            upstream=("staging.orders_raw", "product.products"),
            transform="order lines from the commerce platform",
        ),
        DatasetSpec(
            id="sales.orders",
            domain="sales",
            kind="fact",
            title="Orders",
            description="One row per customer order from every channel: the source of truth "
            "for sales. Revenue is not a column here: compute it as the revenue policy "
            "defines (knowledge page revenue-policy, glossary term revenue). All money "
            "columns are integer US cents.",
            owner=OWNER,
            columns={
                "order_id": Col("Order identifier."),
                "customer_id": Col("Customer who placed the order (customers.customers)."),
                "order_date": Col("Day the order was placed (company local time)."),
                "channel": Col("Sales channel (sales.channels)."),
                "store_id": Col("Store for store orders (sales.stores)."),
                "sales_rep_id": Col("Rep for partner orders (sales.sales_reps)."),
                "promo_code": Col("Promotion applied, if any (sales.promotions)."),
                "status": Col(
                    "pending, completed, cancelled or returned. Only completed orders count "
                    "toward revenue.",
                    glossary=("revenue", "completed-order"),
                ),
                "amount": Col(
                    "Order amount before discounts: sum of the lines, in US cents (integer).",
                    "USD cents",
                    money,
                    ("money-units", "gross-sales"),
                ),
                "discount": Col(
                    "Promotion discount on the order, in US cents (integer).",
                    "USD cents",
                    money,
                    ("money-units",),
                ),
                "shipping": Col(
                    "Shipping fee charged, in US cents (integer). Not revenue.",
                    "USD cents",
                    money,
                    ("money-units",),
                ),
            },
            select=orders_select,
            order_by="order_id",
            tags=("orders", "core-metrics", "revenue"),
            glossary=("revenue", "gross-sales", "completed-order", "money-units"),
            upstream=("staging.orders_raw", "sales.order_lines", "sales.promotions"),
            transform="de-duplicated from staging, amounts summed from the lines",
        ),
        DatasetSpec(
            id="sales.refunds",
            domain="sales",
            kind="fact",
            title="Refunds",
            description="Money paid back to customers: full refunds of returned orders and "
            "partial refunds (goodwill, damage, price match) on completed orders.",
            owner=OWNER,
            columns={
                "refund_id": Col("Refund identifier."),
                "order_id": Col("Order refunded (sales.orders)."),
                "refunded_on": Col("Day the refund was issued."),
                "reason": Col("Reason code."),
                "amount": Col(
                    "Amount refunded in US cents (integer).", "USD cents", money, ("money-units",)
                ),
            },
            select=refunds_select,
            order_by="refund_id",
            tags=("orders", "revenue"),
            glossary=("refund", "revenue"),
            upstream=("sales.orders",),
            transform="refund events from the payment processor",
        ),
    ]


def lines_per_order(scale: int) -> tuple[int, int]:
    """Inclusive range of the number of lines on one order at ``scale``.

    6..15 up to scale 10; above, the upper bound grows linearly to 55 at scale 100 (integer
    arithmetic) and stays there, so order lines are linear in scale from scale 100 on.
    """
    lo, hi = LINES_PER_ORDER
    span = LINES_WIDEN_TO_SCALE - LINES_WIDEN_FROM_SCALE
    step = min(max(scale - LINES_WIDEN_FROM_SCALE, 0), span)
    return lo, hi + (MAX_LINES_PER_ORDER - hi) * step // span


def months_list() -> str:
    """A SQL list literal of the monthly promotion themes, indexable by month number."""
    return "[" + ", ".join("'" + t + "'" for t in MONTH_THEMES) + "]"
