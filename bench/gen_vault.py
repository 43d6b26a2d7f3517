"""Generate a synthetic vault of N notes (deterministic for a seed), for benchmarks.

Notes look like the bot's own: `<category>/<slug>.md` with the category's frontmatter fields,
bodies of a few sentences over a Zipf-like vocabulary, and some [[wikilinks]] to other notes;
a share of hand-written notes sits outside the category folders without frontmatter.

    python bench/gen_vault.py /tmp/vault --notes 10000 [--seed 1]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import re
from dataclasses import dataclass
from pathlib import Path


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FIRST = _words("""
Sarah Sara Ana Anna Ben Carlos Chen Dana David Elena Emma Farid Grace Hana Ivan Jonas
Julia Kai Lara Leo Liam Lina Maria Marco Mia Nadia Noah Olga Omar Paula Priya Raj Rosa Sam
Sofia Tariq Tom Uma Victor Wen Yara Zoe Aiko Bruno Chloe Diego Eva Felix Greta Hugo Iris
Jack Karin Luca Mateo Nina Oscar Pia Quentin Rita Stefan Theo Ulla Vera Willem Xavier
Yusuf Zara
""")
LAST = _words("""
Chen Smith Garcia Müller Rossi Dubois Kowalski Tanaka Kim Nguyen Silva Johansson Novak
Ivanova Patel Khan Okafor Mensah Haddad Cohen Larsen Andersen Moreau Costa Ferreira
Schmidt Fischer Weber Wagner Becker Hoffmann Yilmaz Demir Sato Suzuki Park Lee Wong Singh
Gupta Brown Taylor Wilson Evans Walker Hughes Lopez Martin Bernard Petit Lindqvist Berg
Nilsson Virtanen Horvat
""")
TOPICS = _words("""
budget offsite website onboarding hiring roadmap migration launch audit newsletter podcast
garden kitchen garage taxes insurance mortgage vacation wedding conference workshop
training security compliance analytics dashboard pricing partnership fundraising research
prototype interview survey retreat inventory warehouse logistics recruiting mentoring
reading writing cycling running marathon piano spanish french photography camera laptop
phone backup server database api billing invoice payroll benefits pension renovation
bathroom roof solar heating plumbing painting furniture moving visa passport dentist
doctor school daycare birthday anniversary gift charity volunteering community festival
exhibition gallery museum theatre concert album book novel essay blog video course
curriculum lecture thesis grant proposal contract lease license trademark patent
""")
NOUNS = _words("""
plan review kickoff draft proposal checklist retro sync notes ideas update strategy brief
report tracker outline prep followup timeline estimate
""")
IDEA_STARTS = ("Build a", "Write about", "Try a", "Start a", "Explore", "Learn", "Host a",
               "Design a", "Automate the", "Simplify the")
WORDS = _words("""
the of and to a in for is on that with as it at by this we be from or are an will can
about more team next week call email meeting follow share ask send review check update
plan draft numbers quarter budget client customer project deadline schedule agenda notes
idea question answer problem solution decision risk cost price time money people office
remote travel trip flight hotel venue food coffee lunch dinner friday monday tuesday
morning afternoon evening month year today tomorrow soon later quickly carefully maybe
probably definitely important urgent small large simple complex new old first last better
faster cheaper easier design build test ship launch measure learn fix improve write read
think talk listen present report track compare choose agree approve reject delay move
finish start continue pause resume archive document explain summarize discuss contract
invoice payment bank account tax form receipt policy insurance claim doctor appointment
school kids family parents friends neighbour house garden car bike train bus book article
podcast video course lesson workshop conference talk slides demo prototype feedback survey
interview data chart metric goal target hiring candidate role salary offer onboarding
training mentor manager report server database backup deploy release bug feature roadmap
sprint estimate zephyr quasar nebula orbit lantern harbor meadow canyon glacier tundra
""")
CATEGORIES = ("people", "projects", "ideas", "admin", "inbox")
WEIGHTS = (0.25, 0.3, 0.2, 0.15, 0.05)  # the remaining 5%: hand-written notes in other folders


@dataclass(frozen=True)
class GeneratedNote:
    path: str  # vault-relative
    name: str
    category: str | None


def _slug(name: str) -> str:
    return re.sub(r"[^\w]+", "-", name.lower()).strip("-") or "note"


def _sentence(rng: random.Random, weights: list[float]) -> str:
    words = rng.choices(WORDS, weights=weights, k=rng.randint(7, 16))
    return " ".join(words).capitalize() + "."


def _name(rng: random.Random, category: str) -> str:
    if category == "people":
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if category == "projects":
        prefix = rng.choice(("", "", f"Q{rng.randint(1, 4)} ", "2025 "))
        return f"{prefix}{rng.choice(TOPICS)} {rng.choice(NOUNS)}".strip().capitalize()
    if category == "ideas":
        return f"{rng.choice(IDEA_STARTS)} {rng.choice(TOPICS)} {rng.choice(NOUNS)}"
    if category == "admin":
        return f"{rng.choice(('Pay', 'Renew', 'File', 'Book', 'Cancel', 'Sort'))} " \
               f"{rng.choice(TOPICS)} {rng.choice(('form', 'bill', 'appointment', 'papers'))}"
    return " ".join(rng.choices(WORDS, k=rng.randint(3, 6))).capitalize()


def _category(rng: random.Random) -> str | None:
    """A note's category by WEIGHTS (None: a plain file of the person's own)."""
    roll = rng.random()
    acc = 0.0
    for cat, weight in zip(CATEGORIES, WEIGHTS, strict=True):
        acc += weight
        if roll < acc:
            return cat
    return None


def _fields(rng: random.Random, weights: list[float], category: str) -> list[str]:
    """The frontmatter fields of a category's note past the common ones."""
    if category == "people":
        return [f"context: {_sentence(rng, weights)}", "follow_ups: []",
                f"tags: [{rng.choice(TOPICS)}]"]
    if category == "projects":
        return [f"status: {rng.choice(('active', 'waiting', 'blocked', 'someday', 'done'))}",
                f"next_action: {_sentence(rng, weights)}",
                f"due_date: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                f"tags: [{rng.choice(TOPICS)}, {rng.choice(TOPICS)}]"]
    if category == "ideas":
        return [f"one_liner: {_sentence(rng, weights)}", "tags: []"]
    if category == "admin":
        return [f"status: {rng.choice(('todo', 'done'))}",
                f"next_action: {_sentence(rng, weights)}", "due_date: null"]
    return ["suggested_category: projects", "reason: unsure"]


def generate(root: Path, notes: int, *, seed: int = 1) -> list[GeneratedNote]:
    """Write `notes` notes under `root` (created if missing); returns what was written."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(WORDS))]  # Zipf-like word frequency
    start = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)
    out: list[GeneratedNote] = []
    used: set[str] = set()
    for i in range(notes):
        category = _category(rng)
        name = _name(rng, category or "inbox")
        folder = category or rng.choice(("Journal", "Reading", "Work/Archive"))
        slug = _slug(name)
        rel = f"{folder}/{slug}.md"
        n = 2
        while rel in used:
            rel = f"{folder}/{slug}-{n}.md"
            n += 1
        used.add(rel)
        body = "\n\n".join(" ".join(_sentence(rng, weights) for _ in range(rng.randint(1, 4)))
                           for _ in range(rng.randint(1, 4)))
        if out and rng.random() < 0.35:
            target = rng.choice(out)
            body += f"\n\nRelated: [[{target.name}]]"
        stamp = (start + dt.timedelta(minutes=rng.randint(0, 60 * 24 * 900))).isoformat()
        if category is None:
            text = f"# {name}\n\n{body}\n"
        else:
            fields = [f"id: e_{i:012x}", f"category: {category}", f"name: {name}",
                      f"created: {stamp}", f"updated: {stamp}", "source: cli"]
            fields += _fields(rng, weights, category)
            text = "---\n" + "\n".join(fields) + "\n---\n" + body + "\n"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        out.append(GeneratedNote(rel, name, category))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    made = generate(args.root, args.notes, seed=args.seed)
    print(f"wrote {len(made)} notes under {args.root}")


if __name__ == "__main__":
    main()
