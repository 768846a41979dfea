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

The app's own keys (r, s, e, c, the views' letters: priority bindings) act when the app reads
them, but the keys read before them were only handed on, to the focused widget's queue: `3 0 0
r` in one read ran the form's request before the digits reached the field, `BSpace BSpace r` ran
the old size (and the run's view switch lost the backspaces), `Up e` in History exported the
run highlighted before the Up. Such a key waits, and the keys read after it, till what the keys
before it set going has settled: the focused widget's queue and its ancestors' (the form, the
view, the screen), where the messages those keys post (Input.Changed, RowHighlighted) bubble,
each empty behind a callback queued on it. A key that moves the focus (Tab) waits so too,
when keys were handed on before it: `4 0 BSpace Tab 8 8` moved the focus before the BSpace
acted, and the BSpace (Input runs its binding once the key has bubbled up, on the focus
then) deleted an 8 in the next field. The keys read after a held key wait behind it, in
the order read (they were put back before it: `s t r e a m` into the name field gave
`sramet`); a letter a field that takes words types is no app key there, and never waits.

`escape` and a letter in one read (`tmux send-keys Escape r`, a fast typist, ssh) reach
Textual as one key, alt+r: a terminal sends alt+r as those very bytes (ESC r), and Textual
waits ESCAPE_DELAY for more only when the ESC comes alone. The app binds no alt key, so
alt+letter is taken as what the bytes most often mean: escape, then the letter (in a field
that takes words, alt+r typed `r` into it, and on the compare screen alt+t did nothing). From a
terminal the app's parser already reads ESC and any key apart (escape_apart.py: ESC TAB was
shift+tab); this keeps alt+letter from another driver apart too.
"""

from __future__ import annotations

from textual import events
from textual.keys import key_to_character
from textual.widgets._select import SelectOverlay   # (Select's open list: no public name)

#: the actions that move the focus, or the screen that has it (their namespace
#: and parameters aside): tab and shift+tab, escape out of a field, a list opened (its open
#: list takes the focus), a screen closed
FOCUS_MOVES = frozenset({"focus_next", "focus_previous", "leave_field", "leave", "show_overlay",
                         "pop_screen"})


#: the app's keys (priority bindings) that show another view or screen, the focus with it
SHOWS_ELSEWHERE = frozenset({"show_view", "compare", "help"})

#: the rounds a key of the app's waits at most for what the keys before it set going (a key
#: bubbling up a dozen widgets and the message it posts bubbling after it take fewer)
MAX_ROUNDS = 32


#: the events a focus move sends (to the widget, then up its ancestors): they set what is
#: shown, the tab above all (a pane's DescendantFocus posts TabPane.Focused, on which
#: TabbedContent shows that pane)
FOCUS_EVENTS = (events.Focus, events.Blur, events.DescendantFocus, events.DescendantBlur)


def keys_at_work(node) -> bool:
    """Whether the node's queue holds a key, a focus move's event (FOCUS_EVENTS) or a message a
    widget posted (they bubble; the timers', callbacks' and refreshes' do not, or are
    Textual's own: messages.Update). The focus's events count: an Enter picking in an open
    list puts the focus back on its field, and a `t` read with it, handed on before the
    field's Focus had reached the Pick pane, showed Telemetry, which the pane's TabPane.Focused
    then replaced with Pick (`Down Enter t` in one read)."""
    return any(isinstance(message, (events.Key, *FOCUS_EVENTS))
               or (message is not None and message.bubble and not isinstance(message, events.Event)
                   and not type(message).__module__.startswith("textual.messages"))
               for message in list(node._message_queue.values))   # (textual._queue.Queue's deque)


def escape_then_key(key: events.Key) -> tuple[events.Key, events.Key] | None:
    """alt+r (ESC r in one read) as escape, then r; alt+shift+r as escape, then R; None for
    any other key (Textual names alt+ a single character only so)."""
    name = key.key.removeprefix("alt+")
    if name == key.key or not key.character or len(key.character) != 1:
        return None
    if name.startswith("shift+") and len(name) == len("shift+") + 1:
        name = name.removeprefix("shift+").upper()
    return events.Key("escape", "\x1b"), events.Key(name, key.character)


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

    #: the app's own key that waited for the keys before it to settle, handed on now
    _settled: events.Key | None = None
    #: whether a key was handed to the focused widget since the keys last settled
    _handed_on: bool = False
    #: whether that key was an Enter picking in an open list: the keys after it wait till
    #: the pick has landed and the list closed (`Enter t` in one read: the t searched the
    #: open list, which then picked the item it searched to, and t never showed Telemetry)
    _picking: bool = False
    #: the screen a key shows comes after a refresh (`c`: compare_key.py): the keys read
    #: after it wait till it has come (shown_later)
    _showing_later: bool = False

    async def on_event(self, event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            apart = escape_then_key(event)
            if apart is not None and not self._binds(event.key):
                for key in apart:
                    await self.on_event(key)
                return
            if self._held is not None:
                self._held.append(event)
                return
            if event is not self._settled and self._handed_on and self._waits_its_turn(event):
                self._held = [event]
                self._settle()
                return
            self._settled = None
            if await self._moved_focus(event):
                self._held = []
                self.call_later(self._hand_on_held)   # queued behind the focus move's own callbacks
                return
            self._handed_on = True
            self._picking = self._picking or (event.key == "enter" and isinstance(self.focused, SelectOverlay))
            if self._acts_at_once(event.key) and self._shows_elsewhere(event.key):
                await super().on_event(event)
                self._held = []                      # the keys after it: where the view puts the focus
                if not self._showing_later:
                    self.call_later(self._hand_on_held)
                return
        await super().on_event(event)

    def show_later(self) -> None:
        """The key acting shows its screen after the next refresh (`c` says so on the top line
        first): the keys read after it wait till shown_later."""
        self._showing_later = True

    def shown_later(self) -> None:
        """The screen show_later announced is there (or will not come): the keys held since
        go where it put the focus."""
        if self._showing_later:
            self._showing_later = False
            if self._held is not None:
                self.call_later(self._hand_on_held)

    def key_waits(self, key: events.Key) -> bool:
        """Whether the key is held, not yet acted (the top line keeps the answer it would
        take away till it acts: `r e` during a run put the run's progress between r's and
        e's answers)."""
        return self._held is not None and any(held is key for held in self._held)

    def _shows_elsewhere(self, key: str) -> bool:
        """Whether the key's binding is an app key that shows another view or screen, whose
        focus is set from a callback: `p Tab 9` from History lost the Tab (it moved the
        focus History had, before Pick's was put back) and the 9 replaced the iterations'
        value; `h space` never marked the run."""
        active = self.screen.active_bindings.get(key)
        return (active is not None and active.binding.priority and active.enabled
                and action_name(active.binding.action) in SHOWS_ELSEWHERE)

    def _reached(self):
        """The nodes a key would reach: the focused widget and its ancestors, else the
        screen and the app."""
        return self.focused.ancestors_with_self if self.focused is not None else (self.screen, self)

    def _binds(self, key: str) -> bool:
        """Whether a node the key would reach binds it."""
        nodes = self._reached()
        return any(node._bindings.key_to_bindings.get(key) for node in nodes)

    def _acts_at_once(self, key: str) -> bool:
        """Whether a node the key would reach binds it with priority (the app's r, s, e ...):
        such a binding acts when the app reads the key, before the keys read before it. Not
        where a node below it takes the key as text (a field that takes words types the
        app's letters: Textual drops the bindings above it, Screen._binding_chain)."""
        character = key_to_character(key)
        for node in self._reached():
            if any(binding.priority for binding in node._bindings.key_to_bindings.get(key, ())):
                return True
            if node.check_consume_key(key, character):
                return False
        return False

    def _waits_its_turn(self, key: events.Key) -> bool:
        """Whether the key must wait till the keys handed on before it have landed: an app
        key (it acts when read), one that moves the focus (a backspace read before a Tab
        acted on the field the Tab moved to: `4 0 BSpace Tab 8 8` left 40 and 8), or any key
        after an Enter that picks in an open list (_picking)."""
        if self._acts_at_once(key.key) or self._picking:
            return True
        focused = self.focused
        return (self._may_move_focus(key.key)
                and not (focused is not None and focused.check_consume_key(key.key, key.character)))

    def _settle(self, rounds: int = 0) -> None:
        """A callback queued on the focused widget and each of its ancestors below the app;
        once all have run, one queued on the app (a key bubbles up to it, where its
        non-priority binding runs: the table's up), then again while any of theirs holds
        what keys set going (a key, a widget's message: Input.Changed, RowHighlighted), else
        the held keys are handed on. Not till the queues are empty: the views' timers keep
        them busy (a livelock on a loaded machine), and at most MAX_ROUNDS rounds. The
        app's own queue is only passed through: the run's events keep it busy."""
        nodes = [node for node in self._reached() if node is not self]
        left = {id(node) for node in nodes
                if node.call_later(lambda node=node: self.call_later(settled, node))}

        def settled(node) -> None:
            left.discard(id(node))
            if not left:
                self.call_later(passed_the_app)

        async def passed_the_app() -> None:
            if rounds < MAX_ROUNDS and any(map(keys_at_work, nodes)):
                self._settle(rounds + 1)
            else:
                self._handed_on = self._picking = False
                self._settled = self._held[0] if self._held else None
                await self._hand_on_held()

        if not left:
            self.call_later(passed_the_app)

    async def _hand_on_held(self) -> None:
        """The keys held while the focus moved, in the order read, to where it is now (one of
        them moving it again holds the rest again)."""
        held, self._held = self._held or [], None
        while held:
            await self.on_event(held.pop(0))
            if self._held is not None:
                self._held.extend(held)           # behind the key held again: the order read
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
        nodes = self._reached()
        return any(action_name(binding.action) in FOCUS_MOVES
                   for node in nodes for binding in node._bindings.key_to_bindings.get(key, ()))
