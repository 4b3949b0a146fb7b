"""The Slurm launcher's job settings (``hydra/launcher=slurm``) through submitit's local
executor (the same Hydra plugin, ``submitit_local``): a two-job smoke sweep completes and
``bockparse-table`` aggregates it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from bockparse.training.train import CONF_DIR

REPO = Path(CONF_DIR).parent
# The settings every submitit executor shares (the plugin's BaseQueueConf); the rest of
# conf/hydra/launcher/slurm.yaml (partition, account, ...) only sbatch reads.
SHARED = ("timeout_min", "cpus_per_task", "tasks_per_node", "mem_gb", "nodes")


def slurm_settings() -> list[str]:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
    slurm = cfg.hydra.launcher
    assert slurm._target_.endswith("SlurmLauncher")
    # no GPU here: the local executor would hide the CPU run behind CUDA_VISIBLE_DEVICES
    return [f"hydra.launcher.{key}={slurm[key]}" for key in SHARED] + [
        "hydra.launcher.gpus_per_node=0"
    ]


@pytest.mark.slow
def test_submitit_sweep_with_the_slurm_settings_completes_and_is_tabulated(tmp_path, capsys):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from bockparse.cli.experiments import table

    sweep = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "bockparse.training.train", "-m", "experiment=smoke",
         "condition=local-ce",
         "seed=1111,2222", "hydra/launcher=submitit_local", *slurm_settings(),
         f"hydra.sweep.dir={sweep}", "trainer.enable_progress_bar=false"],
        cwd=REPO, capture_output=True, text=True, timeout=1800,
        env={**os.environ, "WANDB_MODE": "disabled"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    for seed in (1111, 2222):
        metrics = json.loads((sweep / "local-ce" / f"seed{seed}" / "metrics.json").read_text())
        assert (metrics["condition"], metrics["seed"]) == ("local-ce", seed)
    assert len(list((sweep / ".submitit").glob("*/*_result.pkl"))) == 2  # two submitit jobs
    out = tmp_path / "table"
    assert table([str(sweep), "--out", str(out)]) == 0
    assert "| 2 |" in capsys.readouterr().out  # both seeds in the cell
    assert (out / "table1.md").is_file()
