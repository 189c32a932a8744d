"""Claude Code's list prices as the hooks price a reply: the figures its status line reports for the
same usage (tests/e2e/test_limits.py checks the table against the real CLI, model by model)."""

from __future__ import annotations

import pytest

from claude_shepherd.supervisor.session import prices


@pytest.mark.parametrize(
    ("model", "usage", "usd"),
    [
        ("claude-sonnet-4-5", {"input_tokens": 10_000, "output_tokens": 2_000}, 0.06),
        ("claude-sonnet-4-5-20250929", {"input_tokens": 10_000, "output_tokens": 1_000}, 0.045),
        ("claude-opus-5-5", {"input_tokens": 10_000, "output_tokens": 1_000}, 0.06),
        ("claude-sonnet-5-5", {"input_tokens": 10_000, "output_tokens": 1_000}, 0.03),
        # cache reads at 0.3, 5-minute writes at 3.75, 1-hour ones at 6 (Sonnet 4.5, per million)
        ("claude-sonnet-4-5", {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 1_000_000,
                               "cache_creation_input_tokens": 1_000_000,
                               "cache_creation": {"ephemeral_1h_input_tokens": 400_000}}, 0.3 + 0.6 * 3.75 + 0.4 * 6),
        ("claude-haiku-5-5", {"input_tokens": 100_000, "output_tokens": 0}, 0.01),
        ("claude-haiku-5-5", {"input_tokens": 100_001, "output_tokens": 0}, 100_001 * 0.5e-6),  # a long prompt
        ("claude-opus-5-5", {"input_tokens": 1_000_000, "output_tokens": 0, "speed": "fast"}, 8.0),
        ("claude-sonnet-4-5", {"input_tokens": 1_000_000, "output_tokens": 0, "speed": "fast"}, 3.0),
        ("claude-sonnet-4-5", {"input_tokens": 1_000_000, "output_tokens": 0, "inference_geo": "us"}, 3.3),
        ("claude-sonnet-4-5", {"input_tokens": 0, "output_tokens": 0,
                               "server_tool_use": {"web_search_requests": 3}}, 0.03),
        ("us.anthropic.claude-opus-4-1-20250805-v1:0", {"input_tokens": 1_000_000, "output_tokens": 0}, 15.0),
        ("claude-opus-4-20250514", {"input_tokens": 1_000_000, "output_tokens": 0}, 15.0),
        ("claude-opus-4-0", {"input_tokens": 1_000_000, "output_tokens": 0}, 15.0),
        ("claude-opus-4.5", {"input_tokens": 1_000_000, "output_tokens": 0}, 5.0),
        ("claude-sonnet-4-5[1m]", {"input_tokens": 1_000_000, "output_tokens": 0}, 3.0),
    ],
)  # fmt: skip
def test_a_reply_costs_what_claude_code_says_it_costs(
    model: str, usage: dict[str, object], usd: float
) -> None:
    cost = prices.reply_cost(model, usage)
    assert cost is not None and cost[1] is True
    assert cost[0] == pytest.approx(usd)


def test_a_model_the_table_does_not_know_costs_the_dearest_rates() -> None:
    """Claude prices it at its default model's rate, never dearer than the catalog's dearest: an
    estimate of it is never below Claude's own figure (an unknown spend would pause nobody)."""
    usage = {"input_tokens": 10_000, "output_tokens": 2_000}
    unknown = prices.reply_cost("claude-next-9", usage)
    assert unknown == (pytest.approx(10_000 * 15e-6 + 2_000 * 75e-6), False)
    dearest = max(prices.reply_cost(model, usage)[0] for model in prices.MODELS)  # type: ignore[index]
    assert unknown is not None and unknown[0] >= dearest
    fast = prices.reply_cost("claude-next-9", {**usage, "speed": "fast"})
    assert fast is not None and fast[0] == pytest.approx(2 * unknown[0])
    assert prices.canonical("claude-fable-5-20250101") == "claude-fable-5", "a date is no minor version"
    assert prices.canonical("claude-3-opus-20240229") is None, "the CLI has no price for it either"


@pytest.mark.parametrize(
    "usage",
    [
        None,
        "10",
        {"input_tokens": -1},
        {"input_tokens": "10"},
        {"output_tokens": True},
        {"input_tokens": 1e300},
    ],
)
def test_a_usage_that_cannot_be_read_is_no_price(usage: object) -> None:
    assert prices.reply_cost("claude-sonnet-4-5", usage) is None
