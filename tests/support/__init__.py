"""Test support shared by every test package: fixtures (registered as pytest plugins by
tests/conftest.py), harnesses that run claude-run, fleets and hooks for real, and helpers."""
