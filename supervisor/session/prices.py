"""What one reply cost, at Claude Code's own list prices: the same figure its status line adds up.

Claude Code prices each reply from its ``usage`` (``total_cost_usd``, ``costBasis: list``). The hooks
price the replies the status line has not counted yet from the transcript, where each reply's
``usage`` and ``model`` are written (:mod:`.spend`), so the two must agree to the cent. The tables
below are the CLI's baked model catalog (``pricing_tiers`` and each model's ``pricing``), its
fast-mode prices and its pricing function, read from the 2.1.328 binary (2.1.332 has the same):

* USD per million tokens for input, output, a 5-minute cache write, a 1-hour cache write and a cache
  read; a reply's ``cache_creation.ephemeral_1h_input_tokens`` (at most its cache writes) are priced
  at the 1-hour rate, the rest at the 5-minute one;
* ``speed: "fast"`` prices the models the CLI has fast prices for at those (others at their own);
* ``inference_geo: "us"`` costs 1.1 times the tokens; each web search request $0.01;
* Haiku 5.5 costs more per token for a prompt (input and cache) above 100,000 tokens;
* a model id is matched as the CLI matches it: the first catalog family its (lowercased) id contains.

A model the table does not know is priced at the dearest rates the CLI has (:data:`UNKNOWN`): Claude
prices it at its default model's rate, which is never dearer, so an estimate of an unknown model is
never below Claude's own figure and pauses an agent early rather than late (and the ledger never
lets an estimate lower a figure Claude reported). Managed ``modelPricing`` (an organisation's own
rates) is not seen here: the estimate is the list price, as the status line's is without it.

Standard library only: the hooks call :func:`reply_cost` for every new reply.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

    Rates = tuple[float, float, float, float, float]

PER_TOKEN = 1e-6
MAX_MODEL_ID = 200
"""A longer model id is no model the table knows (and is not searched)."""
WEB_SEARCH_USD = 0.01
US_GEO = 1.1

TIERS: dict[str, Rates] = {
    # input, output, cache write 5m, cache write 1h, cache read: USD per million tokens
    "tier_2_10": (2, 10, 2.5, 4, 0.2),
    "tier_2_10_cache_read_0_10": (2, 10, 2.5, 4, 0.1),
    "tier_3_15": (3, 15, 3.75, 6, 0.3),
    "tier_5_25": (5, 25, 6.25, 10, 0.5),
    "tier_15_75": (15, 75, 18.75, 30, 1.5),
    "tier_10_50": (10, 50, 12.5, 20, 1),
    "tier_10_50_cache_read_0_25": (10, 50, 12.5, 20, 0.25),
    "tier_4_20_cache_read_0_20": (4, 20, 5, 8, 0.2),
    "tier_8_40_cache_read_0_20": (8, 40, 10, 16, 0.2),
    "haiku_35": (0.8, 4, 1, 1.6, 0.08),
    "haiku_45": (1, 5, 1.25, 2, 0.1),
    "haiku_55": (0.1, 0.5, 0.125, 0.2, 0.01),
}
LONG_PROMPT: dict[str, tuple[int, Rates]] = {"haiku_55": (100_000, (0.5, 2.5, 0.625, 1, 0.05))}
"""A tier's rates for a prompt (input + cache read + cache write tokens) above so many tokens."""

MODELS: dict[str, str] = {
    "claude-3-5-haiku": "haiku_35", "claude-haiku-4-5": "haiku_45", "claude-haiku-5-5": "haiku_55",
    "claude-3-5-sonnet": "tier_3_15", "claude-3-7-sonnet": "tier_3_15", "claude-sonnet-4-0": "tier_3_15",
    "claude-sonnet-4-5": "tier_3_15", "claude-sonnet-4-6": "tier_3_15", "claude-sonnet-5": "tier_2_10",
    "claude-sonnet-5-5": "tier_2_10_cache_read_0_10", "claude-opus-4-0": "tier_15_75",
    "claude-opus-4-1": "tier_15_75", "claude-opus-4-5": "tier_5_25", "claude-opus-4-6": "tier_5_25",
    "claude-opus-4-7": "tier_5_25", "claude-opus-4-8": "tier_5_25", "claude-opus-5": "tier_5_25",
    "claude-opus-5-5": "tier_4_20_cache_read_0_20", "claude-fable-5": "tier_10_50",
    "claude-fable-5-1": "tier_10_50_cache_read_0_25", "claude-fable-5-2": "tier_8_40_cache_read_0_20",
    "claude-mythos-5": "tier_10_50", "claude-mythos-5-1": "tier_10_50_cache_read_0_25",
    "claude-mythos-5-2": "tier_8_40_cache_read_0_20",
}  # fmt: skip
"""Each catalog model's tier."""

FAST: dict[str, Rates] = {
    "claude-fable-5-2": (16, 80, 20, 32, 0.4), "claude-mythos-5-2": (16, 80, 20, 32, 0.4),
    "claude-opus-5-5": (8, 40, 10, 16, 0.4), "claude-opus-4-8": (10, 50, 12.5, 20, 1),
    "claude-opus-5": (10, 50, 12.5, 20, 1), "claude-opus-4-6": (30, 150, 37.5, 60, 3),
    "claude-opus-4-7": (30, 150, 37.5, 60, 3),
}  # fmt: skip
"""Fast mode's rates, for the models that have them."""

