"""``python -m read_functions --host H --port P --workers N [...]`` (what ``ladder read`` runs)."""

from read_functions.server.workers import main

if __name__ == "__main__":
    main()
