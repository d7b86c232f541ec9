"""Product domain: categories, suppliers, warehouses, products and inventory snapshots."""

from __future__ import annotations

from dabench.world.constants import (
    CASE_COUNT_SNAPSHOT,
    CASE_COUNT_WAREHOUSE,
    CASE_SIZE,
    END_DATE,
    START_DATE,
)
from dabench.world.datasets.spec import Col, DatasetSpec, Helper, values_sql
from dabench.world.sqlrand import Rand

OWNER = "product-data@larkspur.example"
N_PRODUCTS = 120

CATEGORIES = [
    # id, name, department, noun, price low (dollars), price high
    (1, "Tents", "Camp", "Tent", 120, 650),
    (2, "Sleeping Bags", "Camp", "Sleeping Bag", 60, 420),
    (3, "Backpacks", "Hike", "Pack", 45, 320),
    (4, "Footwear", "Hike", "Boot", 70, 260),
    (5, "Jackets", "Apparel", "Jacket", 55, 480),
    (6, "Climbing", "Climb", "Harness", 40, 230),
    (7, "Cooking", "Camp", "Stove", 15, 180),
    (8, "Navigation", "Hike", "GPS", 25, 450),
    (9, "Lighting", "Camp", "Headlamp", 12, 110),
    (10, "Water", "Hike", "Filter", 10, 95),
]
ADJECTIVES = [
    "Alpine", "Summit", "Ridge", "Trail", "Cascade", "Granite",
    "Aurora", "Timber", "Canyon", "Glacier", "Meadow", "Boreal",
]  # fmt: skip
SUFFIXES = ["Lite", "Pro", "Classic", "Ultra", "Trek", "Basecamp", "Switch", "Evo"]
SUPPLIERS = [
    (1, "Nordvik Textiles", "Sweden", 42), (2, "Pacific Loom", "Vietnam", 55),
    (3, "Granite Forge", "USA", 21), (4, "Kestrel Outdoor Mfg", "China", 48),
    (5, "Hokuto Works", "Japan", 35), (6, "Andes Alloy", "Chile", 40),
    (7, "Bavaria Bergsport", "Germany", 30), (8, "Maple Ridge Goods", "Canada", 18),
    (9, "Sahara Optics", "Morocco", 44), (10, "Tasman Gear", "New Zealand", 50),
    (11, "Lakeshore Foam", "USA", 14), (12, "Danube Metals", "Austria", 33),
    (13, "Coral Polymers", "Taiwan", 46), (14, "Highland Wool", "Scotland", 38),
    (15, "Prairie Canvas", "USA", 16),
]  # fmt: skip
WAREHOUSES = [
    (1, "Reno DC", "Reno", "2019-03-01"),
    (2, "Columbus DC", "Columbus", "2020-08-15"),
    (3, "Savannah DC", "Savannah", "2023-05-01"),
]


def _skewed(u: str) -> str:
    """u ** 1.5 with exactly rounded operations only (sqrt), identical on every platform."""
    return f"({u} * sqrt({u}))"


