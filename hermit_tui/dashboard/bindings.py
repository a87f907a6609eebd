"""Key bindings, as data: one list per screen. The Footer shows them, the help screen (?) lists them all.

A binding with ``show=False`` is in the help screen only (the footer must fit 80 columns); every action also has a
command-palette entry (``dashboard/palette.py``)."""

from __future__ import annotations

from textual.binding import Binding, BindingType

APP: list[BindingType] = [
    Binding("question_mark", "help", "Help", key_display="?"),
    Binding("q", "quit", "Quit"),
    Binding("ctrl+c", "quit", "Quit (asks first during a launch)", show=False, priority=True),
    Binding("ctrl+p", "command_palette", "Commands", show=False),
    Binding("exclamation_mark", "toggle_banners", "Warnings: expand or collapse", key_display="!", show=False),
    Binding("ctrl+t", "toggle_dark", "Theme", show=False),
]

TEXT_FIELD: list[BindingType] = [
    Binding("escape", "leave", "Leave the field (the screen's keys work again)", show=False)
]


def goto(key: str, name: str, title: str) -> Binding:
    """A key that shows another screen, the same key on every screen that has it (t Tasks, e Errors, v Compare,
    h History, p Review), in the help screen only."""
    return Binding(key, f"app.goto('{name}')", title, show=False)


PICKER: list[BindingType] = [
    Binding("d", "open_demo", "Demo"),
    Binding("r", "focus_recent", "Recent", show=False),
    Binding("f", "focus_files", "Files", show=False),
    Binding("escape", "back", "Back"),
]

SETUP: list[BindingType] = [
    Binding("l", "launch", "Launch"),
    Binding("r", "resume", "Resume", show=False),
    Binding("a", "add_selector", "Add…"),
    Binding("s", "settings", "Settings", show=False),
    Binding("c", "checks", "Protocol checks (scroll)", show=False),
    Binding("h", "history", "History"),
    Binding("t", "tasks", "Tasks"),
    Binding("v", "compare", "Compare"),
    Binding("p", "review", "Review"),
    Binding("o", "open_config", "Open another config", show=False),
    goto("e", "errors", "Errors"),
]

RUN: list[BindingType] = [
    Binding("c", "cancel", "Cancel"),
    Binding("t", "tasks", "Tasks"),
    Binding("e", "errors", "Errors"),
    Binding("v", "compare", "Compare"),
    Binding("p", "review", "Review"),
    Binding("s", "setup", "Setup"),
    Binding("h", "history", "History", show=False),
    Binding("enter", "drill", "Drill down", show=False),
]

#: Triage (dashboard/screens/annotate.py), on the drill-down, the per-task table and the errors screen: the keys act on
# the
#: chosen attempt (the focused card, the table's target attempt, the highlighted error).
TRIAGE: list[BindingType] = [
    Binding("1", "label(1)", "Label", key_display="1-9", show=False),  # the screens say so on a line of their own
    *[Binding(str(n), f"label({n})", f"Toggle label {n}", show=False) for n in range(2, 10)],
    Binding("0", "clear_annotation", "Clear the attempt's labels, note and corrected score", show=False),
    Binding("n", "note", "Note and corrected score on the chosen attempt…", show=False),
    Binding("u", "next_unlabelled", "Next unlabelled failure (regressions, errors, flaky tasks, the rest)", show=False),
    Binding("L", "label_set", "Edit the label set (keys 1-9)…", key_display="shift+l", show=False),
    Binding("U", "undo_bulk", "Undo the last bulk label", key_display="shift+u", show=False),
]
#: Bulk triage, on the screens that show sets of attempts (the errors screen's group, the per-task table's rows).
TRIAGE_BULK: list[BindingType] = [
    Binding(
        "A", "bulk_label", "Label every failure of the group or of the rows shown…", key_display="shift+a", show=False
    )
]
#: In the help screen once, as "1-9".
HELP_HIDDEN = {f"label({n})" for n in range(2, 10)}
TRIAGE_HELP = (
    '1-9 toggle a label of the run\'s set (several per attempt; 1 is the built-in "judge disagrees")'
    " on the chosen attempt"
)

