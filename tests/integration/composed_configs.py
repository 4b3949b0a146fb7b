"""Composing the conf/ tree into flat, resolved ``{dotted key: value}`` dicts.

Shared by the composed-config comparison test and by the one-off generation of its fixture
(``tests/fixtures/composed/README.md``): the same function flattened the tree before the
config-group refactor and flattens it now.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from bockparse.training.train import CONF_DIR

# The Hydra settings that decide where a run goes and what runs; the rest of ``hydra`` is
# Hydra's own machinery.
HYDRA_KEYS = ("run", "sweep", "sweeper.params", "callbacks", "mode", "job.chdir")


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists and empty dicts are leaves."""
    if isinstance(node, Mapping) and node:
        flat: dict[str, Any] = {}
        for key, value in node.items():
            flat.update(flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: node}


@contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def flat_configs(
    overrides: Iterable[Sequence[str]], env: Mapping[str, str] | None = None
) -> Iterator[dict[str, Any]]:
    """For each override list, the resolved config of ``bockparse-train OVERRIDES`` (missing
    values stay ``"???"``), with the :data:`HYDRA_KEYS` of ``hydra`` under ``hydra.``,
    flattened; ``env`` is set while they are resolved."""
    with environment(env or {}), initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        for items in overrides:
            cfg = compose("train", overrides=list(items), return_hydra_config=True)
            flat: dict[str, Any] = {}
            for key in cfg:
                if key != "hydra":
                    node = cfg[key]
                    value = (
                        OmegaConf.to_container(node, resolve=True, throw_on_missing=False)
                        if OmegaConf.is_config(node)
                        else node
                    )
                    flat.update(flatten(value, f"{key}."))
            for key in HYDRA_KEYS:
                node = OmegaConf.select(cfg, f"hydra.{key}")
                value = (
                    OmegaConf.to_container(node, resolve=True)
                    if OmegaConf.is_config(node)
                    else node
                )
                if key == "mode":
                    value = None if value is None else str(value)
                flat.update(flatten(value, f"hydra.{key}."))
            yield flat


def flat_config(overrides: Sequence[str], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """:func:`flat_configs` of one override list."""
    [flat] = flat_configs([overrides], env)
    return flat
