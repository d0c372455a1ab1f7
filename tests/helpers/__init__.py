"""Shared test helpers and fixtures (the fixtures are registered as plugins in tests/conftest.py)."""
