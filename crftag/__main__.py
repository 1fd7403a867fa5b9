"""``python -m crftag`` runs the CLI (and is what ``torchrun -m crftag`` starts)."""

from crftag.cli import main

if __name__ == "__main__":
    main()
