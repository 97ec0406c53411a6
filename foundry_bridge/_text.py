"""Small text helpers shared by every layer."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["did_you_mean", "userinfo_problem"]


def did_you_mean(word: str, candidates: list[str] | tuple[str, ...] | set[str]) -> str | None:
    """The closest candidate to ``word`` (case-insensitive first), or None."""
    lowered = {c.lower(): c for c in candidates}
    if word.lower() in lowered:
        return lowered[word.lower()]
    import difflib  # only on the error path: not a start-up cost

    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


def userinfo_problem(url: str, what: str) -> str | None:
    """Why ``url`` must be refused when it carries user-info (``https://user:password@host/...``), or None.

    httpx turns user-info into an ``Authorization: Basic`` header that replaces the bearer token or API key, and
    the URL itself would be stored in ``state.json``; so every endpoint the project accepts refuses it, and the
    message shows the URL with the user-info replaced by ``***`` (the password is never echoed)."""
    parts = urlsplit(url.strip())
    if "@" not in parts.netloc:
        return None
    host = parts.netloc.rpartition("@")[2]
    shown = parts._replace(netloc=f"***@{host}", query="", fragment="").geturl()
    return (
        f"{what} {shown!r} carries a user name or password before '@': it would be stored in the run folder and "
        "sent as HTTP Basic auth in place of the token; remove it (keys go in an environment variable)"
    )
