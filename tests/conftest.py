"""Shared test settings."""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _environment_restored():
    """Every test ends with the environment it started with: a training started in-process
    sets variables for its own run (the shipped sample's folder, offline flags), which must not
    reach the next test of the same worker."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
