"""The words people use for each category ("task", "todo", "errand" -> admin): one
vocabulary for every rule that reads a category from text (`fix: todo`, "make it a task",
"list my tasks"), so a word that works in one works in all."""

from __future__ import annotations

from storage.types import CATEGORIES

# Singular, plural and a few everyday words for each category.
CATEGORY_WORDS: dict[str, str] = {
    **{c: c for c in CATEGORIES},
    "person": "people", "persons": "people", "contact": "people", "contacts": "people",
    "project": "projects",
    "idea": "ideas",
    "admins": "admin", "task": "admin", "tasks": "admin", "todo": "admin", "todos": "admin",
    "errand": "admin", "errands": "admin", "chore": "admin", "chores": "admin",
}


def category_of(word: str) -> str | None:
    """The category a word names ("Tasks" -> admin), or None."""
    return CATEGORY_WORDS.get(word.strip().lower())
