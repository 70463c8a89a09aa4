"""Which edits of an accepted bundle to drop: the line check after the gate.

The gate tests a candidate as a whole. A candidate that carries several edits (a bundle) can
be accepted on the wins of its good edits while one of its edits does harm: a decoy that rides
along. The gate's bound cannot see it, because the bundle as a whole is better than its base.

The check looks only where the harm shows, in the gate's own evidence. When the accepted
bundle lost a unit (the base answered it right, the bundle wrong), each edit is left out in
turn and the lost units are answered again. A lost unit *follows* an edit when leaving that
edit out turns the unit right and leaving out any other edit of the bundle keeps it wrong. The
edits some loss follows are then tried one at a time, each on its own losses and every unit the
bundle won: an edit is dropped only if the bundle without it (and without the edits dropped
before it) turns more of its losses right than of the won units wrong. An edit the bundle's
wins rest on is kept, losses and all: the gate already weighed them. A decoy's own questions
can be won by chance (a confused agent still answers some right), so "no won unit turns wrong"
would keep it; the net count does not.

So the check only ever removes edits, and each edit it dropped turned more of the gate's lost
units back to right, that no other edit's absence did, than it cost won units.
(app/harness/training/bundle_check.py does the answering.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def losses_following(
    reverts: Mapping[int, frozenset[str]], lost: Sequence[str]
) -> dict[int, tuple[str, ...]]:
    """Edit -> the lost units that follow it alone (in `lost` order), for each edit some lost
    unit follows; ascending by edit.

    `reverts[i]` is the set of lost units answered right with edit i left out. A unit that
    leaving out any of two or more edits turns right follows none of them: its change of answer
    follows any change of the text (a longer skill, a sampled answer), not one edit. A bundle
    of one edit has no other edit to compare with, and is never checked."""
    if len(reverts) < 2:
        return {}
    found: dict[int, list[str]] = {}
    for unit in lost:
        followers = [i for i, units in reverts.items() if unit in units]
        if len(followers) == 1:
            found.setdefault(followers[0], []).append(unit)
    return {i: tuple(found[i]) for i in sorted(found)}


def drop_decided(back: int, wrong: int, unasked: int) -> bool | None:
    """Whether to drop an edit, once it is certain. The rule: drop when, with the edit left
    out, more of its own losses (those that follow it alone) turn right, `back`, than won units
    turn wrong. A lost unit that any change of text turns right is not counted for the edit:
    under a sampled model it would drop edits by chance.

    True (drop) when `back` outnumbers the won units turned wrong so far, `wrong`, even if
    every one of the `unasked` won units still to answer turns wrong; False (keep) once `wrong`
    reaches `back`; else None (ask more). So won units are asked in chunks, no more than
    needed, and the decision is the one asking them all would give."""
    if back > wrong + unasked:
        return True
    if wrong >= back:
        return False
    return None
