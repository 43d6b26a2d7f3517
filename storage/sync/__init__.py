"""Each person's vault as a git remote (issue 35): the tokens that open it, the history as
its commits, pushes checked and applied as the vault's own changes."""
