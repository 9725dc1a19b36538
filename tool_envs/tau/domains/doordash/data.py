"""The food-delivery database: customers, restaurants with menus, orders and dashers.

Nothing is read from disk: :func:`generate_tables` builds the same tables for the same seed on
every machine (one ``random.Random``; no global RNG, no set or hash ordering), and
:func:`load_tables` caches the seed-0 tables for the process. "Now" is fixed (:data:`NOW`, a
Friday evening), so which orders are still on their way and which refund or credit windows are
open never depends on the clock. Amounts are dollars as floats made from whole cents
(:func:`money`), so equal amounts always hash alike.

Tables (every table maps a record's id to the record; all values are JSON types; the record
types are in :mod:`.records`):

``customers`` (500)
    ``{customer_id, name: {first_name, last_name}, email, phone, dashpass, addresses:
    {address_id: {address_id, label, street, unit, city, state, zip}}, default_address_id,
    payment_methods: {id: {payment_method_id, type, brand?, last_four?}}, credits_balance,
    credit_history: [{credit_id, order_id, amount, reason, issued_at}], orders: [order_id]}``.
    Emails and phone numbers are unique. Customers live in one of six cities.
``restaurants`` (120)
    ``{restaurant_id, name, cuisine, phone, address: {street, city, state, zip}, rating,
    delivery_fee, menu: {item_id: {item_id, name, category, price, available, option_groups:
    [{name, min_select, max_select, options: [{option_id, name, price}]}]}}}``.
``orders`` (1,000)
    ``{order_id, customer_id, restaurant_id, restaurant_name, status, items: [{line_id,
    item_id, name, quantity, options: [{option_id, group, name, price}], unit_price,
    line_total}], next_line, subtotal, delivery_fee, service_fee, tip, total,
    payment_method_id, payment_history: [{type, amount, payment_method_id, at}],
    delivery_address, dropoff_instructions, dasher_id, timeline: {status: time}, quoted_eta,
    eta, customer_photos: [line_id], refunds: [...], cancellation}``. Statuses are ``placed``,
    ``confirmed``, ``preparing``, ``picked_up``, ``delivered`` and ``cancelled``.
``dashers`` (150)
    ``{dasher_id, name, vehicle, rating, city, status, location: {lat, lng},
    active_order_ids}``.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from tool_envs.tau.datagen import SeedTables, table_rows

Tables = dict[str, dict[str, dict[str, Any]]]

NOW = "2025-03-14T19:30:00"
"""The fixed current time of the domain (a Friday, 7:30 pm local time)."""

STATUSES = ("placed", "confirmed", "preparing", "picked_up", "delivered", "cancelled")
ACTIVE_STATUSES = ("placed", "confirmed", "preparing", "picked_up")
CHANGEABLE_STATUSES = ("placed", "confirmed", "preparing")
"""Statuses in which an order can still be changed or cancelled (before pickup)."""
_STATUS_WEIGHTS = (4, 4, 5, 5, 70, 12)
CANCEL_REASONS = ("no_longer_needed", "ordered_by_mistake", "taking_too_long")
REFUND_REASONS = ("missing_item", "wrong_item", "damaged_item")
CREDIT_REASONS = ("late_delivery", "poor_food_quality", "late_item_report")

SERVICE_FEE_RATE = 0.15
CONFIRMED_CANCEL_FEE = 5.0
REFUND_WINDOW_HOURS = 24
CREDIT_WINDOW_DAYS = 7
CREDIT_LIMIT_PER_ORDER = 15.0
CREDIT_LIMIT_30_DAYS = 25.0


def money(amount: float) -> float:
    """An amount rounded to whole cents, always a float (5 and 5.0 must hash alike)."""
    return round(float(amount) * 100) / 100


def cents(amount: float) -> int:
    return round(float(amount) * 100)


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def format_time(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:00")


NOW_TIME = parse_time(NOW)

# City, state, zip prefix, phone area code, centre (lat, lng).
_CITIES = (
    ("Denver", "CO", "802", "303", (39.739, -104.990)),
    ("Austin", "TX", "787", "512", (30.267, -97.743)),
    ("Seattle", "WA", "981", "206", (47.606, -122.332)),
    ("Chicago", "IL", "606", "312", (41.878, -87.630)),
    ("Atlanta", "GA", "303", "404", (33.749, -84.388)),
    ("Philadelphia", "PA", "191", "215", (39.952, -75.165)),
)
_STREETS = (
    "Alder", "Birchwood", "Cedar", "Dogwood", "Emerson", "Fulton", "Garfield", "Hollis", "Irving",
    "Jasper", "Kendall", "Larkspur", "Magnolia", "Newbury", "Oakridge", "Palmer", "Quincy", "Rowan",
    "Sheridan", "Tamarack", "Union", "Vine", "Walnut", "Yarrow",
)  # fmt: skip
_STREET_TYPES = ("Street", "Avenue", "Road", "Lane", "Drive", "Place", "Way", "Boulevard")
_FIRST_NAMES = (
    "Adaeze", "Bram", "Carmen", "Dario", "Eun-ji", "Fatima", "Gus", "Hana", "Ivo", "Jonah", "Kavya",
    "Luca", "Maren", "Nico", "Olamide", "Paloma", "Rafael", "Sunniva", "Teodor", "Uriel", "Vera",
    "Wes", "Yara", "Zev", "Alma", "Benedikt", "Cleo", "Dov", "Elodie", "Fionn", "Gemma", "Hugo",
    "Ines", "Jude", "Kenji", "Lior", "Mila", "Nour", "Oskar", "Pia", "Rhea", "Silas", "Talia",
    "Umar", "Vivian", "Wren", "Xavi", "Yosef", "Zuri", "Anika", "Boris", "Celeste", "Dmitri",
    "Esther", "Felix", "Greer", "Hamid", "Imani",
)  # fmt: skip
_LAST_NAMES = (
    "Achterberg", "Baptiste", "Castaneda", "Delgado", "Engstrom", "Ferreira", "Gundersen",
    "Holloway", "Ishikawa", "Janssen", "Kaminski", "Lombardi", "Moreau", "Nakamura", "Okafor",
    "Petrov", "Quevedo", "Reinholt", "Sato", "Trujillo", "Ueda", "Valdivia", "Wojcik", "Yamada",
    "Zimmer", "Abbott", "Bergstrom", "Chaudhry", "Dumont", "Elbaz", "Fonseca", "Grieve", "Haddad",
    "Iyer", "Jovanovic", "Kowalski", "Lindgren", "Mwangi", "Novotny", "Oduya", "Park", "Rahman",
    "Santoro", "Tanaka", "Vance", "Whitlock",
)  # fmt: skip
_DASHER_NAMES = (
    "Ari", "Bea", "Cal", "Dee", "Eli", "Fay", "Gil", "Hal", "Ida", "Jay", "Kit", "Lou", "Max",
    "Ned", "Ola", "Pat", "Ray", "Sam", "Tess", "Val", "Zoe", "Ruby", "Theo", "Omar", "Nina", "Milo",
    "Lena", "Kai", "June", "Iris", "Hugh", "Gia", "Finn", "Eva", "Drew",
)  # fmt: skip
_DROPOFF = (
    "Leave at the door",
    "Hand it to me",
    "Leave at the door and knock",
    "Meet me in the lobby",
    "Leave with the front desk",
    "Ring the bell, then leave at the door",
)

# Option groups, one per line: key; name shown on the menu; how many may be chosen (min-max);
# options, each with its extra price ("+1.50") if it costs more. A line that starts with spaces
# continues the one above.
_GROUP_TABLE = """
doneness; Doneness; 1-1; Medium rare, Medium, Well done
burger_extras; Add-ons; 0-3; Extra cheese +1.00, Bacon +2.00, Avocado +1.75, Fried egg +1.50,
    Jalapenos +0.75
