"""Keys typed after one that moves the focus go where the focus moved to.

Textual hands a key to the widget that has the focus when the app reads it, and runs a
non-priority binding (tab's focus_next, the Screen's) only once the key has bubbled from
that widget up to the app. A terminal read holding `Tab 1 2` (a fast typist, ssh, tmux
send-keys) was handed on whole before the Tab acted: the focus moved from `model` to
`size`, but the 1 and the 2 had gone to `model`, which had no use for them (textual#6605's
family, as fields.py's bound keys and the backends list's space). A key whose binding
moves the focus acts here, when the app reads it, and the keys read after it wait till the
focus has moved (Widget.focus sets it from a callback, queued behind them), so they are
handed to the widget it moved the focus to.
"""

from __future__ import annotations

from textual import events

#: the actions that move the focus, or the screen that has it (their namespace
#: and parameters aside): tab and shift+tab, escape out of a field, a list opened (its open
#: list takes the focus), a screen closed
FOCUS_MOVES = frozenset({"focus_next", "focus_previous", "leave_field", "leave", "show_overlay",
                         "pop_screen"})


def action_name(action: str) -> str:
    """`app.focus_next` -> `focus_next`; `scroll_plot('end')` -> `scroll_plot`."""
    return action.split("(", 1)[0].rsplit(".", 1)[-1]


class KeysInOrder:
    """A part of the app (CoupleScopeApp inherits it): a key whose binding moves the focus
    acts when the app reads it, and the keys read after it wait till the focus has moved
    (see the module docstring)."""

    #: the keys read since a focus move acted, till it lands (Widget.focus sets the focus
    #: from a callback queued behind them); None: none waits
    _held: list[events.Key] | None = None

    async def on_event(self, event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            if self._held is not None:
                self._held.append(event)
                return
            if await self._moved_focus(event):
                self._held = []
                self.call_later(self._hand_on_held)   # queued behind the focus move's own callbacks
                return
        await super().on_event(event)

    async def _hand_on_held(self) -> None:
        """The keys held while the focus moved, in the order read, to where it is now (one of
        them moving it again holds the rest again)."""
        held, self._held = self._held or [], None
        while held:
            await self.on_event(held.pop(0))
            if self._held is not None:
                self._held[:0] = held
                return

    async def _moved_focus(self, key: events.Key) -> bool:
        """Run the key's binding here if it is one that moves the focus and the key would
        come to it (no priority binding before it, the focused widget does not take the
        key itself); whether it did."""
        focused = self.focused
        if focused is not None and focused.check_consume_key(key.key, key.character):
            return False
        if not self._may_move_focus(key.key):       # (most keys: without the 1-2 ms of active_bindings)
            return False
        active = self.screen.active_bindings.get(key.key)
        if (active is None or active.binding.priority or not active.enabled
                or action_name(active.binding.action) not in FOCUS_MOVES):
            return False
        self.app_focus = True                     # (as App.on_event notes for a key)
        if focused is not None:
            self.screen._clear_tooltip()
        return await self.run_action(active.binding.action, active.node)

    def _may_move_focus(self, key: str) -> bool:
        """Whether a node the key would reach binds it to a focus move, enabled or not."""
        nodes = self.focused.ancestors_with_self if self.focused is not None else (self.screen, self)
        return any(action_name(binding.action) in FOCUS_MOVES
                   for node in nodes for binding in node._bindings.key_to_bindings.get(key, ()))
