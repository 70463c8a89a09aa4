"""A one-line footer of the active keys (clickable), cheap to refresh.

Textual's Footer rebuilds one widget per key on every focus change, and restyles each; on a
two-core machine that cost most of a screen switch. This renders the same information as one
line of text, with each key a click target for its action.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.app import App
from textual.screen import Screen
from textual.widgets import Static


class KeyBar(Static):
    def __init__(self) -> None:
        super().__init__("", id="keys", markup=False)
        self._last: tuple[object, ...] | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.call_after_refresh(self.refresh_keys)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[Any]) -> None:
        if self.is_attached and screen is self.screen:
            self.refresh_keys()

    def refresh_keys(self) -> None:
        shown: dict[str, tuple[str, str, str, bool]] = {}
        for node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in shown:
                continue
            namespace = (
                "app"
                if isinstance(node, App)
                else "screen"
                if isinstance(node, Screen)
                else "focused"
            )
            shown[binding.action] = (
                self.app.get_key_display(binding),
                binding.description,
                f"{namespace}.{binding.action}",
                enabled,
            )
        key = tuple(shown.values())
        if key == self._last:
            return
        self._last = key
        text = Text(no_wrap=True, overflow="ellipsis")
        for keys, description, action, enabled in shown.values():
            click = Style.from_meta({"@click": action})
            text.append(f" {keys} ", style=Style(bold=True, dim=not enabled) + click)
            text.append(f"{description} ", style=Style(dim=not enabled) + click)
        self.update(text)
