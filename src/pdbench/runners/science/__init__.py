"""The commands that do the science: `experiment` (`pdbench run`), `tournament`, `evolve`, and
the analyses of a finished experiment, `profile` (strategy inference) and `compare`
(conditions against a baseline)."""
