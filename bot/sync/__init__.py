"""The git side of `brain serve` (issue 35): each person's vault served as a git remote over
git's smart HTTP protocol, at `/git/<person>.git`."""
