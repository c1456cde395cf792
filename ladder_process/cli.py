"""How every Ladder command line explains itself: one help formatter for all of them.

Every option of every ``ladder`` command says what it does and, when it has one, its default,
without each help text repeating it by hand (and going stale when the default changes): each
ArgumentParser is made with ``formatter_class=HelpFormatter``.
"""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written (they are the modules' docstrings), each option's default after its
    help unless the help names it already, or there is none to name (None, False: a switch off)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        nothing = default is None or default is False or default is argparse.SUPPRESS or default in ([], ())
        if not action.option_strings or nothing or "%(default)" in text:
            return text
        return f"{text} (default: %(default)s)"
