"""The retail database: users, their orders and a product catalogue, generated from a seed.

Nothing is read from disk: :func:`generate_tables` builds the same tables for the same seed on
every machine (one ``random.Random``; no global RNG, no set or hash ordering), and
:func:`load_tables` caches the seed-0 tables for the process.

Tables (every table maps a record's id to the record; all values are JSON types; the record
types are in :mod:`.records`):

``products`` (50)
    ``{product_id, name, variants: {item_id: {item_id, options: {name: value}, available,
    price}}}``. Ids are 10-digit strings; a variant's ``price`` is today's price.
``users`` (500)
    ``{user_id, name: {first_name, last_name}, address: {address1, address2, city, country,
    state, zip}, email, payment_methods: {id: method}, orders: [order_id, ...]}``. A payment
    method is ``{source: "credit_card", id, brand, last_four}``, ``{source: "paypal", id}`` or
    ``{source: "gift_card", id, balance}``. ``user_id`` is ``first_last_NNNN``; emails and
    (first name, last name, zip) are unique, so both ways of finding a user are unambiguous.
``orders`` (1,000)
    ``{order_id, user_id, address, items: [{name, product_id, item_id, price, options}],
    status, fulfillments: [{tracking_id: [..], item_ids: [..]}], payment_history:
    [{transaction_type: "payment" | "refund", amount, payment_method_id}]}``; ``order_id`` is
    ``#W`` + 7 digits. Cancelled orders also carry ``cancel_reason``; orders with a return or
    exchange under way carry what was requested (``return_items``, ``exchange_items``, ...).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from tool_envs.tau.datagen import SeedTables, new_id, table_rows

Tables = dict[str, dict[str, dict[str, Any]]]

ORDER_STATUSES = (
    "pending",
    "processed",
    "delivered",
    "cancelled",
    "return requested",
    "exchange requested",
)
_STATUS_WEIGHTS = (26, 14, 36, 9, 7, 8)
CANCEL_REASONS = ("no longer needed", "ordered by mistake")

# One product per line: name; lowest-highest base price; option=value/value/...; a line that
# starts with spaces continues the one above. Every product has at least 3 variants.
_CATALOGUE_TABLE = """
Rain Jacket; 60-140; color=black/white/navy/grey/red; size=XS/S/M/L/XL; hood=packable/fixed
Merino Hoodie; 55-110; color=black/white/navy/grey/red/green; size=XS/S/M/L/XL
Denim Jeans; 40-95; fit=slim/straight/relaxed; waist=30/32/34/36; wash=light/dark
Wool Socks; 12-28; size=S/M/L; pack=3 pairs/6 pairs; color=grey/black/oatmeal
Winter Scarf; 20-60; material=wool/cashmere/acrylic; color=black/white/navy/grey
Trail Running Shoes; 90-170; size=7/8/9/10/11/12; color=black/orange/teal; drop=4mm/8mm
Leather Boots; 120-260; size=7/8/9/10/11/12; color=brown/black; lining=shearling/unlined
Canvas Tote; 18-45; color=natural/black/olive; size=medium/large
Travel Backpack; 70-180; capacity=25L/35L/45L; color=black/grey/green; laptop sleeve=yes/no
Leather Wallet; 30-90; style=bifold/trifold/card holder; color=brown/black/tan
Analog Wristwatch; 110-420; case=38mm/42mm; strap=leather/steel/nylon; dial=white/black/blue
Polarized Sunglasses; 45-160; frame=tortoise/black/clear; lens=grey/brown/green
Wireless Earbuds; 50-220; color=black/white/sand; case=wireless charging/usb-c
Over-Ear Headphones; 90-380; color=black/silver/blue; noise cancelling=yes/no;
    connectivity=wireless/wired
