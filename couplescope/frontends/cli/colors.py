"""ANSI colours of the headless output (used only on a terminal, without NO_COLOR)."""

GREEN, RED, YELLOW, DIM, RESET = "\033[32m", "\033[31m", "\033[33m", "\033[2m", "\033[0m"
