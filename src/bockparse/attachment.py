"""UAS/LAS/LCM as a torchmetrics ``Metric`` for training and evaluation steps; the counts and
their conventions are :mod:`bockparse.metrics` (torch-free, for the light install)."""

from __future__ import annotations

import numpy as np
import torch
from torchmetrics import Metric

from .metrics import COUNTS, rates


class AttachmentScores(Metric):
    """UAS/LAS/LCM as a torchmetrics ``Metric``: integer counters summed across DDP ranks."""

    full_state_update = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state(
            "counts", default=torch.zeros(len(COUNTS), dtype=torch.long), dist_reduce_fx="sum"
        )

    def update(self, counts: np.ndarray | torch.Tensor) -> None:
        """Add the counts of one or more sentences (int ``[5]``, from
        :func:`~bockparse.metrics.attachment_counts`)."""
        self.counts += torch.as_tensor(counts, dtype=torch.long, device=self.counts.device)

    def compute(self) -> dict[str, float]:
        return rates(self.counts)
