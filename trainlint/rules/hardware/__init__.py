"""TL5xx: cross-file agreement, hardware targets, learning-rate scaling and memory."""
