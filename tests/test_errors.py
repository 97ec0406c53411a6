"""Errors name the place and the fix; secrets never survive into a message."""

from __future__ import annotations

import pytest

from foundry_bridge.errors import DatasetError, redact


def test_a_located_error_names_file_line_field_and_fix() -> None:
    err = DatasetError("label 3.7 is not an integer", file="d.jsonl", line=4, field="labels[2]", hint="use an int")
    assert str(err) == "d.jsonl:4: labels[2]: label 3.7 is not an integer (fix: use an int)"
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer eyJ0.abc-def", "Authorization: Bearer ***"),
        ("api-key=XYZ123", "api-key=***"),
        ('{"api_key": "sk-123"}', '{"api_key": "***"}'),
        ("AccountKey=abc123==;EndpointSuffix=core.windows.net", "AccountKey=***;EndpointSuffix=core.windows.net"),
        ("Ocp-Apim-Subscription-Key: k123", "Ocp-Apim-Subscription-Key: ***"),
        ("https://user:pa55@host/x", "https://user:***@host/x"),
        (
            "https://a.blob.core.windows.net/c?sv=1&sig=abc%3D&sp=r",
            "https://a.blob.core.windows.net/c?sv=1&sig=***&sp=r",
        ),
        ("document_id: d1, tokens used: 5", "document_id: d1, tokens used: 5"),
    ],
)
def test_redact_removes_secrets_and_keeps_the_rest(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_redact_removes_a_remembered_secret_by_value_whatever_surrounds_it() -> None:
    from foundry_bridge.errors import remember_secret

    value = "zq-remembered-7f3a9c1e55"
    assert redact(f"Incorrect API key provided: {value}.") == f"Incorrect API key provided: {value}."
    remember_secret(value)
    remember_secret("short")  # too short to be a secret: ordinary words stay
    assert redact(f"Incorrect API key provided: {value}. short") == "Incorrect API key provided: ***. short"
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwczovL2FpLmF6dXJlLmNvbSJ9.c2lnbmF0dXJlLWJ5dGVz"
    assert redact(f"token {jwt} was rejected") == "token *** was rejected"
