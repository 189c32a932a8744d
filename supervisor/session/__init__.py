"""The session model and the ``session`` command (what session.sh was).

``sessions/NAME/.state.json`` — its fields and schema, the locked store, the
lookup index, identity, the transitions — and the commands agents run on it.
Standard library only: the ground floor that ``claude-run``, the hooks and the
fleet all build on.
"""
