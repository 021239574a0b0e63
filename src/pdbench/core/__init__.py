"""Pure game logic: no I/O, no clock, no environment, no global RNG."""
