"""Links people share: fetched with guards (fetch.py) and read into a note (links.py)."""