Bluetooth Speaker; 40-200; color=black/red/blue/green; battery=12h/20h; waterproof=yes/no
Smart Watch; 150-450; case=40mm/44mm; color=black/silver/gold; cellular=yes/no
Fitness Tracker; 50-160; color=black/pink/teal; band=silicone/fabric; gps=yes/no
Mechanical Keyboard; 70-210; switch=linear/tactile/clicky; layout=full size/tenkeyless/compact;
    backlight=RGB/white/none
Gaming Mouse; 30-130; color=black/white; connectivity=wireless/wired; sensor=16000 dpi/26000 dpi
Computer Monitor; 160-650; size=24 inch/27 inch/32 inch; resolution=1080p/1440p/4K;
    refresh rate=60Hz/144Hz
Laptop Stand; 25-80; material=aluminium/bamboo; adjustable=yes/no; color=silver/space grey
HD Webcam; 40-180; resolution=1080p/4K; microphone=built-in/none; mount=clip/tripod
Portable Power Bank; 25-90; capacity=10000mAh/20000mAh/26800mAh; color=black/white; ports=2/3
USB-C Charger; 20-70; wattage=30W/65W/100W; ports=1/2/3
Phone Case; 15-55; model=standard/plus/pro; material=silicone/leather/clear;
    color=black/red/blue
E-Reader; 100-280; storage=8GB/16GB/32GB; screen=6 inch/7 inch; ads=with ads/ad-free
Drip Coffee Maker; 45-190; capacity=8 cups/12 cups; color=black/steel/white; timer=yes/no
Electric Kettle; 30-110; capacity=1L/1.7L; material=glass/steel/plastic;
    temperature control=yes/no
Countertop Blender; 50-260; power=800W/1200W/1500W; jar=glass/plastic; color=black/silver
Cast Iron Skillet; 25-90; diameter=8 inch/10 inch/12 inch; finish=pre-seasoned/enamelled
Chef's Knife; 35-180; blade length=6 inch/8 inch/10 inch; steel=german/japanese;
    handle=wood/composite
Ceramic Mug Set; 20-60; color=white/speckled/blue/sage; pieces=2/4/6
Insulated Water Bottle; 18-50; capacity=500ml/750ml/1L; color=black/white/navy/grey/red/green;
    lid=straw/screw cap
Air Purifier; 90-400; room size=small/medium/large; filter=HEPA/HEPA + carbon; color=white/black
Robot Vacuum; 180-700; navigation=lidar/camera/bump; mop=yes/no; color=black/white
Cordless Drill; 60-230; voltage=12V/18V/20V; battery=1 battery/2 batteries; kit=bare/with case
Garden Hose; 25-85; length=25ft/50ft/100ft; material=rubber/vinyl/expandable
Camping Tent; 90-420; capacity=1 person/2 person/4 person; season=3-season/4-season;
    color=green/orange/grey
Sleeping Bag; 50-260; temperature rating=0F/20F/40F; fill=down/synthetic; length=regular/long
Trekking Poles; 35-140; material=aluminium/carbon; lock=lever/twist; color=black/red/blue
Bike Helmet; 40-190; size=S/M/L; color=white/black/yellow/blue; visor=yes/no
Yoga Mat; 20-95; thickness=4mm/6mm/8mm; material=PVC/TPE/natural rubber;
    color=purple/black/teal/pink
Adjustable Dumbbells; 120-420; max weight=25 lb/50 lb/90 lb; set=single/pair
Tennis Racket; 60-250; head size=98 sq in/100 sq in/105 sq in; grip=2/3/4; strung=yes/no
Throw Blanket; 30-110; material=fleece/cotton/knit; color=cream/grey/rust/navy; size=50x60/60x80
Bed Sheet Set; 40-190; size=twin/full/queen/king; material=percale/sateen/linen;
    color=white/sand/slate
Scented Candle; 14-45; scent=cedar/lavender/citrus/vanilla/sea salt; size=8oz/14oz
Wall Clock; 25-120; diameter=10 inch/14 inch; style=modern/farmhouse/industrial;
    movement=silent/ticking
