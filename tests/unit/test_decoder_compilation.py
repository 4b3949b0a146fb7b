"""The first use of a decoder compiles it (numba, seconds) and says so once; numba's cache makes
later processes load it silently (issue 49: the first-use compilation is stated and cached)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
import logging, numpy as np
logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
from bockparse.decoders import decode_batch
decode_batch(np.zeros((3, 5, 5)), [4, 3, 2], "eisner", workers=1)
decode_batch(np.zeros((3, 5, 5)), [4, 3, 2], "eisner", workers=1)
"""


@pytest.mark.slow
def test_the_first_compilation_is_logged_once_and_cached(tmp_path):
    """About 20 s: two processes on an empty numba cache."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}

    def probe() -> str:
        done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                              text=True, check=True)  # fmt: skip
        return done.stderr

    first = [line for line in probe().splitlines() if "compiled on first use" in line]
    assert len(first) == 1 and first[0].startswith("bockparse.decoders decoder 'eisner'")
    assert str(tmp_path / "numba") in first[0]
    assert "compiled on first use" not in probe()  # loaded from the cache
