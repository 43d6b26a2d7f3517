"""The offline classifier on realistic thoughts (tests/tools/thoughts.yaml), through the
offline provider with the real tool specs: the targets of issue 11, and no question filed as
a thought. `python bench/bench_classifier.py -v` prints the same figures with every miss."""

from __future__ import annotations

import pytest

from bench.bench_classifier import evaluate


@pytest.mark.parametrize("section", ["thoughts", "holdout"])
async def test_targets(section: str) -> None:
    report = await evaluate(section=section)
    misses = [(r.text, r.category, r.name, r.due) for r in report.rows
              if not (r.category_ok and r.name_ok and r.due_ok)]
    assert len(report.rows) >= (40 if section == "thoughts" else 30)
    assert report.share("category_ok") >= 0.8, misses
    assert report.share("name_ok") >= 0.8, misses
    assert report.due_accuracy >= 0.9, misses
    assert report.false_dues == 0, misses
    assert report.question_misses == []


async def test_question_shaped_ideas_are_captured_and_questions_are_not() -> None:
    report = await evaluate()
    shaped = [r for r in report.rows if r.text.endswith("?")]
    assert len(shaped) >= 5
    assert all(r.tool == "classify_and_capture" for r in shaped)
