"""Peak memory and time of predicting one very long sentence, by length.

Each length runs in a fresh process (peak RSS is per process): the sentence is the sample's
words repeated to the length, tags kept, parsed with the model's decoder.

    python benchmarks/long_sentences.py MODEL [--lengths 500 2000 5000] [--decoder bock]
        [--precision 32-true]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "data/ud-english-ewt-sample/en_ewt-ud-dev.conllu"


def measure(model: str, length: int, decoder: str | None, precision: str | None) -> dict:
    """Parse one ``length``-word sentence in this process; peak RSS and seconds."""
    import torch

    from bockparse.data import read_conllu
    from bockparse.parser import Parser

    torch.set_num_threads(1)
    parser = Parser.load(model, precision=precision)
    words = [w for s in read_conllu(SAMPLE, single_root=True, on_malformed="error") for w in
             zip(s.forms, s.upos, s.xpos, s.feats, strict=True)][:length]  # fmt: skip
    forms, upos, xpos, feats = (list(c) for c in zip(*words, strict=True))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    [parsed] = parser.predict([{"forms": forms, "upos": upos, "xpos": xpos, "feats": feats}],
                              decoder, progress=False)  # fmt: skip
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert parsed.heads.count(0) == 1
    return {"words": length, "seconds": round(seconds, 2), "peak_rss_mb": round(peak / 1024),
            "loaded_rss_mb": round(base / 1024)}  # fmt: skip


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("model")
    args.add_argument("--lengths", type=int, nargs="+", default=[500, 2000, 5000])
    args.add_argument("--decoder", default=None)
    args.add_argument("--precision", default=None, help="as Parser.load's; default: the run's")
    args.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    a = args.parse_args()
    if a.one is not None:
        print(json.dumps(measure(a.model, a.one, a.decoder, a.precision)))
        return
    print("| words | seconds | peak RSS MB | RSS after loading MB |\n|---:|---:|---:|---:|")
    for length in a.lengths:
        cmd = [sys.executable, __file__, a.model, "--one", str(length)]
        if a.decoder:
            cmd += ["--decoder", a.decoder]
        if a.precision:
            cmd += ["--precision", a.precision]
        r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        print(
            f"| {r['words']:,} | {r['seconds']} | {r['peak_rss_mb']:,} | {r['loaded_rss_mb']:,} |"
        )


if __name__ == "__main__":
    main()