Jigsaw Puzzle; 15-40; pieces=500/1000/2000; theme=landscape/animals/art/map
Fountain Pen; 25-210; nib=fine/medium/broad; color=black/burgundy/green;
    filling=cartridge/piston
"""


def _catalogue() -> list[tuple[str, tuple[int, int], dict[str, tuple[str, ...]]]]:
    """The product table as (name, (lowest, highest) price, {option: values})."""
    catalogue = []
    for name, prices, *options in table_rows(_CATALOGUE_TABLE):
        low, high = (int(price) for price in prices.split("-"))
        dimensions = {}
        for option in options:
            key, values = option.split("=")
            dimensions[key] = tuple(values.split("/"))
        catalogue.append((name, (low, high), dimensions))
    return catalogue


_FIRST_NAMES = (
    "Amara", "Bastian", "Camila", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ingrid", "Jamal",
    "Keiko", "Lorenzo", "Mireille", "Nikhil", "Odette", "Pavel", "Quinn", "Rosalind", "Santiago",
    "Tamsin", "Ulrich", "Valentina", "Wendell", "Ximena", "Yusra", "Zoltan", "Anouk", "Bruno",
    "Clementine", "Desmond", "Esme", "Florian", "Gulnara", "Hector", "Isolde", "Joaquin", "Kalani",
    "Leopold", "Marisol", "Nadia", "Osvaldo", "Priya", "Rafferty", "Saoirse", "Tobias", "Uma",
    "Vikram", "Wilhelmina", "Yannick", "Zaira", "Ayodele", "Beatriz", "Cyrus", "Dagny", "Emeka",
    "Fiorella", "Gideon", "Henrietta", "Idris", "Junie",
)  # fmt: skip
_LAST_NAMES = (
    "Abernathy", "Bellweather", "Castellano", "Dunmore", "Eklund", "Fairbanks", "Gallardo",
    "Halvorsen", "Iwasaki", "Jablonski", "Kowalczyk", "Lindqvist", "Marchetti", "Nakagawa",
    "Okonkwo", "Pellegrini", "Quintero", "Rasmussen", "Sandoval", "Thornbury", "Umarov",
    "Vasquez", "Whitcombe", "Yamamoto", "Zeller", "Ashdown", "Brennan", "Cavanagh", "Delacroix",
    "Esposito", "Fenwick", "Goldberg", "Hargreaves", "Ibarra", "Jorgensen", "Kimura", "Lachance",
    "Mbeki", "Novak", "Oyelaran", "Pryce", "Rinaldi", "Szabo", "Tremblay", "Underhill", "Verhoeven",
    "Winslow", "Xiong", "Yilmaz", "Zamora",
)  # fmt: skip
_CITIES = (
    ("Denver", "CO", "802"), ("Austin", "TX", "787"), ("Seattle", "WA", "981"),
    ("Portland", "OR", "972"), ("Columbus", "OH", "432"), ("Phoenix", "AZ", "850"),
    ("Boston", "MA", "021"), ("Chicago", "IL", "606"), ("Atlanta", "GA", "303"),
    ("Nashville", "TN", "372"), ("San Diego", "CA", "921"), ("Charlotte", "NC", "282"),
    ("Minneapolis", "MN", "554"), ("Pittsburgh", "PA", "152"), ("Salt Lake City", "UT", "841"),
    ("Madison", "WI", "537"), ("Raleigh", "NC", "276"), ("Tucson", "AZ", "857"),
    ("Omaha", "NE", "681"), ("Richmond", "VA", "232"), ("Boise", "ID", "837"),
    ("Albuquerque", "NM", "871"), ("Kansas City", "MO", "641"), ("Louisville", "KY", "402"),
    ("Sacramento", "CA", "958"), ("Tampa", "FL", "336"), ("Baltimore", "MD", "212"),
    ("Spokane", "WA", "992"), ("Des Moines", "IA", "503"), ("Providence", "RI", "029"),
)  # fmt: skip
_STREETS = (
    "Maple", "Juniper", "Harbor", "Willow", "Quarry", "Lantern", "Chestnut", "Orchard", "Granite",
    "Meadowlark", "Sycamore", "Foundry", "Bluebell", "Riverside", "Hawthorn", "Copper", "Elmwood",
    "Sparrow", "Linden", "Prospect", "Cobblestone", "Aspen", "Mill", "Heron",
)  # fmt: skip
_STREET_TYPES = ("Street", "Avenue", "Road", "Lane", "Drive", "Court", "Way", "Boulevard")
_CARD_BRANDS = ("visa", "mastercard", "amex", "discover")


def random_address(rng: random.Random) -> dict[str, str]:
    """A plausible US address (used for profiles, gift orders and tasks that move house)."""
    city_name, state, prefix = rng.choice(_CITIES)
    second = rng.random()
    return {
        "address1": f"{rng.randint(10, 9999)} {rng.choice(_STREETS)} {rng.choice(_STREET_TYPES)}",
        "address2": (
            f"Apt {rng.randint(1, 40)}{rng.choice('ABCD')}"
            if second < 0.35
            else f"Suite {rng.randint(100, 999)}"
            if second < 0.5
            else ""
        ),
        "city": city_name,
        "country": "USA",
        "state": state,
        "zip": f"{prefix}{rng.randint(0, 99):02d}",
    }


def _products(rng: random.Random, taken: set[str]) -> dict[str, dict[str, Any]]:
    products: dict[str, dict[str, Any]] = {}
    for name, (low, high), dimensions in _catalogue():
        product_id = new_id(rng, taken, lambda r: str(r.randint(10**9, 10**10 - 1)))
        combos = list(itertools.product(*dimensions.values()))
        chosen = rng.sample(combos, min(len(combos), rng.randint(8, 20)))
        base = rng.uniform(low, high)
        variants: dict[str, dict[str, Any]] = {}
        for position, combo in enumerate(chosen):
            item_id = new_id(rng, taken, lambda r: str(r.randint(10**9, 10**10 - 1)))
            variants[item_id] = {
                "item_id": item_id,
                "options": dict(zip(dimensions, combo, strict=True)),
                # Three variants of every product are in stock, so exchanges are always possible.
                "available": position < 3 or rng.random() < 0.65,
                "price": round(base * rng.uniform(0.88, 1.15), 2),
            }
        products[product_id] = {"product_id": product_id, "name": name, "variants": variants}
    return products


def _payment_methods(rng: random.Random, taken: set[str]) -> dict[str, dict[str, Any]]:
    methods: dict[str, dict[str, Any]] = {}

    def add(source: str, **fields: Any) -> None:
        method_id = new_id(rng, taken, lambda r: f"{source}_{r.randint(10**6, 10**7 - 1)}")
        methods[method_id] = {"source": source, "id": method_id, **fields}

    for _ in range(rng.choice((1, 1, 1, 2))):
        add("credit_card", brand=rng.choice(_CARD_BRANDS), last_four=f"{rng.randint(0, 9999):04d}")
    if rng.random() < 0.45:
        add("paypal")
    if rng.random() < 0.45:
        add("gift_card", balance=float(rng.choice((0, 15, 25, 40, 60, 80, 100, 150, 200, 250))))
    # Shuffle with the seeded RNG so credit cards are not always listed first.
    order = list(methods)
    rng.shuffle(order)
    return {key: methods[key] for key in order}


def _users(rng: random.Random, taken: set[str]) -> dict[str, dict[str, Any]]:
    users: dict[str, dict[str, Any]] = {}
    name_zip: set[tuple[str, str, str]] = set()
    while len(users) < 500:
        first, last = rng.choice(_FIRST_NAMES), rng.choice(_LAST_NAMES)
        address = random_address(rng)
        if (first, last, address["zip"]) in name_zip:
            continue
        user_id = f"{first.lower()}_{last.lower()}_{rng.randint(1000, 9999)}"
        email = f"{first.lower()}.{last.lower()}{rng.randint(10, 9999)}@example.com"
        if user_id in taken or email in taken:
            continue
        taken.update((user_id, email))
        name_zip.add((first, last, address["zip"]))
        users[user_id] = {
            "user_id": user_id,
            "name": {"first_name": first, "last_name": last},
            "address": address,
            "email": email,
            "payment_methods": _payment_methods(rng, taken),
            "orders": [],
        }
    return users


def _order(
    rng: random.Random,
    order_id: str,
    user: dict[str, Any],
    products: list[dict[str, Any]],
    taken: set[str],
) -> dict[str, Any]:
    count = rng.choices((1, 2, 3, 4, 5), weights=(30, 30, 20, 12, 8))[0]
    items = []
    for product in rng.sample(products, count):
        variant = product["variants"][rng.choice(list(product["variants"]))]
        items.append(
            {
                "name": product["name"],
                "product_id": product["product_id"],
                "item_id": variant["item_id"],
                "price": variant["price"],
                "options": dict(variant["options"]),
            }
        )
    status = rng.choices(ORDER_STATUSES, weights=_STATUS_WEIGHTS)[0]
    address = dict(user["address"]) if rng.random() < 0.85 else random_address(rng)
    method_id = rng.choice(list(user["payment_methods"]))
    total = round(sum(item["price"] for item in items), 2)
    order: dict[str, Any] = {
        "order_id": order_id,
        "user_id": user["user_id"],
        "address": address,
        "items": items,
        "status": status,
        "fulfillments": [],
        "payment_history": [
            {"transaction_type": "payment", "amount": total, "payment_method_id": method_id}
        ],
    }
    if status not in ("pending", "cancelled"):
        tracking = new_id(rng, taken, lambda r: str(r.randint(10**11, 10**12 - 1)))
        order["fulfillments"] = [
            {"tracking_id": [tracking], "item_ids": [item["item_id"] for item in items]}
        ]
    if status == "cancelled":
        order["payment_history"].append(
            {"transaction_type": "refund", "amount": total, "payment_method_id": method_id}
        )
        order["cancel_reason"] = rng.choice(CANCEL_REASONS)
    elif status == "return requested":
        returned = rng.sample(items, rng.randint(1, len(items)))
        order["return_items"] = sorted(item["item_id"] for item in returned)
        order["return_payment_method_id"] = method_id
    elif status == "exchange requested":
        item = rng.choice(items)
        product = next(p for p in products if p["product_id"] == item["product_id"])
        others = [
            v for k, v in product["variants"].items() if v["available"] and k != item["item_id"]
        ]
        new = rng.choice(others)
        order["exchange_items"] = [item["item_id"]]
        order["exchange_new_items"] = [new["item_id"]]
        order["exchange_payment_method_id"] = method_id
        order["exchange_price_difference"] = round(new["price"] - item["price"], 2)
    return order


def generate_tables(seed: int = 0) -> Tables:
    """The whole database for ``seed``: 500 users, 1,000 orders, 50 products (deterministic)."""
    rng = random.Random(seed)
    taken: set[str] = set()
    products = _products(rng, taken)
    users = _users(rng, taken)
    product_list = list(products.values())
    user_ids = list(users)
    # Every user has at least one order; the other 500 go to users drawn at random.
    owners = user_ids + [rng.choice(user_ids) for _ in range(500)]
    orders: dict[str, dict[str, Any]] = {}
    for owner in owners:
        order_id = new_id(rng, taken, lambda r: f"#W{r.randint(10**6, 10**7 - 1)}")
        orders[order_id] = _order(rng, order_id, users[owner], product_list, taken)
        users[owner]["orders"].append(order_id)
    return {"products": products, "users": users, "orders": orders}


load_tables = SeedTables(generate_tables)
"""The database of the shipped env (seed 0), built once per process; read-only."""
