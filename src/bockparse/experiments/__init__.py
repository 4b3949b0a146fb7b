"""Experiments over trained runs: Table 1 and its statistics, the stop-time analysis, decoder
substitution, punctuation re-evaluation, the root-constraint study, plots, and publishing.

The work lives here (:mod:`.table`, :mod:`.stopping`, :mod:`.substitute`, :mod:`.reeval`,
:mod:`.rootstudy`, :mod:`.publish`); the console scripts over it (``bockparse-table``,
``-stopping``, ``-substitute``, ``-reeval``, ``-rootstudy``, ``-publish``) are in
:mod:`bockparse.cli.experiments`.
"""
