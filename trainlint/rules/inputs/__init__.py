"""TL0xx: input problems (unreadable or invalid files, missing references), produced by the readers."""
