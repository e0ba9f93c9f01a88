"""This module owns the classic consumer-group state machine: states, events, and the one table
of legal transitions between them.

    Empty --join--> PreparingRebalance --all joined--> CompletingRebalance --leader sync--> Stable
      ^                 |      ^                              |                            |
      +--nobody joined--+      +-------- join / leave / timeout (rebalance) ---------------+
    any --delete/expire--> Dead

The coordinator never assigns `group.state` directly: it fires an `Event` and `next_state`
answers from `TRANSITIONS`, raising `IllegalTransition` for anything the table does not list.
"""

from __future__ import annotations

import enum


class GroupState(enum.Enum):
    """Values are the names Kafka reports (ListGroups, DescribeGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class Event(enum.Enum):
    REBALANCE = "rebalance"  # a member joined, left, changed protocols or timed out
    JOIN_COMPLETE = "join complete"  # every member rejoined (or the wait timed out); some remain
    JOIN_COMPLETE_EMPTY = "join complete, no members"  # the rebalance ended with nobody in it
    ASSIGNMENT_SYNCED = "assignment synced"  # the leader's SyncGroup carried the assignment
    LOADED_ACTIVE = "loaded with members"  # replayed from __consumer_offsets with a generation
    DELETED = "deleted"  # DeleteGroups, offsets expired, or the coordinator unloads it


S, Ev = GroupState, Event  # (E is the error-code alias everywhere else)

TRANSITIONS: dict[tuple[GroupState, Event], GroupState] = {
    (S.EMPTY, Ev.REBALANCE): S.PREPARING_REBALANCE,
    (S.STABLE, Ev.REBALANCE): S.PREPARING_REBALANCE,
    (S.COMPLETING_REBALANCE, Ev.REBALANCE): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, Ev.JOIN_COMPLETE): S.COMPLETING_REBALANCE,
    (S.PREPARING_REBALANCE, Ev.JOIN_COMPLETE_EMPTY): S.EMPTY,
    (S.COMPLETING_REBALANCE, Ev.ASSIGNMENT_SYNCED): S.STABLE,
    (S.EMPTY, Ev.LOADED_ACTIVE): S.STABLE,
    **{(s, Ev.DELETED): S.DEAD for s in GroupState},
}


class IllegalTransition(RuntimeError):
    def __init__(self, state: GroupState, event: Event) -> None:
        super().__init__(f"no transition from {state.value} on {event.value}")
        self.state = state
        self.event = event


def next_state(state: GroupState, event: Event) -> GroupState:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalTransition(state, event) from None