def steps(rand: Rand, scale: int) -> list[DatasetSpec | Helper]:
    """The product datasets; none of them scale."""
    cats = values_sql(
        ["category_id", "name", "department", "noun", "price_low", "price_high"], CATEGORIES
    )
    products_select = f"""
WITH c AS ({cats}), p AS (
  SELECT i + 1 AS product_id, 1 + (i % 10) AS category_id FROM range({N_PRODUCTS}) t(i)
)
SELECT p.product_id,
       printf('LS-%02d-%04d', p.category_id, 1000 + p.product_id * 7) AS sku,
       {rand.pick("p_adj", "p.product_id", ADJECTIVES)} || ' ' || c.noun || ' '
         || {rand.pick("p_suf", "p.product_id", SUFFIXES)} AS name,
       p.category_id::INTEGER AS category_id,
       {rand.int("p_sup", "p.product_id", 1, len(SUPPLIERS))}::INTEGER AS supplier_id,
       (round((c.price_low + (c.price_high - c.price_low)
         * {_skewed(rand.u("p_price", "p.product_id"))})) * 100 - 1)::BIGINT AS list_price,
       (round((c.price_low + (c.price_high - c.price_low)
         * {_skewed(rand.u("p_price", "p.product_id"))}) * 100
         * (0.42 + 0.2 * {rand.u("p_cost", "p.product_id")})))::BIGINT AS unit_cost,
       DATE '2019-01-01' + {rand.int("p_launch", "p.product_id", 0, 1800)}::INTEGER
         AS launched_on
FROM p JOIN c USING (category_id)"""
    months = f"""
SELECT last_day(DATE '{START_DATE}' + to_months(m::INTEGER)) AS snapshot_date
FROM range({(END_DATE.year - START_DATE.year) * 12 + END_DATE.month}) t(m)"""
    inv_key = "(epoch(s.snapshot_date)::BIGINT * 1000 + w.warehouse_id) * 1000 + p.product_id"
    # The data incident of CASE_COUNT_SNAPSHOT: one warehouse's export counted full cases.
    in_cases = (
        f"(w.warehouse_id = {CASE_COUNT_WAREHOUSE} "
        f"AND s.snapshot_date = DATE '{CASE_COUNT_SNAPSHOT}')"
    )
    inventory_select = f"""
SELECT snapshot_date, warehouse_id, product_id,
       (CASE WHEN in_cases THEN on_hand // {CASE_SIZE} ELSE on_hand END)::INTEGER AS on_hand,
       (CASE WHEN in_cases THEN on_order // {CASE_SIZE} ELSE on_order END)::INTEGER AS on_order
FROM (
SELECT s.snapshot_date, w.warehouse_id, p.product_id, {in_cases} AS in_cases,
       {rand.int("inv_hand", inv_key, 0, 400)}::INTEGER AS on_hand,
       ({rand.int("inv_order", inv_key, 0, 8)} * 25)::INTEGER AS on_order
FROM ({months}) s CROSS JOIN product.warehouses w CROSS JOIN product.products p
WHERE w.opened_on <= s.snapshot_date)"""
    return [
        DatasetSpec(
            id="product.categories",
            domain="product",
            kind="reference",
            title="Product categories",
            description="The ten merchandise categories and the department each belongs to.",
            owner=OWNER,
            columns={
                "category_id": Col("Category identifier."),
                "name": Col("Category name shown in the web shop."),
                "department": Col("Merchandising department (Camp, Hike, Apparel, Climb)."),
            },
            select=f"SELECT category_id::INTEGER AS category_id, name, department FROM ({cats})",
            order_by="category_id",
            tags=("merchandising", "reference"),
        ),
        DatasetSpec(
            id="product.suppliers",
            domain="product",
            kind="dimension",
            title="Suppliers",
            description="Manufacturers Larkspur buys finished goods from.",
            owner=OWNER,
            columns={
                "supplier_id": Col("Supplier identifier."),
                "name": Col("Supplier legal name."),
                "country": Col("Country of the supplier's main factory."),
                "lead_time_days": Col("Typical days from purchase order to delivery.", "days"),
            },
            select="SELECT supplier_id::INTEGER AS supplier_id, name, country, "
            "lead_time_days::INTEGER AS lead_time_days FROM ("
            + values_sql(["supplier_id", "name", "country", "lead_time_days"], SUPPLIERS)
            + ")",
            order_by="supplier_id",
            tags=("procurement",),
        ),
        DatasetSpec(
            id="product.warehouses",
            domain="product",
            kind="dimension",
            title="Distribution centers",
            description="Warehouses (distribution centers) that hold inventory and ship orders.",
            owner=OWNER,
            columns={
                "warehouse_id": Col("Warehouse identifier."),
                "name": Col("Warehouse name."),
                "city": Col("City where the warehouse is located."),
                "opened_on": Col("Date the warehouse started shipping."),
            },
            select="SELECT warehouse_id::INTEGER AS warehouse_id, name, city, "
            "opened_on::DATE AS opened_on FROM ("
            + values_sql(["warehouse_id", "name", "city", "opened_on"], WAREHOUSES)
            + ")",
            order_by="warehouse_id",
            tags=("logistics",),
        ),
        DatasetSpec(
            id="product.products",
            domain="product",
            kind="dimension",
            title="Products",
            description="Every product (SKU) Larkspur sells, with its current list price and "
            "unit cost. Prices are maintained by merchandising; history is not kept here.",
            owner=OWNER,
            columns={
                "product_id": Col("Product identifier."),
                "sku": Col("Stock keeping unit code printed on the label."),
                "name": Col("Product name as shown in the web shop."),
                "category_id": Col("Category of the product (product.categories)."),
                "supplier_id": Col("Supplier that manufactures the product (product.suppliers)."),
                "list_price": Col(
                    "Current list price in US cents (integer; divide by 100 for dollars).",
                    "USD cents",
                    ("money",),
                    ("money-units",),
                ),
                "unit_cost": Col(
                    "Landed cost of one unit in US cents (integer; divide by 100 for dollars).",
                    "USD cents",
                    ("money",),
                    ("money-units",),
                ),
                "launched_on": Col("Date the product was first offered."),
            },
            select=products_select,
            order_by="product_id",
            tags=("merchandising", "pricing"),
            glossary=("money-units",),
            upstream=("product.categories", "product.suppliers"),
            transform="merchandising master data export",
        ),
        DatasetSpec(
            id="product.inventory_snapshots",
            domain="product",
            kind="fact",
            title="Month-end inventory",
            description="Units on hand and on order per product and warehouse, taken at the "
            "end of every month.",
            owner=OWNER,
            columns={
                "snapshot_date": Col("Last day of the month the snapshot was taken."),
                "warehouse_id": Col("Warehouse (product.warehouses)."),
                "product_id": Col("Product (product.products)."),
                "on_hand": Col("Units physically in the warehouse.", "units"),
                "on_order": Col("Units ordered from the supplier, not yet received.", "units"),
            },
            select=inventory_select,
            order_by="snapshot_date, warehouse_id, product_id",
            tags=("logistics", "inventory"),
            upstream=("product.products", "product.warehouses"),
            transform="month-end snapshot of the warehouse management system",
        ),
    ]
