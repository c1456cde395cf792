"""The symbol catalogues: real names first, then generated ones, plus a few odd cases on purpose.

Each venue lists ``n`` tradeable symbols: the well-known ones in a fixed order (on spot down to
PEPEUSDT: 8-decimal prices around 0.00001, so a book is about 1000 ticks from zero, and sizes in
whole millions), then generated names (pronounceable, deterministic, never colliding with the real
ones) that cycle through price shapes from a sub-satoshi meme coin with billion-unit sizes to a
four-figure coin with a 0.05 tick. On top of ``n`` each Binance catalogue carries symbols a client
must not treat as ordinary: spot a ``BREAK`` symbol with an empty book; futures a dated quarterly
contract (``_YYMMDD``) and a ``SETTLING`` one. Specs are plain data: books and streams are built
from them only when used.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal

TRADING = "TRADING"


@dataclass(frozen=True, slots=True)
class SymbolSpec:
    """One listed symbol: its names, its status and the shape of its book."""

    name: str
    """As REST and payloads write it: ``BTCUSDT``, ``BTCUSDT_261225``, ``BTC/USD``."""
    base: str
    quote: str
    status: str
    price_decimals: int
    """Decimals of the tick size ..."""
    tick_mult: int
    """... and its digits: tick 0.05 is (2, 5), tick 0.0100 is (4, 100)."""
    qty_decimals: int
    """Decimals of the step size (the step itself is always one unit of the last digit)."""
    mid_ticks: int
    """Initial mid price, in ticks."""
    mean_qty: int
    """Typical level size, in step units."""
    contract_type: str = ""
    delivery_date_ms: int = 0


@dataclass(frozen=True, slots=True)
class _Shape:
    price: str
    tick: str
    step: str
    mean_qty: str


def _spec(
    name: str, base: str, quote: str, shape: _Shape, status: str = TRADING, scale: int = 10
) -> SymbolSpec:
    tick = Decimal(shape.tick)
    tick_exp = -int(tick.as_tuple().exponent)
    step_exp = -int(Decimal(shape.step).as_tuple().exponent)
    mid_ticks = int(Decimal(shape.price) * scale / 10 / tick)
    return SymbolSpec(
        name=name,
        base=base,
        quote=quote,
        status=status,
        price_decimals=tick_exp,
        tick_mult=int(tick.scaleb(tick_exp)),
        qty_decimals=step_exp,
        mid_ticks=max(mid_ticks, 1),
        mean_qty=max(int(Decimal(shape.mean_qty).scaleb(step_exp)), 1),
    )


_SPOT_REAL: tuple[tuple[str, str, _Shape], ...] = (
    ("BTC", "USDT", _Shape("67000.00", "0.01", "0.00001", "0.3")),
    ("ETH", "USDT", _Shape("3500.00", "0.01", "0.0001", "3")),
    ("ETH", "BTC", _Shape("0.05123", "0.00001", "0.0001", "5")),
    ("BNB", "BTC", _Shape("0.008910", "0.000001", "0.001", "10")),
    ("BNB", "USDT", _Shape("590.00", "0.01", "0.001", "5")),
    ("SOL", "USDT", _Shape("150.00", "0.01", "0.001", "20")),
    ("XRP", "USDT", _Shape("0.5200", "0.0001", "0.1", "2000")),
    ("ADA", "USDT", _Shape("0.4500", "0.0001", "0.1", "3000")),
    ("DOGE", "USDT", _Shape("0.16000", "0.00001", "1", "20000")),
    ("LTC", "USDT", _Shape("85.00", "0.01", "0.001", "30")),
    ("PEPE", "USDT", _Shape("0.00001050", "0.00000001", "1", "5000000")),
)
"""PEPEUSDT is last so that catalogues of up to ten symbols, and the names after the real ones, stay
as they were; it is the low-priced coin whose price walks many ticks (see ``drift.py``)."""
_FUTURES_REAL: tuple[tuple[str, _Shape], ...] = (
    ("BTC", _Shape("67010.0", "0.10", "0.001", "0.5")),
    ("ETH", _Shape("3501.00", "0.01", "0.001", "5")),
    ("SOL", _Shape("150.0100", "0.0100", "1", "30")),
    ("BNB", _Shape("590.010", "0.010", "0.01", "5")),
    ("XRP", _Shape("0.5201", "0.0001", "0.1", "3000")),
    ("DOGE", _Shape("0.160010", "0.000010", "1", "30000")),
    ("ADA", _Shape("0.45010", "0.00010", "1", "3000")),
    ("LTC", _Shape("85.01", "0.01", "0.001", "30")),
    ("LINK", _Shape("14.010", "0.001", "0.01", "100")),
    ("AVAX", _Shape("35.0100", "0.0010", "1", "50")),
)
_ALPACA_REAL: tuple[tuple[str, _Shape], ...] = (
    ("BTC", _Shape("67050.00", "0.01", "0.000000001", "0.3")),
    ("ETH", _Shape("3502.00", "0.01", "0.000000001", "3")),
    ("SOL", _Shape("150.02", "0.01", "0.000000001", "20")),
    ("LTC", _Shape("85.02", "0.01", "0.000000001", "30")),
    ("DOGE", _Shape("0.16002", "0.00001", "0.000000001", "20000")),
    ("AVAX", _Shape("35.02", "0.01", "0.000000001", "50")),
    ("LINK", _Shape("14.02", "0.01", "0.000000001", "100")),
    ("UNI", _Shape("7.502", "0.001", "0.000000001", "200")),
    ("AAVE", _Shape("95.02", "0.01", "0.000000001", "10")),
    ("BCH", _Shape("350.02", "0.01", "0.000000001", "5")),
)
_KRAKEN_REAL: tuple[tuple[str, str, _Shape], ...] = (
    ("BTC", "USD", _Shape("67040.0", "0.1", "0.00000001", "0.3")),
    ("ETH", "USD", _Shape("3501.50", "0.01", "0.00000001", "3")),
    ("SOL", "USD", _Shape("150.03", "0.01", "0.00000001", "20")),
    ("XRP", "USD", _Shape("0.52010", "0.00001", "0.00000001", "2000")),
    ("DOGE", "USD", _Shape("0.1600100", "0.0000001", "0.00000001", "20000")),
    ("ADA", "USD", _Shape("0.450100", "0.000001", "0.00000001", "3000")),
    ("LTC", "USD", _Shape("85.03", "0.01", "0.00000001", "30")),
    ("ETH", "BTC", _Shape("0.05124", "0.00001", "0.00000001", "5")),
    ("DOT", "USD", _Shape("6.5010", "0.0001", "0.00000001", "200")),
    ("LINK", "USD", _Shape("14.03", "0.01", "0.00000001", "100")),
)
"""Kraken's pairs as its WebSocket v2 names them (v1 and REST say ``XBT`` and ``XDG``)."""
_COINBASE_REAL: tuple[tuple[str, str, _Shape], ...] = (
    ("BTC", "USD", _Shape("67030.00", "0.01", "0.00000001", "0.3")),
    ("ETH", "USD", _Shape("3501.20", "0.01", "0.00000001", "3")),
    ("SOL", "USD", _Shape("150.04", "0.01", "0.00000001", "20")),
    ("XRP", "USD", _Shape("0.5202", "0.0001", "0.000001", "2000")),
    ("DOGE", "USD", _Shape("0.16003", "0.00001", "0.1", "20000")),
    ("ADA", "USD", _Shape("0.4502", "0.0001", "0.01", "3000")),
    ("LTC", "USD", _Shape("85.04", "0.01", "0.00000001", "30")),
    ("ETH", "BTC", _Shape("0.05125", "0.00001", "0.00000001", "5")),
    ("AVAX", "USD", _Shape("35.03", "0.01", "0.00000001", "50")),
    ("LINK", "USD", _Shape("14.04", "0.001", "0.01", "100")),
)
_GENERATED_SHAPES = (
    _Shape("1.2345", "0.0001", "0.1", "500"),
    _Shape("25.37", "0.01", "0.01", "50"),
    _Shape("0.00001234", "0.00000001", "1", "50000000"),
    _Shape("1234.50", "0.05", "0.001", "2"),
    _Shape("0.052300", "0.000001", "1", "3000"),
)
_ALPACA_GENERATED_SHAPES = (
    _Shape("1.2345", "0.0001", "0.000000001", "500"),
    _Shape("25.37", "0.01", "0.000000001", "50"),
    _Shape("0.00001234", "0.00000001", "0.01", "50000000"),
    _Shape("1234.5", "0.1", "0.000000001", "2"),
)
_SPOT_QUOTES = ("USDT", "USDT", "BTC", "FDUSD", "USDC")
_CONSONANTS = "BDFGKLMNPRSTVZ"
_VOWELS = "AEIOU"