sauce; Sauce; 1-1; Ranch, Honey mustard, BBQ, Buffalo
side_size; Size; 1-1; Regular, Large +2.00
salad_protein; Add protein; 0-1; Grilled chicken +4.00, Salmon +6.00, Shrimp +5.00
shake_size; Size; 1-1; Regular, Large +1.75
drink_size; Size; 1-1; Small, Medium +0.50, Large +1.00
protein_mx; Protein; 1-1; Chicken, Steak +2.00, Carnitas +1.00, Barbacoa +1.50, Sofritas
salsa; Salsa; 1-1; Mild tomato, Medium verde, Hot roja
mx_extras; Extras; 0-3; Guacamole +2.25, Queso +1.50, Sour cream +0.75, Extra cheese +0.75
chip_size; Size; 1-1; Regular, Large +2.50
agua_flavor; Flavor; 1-1; Hibiscus, Tamarind, Watermelon
churro_dip; Dip; 0-1; Chocolate +1.00, Caramel +1.00
pizza_size; Size; 1-1; 12 inch, 16 inch +5.00
crust; Crust; 1-1; Hand-tossed, Thin, Gluten-free +3.00
pizza_toppings; Extra toppings; 0-4; Mushrooms +1.50, Olives +1.50, Sausage +2.00, Basil +1.00,
    Roasted peppers +1.50
pasta_extras; Extras; 0-2; Parmesan +1.00, Meatballs +3.50
pasta_protein; Add protein; 0-1; Chicken +4.00, Shrimp +5.50
knot_count; Quantity; 1-1; 6 knots, 12 knots +4.50
cannoli_count; Quantity; 1-1; 2 pieces, 4 pieces +4.75
soda_flavor; Flavor; 1-1; Blood orange, Lemon, Cherry
spice; Spice level; 1-1; Mild, Medium, Hot, Extra hot
rice_choice; Rice; 1-1; Steamed white rice, Brown rice +1.00, Fried rice +2.00
noodle_protein; Add protein; 0-1; Chicken +3.00, Beef +3.50, Shrimp +4.00
dumpling_style; Style; 1-1; Steamed, Pan-fried
soup_size; Size; 1-1; Cup, Bowl +2.50
naan_rice; Side; 1-1; Basmati rice, Plain naan, Garlic naan +1.00
biryani_protein; Add protein; 0-1; Chicken +3.50, Lamb +5.00, Paneer +3.00
samosa_filling; Filling; 1-1; Potato and pea, Spiced lamb +1.50
protein_th; Protein; 1-1; Chicken, Tofu, Beef +2.00, Shrimp +3.00
rice_jp; Rice; 1-1; White rice, Brown rice +1.00
ramen_extras; Toppings; 0-3; Soft-boiled egg +2.00, Extra chashu +3.50, Corn +1.00,
    Bamboo shoots +1.25
