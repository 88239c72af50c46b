#!/usr/bin/env python3
"""Every figure the documentation quotes, from one place: Benchmarks/figures.json.

    Scripts/figures.py check    exit 1, naming each place, when a quote or the Performance table
                                differs from figures.json (make docs runs it, and so CI)
    Scripts/figures.py render   rewrites the Performance table and every quote from figures.json

A figure is a measure's current value, with its date and the benchmark that measured it. A quote is
a place in a file that cites it: `text` holds `{}` where the value stands, and `value` is the part of
the figure quoted there (a figure of several numbers may be quoted one at a time). The text after
`{}` must not occur inside the value (a value is read up to the first place that text follows).
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "Benchmarks" / "figures.json"
PERFORMANCE = ROOT / "Sources" / "Flagship" / "Flagship.docc" / "Performance.md"
TABLE_HEADER = "| what | figure | beside | measured |"


def load():
    data = json.loads(FIGURES.read_text(encoding="utf-8"))
    figures = {figure["id"]: figure for figure in data["figures"]}
    for quote in data["quotes"]:
        figure = figures.get(quote["figure"])
        if figure is None:
            raise SystemExit(f"figures.json: a quote names figure {quote['figure']!r}, which is not there")
        if quote["value"] not in figure["figure"]:
            raise SystemExit(f"figures.json: the quote of {quote['figure']!r} in {quote['file']} says "
                             f"{quote['value']!r}, which is not part of the figure {figure['figure']!r}")
    return data


def table(data):
    lines = [TABLE_HEADER, "|---|---:|---|---|"]
    for figure in data["figures"]:
        lines.append(f"| {figure['what']} | {figure['figure']} | {figure['beside']} | {figure['measured']} |")
    return "\n".join(lines) + "\n"


def table_span(text):
    start = text.find(TABLE_HEADER)
    if start < 0:
        return None
    end = text.find("\n\n", start)
    return start, (len(text) if end < 0 else end + 1)


def quote_pattern(quote):
    before, after = quote["text"].split("{}")
    # The value never spans lines: a quote's text may (a paragraph's line break), its value not.
    return re.compile(re.escape(before) + r"([^\n]*?)" + re.escape(after))


def check(data):
    problems = []
    text = PERFORMANCE.read_text(encoding="utf-8")
    span = table_span(text)
    if span is None:
        problems.append(f"{PERFORMANCE.relative_to(ROOT)}: no table starting {TABLE_HEADER!r}")
    elif text[span[0]:span[1]] != table(data):
        problems.append(f"{PERFORMANCE.relative_to(ROOT)}: the figures table is not the one figures.json renders")
    for quote in data["quotes"]:
        path = ROOT / quote["file"]
        found = quote_pattern(quote).findall(path.read_text(encoding="utf-8"))
        if not found:
            problems.append(f"{quote['file']}: no place quotes {quote['figure']} as {quote['text']!r}")
        for value in found:
            if value != quote["value"]:
                problems.append(f"{quote['file']}: {quote['figure']} quoted as {value!r}, figures.json says {quote['value']!r}")
    return problems


def render(data):
    text = PERFORMANCE.read_text(encoding="utf-8")
    span = table_span(text)
    if span is None:
        raise SystemExit(f"{PERFORMANCE}: no table starting {TABLE_HEADER!r}")
    PERFORMANCE.write_text(text[:span[0]] + table(data) + text[span[1]:], encoding="utf-8")
    for quote in data["quotes"]:
        path = ROOT / quote["file"]
        before, after = quote["text"].split("{}")
        text = path.read_text(encoding="utf-8")
        if before + quote["value"] + after in text:
            continue
        text = quote_pattern(quote).sub(lambda _: before + quote["value"] + after, text)
        path.write_text(text, encoding="utf-8")


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else "check"
    data = load()
    if command == "render":
        render(data)
        command = "check"
    if command != "check":
        raise SystemExit(__doc__)
    problems = check(data)
    for problem in problems:
        print(f"figures: {problem}", file=sys.stderr)
    if problems:
        raise SystemExit(f"{len(problems)} figure(s) disagree with Benchmarks/figures.json: edit it, then Scripts/figures.py render")
    print(f"figures: {len(data['figures'])} figures, {len(data['quotes'])} quotes agree with Benchmarks/figures.json")


if __name__ == "__main__":
    main()
