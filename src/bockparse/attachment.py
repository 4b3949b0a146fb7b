"""UAS/LAS/LCM and a tagger's accuracies as torchmetrics ``Metric``s for evaluation steps; the
counts and their conventions are :mod:`bockparse.metrics` (torch-free, for the light install)."""

from __future__ import annotations

import numpy as np
import torch
from torchmetrics import Metric

from .metrics import COUNTS, TAG_COUNTS, rates, tag_rates


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


class TagAccuracy(Metric):
    """UPOS/XPOS/UFeats/AllTags accuracy as a torchmetrics ``Metric``: the scored words and the
    right tags (:func:`~bockparse.metrics.tag_counts`), integer counters summed across DDP
    ranks.

    Args:
        names: the accuracies :meth:`compute` gives (of :data:`bockparse.metrics.TAG_NAMES`: a
            tagger's columns).
    """

    full_state_update = False

    def __init__(self, names: tuple[str, ...]) -> None:
        super().__init__()
        self.names = names
        self.add_state(
            "counts", default=torch.zeros(1 + len(TAG_COUNTS), dtype=torch.long),
            dist_reduce_fx="sum",
        )  # fmt: skip

    def update(self, words: int, counts: np.ndarray | torch.Tensor) -> None:
        """Add ``words`` scored words and their :func:`~bockparse.metrics.tag_counts`
        (int ``[4]``)."""
        self.counts[0] += int(words)
        self.counts[1:] += torch.as_tensor(counts, dtype=torch.long, device=self.counts.device)

    def compute(self) -> dict[str, float]:
        accuracy = tag_rates(self.counts[1:].tolist(), int(self.counts[0]))
        return {name: accuracy[name] for name in self.names}
