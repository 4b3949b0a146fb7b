"""The training side: ``bockparse-train`` (:mod:`.train`, the Hydra app) builds the data module
and :class:`.module.ParserModule` (steps and optimisers), runs Lightning with the schedule's
callback (:mod:`.schedule`: Stanza's schedule decides, its callback writes checkpoints and
repairs them on resume), the clock (:mod:`.clock`) and, when enabled, the per-update trace
(:mod:`.trajectory`); :mod:`.checks` refuses settings and data that cannot work before start-up.
"""
