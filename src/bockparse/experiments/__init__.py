"""Experiments over trained runs: Table 1, decoder substitution, punctuation re-evaluation, the
root-constraint study and plots.

Entry points: ``bockparse-table`` (:mod:`.table`), ``bockparse-substitute`` (:mod:`.substitute`),
``bockparse-reeval`` (:mod:`.reeval`), ``bockparse-rootstudy`` (:mod:`.rootstudy`).
"""
