"""`brain doctor`'s closing line is true: "All good." only when every check ran and none
warned. `--offline` with a model configured names what it did not check (the key the server
may refuse), and a warning (a note whose frontmatter is not read) is not followed by "All
good." The CLI as a process."""

from __future__ import annotations

from pathlib import Path

from tests.brain_cli import run_process


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"BRAIN_DATA_DIR": str(tmp_path / "data"), **extra}


def test_offline_with_a_refused_key_says_the_key_was_not_checked(tmp_path: Path) -> None:
    env = _env(tmp_path, BRAIN_LLM="openai", OPENAI_API_KEY="sk-invalid",
               OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    done = run_process(tmp_path, "doctor", "--offline", env=env)
    assert done.code == 0, done.out + done.err  # nothing checked failed
    assert "All good" not in done.out
    assert "Not checked (--offline): the LLM key (OPENAI_API_KEY)" in done.out
    probe = next(x for x in done.out.splitlines() if "LLM probe" in x)
    assert probe.startswith("SKIP") and "not checked" in probe

    slack = run_process(tmp_path, "doctor", "--offline", env={
        **env, "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"})
    assert "All good" not in slack.out
    assert "the Slack token (auth.test), the LLM key (OPENAI_API_KEY)" in slack.out

    offline_model = run_process(tmp_path, "doctor", "--offline",
                                env=_env(tmp_path, BRAIN_LLM="offline"))
    assert offline_model.code == 0 and "All good." in offline_model.out  # nothing skipped


def test_a_warning_is_not_followed_by_all_good(tmp_path: Path) -> None:
    note = tmp_path / "data" / "vaults" / "local" / "ideas" / "broken.md"
    note.parent.mkdir(parents=True)
    note.write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    done = run_process(tmp_path, "doctor", "--local", env=_env(tmp_path, BRAIN_LLM="offline"))
    assert done.code == 0, done.out + done.err
    assert any(x.startswith("WARN") and "ideas/broken.md" in x for x in done.out.splitlines())
    assert "All good" not in done.out and "1 warning(s)" in done.out
