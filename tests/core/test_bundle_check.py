"""core/evolution/bundle_check.py: which lost units follow one edit alone, and when the bundle
does better without it."""

from __future__ import annotations

import itertools
from collections.abc import Sequence, Set

from core.evolution.bundle_check import drop_decided, losses_following


def better_without(right: Set[str], won: Sequence[str], own_losses: Sequence[str]) -> bool:
    """The rule `drop_decided` decides, with every answer in: with the edit left out, more of
    its own losses turn right (`right` holds the units answered right) than won units wrong."""
    return sum(u in right for u in own_losses) > sum(u not in right for u in won)


def test_a_loss_that_one_edit_alone_reverts_follows_that_edit() -> None:
    reverts = {0: frozenset(), 1: frozenset({"u1"}), 2: frozenset()}
    assert losses_following(reverts, ["u1"]) == {1: ("u1",)}


def test_a_loss_that_any_change_reverts_follows_no_edit() -> None:
    # leaving out either of two edits turns it right: it follows the text, not an edit
    reverts = {0: frozenset({"u1"}), 1: frozenset({"u1"}), 2: frozenset()}
    assert losses_following(reverts, ["u1"]) == {}


def test_a_loss_no_left_out_edit_reverts_follows_no_edit() -> None:
    assert losses_following({0: frozenset(), 1: frozenset()}, ["u1"]) == {}


def test_each_lost_unit_is_judged_on_its_own() -> None:
    reverts = {0: frozenset({"u1", "u3", "u4"}), 1: frozenset({"u2", "u3"}), 2: frozenset()}
    # u1 and u4 follow edit 0 alone, u2 edit 1 alone, u3 either: it counts for neither
    assert losses_following(reverts, ["u4", "u1", "u2", "u3"]) == {0: ("u4", "u1"), 1: ("u2",)}
    assert losses_following(reverts, ["u3"]) == {}


def test_a_bundle_of_one_edit_is_never_checked() -> None:
    assert losses_following({0: frozenset({"u1"})}, ["u1"]) == {}
    assert losses_following({}, ["u1"]) == {}


def test_a_reverted_unit_that_was_not_lost_follows_no_edit() -> None:
    assert losses_following({0: frozenset({"won"}), 1: frozenset()}, ["u1"]) == {}


def test_exhaustively_a_loss_follows_an_edit_iff_only_that_edit_reverts_it() -> None:
    """Every assignment of 3 lost units to the reverting subsets of 3 edits."""
    lost = ["a", "b", "c"]
    subsets = [frozenset(c) for r in range(4) for c in itertools.combinations(range(3), r)]
    for followers in itertools.product(subsets, repeat=len(lost)):
        reverts = {
            i: frozenset(u for u, f in zip(lost, followers, strict=True) if i in f)
            for i in range(3)
        }
        expected: dict[int, list[str]] = {}
        for unit, f in zip(lost, followers, strict=True):
            if len(f) == 1:
                expected.setdefault(next(iter(f)), []).append(unit)
        assert losses_following(reverts, lost) == {i: tuple(expected[i]) for i in sorted(expected)}


def test_the_rule_drops_an_edit_only_if_its_losses_outnumber_the_wins_lost_without_it() -> None:
    won, own = ["w1", "w2"], ["l1", "l2"]
    assert better_without({"w1", "l1", "l2"}, won, own)  # two losses back, one win lost
    assert not better_without({"w1", "l1"}, won, own)  # one for one: a tie keeps it
    # a decoy's own question won by chance does not keep it
    assert better_without({"w2", "l1", "l2"}, won, own)
    assert not better_without({"w1", "w2"}, won, own)
    assert better_without({"l1"}, [], own)
    assert not better_without({"w1", "w2", "l9"}, won, own)  # only its own losses count


def test_asking_won_units_in_chunks_reaches_the_same_decision_as_asking_them_all() -> None:
    """Every pattern of up to 7 won units turning wrong, every count of losses turned back,
    every chunk size: stopping at the first certain decision agrees with `better_without`."""
    for n in range(8):
        won = [f"w{i}" for i in range(n)]
        for pattern in itertools.product((True, False), repeat=n):  # True: still right
            still_right = {u for u, ok in zip(won, pattern, strict=True) if ok}
            for back in range(5):
                own = [f"l{i}" for i in range(back)]
                full = better_without({*still_right, *own}, won, own)
                for chunk in (1, 2, 3, 8):
                    wrong, asked, decision = 0, 0, drop_decided(back, 0, n)
                    while decision is None:
                        part = won[asked : asked + chunk]
                        asked += len(part)
                        wrong += sum(u not in still_right for u in part)
                        decision = drop_decided(back, wrong, n - asked)
                    assert decision is full, (pattern, back, chunk)
