"""TPC-DS-like star schemas for the federated suite and bench: facts in PostgreSQL,
dimensions as Parquet, and the same dimensions in PostgreSQL too for a baseline.

There is no TPC-DS generator among the project's dependencies, so this writes a small
deterministic look-alike with numpy (seeded): the tables, keys and value ranges the
star-join queries below touch, with TPC-DS's row counts at scale factor 1 (catalog_sales
1.44M rows, inventory 11.7M, store_sales 2.88M, customer_demographics 1.92M) multiplied by
`scale`. Column meanings follow TPC-DS; the distributions are uniform.

- `generate(root, scale)` writes every table as root/<table>.parquet (seconds at scale 1);
- `load_postgres(dsn, root)` loads the facts into schema public (the gateway's source)
  and the dimensions into schema `dims` (not seen by the gateway: a session with
  `search_path = public, dims` is "PostgreSQL alone on the same data"), with primary keys,
  then VACUUM ANALYZE.

QUERIES holds the star-join shapes: Q72 (catalog_sales x inventory on a week, a quantity
inequality and a date range, six dimensions), Q25 (three facts chained through customer
and item keys, three date ranges), Q26 (one fact, four selective dimensions).
"""

from __future__ import annotations

import datetime as dt
import decimal
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

FACTS = ("catalog_sales", "catalog_returns", "inventory", "store_sales", "store_returns")
DIMENSIONS = ("date_dim", "item", "warehouse", "customer_demographics", "household_demographics",
              "promotion", "store")
FIRST_DATE = dt.date(1998, 1, 1)
FIRST_DATE_SK = 2450815  # TPC-DS's d_date_sk of 1998-01-01
SALES_DAYS = 5 * 365  # sales and inventory cover 1998-2002; date_dim runs to 2003
MONEY = pa.decimal128(7, 2)

KEYS = {
    "catalog_sales": "cs_item_sk, cs_order_number", "catalog_returns": "cr_item_sk, cr_order_number",
    "inventory": "inv_date_sk, inv_item_sk, inv_warehouse_sk",
    "store_sales": "ss_item_sk, ss_ticket_number", "store_returns": "sr_item_sk, sr_ticket_number",
    "date_dim": "d_date_sk", "item": "i_item_sk", "warehouse": "w_warehouse_sk",
    "customer_demographics": "cd_demo_sk", "household_demographics": "hd_demo_sk",
    "promotion": "p_promo_sk", "store": "s_store_sk",
}
_PG_TYPES = {pa.int32(): "integer", pa.int64(): "bigint", pa.string(): "text", pa.date32(): "date",
             MONEY: "numeric(7,2)"}


def _cents(cents: np.ndarray) -> pa.Array:
    """Decimal(7,2) values from integer cents, exactly."""
    whole = pa.array(cents, pa.int32()).cast(pa.decimal128(10, 0))
    return pc.multiply(whole, pa.scalar(decimal.Decimal("0.01"), pa.decimal128(3, 2))).cast(MONEY)


def _pick(rng: np.random.Generator, words: list[str], n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, len(words), n), pa.int32()),
                                          pa.array(words)).cast(pa.string())


def _cycle(words: list[str], index: np.ndarray) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(index % len(words), pa.int32()),
                                          pa.array(words)).cast(pa.string())


def _int(values: np.ndarray) -> pa.Array:
    return pa.array(values.astype(np.int32), pa.int32())