edamame_style; Seasoning; 1-1; Sea salt, Garlic chili
med_base; Base; 1-1; Rice, Salad, Half and half
med_sauce; Sauce; 1-1; Garlic sauce, Tahini, Spicy harissa
hummus_topping; Topping; 0-1; Spiced beef +3.50, Pine nuts +1.50
pho_size; Size; 1-1; Small, Large +2.50
banh_mi_filling; Filling; 1-1; Grilled pork, Lemongrass chicken, Tofu, Pate and ham +0.50
vermicelli_protein; Protein; 1-1; Grilled pork, Lemongrass chicken, Shrimp +2.50, Tofu
toast_extras; Extras; 0-2; Poached egg +2.00, Smoked salmon +4.50, Chili flakes +0.25
breakfast_protein; Protein; 1-1; Bacon, Sausage, Chorizo +0.50, Veggie
pancake_topping; Toppings; 0-2; Berries +2.00, Whipped cream +1.00, Chocolate chips +1.25
bread; Bread; 1-1; Sourdough, Whole wheat, Rye
croissant_style; Style; 1-1; Butter, Almond +1.25, Ham and cheese +2.50
coffee_size; Size; 1-1; 12 oz, 16 oz +0.75
milk; Milk; 1-1; Whole milk, Oat milk +0.75, Almond milk +0.75, Skim milk
"""


def _option_groups() -> dict[str, tuple[str, int, int, tuple[tuple[str, float], ...]]]:
    """The option-group table as {key: (name, min, max, ((option, extra price), ...))}."""
    groups = {}
    for key, name, bounds, options in table_rows(_GROUP_TABLE):
        low, high = (int(n) for n in bounds.split("-"))
        parsed = []
        for option in options.split(", "):
            label, _, price = option.partition(" +")
            parsed.append((label, float(price or 0)))
        groups[key] = (name, low, high, tuple(parsed))
    return groups


_GROUPS = _option_groups()

# One cuisine per block: its name words, then one item per line: name | category | price |
# option group keys.
_MENUS = """
American Burgers; Smokestack, Ironside, Two Rivers, Blue Plate, Copperline, Gaslight,
    Homestead, Longhorn Alley, Brickyard, Porchlight, Red Barn, Union Yard; Burger Co.
Classic Cheeseburger | Burgers | 11.50 | doneness burger_extras
Bacon BBQ Burger | Burgers | 13.75 | doneness burger_extras
Mushroom Swiss Burger | Burgers | 13.25 | doneness burger_extras
Crispy Chicken Sandwich | Sandwiches | 12.00 | sauce burger_extras
Black Bean Burger | Burgers | 11.75 | burger_extras
Hand-Cut Fries | Sides | 4.50 | side_size
Sweet Potato Fries | Sides | 5.25 | side_size
Onion Rings | Sides | 5.50 | side_size
Chicken Tenders | Mains | 10.50 | sauce
Caesar Salad | Salads | 9.75 | salad_protein
Chocolate Milkshake | Drinks | 6.25 | shake_size
Vanilla Milkshake | Drinks | 6.25 | shake_size
Fountain Soda | Drinks | 2.75 | drink_size
Fudge Brownie | Desserts | 4.25 |
Mexican; Agave, Nopal, Cenote, Milpa, Jalisco, Mesquite, Paloma, Oaxaca, Lupita's, Tres Hermanas,
    Sol y Luna, La Ceiba; Taqueria
Burrito | Burritos | 11.25 | protein_mx salsa mx_extras
Burrito Bowl | Bowls | 11.25 | protein_mx salsa mx_extras
Street Tacos | Tacos | 10.50 | protein_mx salsa
Quesadilla | Mains | 10.25 | protein_mx mx_extras
Loaded Nachos | Mains | 9.75 | protein_mx mx_extras
Enchiladas Verdes | Mains | 13.50 | protein_mx
Chips and Guacamole | Sides | 5.75 | chip_size
Chips and Salsa | Sides | 3.75 | chip_size
Elote | Sides | 4.50 |
Mexican Rice | Sides | 3.25 |
Horchata | Drinks | 3.50 | drink_size
Agua Fresca | Drinks | 3.50 | agua_flavor drink_size
Churros | Desserts | 4.75 | churro_dip
Italian; Vesuvio, Trattoria Bella, Nonna Rosa's, Il Forno, Piazza Verde, Casa Rustica,
    Fratelli, Olivetta, Basilico, Pomodoro Rosso, Vicolo, Lanterna; Pizzeria
Margherita Pizza | Pizza | 14.00 | pizza_size crust pizza_toppings
Pepperoni Pizza | Pizza | 15.50 | pizza_size crust pizza_toppings
Four Cheese Pizza | Pizza | 15.00 | pizza_size crust pizza_toppings
Veggie Supreme Pizza | Pizza | 16.00 | pizza_size crust pizza_toppings
Spaghetti Bolognese | Pasta | 14.50 | pasta_extras
Fettuccine Alfredo | Pasta | 13.75 | pasta_protein
Penne Arrabbiata | Pasta | 12.50 | pasta_protein
Lasagna | Pasta | 15.25 |
Garlic Knots | Sides | 5.50 | knot_count
Caprese Salad | Salads | 9.50 |
Tiramisu | Desserts | 7.25 |
Cannoli | Desserts | 5.50 | cannoli_count
Italian Soda | Drinks | 3.75 | soda_flavor
Chinese; Golden Lantern, Jade Garden, Red Lotus, Lucky Dragon, Bamboo House, Peking Star,
    Twin Phoenix, Silk Road, Ming's, Eastern Pearl, Canton Court, Sichuan Spice; Kitchen
Kung Pao Chicken | Mains | 14.25 | spice rice_choice
General Tso's Chicken | Mains | 14.50 | spice rice_choice
Beef and Broccoli | Mains | 15.25 | rice_choice
Mapo Tofu | Mains | 12.75 | spice rice_choice
Sweet and Sour Pork | Mains | 14.00 | rice_choice
Vegetable Lo Mein | Noodles | 11.50 | noodle_protein
Shrimp Fried Rice | Rice | 13.25 |
Pork Dumplings | Appetizers | 8.75 | dumpling_style
Vegetable Spring Rolls | Appetizers | 6.25 |
Hot and Sour Soup | Soups | 5.50 | soup_size
Egg Drop Soup | Soups | 4.75 | soup_size
Jasmine Tea | Drinks | 2.50 |
Indian; Saffron, Tandoor House, Masala Junction, Spice Route, Chutney, Namaste, Royal Curry,
    Himalaya, Bombay Nights, Kesar, Tamarind Tree, Ganga; Indian Kitchen
