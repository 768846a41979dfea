"""Named presets (TOML), installed as package data; see docs/presets.md."""