def generated_base(index: int) -> str:
    """A pronounceable made-up asset name: two syllables, three from index 4900 on."""
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS]
    count = len(syllables)
    name = syllables[index % count] + syllables[(index // count) % count]
    if index >= count * count:
        name += syllables[(index // (count * count)) % count]
    return name


def _generated(n: int, taken: set[str], build: Callable[[int], SymbolSpec]) -> list[SymbolSpec]:
    specs: list[SymbolSpec] = []
    index = 0
    while len(specs) < n:
        spec = build(index)
        index += 1
        if spec.name not in taken:
            taken.add(spec.name)
            specs.append(spec)
    return specs


def _generated_spot(index: int) -> SymbolSpec:
    base = generated_base(index)
    quote = _SPOT_QUOTES[index % len(_SPOT_QUOTES)]
    shape = _GENERATED_SHAPES[index % len(_GENERATED_SHAPES)]
    return _spec(base + quote, base, quote, shape, scale=10 + index % 17)


def _generated_futures(index: int) -> SymbolSpec:
    base = generated_base(index)
    shape = _GENERATED_SHAPES[index % len(_GENERATED_SHAPES)]
    return _perpetual(_spec(base + "USDT", base, "USDT", shape, scale=10 + index % 17))


def _generated_alpaca(index: int) -> SymbolSpec:
    base = generated_base(index)
    shape = _ALPACA_GENERATED_SHAPES[index % len(_ALPACA_GENERATED_SHAPES)]
    return _spec(f"{base}/USD", base, "USD", shape, scale=10 + index % 17)


def _pairs(
    n: int, real: tuple[tuple[str, str, _Shape], ...], separator: str, shapes: tuple[_Shape, ...]
) -> list[SymbolSpec]:
    specs = [_spec(f"{base}{separator}{quote}", base, quote, shape) for base, quote, shape in real][:n]

    def generated(index: int) -> SymbolSpec:
        base = generated_base(index)
        return _spec(f"{base}{separator}USD", base, "USD", shapes[index % len(shapes)], scale=10 + index % 17)

    return specs + _generated(n - len(specs), {s.name for s in specs}, generated)


def _perpetual(spec: SymbolSpec) -> SymbolSpec:
    return replace(spec, contract_type="PERPETUAL", delivery_date_ms=4133404800000)


def spot_catalogue(n: int, unicode_symbol: bool = False) -> list[SymbolSpec]:
    """``n`` TRADING spot symbols, then a BREAK one (and a non-ASCII one when asked)."""
    specs = [_spec(base + quote, base, quote, shape) for base, quote, shape in _SPOT_REAL][:n]
    specs += _generated(n - len(specs), {s.name for s in specs}, _generated_spot)
    specs.append(_spec("BCCBTC", "BCC", "BTC", _Shape("0.010000", "0.000001", "0.001", "10"), status="BREAK"))
    if unicode_symbol:
        specs.append(_spec("币安人生USDT", "币安人生", "USDT", _GENERATED_SHAPES[0]))
    return specs


def futures_catalogue(n: int, today: dt.date | None = None) -> list[SymbolSpec]:
    """``n`` TRADING perpetuals, then a dated quarterly contract and a SETTLING perpetual."""
    specs = [_perpetual(_spec(base + "USDT", base, "USDT", shape)) for base, shape in _FUTURES_REAL][:n]
    specs += _generated(n - len(specs), {s.name for s in specs}, _generated_futures)
    delivery = _next_quarter_expiry(today or dt.datetime.now(dt.UTC).date())
    dated = _spec(f"BTCUSDT_{delivery:%y%m%d}", "BTC", "USDT", _FUTURES_REAL[0][1])
    delivery_ms = (
        int(dt.datetime(delivery.year, delivery.month, delivery.day, 8, tzinfo=dt.UTC).timestamp()) * 1000
    )
    specs.append(replace(dated, contract_type="CURRENT_QUARTER", delivery_date_ms=delivery_ms))
    specs.append(_perpetual(_spec("FTTUSDT", "FTT", "USDT", _GENERATED_SHAPES[0], status="SETTLING")))
    return specs


def alpaca_catalogue(n: int) -> list[SymbolSpec]:
    """``n`` symbols in Alpaca's ``BASE/QUOTE`` form."""
    specs = [_spec(f"{base}/USD", base, "USD", shape) for base, shape in _ALPACA_REAL][:n]
    specs += _generated(n - len(specs), {s.name for s in specs}, _generated_alpaca)
    return specs


def kraken_catalogue(n: int) -> list[SymbolSpec]:
    """``n`` pairs as Kraken's WebSocket v2 writes them, ``BTC/USD``."""
    return _pairs(n, _KRAKEN_REAL, "/", _ALPACA_GENERATED_SHAPES)


def coinbase_catalogue(n: int) -> list[SymbolSpec]:
    """``n`` products as Coinbase writes them, ``BTC-USD``."""
    return _pairs(n, _COINBASE_REAL, "-", _GENERATED_SHAPES)


def _next_quarter_expiry(today: dt.date) -> dt.date:
    """The nearest quarterly delivery day (last Friday of Mar/Jun/Sep/Dec) at least a week away."""
    month = ((today.month - 1) // 3 + 1) * 3
    year = today.year
    while True:
        first_of_next = dt.date(year + month // 12, month % 12 + 1, 1)
        last_day = first_of_next - dt.timedelta(days=1)
        expiry = last_day - dt.timedelta(days=(last_day.weekday() - 4) % 7)
        if expiry - today >= dt.timedelta(days=7):
            return expiry
        year, month = (year + 1, 3) if month == 12 else (year, month + 3)


def okx_catalogue(n: int) -> list[SymbolSpec]:
    """``n`` SPOT instruments (``BTC-USDT``) and ``n`` perpetual swaps (``BTC-USDT-SWAP``)."""
    spot = [_spec(f"{base}-{quote}", base, quote, shape) for base, quote, shape in _SPOT_REAL][:n]
    spot += [
        replace(s, name=f"{s.base}-{s.quote}") for s in _generated(n - len(spot), set(), _generated_spot)
    ]
    swaps = [_perpetual(_spec(f"{base}-USDT-SWAP", base, "USDT", shape)) for base, shape in _FUTURES_REAL][:n]
    swaps += [
        replace(s, name=f"{s.base}-USDT-SWAP") for s in _generated(n - len(swaps), set(), _generated_futures)
    ]
    return spot + swaps


def bybit_catalogue(n: int, category: str) -> list[SymbolSpec]:
    """``n`` symbols of a Bybit category: spot pairs (``BTCUSDT``) or linear perpetuals."""
    if category == "spot":
        specs = [_spec(base + quote, base, quote, shape) for base, quote, shape in _SPOT_REAL][:n]
        return specs + _generated(n - len(specs), {s.name for s in specs}, _generated_spot)
    specs = [_perpetual(_spec(base + "USDT", base, "USDT", shape)) for base, shape in _FUTURES_REAL][:n]
    return specs + _generated(n - len(specs), {s.name for s in specs}, _generated_futures)
