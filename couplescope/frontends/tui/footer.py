"""The key footer, rebuilt only when the keys it shows change.

Textual's Footer recomposes, mounting a widget per key and laying out the whole screen,
every time the screen's bindings are updated: on every focus change, even when the keys
on show stay the same (moving between the form's fields, say). That made each key press
that moved the focus cost 30-70 ms on this 2-core machine. This footer keeps what it shows
the same way, clickable keys included, and skips the rebuild when the keys, their labels
and their enabled state are what it already shows.
"""

from __future__ import annotations

from textual.widgets import Footer


class SteadyFooter(Footer):
    """Footer that recomposes only when the keys it would show differ."""

    _shown: tuple | None = None

    def _what_it_shows(self, screen) -> tuple:
        """Everything Footer.compose reads from the bindings, as a comparable value."""
        app = self.app
        return tuple(
            (binding.key, app.get_key_display(binding), binding.description, binding.action,
             enabled, tooltip, binding.group, binding.show)
            for (_node, binding, enabled, tooltip) in screen.active_bindings.values()
            if binding.show or binding.action == "command_palette")

    def bindings_changed(self, screen) -> None:
        will_rebuild = screen.app.app_focus and self.is_attached and screen is self.screen
        if not will_rebuild:   # Footer does nothing then either (but note the bindings ready)
            super().bindings_changed(screen)
            return
        shown = self._what_it_shows(screen)
        if shown == self._shown and self._bindings_ready:
            return
        self._shown = shown
        super().bindings_changed(screen)