TASKS: list[BindingType] = [
    Binding("slash", "search", "Search", key_display="/", show=False),
    Binding(
        "f", "next_filter", "Filter: next (all, errors, regressions, improvements, flaky, unknown cost)", show=False
    ),
    Binding("F", "label_filter", "Filter by label…", key_display="shift+f", show=False),
    Binding("a", "next_attempt", "Target: the row's next attempt (what 1-9, 0 and n act on)", show=False),
    *TRIAGE,
    *TRIAGE_BULK,
    Binding("s", "sort", "Sort"),
    Binding("S", "sort_pick", "Sort by a column…", key_display="shift+s", show=False),
    Binding("r", "reverse", "Reverse", show=False),
    Binding("b", "baseline", "Baseline"),
    Binding("i", "details", "Selectors: one line each, or all on one line", show=False),
    Binding("o", "toggle_outputs", "Outputs"),
    Binding("left_square_bracket", "prev_repeat", "Outputs: previous repeat", key_display="[", show=False),
    Binding("right_square_bracket", "next_repeat", "Outputs: next repeat", key_display="]", show=False),
    Binding("e", "errors", "Errors", show=False),
    Binding("v", "compare", "Compare", show=False),
    Binding("h", "history", "History", show=False),
    Binding("plus", "history", "Add evaluations to the view (History)", key_display="+", show=False),
    Binding("x", "take_out", "Take a selector out of the view…", show=False),
    Binding("c", "clear_slice", "Show every slice again (after Slices' enter)", show=False),
    Binding("p", "review", "Review"),
    Binding("V", "versions", "The row's task through every version", key_display="shift+v", show=False),
    Binding("escape", "back", "Back"),
]

ATTEMPT: list[BindingType] = [
    Binding("left_square_bracket", "prev_tab", "Prev tab", key_display="[", show=False),
    Binding("right_square_bracket", "next_tab", "Next tab", key_display="]"),
    Binding("left_curly_bracket", "prev_pair", "Prev pair", key_display="{", show=False),
    Binding("right_curly_bracket", "next_pair", "Next pair", key_display="}"),
    Binding("l", "open_log", "Log"),
    Binding("x", "transcript", "Transcript"),
    Binding("w", "align", "Aligned trajectories of the side-by-side pair", show=False),
    Binding("W", "changes", "Changes: what the side-by-side pair's adapter changed", key_display="shift+w", show=False),
    Binding("V", "versions", "This task through every version", key_display="shift+v", show=False),
    *TRIAGE,
    goto("t", "tasks", "Tasks"),
    goto("e", "errors", "Errors"),
    goto("v", "compare", "Compare"),
    goto("h", "history", "History"),
    goto("p", "review", "Review"),
    Binding("escape", "back", "Back"),
]

#: The drill-down's Transcript tab (active while the focus is inside it), and one of its messages.
TRANSCRIPT: list[BindingType] = [
    Binding("slash", "search", "Search", key_display="/"),
    Binding("n", "next_match", "Next match"),
    Binding("N", "prev_match", "Prev match", key_display="shift+n"),
    Binding("z", "fold_all", "Fold all"),
]
TRANSCRIPT_TURN: list[BindingType] = [Binding("enter", "toggle_fold", "Fold/unfold")]

ERRORS: list[BindingType] = [
    Binding("enter", "jump", "Jump to attempt"),
    Binding("R", "rerun_failed", "Re-run failed", key_display="shift+r"),
    *TRIAGE,
    *TRIAGE_BULK,
    goto("t", "tasks", "Tasks"),
    goto("v", "compare", "Compare"),
    goto("h", "history", "History"),
    goto("p", "review", "Review"),
    Binding("escape", "back", "Back"),
]

HISTORY: list[BindingType] = [
    Binding("space", "toggle_pick", "Select"),
    Binding("enter", "open_selected", "Add to view"),
    Binding("x", "take_out", "Take out of view"),
    Binding("slash", "open_folder", "Open folder…", key_display="/", show=False),
    goto("t", "tasks", "Tasks"),
    goto("e", "errors", "Errors"),
    goto("v", "compare", "Compare"),
    goto("p", "review", "Review"),
    Binding("escape", "back", "Back"),
]

