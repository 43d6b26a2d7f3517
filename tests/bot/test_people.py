"""Person keys (bot/tenancy/people.py): plain ids for the home workspace (and for one workspace), a
workspace-qualified key for everyone else, read back without ambiguity; and a job spec made
for a person (bot/slack/intake.py `for_person`)."""

from __future__ import annotations

from bot.jobs.queue import JobKind
from bot.slack.intake import JobSpec, for_person, team_id
from bot.tenancy.people import person_key, slack_user, team_of


def test_home_people_keep_their_plain_ids() -> None:
    assert person_key("T0HOME", "U0ALEX", "T0HOME") == "U0ALEX"
    assert person_key(None, "U0ALEX", "T0HOME") == "U0ALEX"
    assert person_key("T0HOME", "U0ALEX", None) == "U0ALEX"


def test_other_workspaces_are_qualified_and_read_back() -> None:
    key = person_key("T0OTHER", "U0ALEX", "T0HOME")
    assert key == "T0OTHER-U0ALEX" and key != person_key("T0HOME", "U0ALEX", "T0HOME")
    assert slack_user(key) == "U0ALEX" and team_of(key) == "T0OTHER"
    assert slack_user("U0ALEX") == "U0ALEX" and team_of("U0ALEX") is None
    assert team_of("local") is None and slack_user("local") == "local"  # a CLI user


def test_a_spec_for_a_person_moves_its_owner_payload_and_lane() -> None:
    spec = JobSpec(key="action:U0ALEX:t1:undo", kind=JobKind.BUTTON, user="U0ALEX",
                   lane="slack:D1:1.0:U0ALEX",
                   payload={"press": {"user": "U0ALEX", "channel": "D1"}})
    moved = for_person(spec, "T0OTHER-U0ALEX", "T0OTHER")
    assert moved.user == "T0OTHER-U0ALEX" and moved.lane == "slack:D1:1.0:T0OTHER-U0ALEX"
    assert moved.payload["press"]["user"] == "T0OTHER-U0ALEX"
    assert moved.payload["team"] == "T0OTHER" and moved.key == spec.key
    same = for_person(spec, "U0ALEX", None)
    assert same is spec  # one workspace: nothing changes


def test_the_workspace_of_each_kind_of_request() -> None:
    assert team_id({"team_id": "T1"}) == "T1"  # events, commands
    assert team_id({"team": {"id": "T2"}}) == "T2"  # interactivity
    assert team_id({"user": {"id": "U1", "team_id": "T3"}}) == "T3"
    assert team_id({}) is None