Chicken Tikka Masala | Curries | 16.50 | spice naan_rice
Butter Chicken | Curries | 16.75 | spice naan_rice
Lamb Rogan Josh | Curries | 18.50 | spice naan_rice
Palak Paneer | Curries | 14.75 | spice naan_rice
Chana Masala | Curries | 13.25 | spice naan_rice
Vegetable Biryani | Rice | 14.25 | spice biryani_protein
Samosas | Appetizers | 6.50 | samosa_filling
Garlic Naan | Breads | 3.75 |
Plain Naan | Breads | 3.00 |
Mango Lassi | Drinks | 4.75 | drink_size
Gulab Jamun | Desserts | 5.25 |
Thai; Siam Orchid, Lemongrass, Bangkok Alley, Thai Basil, Chao Phraya, Krua, Jasmine,
    Lotus Leaf, Sabai, Chiang Mai, Tuk Tuk, Elephant Gate; Thai
Pad Thai | Noodles | 13.50 | protein_th spice
Pad See Ew | Noodles | 13.50 | protein_th spice
Drunken Noodles | Noodles | 13.75 | protein_th spice
Green Curry | Curries | 14.25 | protein_th spice
Red Curry | Curries | 14.25 | protein_th spice
Massaman Curry | Curries | 14.75 | protein_th spice
Basil Fried Rice | Rice | 13.25 | protein_th spice
Tom Yum Soup | Soups | 6.75 | soup_size
Fresh Spring Rolls | Appetizers | 7.25 |
Chicken Satay | Appetizers | 8.50 |
Thai Iced Tea | Drinks | 4.25 |
Mango Sticky Rice | Desserts | 7.50 |
Japanese; Sakura, Kaiyo, Hoshi, Umami, Kintsugi, Tsuki, Hana, Ryokan, Koi Pond, Ginza,
    Minato, Yuzu; Sushi and Ramen
California Roll | Rolls | 8.50 |
Spicy Tuna Roll | Rolls | 9.75 |
Salmon Avocado Roll | Rolls | 9.50 |
Dragon Roll | Rolls | 14.50 |
Salmon Nigiri | Nigiri | 7.25 |
Chicken Teriyaki Bowl | Bowls | 13.75 | rice_jp
Tonkotsu Ramen | Ramen | 15.50 | ramen_extras spice
Miso Ramen | Ramen | 14.75 | ramen_extras spice
Edamame | Appetizers | 5.25 | edamame_style
Gyoza | Appetizers | 7.50 |
Miso Soup | Soups | 3.50 |
Matcha Ice Cream | Desserts | 5.75 |
Mediterranean; Olive Branch, Aegean, Cedar Tree, Levant, Zaatar, Pita Pit Stop, Santorini,
    Byblos, Marrakech, Cyprus, Sumac, Orzo; Grill
Chicken Shawarma Plate | Plates | 15.25 | med_base med_sauce
Falafel Plate | Plates | 13.50 | med_base med_sauce
Lamb Gyro | Wraps | 12.75 | med_sauce
Chicken Shawarma Wrap | Wraps | 11.75 | med_sauce
Falafel Wrap | Wraps | 10.50 | med_sauce
Hummus and Pita | Sides | 6.75 | hummus_topping
Baba Ganoush | Sides | 7.25 |
Greek Salad | Salads | 10.25 | salad_protein
Tabbouleh | Salads | 7.50 |
Lentil Soup | Soups | 5.75 | soup_size
Baklava | Desserts | 5.50 |
Mint Lemonade | Drinks | 4.25 |
Vietnamese; Saigon, Hanoi House, Mekong, Lotus Pond, Little Hue, Pho Real, Banh Mi Bay,
    Bamboo Bowl, Ha Long, Da Nang, Golden Star, Emerald River; Noodle House
Pho Tai | Pho | 14.25 | pho_size
Chicken Pho | Pho | 13.75 | pho_size
Vegetable Pho | Pho | 12.75 | pho_size
Banh Mi | Sandwiches | 9.50 | banh_mi_filling spice
Vermicelli Bowl | Bowls | 13.25 | vermicelli_protein
Broken Rice Plate | Plates | 14.50 |
Crispy Imperial Rolls | Appetizers | 7.00 |
Summer Rolls | Appetizers | 6.75 |
Vietnamese Iced Coffee | Drinks | 4.75 |
Coconut Jelly | Desserts | 4.50 |
Breakfast; Sunny Side, Morning Glory, Early Bird, Rise and Dine, Bluebird, Honeycomb,
    Griddle Grove, Skillet and Spoon, Daybreak, Little Toast, Maple Street, Good Egg; Cafe
Avocado Toast | Breakfast | 9.75 | toast_extras
Breakfast Burrito | Breakfast | 10.25 | breakfast_protein
Buttermilk Pancakes | Breakfast | 10.50 | pancake_topping
Eggs Benedict | Breakfast | 13.25 |
Belgian Waffle | Breakfast | 10.75 | pancake_topping
Turkey Club | Sandwiches | 12.50 | bread
Greek Yogurt Parfait | Breakfast | 7.25 |
Blueberry Muffin | Bakery | 3.75 |
Croissant | Bakery | 3.95 | croissant_style
Latte | Coffee | 4.75 | coffee_size milk
Cold Brew | Coffee | 4.50 | coffee_size milk
Fresh Orange Juice | Drinks | 5.25 | drink_size
"""


def _cuisines() -> list[tuple[str, list[str], str, list[tuple[str, str, float, list[str]]]]]:
    """The menu table as (cuisine, name words, name suffix, [(item, category, price, groups)])."""
    cuisines: list[tuple[str, list[str], str, list[tuple[str, str, float, list[str]]]]] = []
    header = ""
    for line in _MENUS.strip().splitlines():
        if line.startswith(" "):
            header += " " + line.strip()
            continue
        if "|" not in line:
            header = line
            continue
        if header:
            cuisine, words, suffix = (part.strip() for part in header.split(";"))
            cuisines.append((cuisine, [w.strip() for w in words.split(",")], suffix, []))
            header = ""
        name, category, price, groups = (part.strip() for part in line.split("|"))
        cuisines[-1][3].append((name, category, float(price), groups.split()))
    return cuisines


class _Ids:
    """Unique numeric ids with a prefix, drawn from the seeded RNG."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.taken: set[str] = set()

    def new(self, prefix: str, digits: int) -> str:
        while True:
            value = f"{prefix}{self.rng.randint(10 ** (digits - 1), 10**digits - 1)}"
            if value not in self.taken:
                self.taken.add(value)
                return value


