"""The rows of the experiment tables and plots: which row a run belongs to, its label, the
order of rows. Shared by :mod:`.table` and :mod:`.plots` (neither imports the other's privates).
"""

from __future__ import annotations

from collections.abc import Iterable

from .runs import Run

METRICS = ("uas", "las", "lcm")

# Table 1's rows: condition name -> label, in the paper's order.
TABLE1_CONDITIONS: dict[str, str] = {
    "local-ce-cle": "Local CE",
    "hinge-cle": "Hinge (CL/E)",
    "hinge-bock": "Hinge (Bock)",
}
LOSS_LABELS = {
    "LocalCrossEntropy": "Local CE",
    "StructuredHinge": "Hinge",
    "TreeCRF": "CRF",
}
DECODER_ORDER = ("cle", "bock", "bock-original", "tarjan", "eisner")


def row_key(run: Run, layout: str) -> object:
    """A run's row: its name (layout ``"table1"``: ``local-ce-cle``, ...) or ``(loss, decoder)``
    (layout ``"grid"``)."""
    return run.condition if layout == "table1" else (run.loss, run.decoder)


def row_order(keys: Iterable[object], layout: str) -> list[object]:
    """Rows in display order: Table 1's in the paper's order, then the rest; grid rows by loss,
    then decoder."""
    keys = list(dict.fromkeys(keys))
    if layout == "table1":
        first = [c for c in TABLE1_CONDITIONS if c in keys]
        return first + sorted(k for k in keys if k not in TABLE1_CONDITIONS)
    losses = list(LOSS_LABELS)

    def rank(key):
        loss, decoder = key
        return (
            losses.index(loss) if loss in losses else len(losses),
            str(loss),
            DECODER_ORDER.index(decoder) if decoder in DECODER_ORDER else len(DECODER_ORDER),
            str(decoder),
        )

    return sorted(keys, key=rank)


def row_label(key: object) -> str:
    """A row's label: ``Hinge (Bock)``, ``CRF + tarjan``."""
    if isinstance(key, tuple):
        loss, decoder = key
        return f"{LOSS_LABELS.get(loss, loss)} + {decoder}"
    return TABLE1_CONDITIONS.get(key, str(key))