COMPARE: list[BindingType] = [
    Binding("s", "swap", "Swap a/b"),
    Binding("left_square_bracket", "prev_tab", "Prev tab", key_display="[", show=False),
    Binding("right_square_bracket", "next_tab", "Next tab", key_display="]"),
    Binding("p", "review", "Review"),
    Binding("h", "history", "History", show=False),
    Binding("u", "next_unlabelled", "Next unlabelled failure (drill-down)", show=False),
    Binding("w", "why", "Why"),
    Binding("g", "slices", "Slices"),
    goto("t", "tasks", "Tasks"),
    goto("e", "errors", "Errors"),
    Binding("escape", "back", "Back"),
]

#: Where it helps and hurts (dashboard/screens/slices.py): the pair per slice of the test tasks.
SLICES: list[BindingType] = [
    Binding("enter", "open_slice", "Its tasks"),
    Binding("f", "pick_field", "Slice by…"),
    Binding("f5", "refresh", "Refresh", show=False),
    goto("t", "tasks", "Tasks"),
    goto("e", "errors", "Errors"),
    Binding("escape", "back", "Back"),
]

#: Why it changed (dashboard/screens/why/): the adapter's diff beside the flips, and aligned trajectories.
CHANGES: list[BindingType] = [
    Binding("enter", "align", "Align task"),
    Binding("tab", "switch", "Tasks/diff", show=False),
    Binding("f5", "refresh", "Refresh", show=False),
    Binding("escape", "back", "Back"),
]
ALIGNED: list[BindingType] = [
    Binding("d", "first_divergence", "Divergence"),
    Binding("n", "next_difference", "Next diff"),
    Binding("p", "prev_difference", "Prev diff", show=False),
    Binding("slash", "search", "Search", key_display="/"),
    Binding("enter", "unfold", "Unfold", show=False),
    Binding("left_square_bracket", "prev_repeat", "Previous repeat", key_display="[", show=False),
    Binding("right_square_bracket", "next_repeat", "Repeat", key_display="]"),
    Binding("escape", "back", "Back"),
]

VERSIONS: list[BindingType] = [Binding("f5", "refresh", "Refresh", show=False), Binding("escape", "back", "Back")]

REVIEW: list[BindingType] = [
    Binding("p", "publish", "Publish…"),
    Binding("u", "undo", "Undo…"),
    Binding("c", "show_tab('tab-card')", "Card"),
    Binding("d", "show_tab('tab-diff')", "Diff"),
    Binding("r", "show_tab('tab-rows')", "Rows"),
    Binding("t", "toggle_taxonomy", "Failure labels line on the card (on/off)", show=False),
    Binding("f5", "refresh", "Refresh", show=False),
    Binding("escape", "back", "Back"),
]

QUIT: list[BindingType] = [
    Binding("q", "choose('quit')", "Cancel the launch and quit"),
    Binding("c", "choose('cancel')", "Cancel the launch, stay"),
    Binding("k", "choose('keep')", "Keep running"),
    Binding("escape", "choose('keep')", "Keep running", show=False),
]

STOPPING: list[BindingType] = [Binding("a", "abandon", "Abandon the attempts in flight")]

HELP: list[BindingType] = [
    Binding("escape", "dismiss", "Close"),
    Binding("question_mark", "dismiss", "Close", show=False),
]

#: For the help screen: (screen title, bindings) in the order a user meets them.
ALL = [
    ("Everywhere", APP),
    ("In a text field", TEXT_FIELD),
    ("Config picker", PICKER),
    ("Setup", SETUP),
    ("Live run", RUN),
    ("Per-task table", TASKS),
    ("Drill-down", ATTEMPT),
    ("Errors", ERRORS),
    ("History", HISTORY),
    ("Compare", COMPARE),
    ("Slices (where it helps and hurts)", SLICES),
    ("Changes (why it changed)", CHANGES),
    ("Aligned trajectories", ALIGNED),
    ("Through every version", VERSIONS),
    ("Review & publish", REVIEW),
    ("Quitting during a launch", QUIT),
    ("While a launch stops", STOPPING),
]
ALL.insert(ALL.index(("Drill-down", ATTEMPT)) + 1, ("Transcript tab", TRANSCRIPT + TRANSCRIPT_TURN))
ALL.insert(ALL.index(("Errors", ERRORS)) + 1, ("Triage (drill-down, per-task table, errors)", TRIAGE))
