"""Tables for people: rich on a terminal, fixed-width text when piped."""

import io
import subprocess
import sys

from crftag.scoring.tables import fixed_width, is_terminal, print_table


class Terminal(io.StringIO):
    def isatty(self):
        return True


HEADERS = ["type", "f1", "support"]
ROWS = [["PER", "91.20", "1617"], ["[0.5, 0.6)", "-", "0"]]


def test_piped_tables_are_fixed_width_text_under_their_title():
    stream = io.StringIO()
    print_table("scores", HEADERS, ROWS, stream)
    assert stream.getvalue() == (
        "scores\n"
        "type             f1  support\n"
        "PER           91.20     1617\n"
        "[0.5, 0.6)        -        0\n"
    )


def test_fixed_width_takes_given_widths():
    assert fixed_width(["a", "b"], [["x", "1"]], (4, 6)).splitlines() == [
        "a        b",
        "x        1",
    ]


def test_terminal_tables_are_drawn_by_rich_with_cells_as_written():
    stream = Terminal()
    print_table("scores", HEADERS, [*ROWS, ["[bold]x[/bold]", ":smile:", "1"]], stream)
    text = stream.getvalue()
    assert "\u2502" in text or "\u2503" in text  # rich draws box lines; plain text has none
    for cell in ("scores", "91.20", "[0.5, 0.6)", "[bold]x[/bold]", ":smile:"):
        assert cell in text  # no markup or emoji codes are interpreted


def test_only_real_terminals_count():
    assert is_terminal(Terminal()) and not is_terminal(io.StringIO())
    closed = io.StringIO()
    closed.close()
    assert not is_terminal(closed)


def test_the_cli_starts_without_torch_or_rich():
    code = "import sys, crftag.cli; print(sorted({'torch', 'rich'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
