"""`?`: the keys, on one page."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# skill-trainer TUI

Browse a workspace while `train` writes to it: the screens refresh every few seconds and
never write anything.

| Key | Does |
|:--|:--|
| `1` `2` `3` `4` | Overview · Steps · Versions · Runs (or click the tabs) |
| `/` | focus the first filter of the screen (Esc: back to the table) |
| `Enter` | open the selected row (step detail, version diff, run's predictions, trajectory) |
| `Esc` | back (close the opened screen, or leave a filter) |
| `↑` `↓` `PageUp` `PageDown` | move; past the first / last row loads the previous / next page |
| `[` `]` | previous / next page |
| `ctrl+Home` `ctrl+End` | first / last page |
| `s` / `r` | Steps: sort by the next column / reverse the order (or click a header) |
| `k` | Versions: switch skills / prompts |
| `a` / `b` | Versions: diff from / to the highlighted version |
| `n` / `p` | Trajectory: next / previous prediction of the page |
| `ctrl+r` | reload now |
| `ctrl+p` | command palette |
| `?` | this help |
| `q` | quit |

**Overview**: current and best versions, progress from `checkpoint.json`, run status
(running only while `train.lock` names a live process), accuracy per epoch, step decisions,
tokens and cost by role. **Steps**: one row per step report; the highlighted one shows its gate
evidence (units in ladder order with running e-values) and the diff it proposed.
**Versions**: both version chains with provenance; a diff of any two. **Runs**: runs, newest
first; Enter lists a run's predictions (filter by verdict, task type, stop reason, text);
Enter again shows the trajectory turn by turn.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
        Binding("q", "dismiss", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)