def _street(rng: random.Random) -> str:
    return f"{rng.randint(10, 4999)} {rng.choice(_STREETS)} {rng.choice(_STREET_TYPES)}"


def random_address(rng: random.Random, city_index: int) -> dict[str, str]:
    """A plausible address in one of the six cities (for profiles and tasks that move an order)."""
    city, state, prefix, _, _ = _CITIES[city_index]
    unit = rng.random()
    return {
        "street": _street(rng),
        "unit": f"Apt {rng.randint(1, 30)}{rng.choice('ABCD')}"
        if unit < 0.35
        else f"Unit {rng.randint(100, 999)}"
        if unit < 0.45
        else "",
        "city": city,
        "state": state,
        "zip": f"{prefix}{rng.randint(1, 60):02d}",
    }


def city_index(city: str) -> int:
    return next(i for i, row in enumerate(_CITIES) if row[0] == city)


CITY_NAMES = tuple(row[0] for row in _CITIES)


def _menu(
    rng: random.Random, ids: _Ids, items: list[tuple[str, str, float, list[str]]]
) -> dict[str, dict[str, Any]]:
    chosen = sorted(rng.sample(range(len(items)), min(len(items), rng.randint(9, 13))))
    factor = rng.uniform(0.9, 1.2)
    menu: dict[str, dict[str, Any]] = {}
    for position in chosen:
        name, category, base, group_keys = items[position]
        item_id = ids.new("itm_", 5)
        groups = []
        for key in group_keys:
            group_name, low, high, options = _GROUPS[key]
            groups.append(
                {
                    "name": group_name,
                    "min_select": low,
                    "max_select": high,
                    "options": [
                        {"option_id": ids.new("opt_", 5), "name": label, "price": money(price)}
                        for label, price in options
                    ],
                }
            )
        menu[item_id] = {
            "item_id": item_id,
            "name": name,
            "category": category,
            "price": money(round(base * factor * 4) / 4 - (0.01 if rng.random() < 0.3 else 0)),
            # Most items are available; mains stay available so every order can be added to.
            "available": rng.random() < 0.88,
            "option_groups": groups,
        }
    return menu


def _restaurants(rng: random.Random, ids: _Ids) -> dict[str, dict[str, Any]]:
    restaurants: dict[str, dict[str, Any]] = {}
    slots = []
    for cuisine, words, suffix, items in _cuisines():
        for number, word in enumerate(words):
            slots.append((cuisine, f"{word} {suffix}", items, number % len(_CITIES)))
    for cuisine, name, items, city in slots:
        restaurant_id = ids.new("rst_", 4)
        address = random_address(rng, city)
        address.pop("unit")
        _, _, _, area, _ = _CITIES[city]
        restaurants[restaurant_id] = {
            "restaurant_id": restaurant_id,
            "name": name,
            "cuisine": cuisine,
            "phone": f"{area}-555-{rng.randint(1000, 9999)}",
            "address": address,
            "rating": round(rng.uniform(3.8, 4.9), 1),
            "delivery_fee": money(rng.choice((0.99, 1.49, 1.99, 2.49, 2.99, 3.49, 3.99))),
            "menu": _menu(rng, ids, items),
        }
    # Shuffle with the seeded RNG so ids are not grouped by cuisine.
    keys = list(restaurants)
    rng.shuffle(keys)
    return {key: restaurants[key] for key in keys}


def _payment_methods(rng: random.Random, ids: _Ids) -> dict[str, dict[str, Any]]:
    methods: dict[str, dict[str, Any]] = {}
    for _ in range(rng.choice((1, 1, 2, 2, 3))):
        kind = rng.choices(("card", "paypal", "apple_pay"), weights=(70, 15, 15))[0]
        if kind != "card" and any(m["type"] == kind for m in methods.values()):
            continue
        method_id = ids.new("pm_", 6)
        method: dict[str, Any] = {"payment_method_id": method_id, "type": kind}
        if kind == "card":
            method["brand"] = rng.choice(("visa", "mastercard", "amex", "discover"))
            method["last_four"] = f"{rng.randint(0, 9999):04d}"
        methods[method_id] = method
    return methods