def dimensions(scale: float) -> dict[str, pa.Table]:
    rng = np.random.default_rng(72)
    days = np.arange(6 * 365 + 1)
    dates = np.datetime64(FIRST_DATE) + days
    years = dates.astype("datetime64[Y]").astype(int) + 1970
    months = dates.astype("datetime64[M]").astype(int) % 12 + 1
    tables = {"date_dim": pa.table({
        "d_date_sk": _int(FIRST_DATE_SK + days), "d_date": pa.array(dates, pa.date32()),
        "d_week_seq": _int(5270 + (days + 3) // 7), "d_year": _int(years), "d_moy": _int(months),
        "d_dom": _int((dates - dates.astype("datetime64[M]")).astype(int) + 1)})}
    items = max(200, int(18000 * scale))
    sk = np.arange(1, items + 1)
    tables["item"] = pa.table({
        "i_item_sk": _int(sk), "i_item_id": pa.array([f"AAAAAAAA{n:08d}" for n in sk // 2 + 1]),
        "i_item_desc": pa.array([f"item description {n}" for n in sk]),
        "i_category": _cycle(["Books", "Children", "Electronics", "Home", "Jewelry", "Men",
                              "Music", "Shoes", "Sports", "Women"], sk),
        "i_current_price": _cents(rng.integers(99, 9999, items))})
    tables["warehouse"] = pa.table({
        "w_warehouse_sk": _int(np.arange(1, 6)),
        "w_warehouse_name": pa.array(["Conventional childr", "Important issues liv", "Doors canno",
                                      "Bad cards must make.", "Operations"]),
        "w_state": pa.array(["TN", "TN", "GA", "SD", "TN"])})
    demos = max(1000, int(1_920_800 * scale))
    i = np.arange(demos)
    tables["customer_demographics"] = pa.table({
        "cd_demo_sk": _int(i + 1), "cd_gender": _cycle(["M", "F"], i),
        "cd_marital_status": _cycle(["M", "S", "D", "W", "U"], i // 2),
        "cd_education_status": _cycle(["Primary", "Secondary", "College", "2 yr Degree",
                                       "4 yr Degree", "Advanced Degree", "Unknown"], i // 10),
        "cd_dep_count": _int(i // 70 % 7)})
    h = np.arange(7200)
    tables["household_demographics"] = pa.table({
        "hd_demo_sk": _int(h + 1),
        "hd_buy_potential": _cycle([">10000", "5001-10000", "1001-5000", "501-1000", "0-500",
                                    "Unknown"], h),
        "hd_dep_count": _int(h // 6 % 10), "hd_vehicle_count": _int(h // 60 % 6 - 1)})
    p = np.arange(300)
    tables["promotion"] = pa.table({
        "p_promo_sk": _int(p + 1), "p_channel_email": _cycle(["N", "Y"], p * 7 // 3),
        "p_channel_event": _cycle(["N", "Y", "Y"], p)})
    s = np.arange(12)
    tables["store"] = pa.table({
        "s_store_sk": _int(s + 1), "s_store_id": pa.array([f"AAAAAAAA{n:08d}" for n in s // 2 + 1]),
        "s_store_name": _cycle(["ought", "able", "pri", "ese", "anti", "cally", "bar", "eing"], s),
        "s_state": pa.array(["TN"] * 12)})
    return tables


def _unique_lines(rng: np.random.Generator, n: int, lines: int, items: int) -> tuple[np.ndarray, np.ndarray]:
    """(order number, item) pairs, `lines` to an order, no item twice in an order."""
    order = np.arange(n) // lines + 1
    item = (rng.integers(0, items, n // lines + 1)[order - 1] + (np.arange(n) % lines) * 97) % items + 1
    return order, item


def facts(scale: float, items: int, demos: int) -> dict[str, pa.Table]:
    rng = np.random.default_rng(25)
    store_rows = int(2_880_404 * scale)
    ticket, ss_item = _unique_lines(rng, store_rows, 10, items)
    ss_customer = rng.integers(1, max(100, int(100_000 * scale)) + 1, store_rows)
    ss_day = rng.integers(0, SALES_DAYS, store_rows)
    tables = {"store_sales": pa.table({
        "ss_sold_date_sk": _int(FIRST_DATE_SK + ss_day), "ss_item_sk": _int(ss_item),
        "ss_customer_sk": _int(ss_customer), "ss_store_sk": _int(rng.integers(1, 13, store_rows)),
        "ss_ticket_number": pa.array(ticket, pa.int64()),
        "ss_quantity": _int(rng.integers(1, 101, store_rows)),
        "ss_net_profit": _cents(rng.integers(-500_000, 900_000, store_rows))})}
    returned = np.flatnonzero(rng.random(store_rows) < 0.1)
    r_day = ss_day[returned] + rng.integers(1, 61, len(returned))
    tables["store_returns"] = pa.table({
        "sr_returned_date_sk": _int(FIRST_DATE_SK + r_day), "sr_item_sk": _int(ss_item[returned]),
        "sr_customer_sk": _int(ss_customer[returned]),
        "sr_ticket_number": pa.array(ticket[returned], pa.int64()),
        "sr_return_quantity": _int(rng.integers(1, 101, len(returned))),
        "sr_net_loss": _cents(rng.integers(50, 500_000, len(returned)))})
    # Catalog sales: uniform orders, then re-purchases of a third of the store returns
    # (same customer and item, within 90 days): the rows Q25 finds.
    catalog_rows = int(1_441_548 * scale)
    order, cs_item = _unique_lines(rng, catalog_rows, 10, items)
    customer = rng.integers(1, max(100, int(100_000 * scale)) + 1, catalog_rows)
    day = rng.integers(0, SALES_DAYS, catalog_rows)
    again = returned[rng.random(len(returned)) < 0.33]
    order = np.concatenate([order, order[-1] + 1 + np.arange(len(again))])
    cs_item = np.concatenate([cs_item, ss_item[again]])
    customer = np.concatenate([customer, ss_customer[again]])
    day = np.concatenate([day, np.minimum(ss_day[again] + rng.integers(1, 91, len(again)), SALES_DAYS - 1)])
    n = len(order)
    tables["catalog_sales"] = pa.table({
        "cs_sold_date_sk": _int(FIRST_DATE_SK + day),
        "cs_ship_date_sk": _int(FIRST_DATE_SK + day + rng.integers(2, 91, n)),
        "cs_bill_customer_sk": _int(customer), "cs_bill_cdemo_sk": _int(rng.integers(1, demos + 1, n)),
        "cs_bill_hdemo_sk": _int(rng.integers(1, 7201, n)), "cs_item_sk": _int(cs_item),
        "cs_promo_sk": _int(rng.integers(1, 301, n)), "cs_order_number": pa.array(order, pa.int64()),
        "cs_quantity": _int(rng.integers(1, 101, n)), "cs_list_price": _cents(rng.integers(100, 30_000, n)),
        "cs_sales_price": _cents(rng.integers(0, 30_000, n)),
        "cs_net_profit": _cents(rng.integers(-1_000_000, 1_900_000, n))})
    back = np.flatnonzero(rng.random(n) < 0.1)
    tables["catalog_returns"] = pa.table({
        "cr_returned_date_sk": _int(FIRST_DATE_SK + day[back] + rng.integers(3, 120, len(back))),
        "cr_item_sk": _int(cs_item[back]), "cr_order_number": pa.array(order[back], pa.int64()),
        "cr_return_quantity": _int(rng.integers(1, 101, len(back))),
        "cr_net_loss": _cents(rng.integers(50, 500_000, len(back)))})
    # Inventory: every week's Thursday, every odd item, five warehouses (TPC-DS's 11.7M rows
    # at scale 1 are 261 weeks x 9,000 items x 5).
    weeks = np.arange(0, SALES_DAYS, 7)
    stocked = np.arange(1, items + 1, 2)
    w, it, wh = np.meshgrid(weeks, stocked, np.arange(1, 6), indexing="ij")
    tables["inventory"] = pa.table({
        "inv_date_sk": _int(FIRST_DATE_SK + w.ravel()), "inv_item_sk": _int(it.ravel()),
        "inv_warehouse_sk": _int(wh.ravel()),
        "inv_quantity_on_hand": _int(rng.integers(0, 1001, w.size))})
    return tables


def generate(root: Path, scale: float) -> Path:
    """Every table as root/<table>.parquet; returns root."""
    root.mkdir(parents=True, exist_ok=True)
    dims = dimensions(scale)
    tables = dims | facts(scale, dims["item"].num_rows, dims["customer_demographics"].num_rows)
    for name, table in tables.items():
        pq.write_table(table, root / f"{name}.parquet")
    return root


async def load_postgres(dsn: str, root: Path, analyzed: bool = True) -> None:
    """Facts into schema public, dimensions into schema dims, each with its primary key.

    `analyzed=False` leaves the facts as a bulk load leaves them before autovacuum comes:
    created with their primary key, filled by COPY, never analyzed (autovacuum off for
    them), so `pg_class.reltuples` is -1 and the gateway has no row estimate for them."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE SCHEMA IF NOT EXISTS dims")
        for name in FACTS + DIMENSIONS:
            schema = "public" if name in FACTS else "dims"
            table = pq.read_table(root / f"{name}.parquet")
            columns = ", ".join(f"{f.name} {_PG_TYPES[f.type]}" for f in table.schema)
            fresh = not analyzed and name in FACTS
            if fresh:  # the key first: building it after the COPY would count the rows
                await conn.execute(f"CREATE TABLE {schema}.{name} ({columns}, PRIMARY KEY ({KEYS[name]})) "
                                   "WITH (autovacuum_enabled = false)")
            else:
                await conn.execute(f"CREATE TABLE {schema}.{name} ({columns})")
            with tempfile.NamedTemporaryFile(suffix=".csv") as csv:
                pacsv.write_csv(table, csv.name, pacsv.WriteOptions(include_header=False))
                await conn.copy_to_table(name, schema_name=schema, source=csv.name, format="csv")
            if not fresh:
                await conn.execute(f"ALTER TABLE {schema}.{name} ADD PRIMARY KEY ({KEYS[name]})")
        if analyzed:
            await conn.execute("VACUUM ANALYZE")
        else:
            for name in DIMENSIONS:
                await conn.execute(f"VACUUM ANALYZE dims.{name}")
    finally:
        await conn.close()


QUERIES = {
    "q72": """
select i_item_desc, w_warehouse_name, d1.d_week_seq,
       sum(case when p_promo_sk is null then 1 else 0 end) as no_promo,
       sum(case when p_promo_sk is not null then 1 else 0 end) as promo,
       count(*) as total_cnt
from catalog_sales
join inventory on (cs_item_sk = inv_item_sk)
join warehouse on (w_warehouse_sk = inv_warehouse_sk)
join item on (i_item_sk = cs_item_sk)
join customer_demographics on (cs_bill_cdemo_sk = cd_demo_sk)
join household_demographics on (cs_bill_hdemo_sk = hd_demo_sk)
join date_dim d1 on (cs_sold_date_sk = d1.d_date_sk)
join date_dim d2 on (inv_date_sk = d2.d_date_sk)
join date_dim d3 on (cs_ship_date_sk = d3.d_date_sk)
left outer join promotion on (cs_promo_sk = p_promo_sk)
left outer join catalog_returns on (cr_item_sk = cs_item_sk and cr_order_number = cs_order_number)
where d1.d_week_seq = d2.d_week_seq
  and inv_quantity_on_hand < cs_quantity
  and d3.d_date > d1.d_date + 5
  and hd_buy_potential = '>10000'
  and d1.d_year = 1999
  and cd_marital_status = 'D'
group by i_item_desc, w_warehouse_name, d1.d_week_seq
order by total_cnt desc, i_item_desc, w_warehouse_name, d_week_seq
limit 100""",
    "q25": """
select i_item_id, i_item_desc, s_store_id, s_store_name,
       sum(ss_net_profit) as store_sales_profit, sum(sr_net_loss) as store_returns_loss,
       sum(cs_net_profit) as catalog_sales_profit
from store_sales, store_returns, catalog_sales, date_dim d1, date_dim d2, date_dim d3, store, item
where d1.d_moy = 4 and d1.d_year = 2001 and d1.d_date_sk = ss_sold_date_sk
  and i_item_sk = ss_item_sk and s_store_sk = ss_store_sk
  and ss_customer_sk = sr_customer_sk and ss_item_sk = sr_item_sk
  and ss_ticket_number = sr_ticket_number
  and sr_returned_date_sk = d2.d_date_sk and d2.d_moy between 4 and 10 and d2.d_year = 2001
  and sr_customer_sk = cs_bill_customer_sk and sr_item_sk = cs_item_sk
  and cs_sold_date_sk = d3.d_date_sk and d3.d_moy between 4 and 10 and d3.d_year = 2001
group by i_item_id, i_item_desc, s_store_id, s_store_name
order by i_item_id, i_item_desc, s_store_id, s_store_name
limit 100""",
    "q26": """
select i_item_id, avg(cs_quantity) as agg1, avg(cs_list_price) as agg2,
       avg(cs_sales_price) as agg3, count(*) as cnt
from catalog_sales, customer_demographics, date_dim, item, promotion
where cs_sold_date_sk = d_date_sk and cs_item_sk = i_item_sk
  and cs_bill_cdemo_sk = cd_demo_sk and cs_promo_sk = p_promo_sk
  and cd_gender = 'F' and cd_marital_status = 'W' and cd_education_status = 'Primary'
  and (p_channel_email = 'N' or p_channel_event = 'N') and d_year = 2000
group by i_item_id
order by i_item_id
limit 100""",
}
