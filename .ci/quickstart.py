"""Print the commands of the first code block under '## Quick start' in a README, one per line."""

import sys


def quickstart_commands(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().lower() == "## quick start")
    fence = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
    return [
        line.strip()
        for line in lines[fence + 1 : end]
        if line.strip() and not line.strip().startswith("#")
    ]


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        print("\n".join(quickstart_commands(handle.read())))