def _customers(rng: random.Random, ids: _Ids) -> dict[str, dict[str, Any]]:
    customers: dict[str, dict[str, Any]] = {}
    emails: set[str] = set()
    phones: set[str] = set()
    while len(customers) < 500:
        first, last = rng.choice(_FIRST_NAMES), rng.choice(_LAST_NAMES)
        city = rng.randrange(len(_CITIES))
        local = f"{first.lower().replace('-', '')}.{last.lower()}"
        email = f"{local}{rng.randint(1, 999)}@{rng.choice(('mailbox.test', 'inbox.test'))}"
        phone = f"{_CITIES[city][3]}-555-{rng.randint(0, 9999):04d}"
        if email in emails or phone in phones:
            continue
        emails.add(email)
        phones.add(phone)
        customer_id = ids.new("cus_", 5)
        addresses: dict[str, dict[str, Any]] = {}
        extra = rng.sample(["Work", "Gym", "Partner's place", "Studio"], rng.choice((0, 1, 1, 2)))
        labels = ["Home", *extra]
        for label in labels:
            address_id = ids.new("addr_", 6)
            addresses[address_id] = {
                "address_id": address_id,
                "label": label,
                **random_address(rng, city),
            }
        methods = _payment_methods(rng, ids)
        customers[customer_id] = {
            "customer_id": customer_id,
            "name": {"first_name": first, "last_name": last},
            "email": email,
            "phone": phone,
            "dashpass": rng.random() < 0.3,
            "addresses": addresses,
            "default_address_id": next(iter(addresses)),
            "payment_methods": methods,
            "default_payment_method_id": next(iter(methods)),
            "credits_balance": 0.0,
            "credit_history": [],
            "orders": [],
        }
    return customers


def _pick_options(rng: random.Random, item: dict[str, Any]) -> list[dict[str, Any]]:
    chosen = []
    for group in item["option_groups"]:
        count = rng.randint(group["min_select"], min(group["max_select"], 2))
        if group["min_select"] == 0 and rng.random() < 0.5:
            count = 0
        for option in rng.sample(group["options"], count):
            chosen.append((group, option))
    return line_options(item, [option["option_id"] for _, option in chosen])


def line_options(item: dict[str, Any], option_ids: list[str]) -> list[dict[str, Any]]:
    """The options of a line in menu order (so the same choice always looks the same)."""
    wanted = set(option_ids)
    return [
        {
            "option_id": option["option_id"],
            "group": group["name"],
            "name": option["name"],
            "price": option["price"],
        }
        for group in item["option_groups"]
        for option in group["options"]
        if option["option_id"] in wanted
    ]


def make_line(
    line_id: str, item: dict[str, Any], quantity: int, options: list[dict[str, Any]]
) -> dict[str, Any]:
    """An order line with its prices (unit price = item price + option prices)."""
    unit = cents(item["price"]) + sum(cents(option["price"]) for option in options)
    return {
        "line_id": line_id,
        "item_id": item["item_id"],
        "name": item["name"],
        "quantity": quantity,
        "options": options,
        "unit_price": unit / 100,
        "line_total": unit * quantity / 100,
    }


def recompute_totals(order: dict[str, Any]) -> None:
    """Subtotal and total from the lines; fees and tip never change after checkout."""
    subtotal = sum(cents(line["line_total"]) for line in order["items"])
    order["subtotal"] = subtotal / 100
    order["total"] = (
        subtotal + cents(order["delivery_fee"]) + cents(order["service_fee"]) + cents(order["tip"])
    ) / 100


def _minutes(moment: dt.datetime, minutes: float) -> dt.datetime:
    return moment + dt.timedelta(minutes=round(minutes))


def _delivered_age(rng: random.Random) -> float:
    """Minutes between delivery and now, clear of the 24-hour and 7-day window edges."""
    roll = rng.random()
    if roll < 0.2:
        return rng.uniform(45, 22 * 60)
    if roll < 0.45:
        return rng.uniform(26 * 60, 6.5 * 24 * 60)
    return rng.uniform(7.5 * 24 * 60, 60 * 24 * 60)


