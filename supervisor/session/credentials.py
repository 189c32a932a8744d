"""Which credential an agent's Claude uses, named without its secret.

The fleet keeps one reading of the usage windows per credential (:mod:`.usage_windows`): the one the
agent's Claude actually uses, as Claude Code picks it. An API key, a token or a gateway's token is named
by a digest, never the secret; a login by the Claude config directory that holds it. An API-key agent is
never held by a subscription's window read from the same config directory.
Standard library only: the status line and the hooks import it.
"""

from __future__ import annotations

import json
import os
import re

from claude_shepherd.supervisor.env import CONFIG_DIR_ENV, CREDENTIAL_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

_NAMED = re.compile(
    r"(?:api-key|auth-token|oauth-token):[0-9a-f]{12}|gateway:[^\s:]{1,80}:[0-9a-f]{12}|cloud:[a-z]{1,20}|/[^\x00-\x1f]{0,4000}"
)
CLOUD_ENV = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
WINDOWLESS = ("api-key:", "auth-token:", "cloud:")
"""Credentials of no usage window: Claude reports none under them, and no subscription's window holds them."""


def credential_of(env: t.Mapping[str, str]) -> str:
    """The credential the agent's Claude actually uses, as Claude Code picks it: a cloud provider
    (``cloud:bedrock``), ``$ANTHROPIC_AUTH_TOKEN`` (``gateway:HOST:ID`` for a Claude gateway's token,
    else ``auth-token:ID``), ``$ANTHROPIC_API_KEY`` (``api-key:ID``), ``$CLAUDE_CODE_OAUTH_TOKEN``
    (``oauth-token:ID``), else the login kept in its config directory: ``$CLAUDE_CONFIG_DIR``
    (absolute), else ``$HOME/.claude``. An ID is a digest of the secret, never the secret.

    Claude keeps ``$CLAUDE_CODE_OAUTH_TOKEN`` from its hooks and status line (seen with 2.1.328 and
    2.1.332), so claude-run names the credential for them in ``$CLAUDE_SHEPHERD_CREDENTIAL``, which wins."""
    named = env.get(CREDENTIAL_ENV, "")
    if _NAMED.fullmatch(named):
        return named
    for name in CLOUD_ENV:
        if env.get(name, "").strip().lower() in ("1", "true", "yes"):
            return "cloud:" + name.rsplit("_", 1)[1].lower()
    token = env.get("ANTHROPIC_AUTH_TOKEN", "")
    if token:
        if _gateway_token(token):
            host = re.sub(r"^[a-z]+://|[/?#].*$", "", env.get("ANTHROPIC_BASE_URL", ""))[:80] or "default"
            return f"gateway:{host}:{_digest(token)}"
        return f"auth-token:{_digest(token)}"
    for name, kind in (("ANTHROPIC_API_KEY", "api-key"), ("CLAUDE_CODE_OAUTH_TOKEN", "oauth-token")):
        if env.get(name, ""):
            return f"{kind}:{_digest(env[name])}"
    configured = env.get(CONFIG_DIR_ENV, "")
    if configured and os.path.isabs(configured):
        return os.path.normpath(configured)
    home = env.get("HOME", "") or os.path.expanduser("~")
    return os.path.normpath(os.path.join(home, ".claude"))


def windowless(credential: str) -> bool:
    """Does *credential* have no usage windows (an API key, a plain token, a cloud provider)?"""
    return credential.startswith(WINDOWLESS)


def _digest(secret: str) -> str:
    """A short SHA-256 of *secret*, from the interpreter's own module where it has one (hashlib loads
    OpenSSL: milliseconds on every status line render of an API-key agent outside claude-run)."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    return str(sha256(secret.encode("utf-8", "surrogateescape")).hexdigest())[:12]


def _gateway_token(token: str) -> bool:
    """Is *token* a Claude gateway's (a JWT whose audience is ``claude-gateway``), whose windows Claude
    reports as a subscription's?"""
    parts = token.split(".")
    if len(parts) != 3 or len(parts[1]) > 8192:
        return False
    import base64

    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, TypeError):
        return False
    audience = payload.get("aud") if isinstance(payload, dict) else None
    return audience == "claude-gateway" or (isinstance(audience, list) and "claude-gateway" in audience)


def shown_credential(path: str, home: str | None = None) -> str:
    """*path* with the home directory written ``~`` (a credential that is no path, as it is)."""
    if not path.startswith("/"):
        return path
    home = home if home is not None else os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")) :]
    return path
