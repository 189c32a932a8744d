"""Fleets across machines: each host runs its own fleet, and ``fleet`` drives them over a transport."""