def _order(
    rng: random.Random,
    ids: _Ids,
    customer: dict[str, Any],
    restaurant: dict[str, Any],
    order_id: str,
) -> dict[str, Any]:
    status = rng.choices(STATUSES, weights=_STATUS_WEIGHTS)[0]
    menu = [item for item in restaurant["menu"].values() if item["available"]]
    lines = []
    for number, item in enumerate(rng.sample(menu, rng.choice((1, 2, 2, 3, 3, 4))), 1):
        quantity = rng.choices((1, 2, 3), weights=(75, 20, 5))[0]
        lines.append(make_line(f"L{number}", item, quantity, _pick_options(rng, item)))
    address = rng.choice(list(customer["addresses"].values()))
    if rng.random() < 0.08:
        address = {"address_id": "", **random_address(rng, city_index(address["city"]))}
    subtotal = sum(cents(line["line_total"]) for line in lines)
    method_id = rng.choice(list(customer["payment_methods"]))
    order: dict[str, Any] = {
        "order_id": order_id,
        "customer_id": customer["customer_id"],
        "restaurant_id": restaurant["restaurant_id"],
        "restaurant_name": restaurant["name"],
        "status": status,
        "items": lines,
        "next_line": len(lines) + 1,
        "subtotal": 0.0,
        "delivery_fee": 0.0 if customer["dashpass"] else restaurant["delivery_fee"],
        "service_fee": money(max(2.0, round(subtotal * SERVICE_FEE_RATE) / 100)),
        "tip": money(rng.choice((0, 2, 3, 4, 5, 6, 8)) + rng.choice((0, 0, 0.5))),
        "total": 0.0,
        "payment_method_id": method_id,
        "payment_history": [],
        "delivery_address": {k: address[k] for k in ("street", "unit", "city", "state", "zip")},
        "dropoff_instructions": rng.choice(_DROPOFF),
        "dasher_id": None,
        "timeline": {},
        "quoted_eta": "",
        "eta": None,
        "customer_photos": [],
        "refunds": [],
        "cancellation": None,
    }
    recompute_totals(order)

    # Minutes after placement of each step, and the delivery time quoted at checkout.
    confirm = rng.uniform(1, 4)
    prepare = confirm + rng.uniform(2, 6)
    pickup = prepare + rng.uniform(10, 22)
    quote = rng.uniform(30, 50)
    deliver = pickup + rng.uniform(8, 20)
    if status == "delivered":
        roll = rng.random()
        late = (
            rng.uniform(-12, 4)
            if roll < 0.62
            else rng.uniform(6, 18)
            if roll < 0.75
            else rng.uniform(21, 43)
            if roll < 0.9
            else rng.uniform(47, 80)
        )
        deliver = quote + late
        pickup = min(pickup, deliver - 6)
        prepare = min(prepare, pickup - 8)
        confirm = min(confirm, prepare - 1)
        placed = NOW_TIME - dt.timedelta(minutes=round(_delivered_age(rng) + deliver))
    elif status == "cancelled":
        placed = NOW_TIME - dt.timedelta(minutes=round(rng.uniform(2 * 60, 60 * 24 * 60)))
    else:
        reached = {
            "placed": (0, confirm),
            "confirmed": (confirm, prepare),
            "preparing": (prepare, pickup),
            "picked_up": (pickup, deliver),
        }
        low, high = reached[status]
        elapsed = rng.uniform(low + 0.3 * (high - low), low + 0.9 * (high - low))
        placed = NOW_TIME - dt.timedelta(minutes=round(elapsed))
    steps = {
        "placed": 0,
        "confirmed": confirm,
        "preparing": prepare,
        "picked_up": pickup,
        "delivered": deliver,
    }
    if status == "cancelled":
        stage = rng.choices(("placed", "confirmed", "preparing"), weights=(60, 25, 15))[0]
        last = list(steps).index(stage)
        cancelled_at = _minutes(placed, steps[stage] + rng.uniform(0.5, 1.5))
        timeline = {
            name: format_time(_minutes(placed, at)) for name, at in list(steps.items())[: last + 1]
        }
        timeline["cancelled"] = format_time(cancelled_at)
        fee = {"placed": 0, "confirmed": cents(CONFIRMED_CANCEL_FEE), "preparing": subtotal}[stage]
        refund = cents(order["total"]) - fee
        order["cancellation"] = {
            "reason": rng.choice(CANCEL_REASONS),
            "fee": fee / 100,
            "refund": refund / 100,
            "cancelled_at": timeline["cancelled"],
        }
    else:
        reached_steps = list(steps)[: list(steps).index(status) + 1]
        timeline = {name: format_time(_minutes(placed, steps[name])) for name in reached_steps}
    order["timeline"] = timeline
    order["quoted_eta"] = format_time(_minutes(placed, quote))
    if status in ACTIVE_STATUSES:
        eta = _minutes(placed, max(deliver, quote - 4))
        if eta <= NOW_TIME + dt.timedelta(minutes=2):
            eta = NOW_TIME + dt.timedelta(minutes=rng.randint(3, 9))
        order["eta"] = format_time(eta)
    order["payment_history"].append(
        {
            "type": "charge",
            "amount": order["total"],
            "payment_method_id": method_id,
            "at": timeline["placed"],
        }
    )
    if order["cancellation"] is not None and order["cancellation"]["refund"] > 0:
        order["payment_history"].append(
            {
                "type": "refund",
                "amount": order["cancellation"]["refund"],
                "payment_method_id": method_id,
                "at": timeline["cancelled"],
            }
        )
    return order


def delivered_minutes_ago(order: dict[str, Any]) -> float:
    """Minutes since the order was delivered (orders that are not delivered: infinity)."""
    delivered = order["timeline"].get("delivered")
    if delivered is None:
        return float("inf")
    return (NOW_TIME - parse_time(delivered)).total_seconds() / 60


def minutes_late(order: dict[str, Any]) -> int | None:
    """How many minutes after the quoted time a delivered order arrived (negative: early)."""
    delivered = order["timeline"].get("delivered")
    if delivered is None:
        return None
    late = parse_time(delivered) - parse_time(order["quoted_eta"])
    return round(late.total_seconds() / 60)


def _history(rng: random.Random, orders: list[dict[str, Any]], customers: dict) -> None:
    """Past photos, refunds and goodwill credits on delivered orders."""
    for order in orders:
        if order["status"] != "delivered":
            continue
        age = delivered_minutes_ago(order)
        delivered = parse_time(order["timeline"]["delivered"])
        if age < CREDIT_WINDOW_DAYS * 24 * 60 and rng.random() < 0.3:
            line = rng.choice(order["items"])
            order["customer_photos"] = [line["line_id"]]
        if age > 90 and rng.random() < 0.08:
            line = rng.choice(order["items"])
            amount = cents(line["unit_price"])
            issued = format_time(_minutes(delivered, rng.uniform(20, min(age - 30, 600))))
            order["refunds"].append(
                {
                    "refund_id": f"RF-{order['order_id'][3:]}-1",
                    "reason": rng.choice(REFUND_REASONS),
                    "items": [{"line_id": line["line_id"], "quantity": 1, "amount": amount / 100}],
                    "amount": amount / 100,
                    "payment_method_id": order["payment_method_id"],
                    "issued_at": issued,
                }
            )
            order["payment_history"].append(
                {
                    "type": "refund",
                    "amount": amount / 100,
                    "payment_method_id": order["payment_method_id"],
                    "at": issued,
                }
            )
    # Goodwill credits: most customers have few; frequent customers often have many, so some
    # are at or near the 30-day limit.
    delivered_of: dict[str, list[dict[str, Any]]] = {}
    for order in orders:
        if order["status"] == "delivered":
            delivered_of.setdefault(order["customer_id"], []).append(order)
    for customer in customers.values():
        heavy = len(customer["orders"]) >= 4 and rng.random() < 0.6
        entries = []
        for order in delivered_of.get(customer["customer_id"], []):
            age = delivered_minutes_ago(order)
            if age < 150 or rng.random() >= (0.9 if heavy else 0.12):
                continue
            issued_minutes = age - rng.uniform(30, min(age - 100, 3 * 24 * 60))
            amounts = (7.5, 10.0, 12.5, 15.0) if heavy else (3.0, 5.0, 10.0)
            late = minutes_late(order) or 0
            reason = "late_delivery" if late >= 20 else rng.choice(CREDIT_REASONS[1:])
            entries.append((issued_minutes, order["order_id"], rng.choice(amounts), reason))
        entries.sort(reverse=True)  # oldest first
        per_order: dict[str, int] = {}
        history: list[dict[str, Any]] = []
        for issued_minutes, order_id, amount, reason in entries:
            issued_at = NOW_TIME - dt.timedelta(minutes=round(issued_minutes))
            window_start = issued_at - dt.timedelta(days=30)
            recent = sum(
                cents(c["amount"]) for c in history if parse_time(c["issued_at"]) > window_start
            )
            allowed = min(
                cents(CREDIT_LIMIT_PER_ORDER) - per_order.get(order_id, 0),
                cents(CREDIT_LIMIT_30_DAYS) - recent,
            )
            value = min(cents(amount), allowed)
            if value <= 0:
                continue
            per_order[order_id] = per_order.get(order_id, 0) + value
            history.append(
                {
                    "credit_id": f"CR-{customer['customer_id'][4:]}-{len(history) + 1}",
                    "order_id": order_id,
                    "amount": value / 100,
                    "reason": reason,
                    "issued_at": format_time(issued_at),
                }
            )
        customer["credit_history"] = history
        earned = sum(cents(c["amount"]) for c in history)
        customer["credits_balance"] = round(earned * rng.choice((0, 0.5, 1, 1))) / 100


