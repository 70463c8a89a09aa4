"""The screen bar under the header: 1 Overview · 2 Steps · 3 Versions · 4 Runs (clickable)."""

from __future__ import annotations

from textual.widgets import Tab, Tabs

SCREENS = (
    ("overview", "1 Overview"),
    ("steps", "2 Steps"),
    ("versions", "3 Versions"),
    ("runs", "4 Runs"),
)


class NavTabs(Tabs):
    """Tabs that switch the app's mode; number keys do the same from anywhere."""

    can_focus = False

    def __init__(self, active: str) -> None:
        super().__init__(*(Tab(label, id=mode) for mode, label in SCREENS), active=active, id="nav")
        self._mode = active

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        mode = event.tab.id
        if mode and mode != self._mode and self.app.current_mode != mode:
            self.app.switch_mode(mode)
        # keep showing this screen's own tab: the target screen has its own bar
        if mode != self._mode:
            self.active = self._mode
