"""Fleets across machines: each host runs its own fleet, and ``fleet`` drives them over a transport."""

LOCAL = "local"
"""The name this machine goes by wherever hosts are listed."""