def _dashers(
    rng: random.Random, ids: _Ids, orders: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    dashers: dict[str, dict[str, Any]] = {}
    by_city: dict[str, list[str]] = {}
    for number in range(150):
        city, _, _, _, (lat, lng) = _CITIES[number % len(_CITIES)]
        dasher_id = ids.new("dsh_", 4)
        dashers[dasher_id] = {
            "dasher_id": dasher_id,
            "name": f"{rng.choice(_DASHER_NAMES)} {rng.choice('ABCDEFGHJKLMNPRSTVW')}.",
            "vehicle": rng.choices(("car", "bike", "scooter", "e-bike"), weights=(60, 15, 15, 10))[
                0
            ],
            "rating": round(rng.uniform(4.5, 5.0), 2),
            "city": city,
            "status": "offline",
            "location": {
                "lat": round(lat + rng.uniform(-0.06, 0.06), 4),
                "lng": round(lng + rng.uniform(-0.06, 0.06), 4),
            },
            "active_order_ids": [],
        }
        by_city.setdefault(city, []).append(dasher_id)
    rank = {"confirmed": 1, "preparing": 2, "picked_up": 3}
    needing = [o for o in orders if o["status"] in rank]
    needing.sort(key=lambda o: -rank[o["status"]])  # picked-up orders get dashers first
    for order in needing:
        if order["status"] == "confirmed" and rng.random() < 0.5:
            continue
        city = order["delivery_address"]["city"]
        free = [d for d in by_city[city] if len(dashers[d]["active_order_ids"]) < 2]
        if not free:
            raise AssertionError(f"not enough dashers in {city}")
        # Prefer idle dashers; a second order is a stacked delivery.
        idle = [d for d in free if not dashers[d]["active_order_ids"]]
        dasher = dashers[rng.choice(idle or free)]
        dasher["active_order_ids"].append(order["order_id"])
        order["dasher_id"] = dasher["dasher_id"]
    status_of = {order["order_id"]: order["status"] for order in needing}
    for dasher in dashers.values():
        statuses = {status_of[order_id] for order_id in dasher["active_order_ids"]}
        if "picked_up" in statuses:
            dasher["status"] = "delivering"
        elif "preparing" in statuses:
            dasher["status"] = rng.choice(("heading_to_restaurant", "waiting_at_restaurant"))
        elif statuses:
            dasher["status"] = "heading_to_restaurant"
        else:
            dasher["status"] = "available" if rng.random() < 0.6 else "offline"
    for order in orders:
        if order["status"] == "delivered":
            order["dasher_id"] = rng.choice(by_city[order["delivery_address"]["city"]])
    return dashers


def generate_tables(seed: int = 0) -> Tables:
    """The whole database for ``seed``: 500 customers, 120 restaurants, 1,000 orders, 150
    dashers (deterministic)."""
    rng = random.Random(seed)
    ids = _Ids(rng)
    restaurants = _restaurants(rng, ids)
    customers = _customers(rng, ids)
    by_city: dict[str, list[dict[str, Any]]] = {}
    for restaurant in restaurants.values():
        by_city.setdefault(restaurant["address"]["city"], []).append(restaurant)
    customer_ids = list(customers)
    # Every customer has at least one order; the other 500 go to customers drawn at random,
    # one in six of them a frequent customer who is five times as likely to be drawn.
    weights = [5 if rng.random() < 1 / 6 else 1 for _ in customer_ids]
    owners = customer_ids + rng.choices(customer_ids, weights=weights, k=500)
    orders: list[dict[str, Any]] = []
    for owner in owners:
        customer = customers[owner]
        home = customer["addresses"][customer["default_address_id"]]["city"]
        restaurant = rng.choice(by_city[home])
        order = _order(rng, ids, customer, restaurant, ids.new("DD-", 6))
        orders.append(order)
        customer["orders"].append(order["order_id"])
    _history(rng, orders, customers)
    dashers = _dashers(rng, ids, orders)
    return {
        "customers": customers,
        "restaurants": restaurants,
        "orders": {order["order_id"]: order for order in orders},
        "dashers": dashers,
    }


load_tables = SeedTables(generate_tables)
"""The database of the shipped env (seed 0), built once per process; read-only."""