UNKNOWN: Rates = (15, 75, 18.75, 30, 1.5)
"""A model not in the table: the dearest standard rates of the catalog (Opus 4 and 4.1)."""
UNKNOWN_FAST: Rates = (30, 150, 37.5, 60, 3)
"""A model not in the table, in fast mode: the dearest rates the CLI has."""

_ORDER: tuple[tuple[str, str], ...] = (
    ("claude-fable-5-2", "~"), ("claude-fable-5-1", ""), ("claude-fable-5", ""),
    ("claude-mythos-5-2", "~"), ("claude-mythos-5-1", ""), ("claude-mythos-5", ""),
    ("claude-opus-5-5", ""), ("claude-opus-5", ""), ("claude-opus-4-8", ""), ("claude-opus-4-7", ""),
    ("claude-opus-4-6", ""), ("claude-opus-4-5", ""), ("claude-opus-4-1", ""), ("claude-opus-4-0", "re"),
    ("claude-sonnet-5-5", ""), ("claude-sonnet-5", ""), ("claude-sonnet-4-6", ""), ("claude-sonnet-4-5", ""),
    ("claude-sonnet-4-0", "re"), ("claude-haiku-5-5", ""), ("claude-haiku-4-5", ""),
    ("claude-3-7-sonnet", ""), ("claude-3-5-sonnet", ""), ("claude-3-5-haiku", ""),
)  # fmt: skip
"""The CLI's matching order: the first family a model id contains (``~``: not where a date follows,
``claude-fable-5-20250101`` is no 5.2; ``re``: ``claude-opus-4`` not followed by a minor version, as
the CLI's ``/claude-opus-4(?!-\\d(?!\\d))/``)."""


def _follows_minor(name: str, end: int) -> bool:
    """Does a minor version follow at *end* (``-5``, not a date: ``-20250514``)?"""
    return (
        name[end : end + 1] == "-"
        and name[end + 1 : end + 2].isdigit()
        and not name[end + 2 : end + 3].isdigit()
    )


def _dotted(name: str) -> str:
    """``claude-opus-4.5`` as ``claude-opus-4-5``: a dot between digits is a dash."""
    chars = list(name)
    for i in range(1, len(chars) - 1):
        if chars[i] == "." and chars[i - 1].isdigit() and chars[i + 1].isdigit():
            chars[i] = "-"
    return "".join(chars)


def canonical(model: str) -> str | None:
    """The catalog model *model* names, as the CLI matches it, or None when none.

    By hand rather than with regular expressions: compiling them costs a hook a millisecond."""
    name = _dotted(model.lower().replace("[1m]", "").replace("[2m]", ""))
    if name in MODELS:  # a catalog id itself (``claude-opus-4-0``) first
        return name
    for family, how in _ORDER:
        needle = family[: -len("-0")] if how == "re" else family
        at = name.find(needle)
        while at != -1:
            end = at + len(needle)
            if how == "" or (how == "~" and not name[end : end + 3].isdigit()):
                return family
            if how == "re" and not _follows_minor(name, end):
                return family
            at = name.find(needle, at + 1)
    return None


def rates(model: object, fast: bool = False) -> tuple[Rates, bool]:
    """The rates a reply of *model* is priced at, and whether the model is known."""
    family = canonical(model) if isinstance(model, str) and len(model) <= MAX_MODEL_ID else None
    if family is None:
        return (UNKNOWN_FAST if fast else UNKNOWN), False
    if fast and family in FAST:
        return FAST[family], True
    return TIERS[MODELS[family]], True


def _tokens(usage: t.Mapping[str, object], name: str) -> float | None:
    value = usage.get(name, 0)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e15:
        return None
    return float(value)


def reply_cost(model: object, usage: object) -> tuple[float, bool] | None:
    """(USD, whether the model is known) for one reply of *model* with *usage* (the API's, as the
    transcript keeps it); None when the usage cannot be read (not an object, a count that is not a
    non-negative number)."""
    if not isinstance(usage, dict):
        return None
    counts = [_tokens(usage, n) for n in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                                          "cache_creation_input_tokens")]  # fmt: skip
    if any(c is None for c in counts):
        return None
    given, output, read, written = (c or 0.0 for c in counts)
    creation = usage.get("cache_creation")
    one_hour = _tokens(creation, "ephemeral_1h_input_tokens") if isinstance(creation, dict) else 0.0
    one_hour = min(max(one_hour or 0.0, 0.0), written)
    (price, known) = rates(model, usage.get("speed") == "fast")
    family = canonical(model) if known and isinstance(model, str) else None  # known: a short id
    long = LONG_PROMPT.get(MODELS[family]) if family else None
    if long is not None and given + read + written > long[0]:
        price = long[1]
    per_in, per_out, per_write, per_write_hour, per_read = price
    tokens = (given * per_in + output * per_out + read * per_read
              + one_hour * per_write_hour + (written - one_hour) * per_write) * PER_TOKEN  # fmt: skip
    if usage.get("inference_geo") == "us":
        tokens *= US_GEO
    server = usage.get("server_tool_use")
    searches = _tokens(server, "web_search_requests") if isinstance(server, dict) else 0.0
    return tokens + (searches or 0.0) * WEB_SEARCH_USD, known
